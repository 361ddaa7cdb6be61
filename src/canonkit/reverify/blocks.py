"""A *block*: the finished report lines of one unit of work, as the bytes the report file
gets, with the counts the summary needs (REVERIFY.md §7, the result cache's unit entries).

A run writes a block with one call and adds its counts to the summary: no Python runs per
Episode. The line numbers of a byte range depend on the lines before it, which only the
client knows (``lines.py``), so a block says the line base it was rendered at
(``line0``) and where each line's number is (``slots``): rendered again at another base,
it is turned back into verdicts (``verdicts``) and takes the ordinary path.

    value    u32 header length | header (JSON) | report | notes | slots
    header   [FORMAT, line0, lines, doc_bytes, disk_bytes, counts, layer3 counts]
    report   the report lines, each ending with a newline
    notes    the annotation lines, each ending with a newline
    slots    per report line, u32 start and end of its number within the line (0, 0:
             a line with no number)

``decode`` checks that every part is what the header says (lengths, one pair of slots per
line, counts adding up to the lines): a value that does not is ``ValueError``, which the
cache counts as a damaged entry.
"""
from __future__ import annotations

import struct
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import orjson

from .layer3_component import STATES
from .lines import Verdict
from .outcomes import OUTCOMES

FORMAT = 1
_LENGTH = struct.Struct("<I")
_REPRODUCED_BY_SEARCH = "reproduced_by_search"
_LITTLE = array("I", [1]).tobytes() == b"\x01\x00\x00\x00"


class Block(NamedTuple):
    """A unit's report lines rendered at line base ``line0`` (see the module docstring)."""

    line0: int
    lines: int  # physical lines of a byte range (the client's line count), else 0
    doc_bytes: int
    disk_bytes: int
    counts: dict[str, int]  # outcome -> Episodes
    layer3: dict[str, int]  # Layer 3 state -> Episodes whose line carries one
    report: bytes
    notes: bytes
    slots: bytes  # array("I") of (start, end) pairs, little-endian

    @property
    def episodes(self) -> int:
        return sum(self.counts.values())

    def encode(self) -> bytes:
        header = orjson.dumps([FORMAT, self.line0, self.lines, self.doc_bytes,
                               self.disk_bytes, self.counts, self.layer3,
                               len(self.report), len(self.notes)])
        return b"".join((_LENGTH.pack(len(header)), header, self.report, self.notes,
                         self.slots))

    def report_lines(self) -> list[bytes]:
        return self.report.split(b"\n")[:-1]

    def verdicts(self) -> Iterator[Verdict]:
        """The block as verdicts numbered from line base 0 (``Verdict.line(base)`` renders
        it at any base): for a run whose line base is not the block's, and for callers
        who want one result per Episode. Reads each line (its outcome, Episode id and
        order); a line that does not read is ``ValueError``."""
        slots = _pairs(self.slots)
        for n, line in enumerate(self.report_lines()):
            start, end = slots[2 * n], slots[2 * n + 1]
            record = _record(line)
            outcome, episode_id = record.get("outcome"), record.get("episode_id")
            if not isinstance(outcome, str) or not (episode_id is None
                                                   or isinstance(episode_id, str)):
                raise ValueError("not a report line")
            order = record.get("order") if outcome == _REPRODUCED_BY_SEARCH else None
            components = record.get("components")
            layer3 = components.get("layer3") if isinstance(components, dict) else None
            if layer3 is not None and layer3 not in STATES:
                raise ValueError("not a report line")
            if end == 0:
                yield Verdict(line, None, b"", outcome, episode_id, order, layer3)
            else:
                number = int(line[start:end]) - self.line0
                yield Verdict(line[:start], number, line[end:], outcome, episode_id, order,
                              layer3)


def _record(line: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:  # a file name that is not UTF-8 (lines.source_head)
        import json

        value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError("not a report line")
    return value


def _pairs(data: bytes) -> array[int]:
    slots = array("I")
    slots.frombytes(data)
    if not _LITTLE:  # pragma: no cover - big-endian machines
        slots.byteswap()
    return slots


def _slot_bytes(slots: array[int]) -> bytes:
    if not _LITTLE:  # pragma: no cover - big-endian machines
        slots = array("I", slots)
        slots.byteswap()
    return slots.tobytes()


def build(verdicts: Iterable[Verdict], base: int, notes: Iterable[bytes], *, lines: int,
          doc_bytes: int, disk_bytes: int) -> Block:
    """The block of ``verdicts`` rendered at line base ``base`` (``Verdict.line``), with
    the annotation lines ``notes`` (each without its newline)."""
    out = []
    slots = array("I")
    counts: Counter[str] = Counter()
    layer3: Counter[str] = Counter()
    for verdict in verdicts:
        line = verdict.line(base)
        out.append(line)
        if verdict.number is None:
            slots.extend((0, 0))
        else:
            start = len(verdict.head)
            slots.extend((start, len(line) - len(verdict.tail)))
        counts[verdict.outcome] += 1
        if verdict.layer3 is not None:
            layer3[verdict.layer3] += 1
    report = b"\n".join(out) + b"\n" if out else b""
    noted = b"\n".join(notes)
    return Block(base, lines, doc_bytes, disk_bytes, dict(counts), dict(layer3), report,
                 noted + b"\n" if noted else b"", _slot_bytes(slots))


def decode(value: bytes | memoryview) -> Block:
    """The block a cache value holds; ``ValueError`` when it is not one."""
    if len(value) < _LENGTH.size:
        raise ValueError("shorter than a block")
    (size,) = _LENGTH.unpack_from(value, 0)
    at = _LENGTH.size + size
    try:
        header = orjson.loads(bytes(value[_LENGTH.size:at]))
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not a block header: {exc}") from None
    if not (isinstance(header, list) and len(header) == 9 and header[0] == FORMAT):
        raise ValueError("not a block header")
    _, line0, lines, doc_bytes, disk_bytes, counts, layer3, n_report, n_notes = header
    numbers = (line0, lines, doc_bytes, disk_bytes, n_report, n_notes)
    if not all(type(n) is int and n >= 0 for n in numbers):
        raise ValueError("a block header with a count that is not one")
    for table in (counts, layer3):
        if not (isinstance(table, dict)
                and all(type(n) is int and n > 0 for n in table.values())):
            raise ValueError("a block header with a count that is not one")
    if set(counts) - set(OUTCOMES) or set(layer3) - set(STATES):
        raise ValueError("a block with an unknown outcome or Layer 3 state")
    report = bytes(value[at:at + n_report])
    notes = bytes(value[at + n_report:at + n_report + n_notes])
    slots = bytes(value[at + n_report + n_notes:])
    episodes = sum(counts.values())
    if (len(report) != n_report or len(notes) != n_notes
            or report.count(b"\n") != episodes or (report and not report.endswith(b"\n"))
            or (notes and not notes.endswith(b"\n"))
            or len(slots) != 8 * episodes or sum(layer3.values()) > episodes):
        raise ValueError("a block whose parts are not what its header says")
    return Block(line0, lines, doc_bytes, disk_bytes, counts, layer3, report, notes, slots)
