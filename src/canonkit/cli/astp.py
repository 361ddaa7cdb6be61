"""``canonkit astp``: one Episode, proof or Layer 3 export at a time.

``reproduce FILE`` (the seal's reproduction, component by component), ``prove FILE --leaf
N`` (a version 2 inclusion proof), ``verify-proof PROOF.json``, ``layer3 verify FILE`` and
``hash form-b|leaf|spine`` (calculators for debugging a mismatch). Every action takes
``--json``. Exit status as every command (``_common``): 0 ok; 1 checked and found
failures, or an input read whose content is wrong (not strict JSON, not an Episode
document, a malformed proof or node); 2 could not run (a usage error, a value on the
command line refused, an input missing or unreadable).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import CanonkitError, FileTooLargeError, JSONInputError
from ._common import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, report_os_error, report_usage_error
from ._parsing import integer, non_negative

#: the largest JSON document an action reads (an Episode, a proof, an export)
MAX_DOCUMENT = 1 << 30


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "astp", help="ASTP seals, proofs and Layer 3, one document at a time",
        description="Look at one ASTP Episode document, inclusion proof or Layer 3 export.")
    sub = parser.add_subparsers(dest="astp_command", metavar="ACTION", required=True)

    p = sub.add_parser("reproduce", help="reproduce the seal of one Episode document",
                       description="Reproduce the seal of one Episode document "
                                   "(canonkit-episode/1 or astp-proof-of-record/1): each "
                                   "component ok/mismatch/absent/not_checked, the construction, "
                                   "the Signal order found. Exit 1 when it does not reproduce.")
    p.add_argument("file", type=Path)
    p.add_argument("--search-cap", type=non_negative, default=40320, metavar="N",
                   help="most Signal orders the tie search may try (default 40320 = 8!)")
    p.add_argument("--json", action="store_true", help="print the Reproduction as JSON")
    p.set_defaults(func=_reproduce)

    p = sub.add_parser("prove", help="a version 2 inclusion proof from an Episode document",
                       description="The ASTP.md §10.2 inclusion proof of one spine leaf of a "
                                   "sav 2/3 Episode document (leaves in sequence_index order).")
    p.add_argument("file", type=Path)
    p.add_argument("--leaf", type=integer, required=True, metavar="N", help="leaf position (0-based)")
    p.add_argument("--json", action="store_true", help="print the proof as JSON")
    p.set_defaults(func=_prove)

    p = sub.add_parser("verify-proof", help="verify one inclusion proof (v2 or 4.x)",
                       description="Verify a proof file: version 2 {leaf_index, leaf_count, "
                                   "leaf_hash, siblings, spine_root} or 4.x {leaf_hash, "
                                   "merkle_path, path_directions, spine_root}. Exit 1 if it "
                                   "does not verify.")
    p.add_argument("file", type=Path)
    p.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.set_defaults(func=_verify_proof)

    layer3 = sub.add_parser("layer3", help="Layer 3 exports",
                            description="Layer 3 (workflow and execution DAG) exports.")
    l3 = layer3.add_subparsers(dest="layer3_command", metavar="ACTION", required=True)
    p = l3.add_parser("verify", help="verify one canonkit-layer3/1 export",
                      description="Verify a canonkit-layer3/1 export, or the 'layer3' member of "
                                  "an Episode document (then also spine isolation, L3-001). "
                                  "Every finding names its CONFORMANCE-LAYER3 vector. Exit 1 on "
                                  "any finding.")
    p.add_argument("file", type=Path)
    p.add_argument("--episode", type=Path, metavar="FILE",
                   help="the Episode document the export belongs to (spine isolation)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_layer3_verify)

    hashes = sub.add_parser("hash", help="calculators: form-b, leaf, spine",
                            description="Compute one hash, to find where a mismatch comes from.")
    h = hashes.add_subparsers(dest="hash_command", metavar="KIND", required=True)
    p = h.add_parser("form-b", help="Form B content hash of one Layer 3 node",
                     description="The Form B preimage and content hash of a Layer 3 node "
                                 "(a JSON object with node_type; '-' reads stdin).")
    p.add_argument("file", help="node JSON file, or - for stdin")
    p.add_argument("--node-type", help="node type, when the object has no node_type")
    p.add_argument("--json", action="store_true", help="print preimage and hash as JSON")
    p.set_defaults(func=_hash_form_b)
    p = h.add_parser("leaf", help="leaf hash (v2, or --v1) of one Segment",
                     description="The ASTP.md §4 leaf hash of one Segment: its fields from a "
                                 "Segment JSON object (FILE, '-' for stdin) and/or the options "
                                 "(which win).")
    p.add_argument("file", nargs="?", help="a Segment JSON object, or - for stdin")
    p.add_argument("--node-id")
    p.add_argument("--node-type")
    p.add_argument("--schema-version")
    p.add_argument("--sequence-index", type=non_negative)
    p.add_argument("--content-hash")
    p.add_argument("--parent-node-id")
    p.add_argument("--v1", action="store_true", help="hash_version 1 (4.x, unsealed)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_hash_leaf)
    p = h.add_parser("spine", help="spine root over digests",
                     description="The ASTP.md §5 spine root over the given digests "
                                 "(arguments, or @FILE with one digest per line).")
    p.add_argument("digests", nargs="+", metavar="HEX|@FILE")
    p.add_argument("--sav", type=integer, required=True, choices=(0, 1, 2, 3),
                   help="spine_algorithm_version")
    p.add_argument("--episode-id", help="the Episode identifier (sav 1)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_hash_spine)


# --- reading -----------------------------------------------------------------------------

class _BadDocument(Exception):
    """An input read whose content is not the document the action needs (status 1)."""


class _BadRequest(Exception):
    """A request the command line cannot make of this input (status 2)."""


def read_json(path: Path | str) -> Any:
    """A strict JSON document (no duplicate keys, no NaN) from a regular file of at most
    ``MAX_DOCUMENT`` bytes (``-`` reads stdin); FIFOs and devices are refused, never
    blocked on."""
    from .._files import loads_json
    from .._files import read_json as read_file

    if str(path) == "-":  # bounded as a file is: never more than the limit held
        data = sys.stdin.buffer.read(MAX_DOCUMENT + 1)
        if len(data) > MAX_DOCUMENT:
            raise FileTooLargeError(f"<stdin>: larger than the {MAX_DOCUMENT}-byte limit",
                                    detail="<stdin>")
        return loads_json(data, source="<stdin>")
    return read_file(path, max_bytes=MAX_DOCUMENT)


def _read_lines(path: str) -> list[str]:
    from .._files import read_regular

    data = read_regular(path, max_bytes=MAX_DOCUMENT)
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise _BadDocument(f"{path}: not UTF-8 (byte {exc.start})") from None


_DIGEST = re.compile(r"[0-9a-fA-F]{64}")


def _digest_lines(path: str) -> list[str]:
    """The digests of an @FILE, one per non-blank line; a line that is not 64 hex digits
    is the file's fault (status 1), named with its number."""
    digests = []
    for number, line in enumerate(_read_lines(path), 1):
        if line.strip():
            if not _DIGEST.fullmatch(line.strip()):
                raise _BadDocument(f"{path}: line {number}: not a digest (64 hex digits)")
            digests.append(line.strip())
    return digests


