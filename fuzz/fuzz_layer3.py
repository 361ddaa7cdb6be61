"""Fuzz target: Layer 3 exports and journals through every door canonkit reads them by,
against the strict path.

The first byte of an input selects what the rest is: even, the bytes of a
``canonkit-layer3/1`` export; odd, the bytes of a ``canonkit-layer3-journal/1`` file. The
custom mutator changes the rest structurally (``json_mutations``: keys repeated at any
depth, members of another type, huge numbers, truncations, lines lost or torn) as often as
libFuzzer mutates its bytes.

Export — the strict path re-reads the bytes with ``canonkit._files.loads_json`` and gives
the document to ``layer3.verify``, which must never raise. Then

- ``canonkit astp layer3 verify FILE --json`` agrees: status 1 (bad data read) naming the
  strict reader's error code and offset when it refused the bytes, else status 0 or 1 and
  exactly the verifier's report; never a traceback;
- re-verification's Layer 3 component for an Episode naming FILE agrees: ``failed`` with an
  ``L3-003`` finding naming the code when the strict reader refused, else ``ok`` or
  ``failed`` with exactly the verifier's findings.

Journal — ``Workspace.open`` agrees with ``journal_oracle`` (the journal rules of
docs/astp-layer3.md read plainly, over the strict reader): the same refusal (its reason and
byte offset) or the same export, which verifies and reads back through the strict reader
unchanged; a write then appended is read back by the next ``open`` (never onto a fragment),
and a write refused leaves the file as it was.
"""
from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _harness
import json_mutations
from _harness import Mismatch, instrumented

with instrumented():
    from canonkit._files import loads_json
    from canonkit.astp.layer3 import FORMAT, NODE_TYPES, Workspace, verify
    from canonkit.astp.layer3.workspace import JOURNAL_FORMAT, MAX_JOURNAL_LINE
    from canonkit.cli import main as cli_main
    from canonkit.errors import CanonkitError, InvalidRecordError, JSONInputError
    from canonkit.reverify.layer3_component import check as reverify_layer3

EXPORT, JOURNAL = 0, 1


def one_input(data: bytes) -> None:
    if not data:
        return
    if data[0] % 2 == EXPORT:
        check_export(data[1:])
    else:
        check_journal(data[1:])


@contextlib.contextmanager
def _directory() -> Iterator[Path]:
    """A directory of one input's files, removed after it (libFuzzer ends the process
    without running exit handlers)."""
    work = Path(tempfile.mkdtemp(prefix="canonkit-fuzz-layer3-"))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- exports ----------------------------------------------------------------------------------

def _strict(data: bytes) -> tuple[Any, ...]:
    """("error", code, offset) of the strict reader, or ("document", value)."""
    try:
        return ("document", loads_json(data, source="export"))
    except JSONInputError as exc:
        return ("error", exc.code, exc.offset)


def _names(message: str, code: str, offset: int | None) -> bool:
    """Whether a message names the strict reader's code and offset."""
    return code in message and (offset is None
                                or re.search(rf"\b(offset|byte) {offset}\b", message) is not None)


