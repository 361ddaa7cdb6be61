"""``canonkit cbor encode | decode | check``: JSON → CBOR, CBOR → JSON (or diagnostic
notation) and strict validation, under an explicit profile.

The JSON form is DAG-JSON for ``dag-cbor`` (``canonkit.cbor.dag_json``: canonical on output,
read leniently on input) and the reversible ``$``-object form of ``_cbor_json`` for
``core`` and ``dcbor``."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..cbor._types import PROFILES
from .._files import loads_json, read_regular, write_atomic
from ..errors import CanonkitError, JSONInputError
from ._cbor_json import JSONFormError, from_json, to_json
from ._common import (
    EXIT_COULD_NOT_RUN,
    EXIT_FAILURES,
    EXIT_OK,
    describe_os_error,
    report_os_error,
    worst,
)
from ._parsing import non_negative

__all__ = ["register"]

_JSON_FORM_HELP = (
    "With --profile dag-cbor the JSON is DAG-JSON ({\"/\": \"<CID>\"} links, "
    "{\"/\": {\"bytes\": \"<base64>\"}} bytes). For core and dcbor, values JSON "
    "cannot hold use one-key objects: {\"$bytes\": \"<base64, no padding>\"}, "
    "{\"$float\": \"NaN\"|\"Infinity\"|\"-Infinity\"|\"0x<binary64 hex>\"}, "
    "{\"$tag\": N, \"value\": V}, {\"$simple\": N}, {\"$undefined\": true}, "
    "{\"$link\": \"<CID>\"}, {\"$map\": [[K, V], ...]} (non-text keys). "
    "`cbor encode` of `cbor decode` output gives back the same bytes."
)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    return read_regular(path)


def _write_atomically(path: str, data: bytes, source: str) -> None:
    """All bytes or none (``canonkit._files.write_atomic``), never over the input."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    write_atomic(path, data, inputs=[] if source == "-" else [source])


def _json_problem(exc: JSONInputError) -> str:
    if exc.detail in ("NaN", "Infinity", "-Infinity"):
        return f"{exc}; write {{\"$float\": \"{exc.detail}\"}}"
    return str(exc)


def _fail(command: str, message: str) -> int:
    print(f"canonkit cbor {command}: {message}", file=sys.stderr)
    return 1


def _describe(exc: CanonkitError) -> str:
    what = exc.detail if isinstance(exc.detail, str) else str(exc)
    if exc.offset is None:
        return f"{exc.code}: {what}"
    return f"{exc.code} at offset {exc.offset}: {what}"


def _encode(args: argparse.Namespace) -> int:
    from .. import cbor

    try:
        raw = _read(args.file)
        if args.profile == "dag-cbor":
            value = _read_dag_json(raw)
        else:
            value = from_json(loads_json(raw, source=args.file))
        data = cbor.encode(value, profile=args.profile)
    except OSError as exc:
        return report_os_error("cbor encode", exc)
    except JSONInputError as exc:
        return _fail("encode", f"bad JSON input: {_json_problem(exc)}")
    except JSONFormError as exc:
        return _fail("encode", f"bad JSON input: {exc}")
    except _DagJSONInput as exc:
        return _fail("encode", f"bad DAG-JSON input: {exc}")
    except CanonkitError as exc:
        return _fail("encode", _describe(exc))
    try:
        _write_atomically(args.output, data, args.file)
    except OSError as exc:
        return report_os_error("cbor encode", exc)
    return 0


class _DagJSONInput(Exception):
    """Input of ``cbor encode --profile dag-cbor`` that is not DAG-JSON."""


def _read_dag_json(raw: bytes) -> Any:
    from ..cbor import dag_json

    try:
        return dag_json.decode(raw, strict=False)
    except CanonkitError as exc:
        raise _DagJSONInput(_describe(exc)) from None


def _document(data: bytes, args: argparse.Namespace) -> bytes:
    """The decoded document as written: DAG-JSON bytes for dag-cbor (canonical, the
    block whose CID is a dag-json CID, unless --indent asks for whitespace), the
    reversible JSON form otherwise, diagnostic notation with --diag; text forms end in a
    newline, canonical DAG-JSON does not."""
    from ..cbor import dag_json
    from .. import cbor

    if args.diag:
        return (cbor.diagnose(data) + "\n").encode("utf-8")
    value = cbor.decode(data, profile=args.profile)
    if args.profile == "dag-cbor":
        canonical = dag_json.encode(value)
        if args.indent is None:
            return canonical
        pretty = json.dumps(json.loads(canonical), ensure_ascii=False, indent=args.indent)
        return (pretty + "\n").encode("utf-8")
    text = json.dumps(to_json(value), ensure_ascii=False, indent=args.indent, allow_nan=False)
    return (text + "\n").encode("utf-8")