def _run(command: str, action: Any, args: argparse.Namespace,
         refused: int = EXIT_FAILURES) -> int:
    """Run ``action(args)``. An input that cannot be read ends in status 2; a document
    whose content is wrong in 1; a value canonkit refuses in ``refused`` (1 where the
    values come from an input file, 2 where they come from the command line)."""
    try:
        status: int = action(args)
        return status
    except _BadDocument as exc:
        print(f"canonkit {command}: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    except _BadRequest as exc:
        return report_usage_error(command, str(exc))
    except OSError as exc:           # before CanonkitError: a refused FIFO is both
        return report_os_error(command, exc)
    except FileTooLargeError as exc:  # never read: the input could not be used at all
        return report_usage_error(command, f"{exc.code}: {exc}")
    except JSONInputError as exc:    # an input file's content, whatever the action
        print(f"canonkit {command}: {exc.code}: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    except CanonkitError as exc:
        print(f"canonkit {command}: {exc.code}: {exc}", file=sys.stderr)
        return refused


def _emit(args: argparse.Namespace, payload: Any, lines: Sequence[str]) -> None:
    if args.json:
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        for line in lines:
            print(line)


# --- actions -----------------------------------------------------------------------------

def _reproduce(args: argparse.Namespace) -> int:
    def action(args: argparse.Namespace) -> int:
        from ..astp import reproduce
        from ..reverify.outcomes import FAILING

        r = reproduce(read_json(args.file), search_cap=args.search_cap)
        out = r.to_json()
        lines = [f"outcome       {r.outcome}", f"episode_id    {r.episode_id}",
                 f"construction  {r.construction or '-'}"]
        lines += [f"  {name:<20} {state}" for name, state in out["components"].items()]
        if r.order:
            lines.append("order         " + ", ".join(h[:12] + "…" for h in r.order))
        if out["flags"]:
            lines.append("flags         " + ", ".join(out["flags"]))
        if r.reason:
            lines.append(f"reason        {r.reason}")
        _emit(args, out, lines)
        return EXIT_FAILURES if r.outcome in FAILING else EXIT_OK
    return _run("astp reproduce", action, args)


def _prove(args: argparse.Namespace) -> int:
    def action(args: argparse.Namespace) -> int:
        from ..astp import inclusion_proof_v2, leaf_hash_v2, read_episode

        episode = read_episode(read_json(args.file))
        seal = episode.seal
        sav = seal.get("spine_algorithm_version") if seal else None
        if sav not in (2, 3):
            raise _BadDocument(f"{args.file}: version 2 proofs need a sav 2/3 seal "
                              f"(spine_algorithm_version {sav!r})")
        missing = [s.sequence_index for s in episode.segments if not s.has_leaf_fields]
        if missing:
            raise _BadDocument(f"{args.file}: segment {missing[0]} lacks its leaf-hash fields")
        leaves = [leaf_hash_v2(s.node_id, s.node_type, s.schema_version, s.sequence_index,
                               s.content_hash, s.parent_node_id) for s in episode.segments]
        if not 0 <= args.leaf < len(leaves):
            raise _BadRequest(f"--leaf {args.leaf} outside [0, {len(leaves)})")
        proof = inclusion_proof_v2(leaves, args.leaf)
        payload = {"episode_id": episode.episode_id, "leaf_index": proof.leaf_index,
                   "leaf_count": proof.leaf_count,
                   "sequence_index": episode.segments[args.leaf].sequence_index,
                   "leaf_hash": proof.leaf_hash, "siblings": proof.siblings,
                   "spine_root": proof.spine_root}
        sealed = seal.get("spine_root") if seal else None
        matches = isinstance(sealed, str) and sealed.lower() == proof.spine_root
        lines = [f"{k:<15} {v}" for k, v in payload.items() if k != "siblings"]
        lines += [f"sibling {i:<7} {s}" for i, s in enumerate(proof.siblings)]
        lines.append("sealed root     " + ("matches" if matches else f"DIFFERS ({sealed})"))
        _emit(args, payload, lines)
        return EXIT_OK if matches else EXIT_FAILURES
    return _run("astp prove", action, args)


def _verify_proof(args: argparse.Namespace) -> int:
    def action(args: argparse.Namespace) -> int:
        from ..astp import verify_inclusion_proof_v1, verify_inclusion_proof_v2

        proof = read_json(args.file)
        if not isinstance(proof, dict):
            raise _BadDocument(f"{args.file}: a proof is a JSON object")
        try:
            if "siblings" in proof:
                form = "v2"
                ok = verify_inclusion_proof_v2(proof["leaf_hash"], proof["leaf_index"],
                                               proof["leaf_count"], proof["siblings"],
                                               proof["spine_root"])
            else:
                form = "4.x"
                ok = verify_inclusion_proof_v1(proof["leaf_hash"], proof["merkle_path"],
                                               proof["path_directions"], proof["spine_root"])
        except KeyError as exc:
            raise _BadDocument(f"{args.file}: the proof lacks {exc.args[0]!r}") from None
        except TypeError as exc:
            raise _BadDocument(f"{args.file}: malformed proof: {exc}") from None
        _emit(args, {"form": form, "valid": ok},
              [f"{form} proof {'verifies' if ok else 'does NOT verify'}"])
        return EXIT_OK if ok else EXIT_FAILURES
    return _run("astp verify-proof", action, args)


def _layer3_verify(args: argparse.Namespace) -> int:
    def action(args: argparse.Namespace) -> int:
        from ..astp.layer3 import FORMAT, verify

        document = read_json(args.file)
        episode = read_json(args.episode) if args.episode else None
        if isinstance(document, dict) and document.get("format") != FORMAT and "layer3" in document:
            episode = episode or document     # an Episode document carrying its export
            document = document["layer3"]
        report = verify(document, episode=episode)
        lines = [f"{f.vector:<8} {f.node_id or '-':<36} {f.field or '-':<20} {f.detail}"
                 for f in report.findings]
        lines += [f"note {n.vector:<8} {n.node_id}: {n.detail}" for n in report.notes]
        lines.append("Layer 3 verifies" if report.ok else
                     f"{len(report.findings)} finding(s): {', '.join(report.vectors)}")
        _emit(args, report.to_json(), lines)
        return EXIT_OK if report.ok else EXIT_FAILURES
    return _run("astp layer3 verify", action, args)


def _hash_form_b(args: argparse.Namespace) -> int:
    def action(args: argparse.Namespace) -> int:
        from ..astp.layer3 import form_b

        node = read_json(args.file)
        if not isinstance(node, dict):
            raise _BadDocument(f"{args.file}: a node is a JSON object")
        node_type = args.node_type or node.get("node_type")
        if not isinstance(node_type, str):
            raise _BadRequest(f"{args.file}: the node has no node_type (give --node-type)")
        preimage = form_b(node_type, {**node, "node_type": node_type})
        from ..astp import sha3_256

        digest = sha3_256(preimage).hex()
        stored = node.get("content_hash")
        payload = {"node_type": node_type, "preimage": preimage.decode("utf-8"),
                   "content_hash": digest, "stored_content_hash": stored}
        lines = [f"preimage      {preimage.decode('utf-8')}", f"content_hash  {digest}"]
        if stored is not None:
            lines.append("stored        " + ("matches" if stored == digest else f"DIFFERS ({stored})"))
        _emit(args, payload, lines)
        return EXIT_FAILURES if stored is not None and stored != digest else EXIT_OK
    return _run("astp hash form-b", action, args)


def _hash_leaf(args: argparse.Namespace) -> int:
    def action(args: argparse.Namespace) -> int:
        from ..astp import leaf_hash_v1, leaf_hash_v2

        segment = read_json(args.file) if args.file else {}
        if not isinstance(segment, dict):
            raise _BadDocument(f"{args.file}: a Segment is a JSON object")
        segment.setdefault("node_type", "segment")
        names = ("node_id", "node_type", "schema_version", "sequence_index", "content_hash")
        for name in (*names, "parent_node_id"):
            if getattr(args, name) is not None:
                segment[name] = getattr(args, name)
        absent = [n for n in names if n not in segment]
        if absent:
            raise _BadRequest(f"the leaf hash needs {', '.join(absent)}")
        fields = (*(segment[n] for n in names), segment.get("parent_node_id"))
        digest = leaf_hash_v1(*fields) if args.v1 else leaf_hash_v2(*fields)
        _emit(args, {"hash_version": 1 if args.v1 else 2, "leaf_hash": digest}, [digest])
        return EXIT_OK
    return _run("astp hash leaf", action, args, refused=EXIT_USAGE)


def _hash_spine(args: argparse.Namespace) -> int:
    def action(args: argparse.Namespace) -> int:
        from ..astp import spine_root

        digests: list[str] = []
        for item in args.digests:
            if item.startswith("@"):
                digests.extend(_digest_lines(item[1:]))
            else:
                digests.append(item)
        root = spine_root(digests, spine_algorithm_version=args.sav, episode_id=args.episode_id)
        _emit(args, {"spine_algorithm_version": args.sav, "leaves": len(digests),
                     "spine_root": root}, [root])
        return EXIT_OK
    return _run("astp hash spine", action, args, refused=EXIT_USAGE)


__all__ = ["read_json", "register"]
