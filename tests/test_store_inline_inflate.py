"""The compiled store readers inflate small DEFLATE objects themselves (in C, with zlib)
when the inflater is marked ``deflate.inlinable``; the outcome must be exactly the one
the twin gets by calling that inflater in Python: the same bytes, or the same error
class, code and offset, on intact and on hostile streams (flipped bytes, truncations,
extensions, wrong declared lengths, wrong digests), loose and packed (``entry``, ``find``,
``read_many``), verified or not."""
from __future__ import annotations

import zlib
from typing import Any

from blake3 import blake3
from conftest import backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies_store import mutated, object_bytes

from canonkit.errors import CorruptObjectError
from canonkit.store import deflate
from canonkit.store.packwriter import encode_pack

SETTINGS = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])


def _outcome(call: Any) -> tuple[Any, ...]:
    try:
        value = call()
    except CorruptObjectError as exc:
        return ("error", exc.detail, exc.offset)
    return ("value", bytes(value))


def _loose(stream: bytes, logical: int) -> bytes:
    return b"CKL1\x01" + logical.to_bytes(8, "big") + stream


def _stdlib_inflate(payload: Any, logical: int, base: int = 0,
                    digest: bytes | None = None) -> bytes:
    """``deflate.inflate`` with the standard library's zlib (the library the compiled
    readers link), not marked inlinable: always called."""
    return deflate.inflate(payload, logical, base, digest, module=zlib)


def _both_loose(content: bytes, digest: bytes | None) -> tuple[tuple[Any, ...], ...]:
    compiled, twin = backend_pair("store")
    return tuple(_outcome(lambda: kernel.read_loose(content, digest, inflater))
                 for kernel, inflater in ((compiled, deflate.inflate),
                                          (twin, deflate.inflate),
                                          (twin, _stdlib_inflate)))


def _same(outcomes: tuple[tuple[Any, ...], ...]) -> None:
    inline, twin, stdlib = outcomes
    assert inline == twin
    if twin[0] == "value":  # two zlibs may word an error differently, never a value
        assert stdlib == twin


@SETTINGS
@given(object_bytes(), st.data(), st.sampled_from(["digest", "none", "wrong"]),
       st.integers(-2, 2))
@example(b"", None, "digest", 0)  # type: ignore[arg-type]
def test_a_loose_deflate_file_reads_the_same_inline_and_in_python(
        data: bytes, draw: st.DataObject | None, verify: str, skew: int) -> None:
    stream = zlib.compress(data, 6)
    if draw is not None and draw.draw(st.booleans()):
        stream = draw.draw(mutated(stream))
    logical = max(0, len(data) + skew)  # a declared length off by up to two either way
    digest = {"digest": blake3(data).digest(), "none": None,
              "wrong": blake3(data + b"!").digest()}[verify]
    _same(_both_loose(_loose(stream, logical), digest))


@SETTINGS
@given(st.lists(object_bytes(), min_size=1, max_size=6, unique=True), st.data(),
       st.booleans())
def test_packed_deflate_entries_read_the_same_inline_and_in_python(
        items: list[bytes], draw: st.DataObject, verify: bool) -> None:
    entries = sorted(((blake3(d).digest(), True, zlib.compress(d, 6), len(d)) for d in items))
    pack, idx = encode_pack(entries)
    pack = draw.draw(st.one_of(st.just(pack), mutated(pack)))
    compiled, twin = backend_pair("store")
    answers = []
    for kernel in (compiled, twin):
        try:
            reader, index = kernel.Pack(pack), kernel.Index(idx)
        except CorruptObjectError as exc:
            answers.append([("error", exc.detail, exc.offset)])
            continue
        digests = b"".join(d for d, *_ in entries)
        got = [_outcome(lambda: reader.entry(index.lookup(d), d if verify else None,
                                             deflate.inflate))
               for d, *_ in entries]
        got += [_outcome(lambda: reader.find(index, d, verify, deflate.inflate) or b"")
                for d, *_ in entries]
        out: list[Any] = [None] * len(entries)
        got.append(_outcome(lambda: reader.read_many(index, digests, out, verify,
                                                     deflate.inflate) and b""))
        got.append([None if v is None else bytes(v) for v in out])
        answers.append(got)
    assert answers[0] == answers[1]


def test_a_stream_with_bytes_after_its_end_is_refused_inline_as_in_python() -> None:
    data = b"abc" * 100
    content = _loose(zlib.compress(data) + b"\0", len(data))
    inline, twin, _ = _both_loose(content, blake3(data).digest())
    assert inline == twin == ("error", "trailing_bytes", 13 + len(zlib.compress(data)))


def test_a_stream_longer_than_declared_is_refused_inline_as_in_python() -> None:
    data = b"abc" * 100
    inline, twin, _ = _both_loose(_loose(zlib.compress(data), len(data) - 1), None)
    assert inline == twin == ("error", "length_mismatch", 13)


def test_the_inliner_marks_only_inflaters_that_match_inflate() -> None:
    from canonkit.store import fsck_units

    assert deflate.inflate.inline_limit == deflate.SMALL  # type: ignore[attr-defined]
    assert fsck_units._inflate.inline_limit == deflate.SMALL  # type: ignore[attr-defined]
    assert not hasattr(deflate.stream, "inline_limit")