def _decode(args: argparse.Namespace) -> int:
    try:
        document = _document(_read(args.file), args)
    except OSError as exc:
        return report_os_error("cbor decode", exc)
    except CanonkitError as exc:
        return _fail("decode", _describe(exc))
    try:
        if args.output == "-" and not document.endswith(b"\n"):
            document += b"\n"  # a terminal line; -o FILE keeps the exact block
        _write_atomically(args.output, document, args.file)
    except OSError as exc:
        return report_os_error("cbor decode", exc)
    return 0


def _check_one(decoder: Any, path: str, sequence: bool) -> dict[str, Any]:
    """The check result of one file: ``{"path", "status": "ok"|"invalid"|"unreadable",
    ...}`` with ``items`` (sequences), ``code``/``offset``/``message`` (invalid) or
    ``message`` (unreadable, already reported on stderr)."""
    try:
        data = _read(path)
    except OSError as exc:  # not a check result: the run is incomplete
        report_os_error("cbor check", exc)
        return {"path": path, "status": "unreadable", "message": describe_os_error(exc)}
    try:
        if sequence:
            items = decoder.check_sequence(data)
        else:
            decoder.check(data)
    except CanonkitError as exc:
        message = exc.detail if isinstance(exc.detail, str) else str(exc)
        return {"path": path, "status": "invalid", "code": exc.code, "offset": exc.offset,
                "message": message}
    result: dict[str, Any] = {"path": path, "status": "ok"}
    if sequence:
        result["items"] = items
    return result


_STATUS = {"ok": EXIT_OK, "invalid": EXIT_FAILURES, "unreadable": EXIT_COULD_NOT_RUN}


def _check(args: argparse.Namespace) -> int:
    from .. import cbor

    decoder = cbor.Decoder(profile=args.profile)
    statuses = []
    for path in args.files:
        result = _check_one(decoder, path, args.sequence)
        statuses.append(_STATUS[result["status"]])
        if args.json:
            print(json.dumps({**result, "profile": args.profile}, ensure_ascii=False))
        elif result["status"] == "ok":
            items = result.get("items")
            print(f"{path}: ok" if items is None else f"{path}: ok ({items} items)")
        elif result["status"] == "invalid":
            print(f"{path}: {result['code']} at offset {result['offset']}: "
                  f"{result['message']}")
    return worst(statuses)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cbor", help="deterministic CBOR: encode, decode, check",
        description="Deterministic CBOR under the profiles " + ", ".join(PROFILES) + ".")
    commands = parser.add_subparsers(dest="cbor_command", metavar="SUBCOMMAND", required=True)

    def profile_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--profile", choices=PROFILES, default="core",
                       help="rule set (default: core)")

    enc = commands.add_parser(
        "encode", help="JSON → CBOR",
        description="Read a JSON document (DAG-JSON for dag-cbor, whitespace and key order "
        "free) and write its deterministic CBOR encoding. " + _JSON_FORM_HELP)
    enc.add_argument("file", nargs="?", default="-", metavar="FILE",
                     help="JSON input file, - for stdin (default)")
    enc.add_argument("-o", "--output", default="-", metavar="OUT",
                     help="CBOR output file, - for stdout (default); written atomically")
    profile_option(enc)
    enc.set_defaults(func=_encode)

    dec = commands.add_parser(
        "decode", help="CBOR → JSON (or diagnostic notation)",
        description="Strictly decode one CBOR item and print it as JSON (DAG-JSON for "
        "dag-cbor). " + _JSON_FORM_HELP)
    dec.add_argument("file", nargs="?", default="-", metavar="FILE",
                     help="CBOR input file, - for stdin (default)")
    dec.add_argument("-o", "--output", default="-", metavar="OUT",
                     help="output file, - for stdout (default); written atomically. With "
                     "--profile dag-cbor it holds exactly the canonical DAG-JSON block")
    profile_option(dec)
    dec.add_argument("--diag", action="store_true",
                     help="print RFC 8949 diagnostic notation of any well-formed item "
                     "instead (no profile check)")
    dec.add_argument("--indent", type=non_negative, default=None, metavar="N",
                     help="pretty-print the JSON with N spaces (DAG-JSON with whitespace is "
                     "no longer the canonical block)")
    dec.set_defaults(func=_decode)

    chk = commands.add_parser(
        "check", help="strictly validate CBOR files",
        description="Validate each file without building its values and print 'FILE: ok' "
        "or 'FILE: <code> at offset N: <message>' (the first violation); exit status 1 if "
        "any file fails, 2 if any cannot be read (reported on stderr).")
    chk.add_argument("files", nargs="+", metavar="FILE", help="CBOR files (- for stdin)")
    profile_option(chk)
    chk.add_argument("--sequence", action="store_true",
                     help="each file is a CBOR sequence (RFC 8742): zero or more items back "
                     "to back; 'ok' reports the item count")
    chk.add_argument("--json", action="store_true",
                     help="one JSON object per file and line: path, profile, status (ok, "
                     "invalid, unreadable), items (--sequence), code, offset, message")
    chk.set_defaults(func=_check)
