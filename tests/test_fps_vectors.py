"""FPS.md §2 worked vectors and refusals, on both backends (the ``fps_impl`` fixture)."""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from canonkit import errors

X = bytes.fromhex("0123456789abcdef")

WORKED: list[tuple[str, Callable[[ModuleType], Any], str, str]] = [
    ("concat", lambda m: m.concat([bytes.fromhex("0123"), bytes.fromhex("4567")]),
     "01234567", "4ad5d0aa56dab51f"),
    ("reverse-bit", lambda m: m.reverse(X, "bit"), "f7b3d591e6a2c480", "80a2e7f7263e9ca9"),
    ("reverse-byte", lambda m: m.reverse(X, "byte"), "efcdab8967452301", "5c116d9fd8f7b743"),
    ("reverse-word", lambda m: m.reverse(X, "word"), "cdef89ab45670123", "61441fd9c570be23"),
    ("reverse-long", lambda m: m.reverse(X, "long"), "89abcdef01234567", "b1142bf13c55c7cd"),
    ("slice-bit", lambda m: m.slice(X, 4, 16, "bit"), "1234", "0597222b71927ea5"),
    ("slice-byte", lambda m: m.slice(X, 1, 3, "byte"), "234567", "3d81e331cb56a32d"),
    ("splice-bit", lambda m: m.splice(X, 4, 8, b"\xff", "bit"), "0ff3456789abcdef",
     "4f036732b796f062"),
    ("empty", lambda m: m.slice(X, 0, 0), "", "b3988a37e43c77eb"),
]

REFUSALS: list[tuple[str, Callable[[ModuleType], Any], str]] = [
    ("slice-range", lambda m: m.slice(X, 60, 8, "bit"), "ERR_RANGE"),
    ("slice-misaligned", lambda m: m.slice(X, 0, 7, "bit"), "ERR_LENGTH_MISALIGNED"),
    ("reverse-word-odd", lambda m: m.reverse(bytes.fromhex("010203"), "word"),
     "ERR_LENGTH_MISALIGNED"),
    ("reverse-nibble", lambda m: m.reverse(X, "nibble"), "ERR_LEVEL_INVALID"),
    ("reverse-no-level", lambda m: m.reverse(X), "ERR_LEVEL_INVALID"),
    ("concat-empty", lambda m: m.concat([]), "ERR_ARITY"),
    ("splice-range", lambda m: m.splice(X, 8, 1, b"", "byte"), "ERR_RANGE"),
    # arguments are checked before the level, the level before the range, the range
    # before alignment
    ("args-before-level", lambda m: m.slice(X, -1, 0, "nibble"), "ERR_ARG_INVALID"),
    ("level-before-range", lambda m: m.slice(X, 99, 0, "nibble"), "ERR_LEVEL_INVALID"),
    ("range-before-alignment", lambda m: m.slice(X, 60, 7, "bit"), "ERR_RANGE"),
    ("offset-too-large", lambda m: m.slice(X, 1 << 64, 0), "ERR_ARG_INVALID"),
    ("length-float", lambda m: m.slice(X, 0, 1.0), "ERR_ARG_INVALID"),
    ("offset-bool", lambda m: m.slice(X, True, 0), "ERR_ARG_INVALID"),
    ("data-str", lambda m: m.reverse("0123", "byte"), "ERR_ARG_INVALID"),
    ("data-none", lambda m: m.cid_sha256(None), "ERR_ARG_INVALID"),
    ("inputs-not-list", lambda m: m.concat(b"ab"), "ERR_ARG_INVALID"),
    ("inputs-item", lambda m: m.concat([b"ab", 3]), "ERR_ARG_INVALID"),
    ("insert-str", lambda m: m.splice(X, 0, 0, "ff"), "ERR_ARG_INVALID"),
    ("out-readonly", lambda m: m.reverse(X, "byte", out=bytes(8)), "ERR_ARG_INVALID"),
    ("out-wrong-size", lambda m: m.reverse(X, "byte", out=bytearray(9)), "ERR_ARG_INVALID"),
    ("level-not-str", lambda m: m.slice(X, 0, 1, 8), "ERR_LEVEL_INVALID"),
    ("huge-range", lambda m: m.slice(X, (1 << 64) - 1, (1 << 64) - 1, "bit"), "ERR_RANGE"),
]


@pytest.mark.parametrize(("name", "call", "output", "cid16"), WORKED, ids=[w[0] for w in WORKED])
def test_worked_vector(fps_impl: ModuleType, name: str, call: Callable[[ModuleType], Any],
                       output: str, cid16: str) -> None:
    result = call(fps_impl)
    assert type(result) is bytes
    assert result.hex() == output
    assert fps_impl.cid_sha256(result)[:16] == cid16


