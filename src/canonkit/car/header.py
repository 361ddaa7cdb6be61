"""Reading a CAR file's layout: the CARv1 header, or the CARv2 pragma, header, padding and
the CARv1 header of the payload (docs/car.md, "The format", "Findings").

:func:`read_layout` reads only the headers (a few small reads at known offsets) and says
where the sections lie and where the index is, with the findings of what it read. A
problem that leaves the sections' place unknown (a header that is not DAG-CBOR, an
unknown version, a data offset past the end) makes the layout unwalkable.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import cbor
from ..errors import DecodeError, FileChangedError
from .findings import Finding, finding
from .format import (
    CARV2_PREFIX,
    MAX_HEADER_SIZE,
    MAX_VARINT_BYTES,
    PRAGMA,
    V2Header,
    VarintProblem,
    parse_v2_header,
    read_at,
    read_varint,
)

__all__ = ["Layout", "read_layout"]

_PADDING_BLOCK = 1 << 20

# file offsets of the CARv2 header's fields
_CHARACTERISTICS_AT = len(PRAGMA)
_DATA_OFFSET_AT = _CHARACTERISTICS_AT + 16
_DATA_SIZE_AT = _DATA_OFFSET_AT + 8
_INDEX_OFFSET_AT = _DATA_SIZE_AT + 8


@dataclass
class Layout:
    """Where things are in a CAR file (absolute offsets).

    ``payload_start``: the CARv1 payload's first byte (0 for a CARv1; index entries count
    from there); ``sections_start`` .. ``data_end``: the sections; ``index_offset``: a
    CARv2 index to check (None if there is none or it cannot be read)."""

    size: int
    version: int | None = None
    roots: list[cbor.Link] = field(default_factory=list)
    v2: V2Header | None = None
    payload_start: int = 0
    sections_start: int = 0
    data_end: int = 0
    index_offset: int | None = None
    walkable: bool = False


class _Refused(Exception):
    """A header problem that leaves the rest of the file unreadable."""

    def __init__(self, found: Finding) -> None:
        super().__init__(found.detail)
        self.finding = found


def _read_exactly(fd: int, size: int, offset: int) -> bytes:
    raw = read_at(fd, size, offset)
    if len(raw) != size:  # the file was shorter than fstat said: it shrank meanwhile
        raise FileChangedError(f"the file ended at offset {offset + len(raw)} while being read "
                               f"(it held more when opened)")
    return raw


_VARINT_WORDS = {"cut": "runs past the end", "overlong": "is longer than 9 bytes",
                 "non_minimal": "is not minimally encoded"}


def _v1_header(fd: int, start: int, end: int, where: str) -> tuple[Any, int]:
    """The decoded CARv1 header at ``start`` that must end by ``end``, and where it ends.
    ``where`` names the container in messages ("the file", "the data payload")."""
    if start >= end:
        raise _Refused(finding(start, "car_header_length", f"{where} is empty"))
    head = _read_exactly(fd, min(MAX_VARINT_BYTES, end - start), start)
    try:
        length, body = read_varint(head, 0, len(head))
    except VarintProblem as exc:
        raise _Refused(finding(start, "car_header_length",
                               f"the header's length varint {_VARINT_WORDS[exc.kind]}")) from None
    if length == 0:
        raise _Refused(finding(start, "car_header_length", "the header's length is zero"))
    if length > MAX_HEADER_SIZE:
        raise _Refused(finding(start, "car_header_length",
                               f"the header declares {length} bytes, over the "
                               f"{MAX_HEADER_SIZE >> 20} MiB limit"))
    body += start
    if length > end - body:
        raise _Refused(finding(start, "car_header_length",
                               f"the header declares {length} bytes but {end - body} remain "
                               f"in {where}"))
    raw = _read_exactly(fd, length, body)
    try:
        value = cbor.decode(raw, profile="dag-cbor")
    except DecodeError as exc:
        at = body + (exc.offset or 0)
        what = exc.detail if isinstance(exc.detail, str) else str(exc)
        raise _Refused(finding(at, "car_header_invalid",
                               f"not strict DAG-CBOR ({exc.code}): {what} at header byte "
                               f"{exc.offset}")) from None
    return value, body + length


def _schema(value: Any, at: int, layout: Layout, found: list[Finding], *, payload: bool) -> None:
    """Check a decoded CARv1 header (``at``: its first byte) and fill ``layout``."""
    if not isinstance(value, dict):
        raise _Refused(finding(at, "car_header_schema",
                               f"the header is {type(value).__name__}, not a map"))
    version = value.get("version")
    if type(version) is not int:
        raise _Refused(finding(at, "car_header_schema",
                               "the header has no integer version" if version is None else
                               f"the header's version is {type(version).__name__}, not an "
                               "integer"))
    if version == 2 and not payload:
        raise _Refused(finding(at, "car_header_schema",
                               "a version 2 header must be exactly the CARv2 pragma "
                               f"{PRAGMA.hex()}"))
    if version != 1:
        raise _Refused(finding(at, "car_unsupported_version",
                               f"the data payload's header has version {version}; it must be 1"
                               if payload else f"version {version} (CAR has versions 1 and 2)"))
    extra = sorted(str(k) for k in value if k not in ("version", "roots"))
    if extra:
        found.append(finding(at, "car_header_schema",
                             "the header has keys other than version and roots: "
                             + ", ".join(repr(k) for k in extra)))
    if "roots" not in value:
        found.append(finding(at, "car_header_schema", "the header has no roots"))
        return
    roots = value["roots"]
    if not isinstance(roots, list):
        found.append(finding(at, "car_roots_invalid",
                             f"the roots are {type(roots).__name__}, not an array"))
        return
    for i, root in enumerate(roots):
        if isinstance(root, cbor.Link):
            layout.roots.append(root)
        else:
            found.append(finding(at, "car_roots_invalid",
                                 f"root {i} is {type(root).__name__}, not a CID (tag 42)"))
    if not roots:
        found.append(finding(at, "car_no_roots", "the roots array is empty"))


def _first_nonzero(fd: int, start: int, end: int) -> int | None:
    """The offset of the first byte other than zero in ``[start, end)``, read in blocks."""
    pos = start
    while pos < end:
        block = _read_exactly(fd, min(_PADDING_BLOCK, end - pos), pos)
        stripped = block.lstrip(b"\0")
        if stripped:
            return pos + len(block) - len(stripped)
        pos += len(block)
    return None


def _padding(fd: int, start: int, end: int, what: str, found: list[Finding]) -> None:
    first = _first_nonzero(fd, start, end)
    if first is not None:
        found.append(finding(first, "car_nonzero_padding",
                             f"the {end - start} bytes of padding {what} are not all zero"))


def _v2(fd: int, layout: Layout, found: list[Finding]) -> None:
    size = layout.size
    if size < CARV2_PREFIX:
        raise _Refused(finding(len(PRAGMA), "car_v2_header_truncated",
                               f"the file has {size} bytes; a CARv2 has {CARV2_PREFIX} before "
                               "its data payload"))
    v2 = layout.v2 = parse_v2_header(_read_exactly(fd, 40, len(PRAGMA)))
    if v2.reserved_bits:
        found.append(finding(_CHARACTERISTICS_AT, "car_characteristics",
                             f"characteristics {v2.characteristics.hex()}: reserved bits are "
                             "set (only the fully-indexed bit is defined)"))
    if v2.data_offset < CARV2_PREFIX:
        raise _Refused(finding(_DATA_OFFSET_AT, "car_data_offset",
                               f"the data offset {v2.data_offset} points inside the pragma "
                               f"and header (the payload starts at {CARV2_PREFIX} or later)"))
    if v2.data_offset >= size:
        raise _Refused(finding(_DATA_OFFSET_AT, "car_data_offset",
                               f"the data offset {v2.data_offset} is at or past the end of the "
                               f"file ({size} bytes)"))
    if v2.data_size == 0:
        raise _Refused(finding(_DATA_SIZE_AT, "car_data_size", "the data size is zero"))
    declared_end = v2.data_offset + v2.data_size
    layout.payload_start = v2.data_offset
    layout.data_end = min(declared_end, size)
    if declared_end > size:
        found.append(finding(_DATA_SIZE_AT, "car_data_size",
                             f"the data payload would end at offset {declared_end}, past the "
                             f"end of the file ({size} bytes); it is walked to the end of the "
                             "file"))
    _padding(fd, CARV2_PREFIX, v2.data_offset, "before the data payload", found)
    padding_end: int | None = size  # None: an index is declared where none can be read
    if v2.index_offset:
        padding_end = None
        if v2.index_offset < declared_end:
            found.append(finding(_INDEX_OFFSET_AT, "car_index_offset",
                                 f"the index offset {v2.index_offset} points inside the header "
                                 f"or the data payload (which ends at {declared_end}); the "
                                 "index is not checked"))
        elif v2.index_offset >= size:
            found.append(finding(_INDEX_OFFSET_AT, "car_index_offset",
                                 f"the index offset {v2.index_offset} is at or past the end of "
                                 f"the file ({size} bytes); the index is not checked"))
        else:
            layout.index_offset = padding_end = v2.index_offset
    if padding_end is not None and declared_end < padding_end:
        _padding(fd, declared_end, padding_end,
                 "before the index" if layout.index_offset else "after the data payload",
                 found)
    value, layout.sections_start = _v1_header(fd, v2.data_offset, layout.data_end,
                                              "the data payload")
    _schema(value, v2.data_offset, layout, found, payload=True)


def read_layout(fd: int, size: int) -> tuple[Layout, list[Finding]]:
    """The layout of the CAR file open as ``fd`` (``size`` bytes), and the findings of its
    headers. FileChangedError if the file turns out shorter than ``size``."""
    layout = Layout(size=size, data_end=size)
    found: list[Finding] = []
    try:
        if size >= len(PRAGMA) and _read_exactly(fd, len(PRAGMA), 0) == PRAGMA:
            layout.version = 2
            _v2(fd, layout, found)
        else:
            value, layout.sections_start = _v1_header(fd, 0, size, "the file")
            _schema(value, 0, layout, found, payload=False)
            layout.version = 1
    except _Refused as refused:
        found.append(refused.finding)
        layout.index_offset = None
        return layout, found
    layout.walkable = True
    return layout, found
