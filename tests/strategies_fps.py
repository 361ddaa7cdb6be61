"""Hypothesis strategies for FPS/1: payloads, levels and operation calls, valid or not.

Payload bytes come from a seeded ``random.Random`` so large sizes stay cheap to draw
(hypothesis shrinks the size and the random seed, not megabytes of bytes).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

LEVELS = ("bit", "byte", "word", "long")
UNIT_BITS = {"bit": 1, "byte": 8, "word": 16, "long": 32}
levels = st.sampled_from(LEVELS)


def payloads(max_size: int = 256) -> st.SearchStrategy[bytes]:
    """Bytes of 0..max_size, small sizes favoured; large ones from a seeded PRNG."""
    small = st.binary(max_size=min(max_size, 64))
    if max_size <= 64:
        return small
    seeded = st.builds(
        lambda size, seed: random.Random(seed).randbytes(size),
        st.integers(0, max_size), st.integers(0, 2**32),
    )
    return st.one_of(small, seeded)


@st.composite
def whole_units(draw: st.DrawFn, max_size: int = 256) -> tuple[bytes, str]:
    """A payload that is a whole number of units of the drawn level."""
    level = draw(levels)
    data = draw(payloads(max_size))
    unit = max(UNIT_BITS[level] // 8, 1)
    return data[: len(data) - len(data) % unit], level


@st.composite
def valid_ranges(draw: st.DrawFn, max_size: int = 256) -> tuple[bytes, str, int, int]:
    """(data, level, offset, length) that slice/splice accept: in range, whole bytes."""
    data = draw(payloads(max_size))
    level = draw(levels)
    bits = UNIT_BITS[level]
    units = len(data) * 8 // bits
    offset = draw(st.integers(0, units))
    step = 8 // bits if bits < 8 else 1  # length*bits must be a multiple of 8
    length = draw(st.integers(0, (units - offset) // step)) * step
    return data, level, offset, length


# values that stress argument checking: valid, negative, huge, non-integer
counts = st.one_of(
    st.integers(0, 600),
    st.integers(-3, -1),
    st.sampled_from([2**63, 2**64 - 1, 2**64, 2**70]),
    st.sampled_from([1.0, "1", None, True, b"\x01"]),
)
any_level = st.one_of(levels, st.sampled_from(["nibble", "", "BIT", None, 8]))
maybe_buffers = st.one_of(
    payloads(80), payloads(80).map(bytearray), st.sampled_from(["ab", 7, None])
)


@dataclass
class Call:
    """One operation call; ``apply(module)`` runs it on a backend."""

    op: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    def apply(self, module: Any) -> Any:
        return getattr(module, self.op)(*self.args, **self.kwargs)


def calls() -> st.SearchStrategy[Call]:
    """Arbitrary calls, most valid, many refused (the differential sees both)."""
    valid_slice = valid_ranges(600).map(lambda r: Call("slice", r))
    valid_splice = st.builds(
        lambda r, ins: Call("splice", (r[0], r[2], r[3], ins, r[1])),
        valid_ranges(600), payloads(40),
    )
    valid_reverse = whole_units(600).map(lambda r: Call("reverse", r))
    any_slice = st.builds(lambda d, o, n, lv: Call("slice", (d, o, n, lv)),
                          maybe_buffers, counts, counts, any_level)
    any_splice = st.builds(lambda d, o, n, i, lv: Call("splice", (d, o, n, i, lv)),
                           maybe_buffers, counts, counts, maybe_buffers, any_level)
    any_reverse = st.builds(lambda d, lv: Call("reverse", (d, lv)), maybe_buffers, any_level)
    any_concat = st.builds(lambda items: Call("concat", (items,)),
                           st.one_of(st.lists(maybe_buffers, max_size=4),
                                     st.lists(payloads(80), max_size=4).map(tuple),
                                     maybe_buffers))
    return st.one_of(valid_slice, valid_splice, valid_reverse, any_slice, any_splice,
                     any_reverse, any_concat)
