"""The section reader: where the next section of a data payload lies, and what is wrong
with a block, as the CARv1 rules say (docs/car.md, "Sections"). Pure Python and shared:
the kernel's twin (``_sections_py.Scanner``) walks with it, and so do the readers that hand
out blocks one at a time (``canonkit.car.blocks``, ``ls``, ``extract``).

Positions are indexes into ``view``, a buffer holding the file's bytes from file offset
``pos``; ``data_end`` is the file offset the data ends at.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .format import (
    HASH_FUNCTIONS,
    IDENTITY,
    MAX_VARINT_BYTES,
    CidFields,
    VarintProblem,
    digest,
    read_varint,
)

__all__ = ["End", "Frame", "Need", "Stop", "Zero", "block_problems", "next_frame"]


class Frame(NamedTuple):
    """A whole section in the view: its first byte, its CID's first byte, its end."""

    start: int
    cid_start: int
    end: int


class Zero(NamedTuple):
    """A zero-length section (one byte, 0x00) at ``start``."""

    start: int


class Need(NamedTuple):
    """The view ends inside the next section: ``wanted`` bytes from its start are needed."""

    wanted: int


class Stop(NamedTuple):
    """A framing error at view position ``start``: the rest of the data cannot be walked."""

    start: int
    code: str
    info: tuple[Any, ...]


class End(NamedTuple):
    """The walk reached the end of the data."""


def next_frame(view: Any, p: int, pos: int, data_end: int) -> Frame | Zero | Need | Stop | End:
    """What starts at view position ``p``."""
    here = pos + p
    if here >= data_end:
        return End()
    n = len(view)
    try:
        length, q = read_varint(view, p, n)
    except VarintProblem as exc:
        if exc.kind == "cut" and pos + n < data_end:
            return Need(min(MAX_VARINT_BYTES, data_end - here))
        return Stop(p, "car_section_length", (exc.kind,))
    if length == 0:
        return Zero(p)
    available = data_end - (pos + q)
    if length > available:
        return Stop(p, "car_section_truncated", (length, available))
    if q + length > n:
        return Need(q - p + length)
    return Frame(p, q, q + length)


def block_problems(cid: CidFields, expected: bytes, block: Any
                   ) -> list[tuple[str, tuple[Any, ...]]]:
    """What is wrong with ``block`` under its CID (``expected`` is the CID's digest):
    ``[]`` when it verifies, else ``(code, info)`` pairs (a short digest that matches is a
    warning and the only pair)."""
    if cid.hash_code == IDENTITY:
        if expected == bytes(block):
            return []
        return [("car_digest_mismatch", ("identity", cid.digest_length, len(block)))]
    function = HASH_FUNCTIONS.get(cid.hash_code)
    if function is None:
        return [("car_unknown_multihash", (cid.hash_code,))]
    if cid.digest_length > function.size and not function.xof:
        return [("car_digest_length", (cid.hash_code, cid.digest_length, function.size))]
    found: list[tuple[str, tuple[Any, ...]]] = []
    got = digest(cid.hash_code, block, cid.digest_length)
    if got != expected:
        found.append(("car_digest_mismatch", (cid.hash_code, got, len(block))))
    if cid.digest_length < function.size:
        found.append(("car_short_digest", (cid.hash_code, cid.digest_length, function.size)))
    return found
