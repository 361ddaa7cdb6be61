"""Hypothesis properties of the CBOR codec, per profile, on both backends:
round trip, encode(decode(b)) == b, robustness on hostile bytes, and the differential
test (compiled and twin agree on bytes, values, error class, code and offset)."""
from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import PROFILE_VALUES, cbor_ish, expected_after_roundtrip, mutated, same

from canonkit import errors

PROFILES = ["core", "dcbor", "dag-cbor"]
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture],
                      max_examples=100)
DECODE_ERRORS = tuple(cls for cls in errors.CODES.values() if issubclass(cls, errors.DecodeError))


def _values(profile: str) -> st.SearchStrategy[Any]:
    return PROFILE_VALUES[profile]()


def _hostile(profile: str) -> st.SearchStrategy[bytes]:
    valid = _values(profile).map(lambda v: _twin_encode(v, profile))
    return st.one_of(st.binary(max_size=40), cbor_ish, mutated(valid))


def _twin_encode(value: Any, profile: str) -> bytes:
    from canonkit.cbor import _codec_py as _cbor_py

    return _cbor_py.encode(value, profile=profile)


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """("ok", result) or ("error", (class, code, offset, path)) for the differential
    test (path: where an encode error happened)."""
    try:
        return "ok", fn(*args, **kwargs)
    except errors.CanonkitError as exc:
        path = exc.path if isinstance(exc, errors.EncodeError) else None
        return "error", (type(exc), exc.code, exc.offset, path)


# --- one backend at a time -------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_round_trip(cbor_impl: ModuleType, profile: str) -> None:
    @FIXTURE_OK
    @given(_values(profile))
    def run(value: Any) -> None:
        data = cbor_impl.encode(value, profile=profile)
        decoded = cbor_impl.decode(data, profile=profile)
        assert same(decoded, expected_after_roundtrip(value, profile))
        assert cbor_impl.encode(decoded, profile=profile) == data
        assert cbor_impl.Encoder(profile=profile).encode(value) == data
        assert same(cbor_impl.Decoder(profile=profile).decode(data), decoded)

    run()


@pytest.mark.parametrize("profile", PROFILES)
def test_hostile_bytes_accepted_only_if_canonical(cbor_impl: ModuleType, profile: str) -> None:
    @settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=200)
    @given(_hostile(profile), st.integers(0, 6))
    @example(b"\x81" * 64 + b"\x00", 3)
    @example(bytes.fromhex("5b8000000000000000"), 512)
    def run(data: bytes, max_depth: int) -> None:
        try:
            value = cbor_impl.decode(data, profile=profile, max_depth=max_depth)
        except DECODE_ERRORS as exc:
            assert exc.code in errors.CODES
            assert isinstance(exc.offset, int) and 0 <= exc.offset <= len(data)
            return
        assert cbor_impl.encode(value, profile=profile) == data

    run()


# --- compiled vs twin --------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_differential_encode(profile: str) -> None:
    compiled, twin = backend_pair("cbor")

    @settings(max_examples=150)
    @given(_values(profile))
    def run(value: Any) -> None:
        assert compiled.encode(value, profile=profile) == twin.encode(value, profile=profile)

    run()


@pytest.mark.parametrize("profile", PROFILES)
def test_differential_decode(profile: str) -> None:
    compiled, twin = backend_pair("cbor")

    @settings(max_examples=300)
    @given(_hostile(profile), st.integers(0, 8))
    def run(data: bytes, max_depth: int) -> None:
        got = _outcome(compiled.decode, data, profile=profile, max_depth=max_depth)
        want = _outcome(twin.decode, data, profile=profile, max_depth=max_depth)
        assert got[0] == want[0], (got, want)
        if got[0] == "ok":
            assert same(got[1], want[1])
        else:
            assert got[1] == want[1]

    run()


# values whose encode fails (out of range, wrong profile, bad text) must fail alike
odd_values = st.one_of(
    st.integers(-(1 << 70), 1 << 70),
    st.floats(),
    st.text(max_size=6),
    st.lists(st.one_of(st.integers(-(1 << 70), 1 << 70), st.floats(), st.text(max_size=4)),
             max_size=4),
    st.dictionaries(st.one_of(st.integers(), st.text(max_size=3), st.binary(max_size=3)),
                    st.integers(), max_size=4),
)


@pytest.mark.parametrize("profile", PROFILES)
def test_differential_encode_errors(profile: str) -> None:
    compiled, twin = backend_pair("cbor")

    @settings(max_examples=200)
    @given(odd_values)
    def run(value: Any) -> None:
        got = _outcome(compiled.encode, value, profile=profile)
        want = _outcome(twin.encode, value, profile=profile)
        assert got == want

    run()


@pytest.mark.parametrize("source,profile",
                         [(s, p) for s in PROFILES for p in PROFILES if s != p])
def test_differential_encode_across_profiles(source: str, profile: str) -> None:
    """Values made for one profile encoded under another: the same bytes or the same
    first error (class and code) on both backends."""
    compiled, twin = backend_pair("cbor")

    @settings(max_examples=60)
    @given(_values(source))
    def run(value: Any) -> None:
        assert _outcome(compiled.encode, value, profile=profile) == \
            _outcome(twin.encode, value, profile=profile)

    run()


@pytest.mark.parametrize("profile", PROFILES)
def test_strings_and_keys_of_every_short_length_encode_as_the_twin(profile: str) -> None:
    """The compiled encoder copies map keys of up to 32 bytes without a library call, in
    size classes (1-3, 4-7, 8-16, 17-32 bytes): every length around those boundaries, as
    a key, a value and bytes, is written exactly as the twin writes it."""
    compiled, twin = backend_pair("cbor")
    for n in range(0, 72):
        text = "".join(chr(0x21 + (i * 7 + n) % 90) for i in range(n))
        wide = ("é" * n)[:max(0, n // 2)] + text[: n - n // 2]  # 2-byte UTF-8 runs too
        for value in (text, wide, text.encode(), {text: n, wide + "!": [text]}, [text] * 3):
            expected = twin.encode(value, profile=profile)
            assert compiled.encode(value, profile=profile) == expected, (n, value)
            assert twin.decode(expected, profile=profile) == value
