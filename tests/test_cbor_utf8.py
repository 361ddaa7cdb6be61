"""The compiled decoder's strict UTF-8 check (ext/cbor/cbor_utf8.h) against CPython's
strict decoder, for every kernel this CPU runs (scalar, SSE4.1, AVX2): ``check`` and
``decode`` of a CBOR text string accept exactly the bytes ``bytes.decode("utf-8")``
accepts, and reject the others with ``invalid_utf8`` at the string's head, as the twin
does. The vector kernels work in 16- and 32-byte blocks and look three bytes back, so the
inputs put their edits on and around the block boundaries."""
from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from cbor_kernels import UTF8_KERNELS
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from canonkit import errors

FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture],
                      max_examples=300)
# offsets around the 16-, 32- and 64-byte block boundaries
EDGES = sorted({b + d for b in (16, 32, 48, 64, 96, 128) for d in range(-4, 4)})


def text_item(b: bytes) -> bytes:
    """A CBOR text string (major type 3, shortest head) holding the bytes b."""
    n = len(b)
    if n < 24:
        head = bytes([0x60 | n])
    elif n < 0x100:
        head = bytes([0x78, n])
    elif n < 0x10000:
        head = b"\x79" + n.to_bytes(2, "big")
    else:
        head = b"\x7a" + n.to_bytes(4, "big")
    return head + b


