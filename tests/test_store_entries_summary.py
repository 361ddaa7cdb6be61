"""``Pack.check_entries_summary`` (fsck's entry loop): the compiled kernel and the twin
give the same leaves, counts and remaining entries (the same error codes at the same
offsets) on generated packs of leaves, structured objects (first byte a CBOR map head),
raw and DEFLATE entries, damaged or not; and the summary says what ``check_entries``
says, entry by entry."""
from __future__ import annotations

from typing import Any

from blake3 import blake3
from conftest import backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies_store import build_pack, mutated, object_bytes

from canonkit.errors import CorruptObjectError
from canonkit.store import deflate
from canonkit.store.deflate import Inflated, inflate
from canonkit.store.fsck_units import _inflate as fsck_inflate
from canonkit.store.mark import MAP_HEADS, may_be_structured

SETTINGS = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])

# first bytes around and inside the CBOR map heads (0xa0-0xbb): leaves and structured
FIRSTS = [0x00, 0x9F, 0xA0, 0xA1, 0xA2, 0xBB, 0xBC, 0xBF, 0xFF]


def streaming(payload: Any, logical: int, base: int, digest: bytes | None) -> Any:
    """An inflater (not inlinable) that streams every object of more than 40 bytes, as
    fsck streams large ones: the kernels hand its ``Inflated`` back as it is."""
    if logical <= 40:
        return inflate(payload, logical, base, digest)
    return deflate.stream(payload, logical, base, digest, keep=may_be_structured)


INFLATERS = {"fsck": fsck_inflate, "plain": inflate, "streaming": streaming}


@st.composite
def summary_items(draw: st.DrawFn) -> list[tuple[bytes, bool]]:
    """Distinct objects, some starting with a map head, each raw or DEFLATE."""
    raw = draw(st.lists(st.tuples(st.one_of(st.none(), st.sampled_from(FIRSTS)),
                                  object_bytes(300), st.booleans()), max_size=10))
    items: dict[bytes, bool] = {}
    for first, body, deflated in raw:
        data = body if first is None else bytes([first]) + body
        items.setdefault(data, deflated)
    return list(items.items())


def plain(value: Any) -> Any:
    if isinstance(value, CorruptObjectError):
        return ("err", value.detail, value.offset)
    if isinstance(value, memoryview):
        return ("view", bytes(value))
    if isinstance(value, Inflated):
        return ("inflated", value.size, value.first,
                None if value.data is None else bytes(value.data))
    return ("bytes", bytes(value))


def outcome(pack: Any, offsets: list[int], digests: bytes, how: str, copy: bool) -> Any:
    try:
        leaves, leaf_bytes, deflated, deflated_bytes, rest = pack.check_entries_summary(
            offsets, digests, INFLATERS[how], copy)
    except CorruptObjectError as exc:
        return ("raised", exc.detail, exc.offset)
    except ValueError as exc:
        return ("raised", type(exc).__name__)
    assert type(leaves) is bytes and len(leaves) % 32 == 0
    return leaves, leaf_bytes, deflated, deflated_bytes, [(i, plain(v)) for i, v in rest]


@SETTINGS
@given(st.data(), summary_items(), st.sampled_from(sorted(INFLATERS)), st.booleans())
@example(None, [(b"\xa1", True), (b"\x00leaf", True), (b"", False), (b"\xbb" * 50, True)],
         "streaming", False)
def test_summary_differential(data: Any, items: list[tuple[bytes, bool]], how: str,
                              copy: bool) -> None:
    c, py = backend_pair("store")
    pack_bytes, _, offsets = build_pack(items)
    damaged = pack_bytes if data is None else data.draw(mutated(pack_bytes))
    listed = sorted(offsets.values())
    digests = b"".join(sorted(offsets, key=offsets.__getitem__))
    extra: list[int] = [] if data is None else data.draw(
        st.lists(st.integers(-2, len(damaged) + 9), max_size=2))
    wrong = b"\x00" * 32 * len(extra)  # offsets no index gives: framing errors, mismatches
    results = []
    for kernel in (c, py):
        try:
            pack = kernel.Pack(damaged)
        except CorruptObjectError as exc:
            results.append(("no pack", exc.detail, exc.offset))
            continue
        results.append(outcome(pack, listed + extra, digests + wrong, how, copy))
        pack.release()
    assert results[0] == results[1]


@SETTINGS
@given(summary_items(), st.sampled_from(sorted(INFLATERS)))
def test_summary_agrees_with_check_entries(items: list[tuple[bytes, bool]], how: str) -> None:
    """Entry by entry: an intact leaf is summed up (its digest, its bytes), anything else
    comes back as ``check_entries`` returns it; DEFLATE counts go by the form byte."""
    pack_bytes, _, offsets = build_pack(items)
    by_digest = {blake3(d).digest(): (d, deflated) for d, deflated in items}
    order = sorted(offsets, key=offsets.__getitem__)
    for kernel in backend_pair("store"):
        pack = kernel.Pack(pack_bytes)
        checked = pack.check_entries([offsets[d] for d in order], b"".join(order),
                                     INFLATERS[how], False)
        leaves, leaf_bytes, deflated, deflated_bytes, rest = pack.check_entries_summary(
            [offsets[d] for d in order], b"".join(order), INFLATERS[how], False)
        want_rest = [(i, got) for i, got in enumerate(checked)
                     if isinstance(got, Inflated) or (len(got) and got[0] in MAP_HEADS)]
        assert [(i, plain(v)) for i, v in rest] == [(i, plain(v)) for i, v in want_rest]
        is_leaf = [i not in dict(want_rest) for i in range(len(order))]
        assert leaves == b"".join(d for d, leaf in zip(order, is_leaf) if leaf)
        assert leaf_bytes == sum(len(by_digest[d][0]) for d, leaf in zip(order, is_leaf)
                                 if leaf)
        assert deflated == sum(flag for _, flag in items)
        assert deflated_bytes == sum(len(d) for d, flag in items if flag)
        del checked, rest, want_rest
        pack.release()


def test_summary_rejects_digests_of_the_wrong_length() -> None:
    for kernel in backend_pair("store"):
        pack_bytes, _, offsets = build_pack([(b"x", False)])
        pack = kernel.Pack(pack_bytes)
        assert outcome(pack, list(offsets.values()), b"\x00" * 31, "plain", True) == (
            "raised", "ValueError")
        pack.release()
