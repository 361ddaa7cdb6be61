"""Reading a CAR file one section at a time: :class:`CarFile` and :func:`blocks`
(``canonkit car ls`` and ``extract`` read this way; ``verify`` runs the kernel instead).

The sections stream through one buffer as in ``verify`` (see ``verifier.walk``); each
section comes out with the findings of its block, and framing problems come out as
findings in the order of the file, so a listing shows where the file breaks.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, NamedTuple, cast

from .. import cbor
from .._files import Identity, check_unchanged, open_regular
from ..errors import CanonkitError, FileChangedError
from .findings import Finding, finding, from_problem
from .format import DAG_CBOR, CidFields, CidProblem, parse_cid
from .frames import Frame, Need, Stop, Zero, block_problems, next_frame
from .header import Layout, read_layout
from .window import Source, Window

__all__ = ["Block", "CarFile", "Section", "blocks", "open_car"]

PathLike = str | os.PathLike[str]


class Section(NamedTuple):
    """A section as read: ``offset`` of its first byte, its whole ``length`` (varint
    included), its CID (None if it does not parse) and fields, where its block's bytes lie
    in the file, its bytes, and the findings of its block (empty when it verifies)."""

    offset: int
    length: int
    cid: cbor.Link | None
    fields: CidFields | None
    data_offset: int
    data_length: int
    data: bytes
    findings: list[Finding]


class Block(NamedTuple):
    """A verified block: its section's offset in the file, its CID and its bytes."""

    offset: int
    cid: cbor.Link
    data: bytes


def _frames(handle: Source, start: int, end: int) -> Iterator[tuple[str, int, Any, Any]]:
    """``("frame", offset, section bytes, CID's index in them)``, ``("zero", offset, _, _)``
    or ``("stop", offset, code, info)`` for what lies between ``start`` and ``end``."""
    window = Window(handle, start, end)
    while True:
        p = 0
        wanted = 0
        with window.fill() as view:
            pos = window.pos
            while True:
                frame = next_frame(view, p, pos, end)
                if isinstance(frame, Frame):
                    yield ("frame", pos + frame.start, bytes(view[frame.start:frame.end]),
                           frame.cid_start - frame.start)
                    p = frame.end
                elif isinstance(frame, Zero):
                    yield ("zero", pos + p, None, None)
                    p += 1
                elif isinstance(frame, Need):
                    wanted = frame.wanted
                    break
                elif isinstance(frame, Stop):
                    yield ("stop", pos + p, frame.code, frame.info)
                    return
                else:
                    return
        window.advance(p, wanted)


class CarFile:
    """An open CAR file: its layout (``version``, ``roots``, ``layout``), the findings of
    its headers (``header_findings``) and :meth:`sections`. A context manager; the file is
    the one that was opened to the end (FileChangedError otherwise, on :meth:`close`)."""

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        self._handle = open_regular(path)
        try:
            self._started = Identity.of(os.fstat(self._handle.fileno()))
            self.layout: Layout
            self.layout, self.header_findings = read_layout(self._handle.fileno(),
                                                            self._started.size)
        except BaseException:
            self._handle.close()
            raise

    @property
    def version(self) -> int | None:
        return self.layout.version

    @property
    def roots(self) -> list[cbor.Link]:
        return self.layout.roots

    def sections(self, *, strict: bool = False) -> Iterator[Section | Finding]:
        """Each section in file order, with its block's findings (``strict``: a dag-cbor
        block that is not strict DAG-CBOR is one), and framing problems as findings. Nothing
        when the layout is not walkable (``header_findings`` say why)."""
        if not self.layout.walkable:
            return
        zeros: list[int] = []

        def zero_run() -> Finding:
            run = from_problem(("car_zero_length_section", zeros[0], None, (len(zeros),)))
            zeros.clear()
            return run

        for kind, offset, value, cid_at in _frames(cast(Source, self._handle),
                                                   self.layout.sections_start,
                                                   self.layout.data_end):
            if zeros and kind != "zero":
                yield zero_run()
            if kind == "zero":
                zeros.append(offset)
            elif kind == "stop":
                yield from_problem((value, offset, None, cid_at))
            else:
                yield self._section(offset, value, cid_at, strict)
        if zeros:
            yield zero_run()

    def _section(self, offset: int, raw: bytes, cid_at: int, strict: bool) -> Section:
        try:
            fields = parse_cid(raw, cid_at, len(raw))
        except CidProblem as exc:
            bad = from_problem(("car_cid_invalid", offset, None, (exc.reason, exc.value)))
            return Section(offset, len(raw), None, None, offset + cid_at, len(raw) - cid_at,
                           raw[cid_at:], [bad])
        cid = raw[cid_at:fields.end]
        data = memoryview(raw)[fields.end:]
        expected = raw[fields.digest_start:fields.end]
        found = [from_problem((code, offset, cid, info))
                 for code, info in block_problems(fields, expected, data)]
        if strict and fields.codec == DAG_CBOR:
            try:
                cbor.check(data, profile="dag-cbor")
            except CanonkitError as exc:
                found.append(from_problem(("car_strict_decode", offset, cid,
                                           (exc.code, exc.offset, str(exc)))))
        return Section(offset, len(raw), cbor.Link(cid), fields, offset + fields.end,
                       len(raw) - fields.end, raw[fields.end:], found)

    def read(self, section: Section) -> bytes:
        """The block bytes of ``section``."""
        from .format import read_at

        data = read_at(self._handle.fileno(), section.data_length, section.data_offset)
        if len(data) != section.data_length:
            raise FileChangedError(f"{self.path}: the file ended while being read")
        return data

    def close(self) -> None:
        """Close the file; FileChangedError if it is not the file that was opened."""
        try:
            check_unchanged(self._handle, self.path, self._started)
        finally:
            self._handle.close()

    def __enter__(self) -> CarFile:
        return self

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is None:
            self.close()
        else:
            self._handle.close()


def open_car(path: PathLike) -> CarFile:
    """Open the CAR file at ``path`` (see :class:`CarFile`)."""
    return CarFile(path)


def blocks(path: PathLike, *, strict: bool = False) -> Iterator[Block]:
    """Each block of the CAR file at ``path``, in file order, after its digest was
    recomputed (and, with ``strict``, a dag-cbor block decoded strictly). The first error
    ``verify`` would report in a header, the framing or a block is raised as its
    ``canonkit.errors.CARError`` subclass, with its file offset; a CARv2 index is not
    read, and warnings are not raised."""
    with CarFile(path) as car:
        for found in car.header_findings:  # the index is not read: nor is its offset's problem
            if found.severity == "error" and found.code != "car_index_offset":
                raise found.error()
        for item in car.sections(strict=strict):
            problems = [item] if isinstance(item, Finding) else item.findings
            for found in problems:
                if found.severity == "error":
                    raise found.error()
            if isinstance(item, Section) and item.cid is not None:
                yield Block(item.offset, item.cid, item.data)