def _cli(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli_main(["astp", "layer3", "verify", str(path), "--json"])
    return status, out.getvalue(), err.getvalue()


def _cli_expected(document: Any) -> tuple[Any, ...]:
    """The command's documented reading: an Episode carrying its export in ``layer3`` is
    verified with that Episode; anything else is the export."""
    episode = None
    if isinstance(document, dict) and document.get("format") != FORMAT and "layer3" in document:
        episode, document = document, document["layer3"]
    try:
        report = verify(document, episode=episode)
    except CanonkitError as exc:     # only the Episode may be unreadable
        if episode is None:
            raise Mismatch(f"verify raised {exc.code} for an export's content") from exc
        return ("refused", exc.code)
    return ("report", report.to_json())


def check_export(data: bytes) -> None:
    with _directory() as work:
        _check_export(data, work)


def _check_export(data: bytes, work: Path) -> None:
    path = work / "export.json"
    path.write_bytes(data)
    strict = _strict(data)
    report = verify(strict[1]) if strict[0] == "document" else None   # must never raise
    if report is not None:
        json.dumps(report.to_json(), allow_nan=False)

    status, out, err = _cli(path)
    if "Traceback" in err or "internal error" in err:
        raise Mismatch(f"layer3 verify crashed: {err[-2000:]}")
    if strict[0] == "error":
        code, offset = strict[1], strict[2]
        if status != 1 or not _names(err, f"{code}:", offset):
            raise Mismatch(f"layer3 verify gave {status} {err.strip()!r}; the strict reader "
                           f"refused with {code} at {offset}")
    else:
        expected = _cli_expected(strict[1])
        if expected[0] == "refused":
            if status != 1 or f"{expected[1]}:" not in err:
                raise Mismatch(f"layer3 verify gave {status} {err.strip()!r}, not {expected}")
        elif status != (0 if expected[1]["ok"] else 1) or json.loads(out) != expected[1]:
            raise Mismatch(f"layer3 verify gave {status} {out[:300]!r}; verify gave "
                           f"{json.dumps(expected[1])[:300]}")

    state, findings = reverify_layer3(path.name, None, str(work / "episode.json"))
    if strict[0] == "error":
        if state != "failed" or len(findings or []) != 1 or findings[0]["vector"] != "L3-003" \
                or not _names(findings[0]["detail"], strict[1], strict[2]):
            raise Mismatch(f"reverify's Layer 3 gave {state} {findings}; the strict reader "
                           f"refused with {strict[1]} at {strict[2]}")
    else:
        assert report is not None
        want = [f.to_json() for f in report.findings]
        if (state, findings or []) != ("ok" if report.ok else "failed", want):
            raise Mismatch(f"reverify's Layer 3 gave {state} {str(findings)[:300]}; verify "
                           f"gave {str(want)[:300]}")


# --- journals -------------------------------------------------------------------------------

def _header_ok(entry: dict[str, Any]) -> bool:
    def text(value: Any) -> bool:
        return isinstance(value, str) and bool(value)

    cia = entry.get("cia")
    return (entry.get("format") == JOURNAL_FORMAT
            and set(entry) == {"format", "workspace_id", "episode_id", "cia"}
            and text(entry["workspace_id"]) and text(entry["episode_id"])
            and (text(cia) or isinstance(cia, dict) and set(cia) == set(NODE_TYPES)
                 and all(text(p) for p in cia.values())))


def journal_oracle(data: bytes) -> tuple[Any, ...]:
    """What ``Workspace.open`` must answer for a journal of these bytes:
    ``("refused", reason, offset)`` or ``("export", document)``."""
    header: dict[str, Any] | None = None
    audit: list[Any] = []
    nodes: dict[str, Any] = {}
    edges: list[Any] = []
    pending: int | None = None
    pieces = data.split(b"\n")
    start = 0
    for k, piece in enumerate(pieces):
        offset, start = start, start + len(piece) + 1
        last = k == len(pieces) - 1
        if len(piece) + (not last) > MAX_JOURNAL_LINE:
            return ("refused", "line_too_long", offset)
        if not piece.strip(b" \t\r"):
            continue                                  # blank (or the end of the file)
        if last:
            return ("refused", "torn_line", offset)
        try:
            entry = loads_json(piece)
        except JSONInputError as exc:
            return ("refused", exc.code, offset + (exc.offset or 0))
        if not isinstance(entry, dict):
            return ("refused", "not_an_entry", offset)
        if header is None:
            if not _header_ok(entry):
                return ("refused", "not_a_journal", offset)
            header = entry
        elif set(entry) == {"audit"} and pending is None:
            audit.append(entry["audit"])
            pending = offset
        elif set(entry) == {"apply"} and pending is not None:
            apply = entry["apply"]
            if not (isinstance(apply, dict) and set(apply) == {"nodes", "edges"}
                    and isinstance(apply["nodes"], list) and isinstance(apply["edges"], list)
                    and all(isinstance(n, dict) and isinstance(n.get("node_id"), str)
                            for n in apply["nodes"])):
                return ("refused", "not_a_write", offset)
            for node in apply["nodes"]:     # a node written again keeps its place
                nodes[node["node_id"]] = node
            edges.extend(apply["edges"])
            pending = None
        else:
            return ("refused", "out_of_order", offset)
    if header is None:
        return ("refused", "empty", 0)
    if pending is not None:
        return ("refused", "unfinished_write", pending)
    cia = header["cia"]
    export = {"format": FORMAT, "workspace_id": header["workspace_id"],
              "episode_id": header["episode_id"], "chain_key": header["episode_id"],
              "cia": {t: cia if isinstance(cia, str) else cia[t] for t in NODE_TYPES},
              "nodes": list(nodes.values()), "edges": edges, "audit": audit}
    report = verify(export)
    if not report.ok:
        return ("refused", report.findings[0].vector, None)
    return ("export", export)


def _open(path: Path) -> tuple[Any, ...]:
    try:
        return ("export", Workspace.open(path))
    except InvalidRecordError as exc:
        return ("refused", exc.detail, exc.offset)


def _text(document: Any) -> str:
    return json.dumps(document, ensure_ascii=False)


def check_journal(data: bytes) -> None:
    with _directory() as work:
        _check_journal(data, work / "journal.jsonl")


def _check_journal(data: bytes, path: Path) -> None:
    path.write_bytes(data)
    want = journal_oracle(data)
    got = _open(path)
    if got[0] != want[0] or (got[0] == "refused" and got != want):
        raise Mismatch(f"Workspace.open gave {got[:3]!r}, the journal rules {want[:3]!r}")
    if got[0] == "refused":
        return
    ws = got[1]
    export = ws.export()
    if _text(export) != _text(want[1]):
        raise Mismatch("Workspace.open replayed another export than the journal holds")
    if _text(loads_json(_text(export).encode())) != _text(export):
        raise Mismatch("the replayed export does not read back through the strict reader")
    before = path.read_bytes()
    principal = ws.cia["WorkflowDeclaration"]
    try:
        ws.declare_workflow(principal=principal, workflow_name="appended", declared_by=principal,
                            input_context={})
    except CanonkitError:
        if path.read_bytes() != before:
            raise Mismatch("a refused write changed the journal") from None
        return
    again = _open(path)
    if again[0] != "export" or _text(again[1].export()) != _text(ws.export()):
        raise Mismatch(f"the journal does not reopen after a write was appended: {again[:3]!r}")


# --- atheris -------------------------------------------------------------------------------

def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """Structural changes to the export or journal after the selector byte, half the time;
    libFuzzer's byte mutations otherwise."""
    import atheris

    rng = random.Random(seed)
    selector, body = (data[:1] or b"\x00"), data[1:]
    if rng.random() < 0.5:
        change = json_mutations.mutate_lines if selector[0] % 2 else json_mutations.mutate_document
        body = change(body, rng, rounds=rng.randint(1, 3))
    else:
        body = atheris.Mutate(body, max(max_size - 1, 1))
    return (selector + body)[:max_size]


if __name__ == "__main__":
    _harness.run(one_input, custom_mutator=custom_mutator)
    sys.exit(0)