@pytest.mark.parametrize(("name", "call", "code"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusal(fps_impl: ModuleType, name: str, call: Callable[[ModuleType], Any],
                 code: str) -> None:
    with pytest.raises(errors.FPSError) as info:
        call(fps_impl)
    assert info.value.code == code
    assert type(info.value) is errors.error_for_code(code)


def test_cid_prefix_is_eight_bytes(fps_impl: ModuleType) -> None:
    assert fps_impl.CID_PREFIX == bytes.fromhex("4341533a4f424a00")
    assert len(fps_impl.cid_sha256(b"")) == 64


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "numpy", "numpy-u4"])
def test_any_buffer_is_accepted(fps_impl: ModuleType, kind: str) -> None:
    data: Any = {
        "bytes": X,
        "bytearray": bytearray(X),
        "memoryview": memoryview(X),
        "numpy": np.frombuffer(X, dtype=np.uint8),
        "numpy-u4": np.frombuffer(X, dtype=">u4"),
    }[kind]
    assert fps_impl.slice(data, 4, 16, "bit") == bytes.fromhex("1234")
    assert fps_impl.reverse(data, "long") == bytes.fromhex("89abcdef01234567")
    assert fps_impl.concat([data, data]) == X + X
    assert fps_impl.splice(data, 4, 8, np.frombuffer(X[:1], np.uint8), "bit")[:2] == bytes.fromhex("0013")
    assert fps_impl.cid_sha256(data) == fps_impl.cid_sha256(X)


def test_non_contiguous_buffer_is_refused(fps_impl: ModuleType) -> None:
    strided = np.frombuffer(X, dtype=np.uint8)[::2]
    with pytest.raises(errors.FPSArgumentError):
        fps_impl.reverse(strided, "byte")


def test_out_receives_result_and_returns_count(fps_impl: ModuleType) -> None:
    out = bytearray(2)
    assert fps_impl.slice(X, 4, 16, "bit", out=out) == 2
    assert out == bytes.fromhex("1234")
    arr = np.zeros(16, dtype=np.uint8)
    assert fps_impl.concat([X, X], out=arr) == 16
    assert arr.tobytes() == X + X
    target = bytearray(8)
    assert fps_impl.splice(X, 4, 8, b"\xff", "bit", out=memoryview(target)) == 8
    assert target.hex() == "0ff3456789abcdef"


def test_out_may_alias_the_input(fps_impl: ModuleType) -> None:
    buf = bytearray(X)
    assert fps_impl.reverse(buf, "bit", out=buf) == 8
    assert buf.hex() == "f7b3d591e6a2c480"
    buf = bytearray(X)
    assert fps_impl.slice(buf, 0, 8, out=buf) == 8 and buf == X
    buf = bytearray(X)
    assert fps_impl.concat([buf[:4], buf[4:]], out=buf) == 8 and buf == X


def test_refused_out_is_left_untouched(fps_impl: ModuleType) -> None:
    out = bytearray(b"\xaa" * 8)
    with pytest.raises(errors.FPSRangeError):
        fps_impl.slice(X, 7, 2, out=out)
    assert out == b"\xaa" * 8


def test_single_input_concat_is_identity(fps_impl: ModuleType) -> None:
    assert fps_impl.concat((X,)) == X
    assert fps_impl.concat([b""]) == b""


def test_facade_uses_live_backend() -> None:
    import canonkit
    from canonkit import fps

    assert canonkit.backend()["fps"] in {"compiled", "python"}
    assert fps.slice(X, 1, 3) == bytes.fromhex("234567")


def test_content_id_names(fps_impl: ModuleType) -> None:
    data = bytes.fromhex("0123456789abcdef")
    digest = fps_impl.cid_sha256_digest(data)
    assert isinstance(digest, bytes) and len(digest) == 32
    assert fps_impl.cid_sha256_hex(data) == digest.hex() == fps_impl.cid_sha256(data)
    assert digest.hex() == hashlib.sha256(b"CAS:OBJ\x00" + data).hexdigest()
    assert fps_impl.cid_sha256 is fps_impl.cid_sha256_hex  # FPS.md's name, kept
    assert fps_impl.cid_sha256_digest(memoryview(data)) == digest
    with pytest.raises(errors.FPSArgumentError):
        fps_impl.cid_sha256_digest("0123")


def test_facade_exposes_the_content_id_names() -> None:
    from canonkit import fps

    assert fps.cid_sha256 is fps.cid_sha256_hex
    assert fps.cid_sha256_digest(b"").hex().startswith("b3988a37e43c77eb")