def cpython_ok(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def checks(c: ModuleType, b: bytes) -> bool:
    """Whether the compiled check accepts b as a text string."""
    try:
        c.check(text_item(b))
    except errors.InvalidUTF8Error:
        return False
    return True


def outcome(fn: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "ok", fn(data)
    except errors.DecodeError as exc:
        return "error", (type(exc), exc.code, exc.offset)


def assert_agrees(c: ModuleType, py: ModuleType, b: bytes) -> None:
    """check and decode of b as a text string, alone and as the second item of an array
    (so the string's head is not at offset 0), against CPython and the twin."""
    ok = cpython_ok(b)
    for data, start in ((text_item(b), 0), (b"\x82\x01" + text_item(b), 2)):
        expected = ("ok", None) if ok else ("error", (errors.InvalidUTF8Error, "invalid_utf8",
                                                      start))
        assert outcome(c.check, data) == expected, b.hex()
        assert outcome(py.check, data) == expected, b.hex()
        got = outcome(c.decode, data)
        if ok:
            value = b.decode("utf-8")
            assert got == ("ok", value if start == 0 else [1, value])
        else:
            assert got == expected, b.hex()


# valid text of every UTF-8 length (1-4 bytes), as bytes
texts = st.text(st.characters(codec="utf-8"), max_size=120).map(lambda s: s.encode())
long_texts = st.text(st.characters(codec="utf-8"), min_size=100, max_size=1500).map(
    lambda s: s.encode())
mostly_ascii = st.builds(lambda pad, t: b"a" * pad + t, st.integers(0, 70), texts)


@st.composite
def mutated_text(draw: st.DrawFn) -> bytes:
    """Valid UTF-8 with one byte set, inserted or deleted, or cut short, at a random
    position or one near a block boundary."""
    b = bytearray(draw(st.one_of(texts, mostly_ascii, long_texts)))
    near = [e for e in EDGES if e <= len(b)]
    at = draw(st.sampled_from(near) if near and draw(st.booleans())
              else st.integers(0, len(b)))
    op = draw(st.sampled_from(["set", "insert", "delete", "truncate"]))
    byte = draw(st.one_of(st.integers(0, 255),
                          st.sampled_from([0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xE0, 0xED, 0xF0,
                                           0xF4, 0xF5, 0xFF])))
    if op == "set" and at < len(b):
        b[at] = byte
    elif op == "insert":
        b.insert(at, byte)
    elif op == "delete" and at < len(b):
        del b[at]
    elif op == "truncate":
        del b[at:]
    return bytes(b)


@FIXTURE_OK
@given(b=st.one_of(st.binary(max_size=200), mutated_text(), texts, long_texts))
@example(b=b"")
@example(b=b"a" * 31 + b"\xc3")  # a lead byte as the last byte of a block and the string
@example(b=b"a" * 30 + b"\xe2\x82")
@example(b=b"a" * 29 + b"\xf0\x9f\x98")
@example(b=b"a" * 64 + b"\xf0\x9f\x98")
@example(b=b"a" * 15 + b"\xed\xa0\x80" + b"a" * 20)  # a surrogate across 16 bytes
@example(b=b"a" * 31 + b"\xf4\x90\x80\x80" + b"a" * 40)  # U+110000 across 32 bytes
@example(b=b"a" * 32 + b"\xe0\x9f\xbf" + b"a" * 40)  # an overlong 3-byte form
@example(b=b"a" * 33 + b"\xf0\x8f\xbf\xbf" + b"a" * 40)  # an overlong 4-byte form
@example(b=b"a" * 40 + b"\xc1\xbf" + b"a" * 40)  # an overlong 2-byte form
@example(b=b"\xc3\xa9" * 16 + b"\x80" + b"a" * 40)  # a stray continuation
@example(b=b"\xe2\x82\xac" * 30 + b"a" * 2)  # the last block overlaps the one before
def test_matches_cpython(cbor_pair: Any, utf8_kernel: str, b: bytes) -> None:
    assert_agrees(cbor_pair[0], cbor_pair[1], b)


# bytes that sit on the boundaries of the byte classes the kernels tell apart
EDGE_BYTES = (0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
              0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF)


@pytest.mark.parametrize("at", [13, 30, 31, 62])
def test_every_edge_triple(cbor_pair: Any, utf8_kernel: str, at: int) -> None:
    """Every three edge bytes, then a fourth (ASCII or a continuation), at offset ``at`` of
    a string long enough for the vector kernels, with valid 2- and 3-byte text around."""
    c = cbor_pair[0]
    before = ("é" * at).encode()[:at]
    if not cpython_ok(before):
        before = before[:-1] + b"a"
    after = "€" * 12
    for x in EDGE_BYTES:
        for y in EDGE_BYTES:
            for z in EDGE_BYTES:
                for w in (0x41, 0x80, 0xBF):
                    b = before + bytes([x, y, z, w]) + after.encode()
                    assert checks(c, b) == cpython_ok(b), b.hex()
                    tail = before + b"a" * 30 + bytes([x, y, z])  # cut at the very end
                    assert checks(c, tail) == cpython_ok(tail), tail.hex()


def test_kernel_hook(cbor_pair: Any) -> None:
    dec = cbor_pair[2]
    runs = dec._utf8_kernels()
    assert runs[0] == "scalar" and set(runs) <= set(UTF8_KERNELS)
    assert dec._utf8_kernel() == runs[-1]  # the widest one is chosen at import
    with pytest.raises(ValueError):
        dec._utf8_kernel("neon")
    for name in UTF8_KERNELS[len(runs):]:
        with pytest.raises(ValueError):
            dec._utf8_kernel(name)
    assert dec._utf8_kernel() == runs[-1]


@pytest.mark.parametrize("n", [20, 63, 64, 65, 200])
def test_dcbor_nfc_of_long_text(cbor_pair: Any, utf8_kernel: str, n: int) -> None:
    """dcbor's NFC rule still sees text the kernels validate (they tell ASCII apart, and
    only non-ASCII text is normalised), on both sides of the inline ASCII pass's limit."""
    c, py = cbor_pair[0], cbor_pair[1]
    ascii_text = b"a" * n
    nfc = b"a" * (n - 2) + "é".encode()  # U+00E9, composed
    not_nfc = b"a" * (n - 3) + "e\u0301".encode()  # e + combining acute: not NFC
    for impl in (c, py):
        assert impl.decode(text_item(ascii_text), profile="dcbor") == ascii_text.decode()
        impl.check(text_item(ascii_text), profile="dcbor")
        impl.check(text_item(nfc), profile="dcbor")
        with pytest.raises(errors.DecodeError) as info:
            impl.check(text_item(not_nfc), profile="dcbor")
        assert (info.value.code, info.value.offset) == ("non_nfc_text", 0)


# --- each kernel alone, every length and every block boundary ----------------------------

def _text_of_length(n: int, seed: int) -> bytes:
    """Valid UTF-8 of exactly n bytes: characters of 1-4 bytes in a fixed pseudo-random
    order, the last few bytes ASCII where a character would not fit."""
    chars = ("a", "é", "€", "😀", "z", "ß", "字", "\U0010ffff", "\ud7ff", "\ue000")
    out = bytearray()
    i = seed
    while True:
        c = chars[i % len(chars)].encode("utf-8", "surrogatepass")
        i = i * 7 + 3
        if len(out) + len(c) > n:
            break
        out += c
    return bytes(out) + b"b" * (n - len(out))


def _raw_verdict(b: bytes) -> int:
    if not cpython_ok(b):
        return 0
    return 2 if b.isascii() else 1


# the bytes an edit puts at a position: stray continuations, leads without their
# continuations, overlong and surrogate leads, bytes that are never UTF-8
BAD_BYTES = (0x80, 0xBF, 0xC0, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xF5, 0xFF, 0x41)


def test_every_length_and_every_boundary(cbor_pair: Any) -> None:
    """For every kernel this CPU runs, alone (not through check's dispatch, so each takes
    every length it can): valid text of every length 0-256 (ASCII, and 1-4 byte
    characters), and the same with one byte replaced or the string cut at every offset
    from 3 before to 3 after each 16-byte boundary (so every 32- and 64-byte boundary
    too), against CPython's strict decoder."""
    dec = cbor_pair[2]
    kernels = dec._utf8_kernels()
    for n in range(257):
        cases = [b"a" * n, _text_of_length(n, n)]
        base = cases[1]
        for boundary in range(16, n + 4, 16):
            for at in range(max(0, boundary - 3), min(n, boundary + 4)):
                for byte in BAD_BYTES:
                    cases.append(base[:at] + bytes([byte]) + base[at + 1:])
                cases.append(base[:at])  # cut short
        for b in cases:
            want = _raw_verdict(b)
            for k in kernels:
                got = dec._utf8_raw(k, b)
                assert got is None or got == want, (k, b.hex())
            assert dec._utf8_raw("scalar", b) == want, b.hex()


def test_raw_kernels_take_the_lengths_they_say(cbor_pair: Any) -> None:
    """The test above reaches each vector kernel at every length it takes: AVX-512 from
    one byte (masked loads), AVX2 from 35, SSE4.1 from 19."""
    dec = cbor_pair[2]
    firsts = {"scalar": 0, "sse4.1": 19, "avx2": 35, "avx512": 1}
    for k in dec._utf8_kernels():
        assert dec._utf8_raw(k, b"a" * (firsts[k] - 1)) is None if firsts[k] else True
        assert dec._utf8_raw(k, b"a" * firsts[k]) == 2
