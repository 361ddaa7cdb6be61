"""The decode-side API beyond ``decode``: ``check``, ``check_sequence``, ``decode_prefix``,
``iter_sequence``, ``load``, the ``max_size``/``max_items`` limits, map keys that nest
too deep to hash (D1) or collide as Python values (D13), and the error classes of usage
mistakes. Every case runs on both backends; the differential tests hold them together."""
from __future__ import annotations

import io
import subprocess
import sys
from types import ModuleType
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import PROFILE_VALUES, cbor_ish, mutated, same

import canonkit
from canonkit.cbor import _sequences as _cbor_stream
from canonkit import errors, reverify
from canonkit.cbor._options import MAX_KEY_DEPTH
from canonkit.cbor._types import FrozenDict, Tag

PROFILES = ["core", "dcbor", "dag-cbor"]


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """("ok", result) or ("error", (class, code, offset, message))."""
    try:
        return "ok", fn(*args, **kwargs)
    except errors.CanonkitError as exc:
        return "error", (type(exc), exc.code, exc.offset, str(exc))


def _agree(got: tuple[str, Any], want: tuple[str, Any]) -> bool:
    """Same error (class, code, offset, message), or equal values (NaN payloads too)."""
    if got[0] != want[0]:
        return False
    return same(got[1], want[1]) if got[0] == "ok" else got == want


def _error(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, int | None]:
    with pytest.raises(errors.CanonkitError) as info:
        fn(*args, **kwargs)
    return info.value.code, info.value.offset


# --- D1: map keys too deep to hash ----------------------------------------------------------

def _run_isolated(code: str) -> str:
    """Run ``code`` in a fresh interpreter (a crash must fail the test, not end the run)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout.strip()


@pytest.mark.parametrize("unit,max_depth", [(b"\x81", 200_000), (b"\xc1", 2 * 10**6),
                                            (b"\xa1\x00", 200_000)])
@pytest.mark.parametrize("which", ["c", "py"])
def test_deep_map_key_is_refused_without_crashing(which: str, unit: bytes,
                                                  max_depth: int) -> None:
    """D1: a 150,000-deep array key crashed the compiled backend (tuplehash recursion);
    a 10^6-deep tag key raised RecursionError. Both are depth_exceeded at the 65th
    container inside the key, on both backends."""
    count = 10**6 if unit == b"\xc1" else 150_000
    module = "canonkit.cbor._codec" if which == "c" else "canonkit.cbor._codec_py"
    out = _run_isolated(
        f"import importlib; impl = importlib.import_module({module!r})\n"
        f"data = b'\\xa1' + {unit!r} * {count} + b'\\x00\\x00'\n"
        "try:\n"
        f"    impl.decode(data, max_depth={max_depth})\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc.code, exc.offset)\n")
    assert out == f"DepthExceededError depth_exceeded {1 + MAX_KEY_DEPTH * len(unit)}"


@pytest.mark.parametrize("unit", [b"\x81", b"\xc1", b"\xa1\x00"])
def test_key_nesting_limit_is_exact(cbor_impl: ModuleType, unit: bytes) -> None:
    ok = b"\xa1" + unit * MAX_KEY_DEPTH + b"\x00" + b"\x00"
    value = cbor_impl.decode(ok, max_depth=10_000)
    key = next(iter(value))
    hash(key)
    assert cbor_impl.encode(value) == ok
    too_deep = b"\xa1" + unit * (MAX_KEY_DEPTH + 1) + b"\x00" + b"\x00"
    for fn in (cbor_impl.decode, cbor_impl.check):
        with pytest.raises(errors.DepthExceededError) as info:
            fn(too_deep, max_depth=10_000)
        assert info.value.offset == 1 + MAX_KEY_DEPTH * len(unit)
        assert "map key nesting deeper than 64" in str(info.value)
    # max_depth is checked first: the general limit wins where both apply
    with pytest.raises(errors.DepthExceededError, match="max_depth=3"):
        cbor_impl.decode(too_deep, max_depth=3)


def test_key_levels_count_from_the_outermost_key(cbor_impl: ModuleType) -> None:
    # a key that is a map whose own key nests further: levels add up
    inner = b"\x81" * (MAX_KEY_DEPTH - 1) + b"\x00"
    ok = b"\xa1" + b"\xa1" + inner + b"\x00" + b"\x00"
    assert cbor_impl.decode(ok) == {FrozenDict({_nest(MAX_KEY_DEPTH - 1): 0}): 0}
    bad = b"\xa1" + b"\xa1" + b"\x81" + inner + b"\x00" + b"\x00"
    assert _error(cbor_impl.decode, bad) == ("depth_exceeded", 1 + MAX_KEY_DEPTH)
    # values inside a key's map are inside the key too
    bad_value = b"\xa1\xa1\x00" + b"\x81" * MAX_KEY_DEPTH + b"\x00" + b"\x00"
    assert _error(cbor_impl.decode, bad_value) == ("depth_exceeded", 3 + MAX_KEY_DEPTH - 1)


def _nest(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = (value,)
    return value


@pytest.mark.parametrize("unit", [b"\x81", b"\xc1", b"\xa1\x00"])
def test_deep_values_decode_on_both_backends(cbor_impl: ModuleType, unit: bytes) -> None:
    """The twin does not recurse: 20,000 levels (20x Python's recursion limit) decode
    under a large max_depth."""
    depth = 20_000
    value = cbor_impl.decode(unit * depth + b"\x00", max_depth=depth)
    for _ in range(depth):
        value = value[0] if unit == b"\x81" else value.value if unit == b"\xc1" else value[0]
    assert value == 0
    with pytest.raises(errors.DepthExceededError):
        cbor_impl.decode(unit * depth + b"\x00", max_depth=depth - 1)


# --- D13: distinct keys equal as Python values ----------------------------------------------

COLLIDING = [
    ("a20a00f9490000", "core", 3),  # {10: 0, 10.0: 0} (dasl-testing)
    ("a2010af93c000b", "core", 3),  # 1 and 1.0
    ("a2f9000000f9800001", "core", 5),  # 0.0 and -0.0
    ("a20100f500", "core", 3),  # 1 and true
    ("a20000f400", "dcbor", 3),  # 0 and false
    ("a20100f500", "dcbor", 3),
    ("a281010081f93c0000", "core", 4),  # [1] and [1.0] as keys
    ("a2c10100c1f93c0000", "core", 4),  # 1(1) and 1(1.0)
    ("a2c24901000000000000000000fa5f80000000", "core", 13),  # 2^64 bignum and 2^64 float
]


@pytest.mark.parametrize("hex_,profile,offset", COLLIDING)
def test_keys_equal_as_python_values(cbor_impl: ModuleType, hex_: str, profile: str,
                                     offset: int) -> None:
    """D13: valid maps are accepted by check; decode says exactly why it cannot return
    them (unrepresentable_map, not duplicate_map_key)."""
    data = bytes.fromhex(hex_)
    assert cbor_impl.check(data, profile=profile) is None
    assert cbor_impl.check_sequence(data + data, profile=profile) == 2
    with pytest.raises(errors.UnrepresentableMapError) as info:
        cbor_impl.decode(data, profile=profile)
    assert not isinstance(info.value, errors.DuplicateMapKeyError)
    assert (info.value.code, info.value.offset) == ("unrepresentable_map", offset)
    assert isinstance(info.value, errors.DecodeError)


# --- limits -------------------------------------------------------------------------------

@pytest.mark.parametrize("hex_,limits,code,offset", [
    ("83010203", {"max_size": 4}, None, None),
    ("83010203", {"max_size": 3}, "limit_exceeded", 0),  # missing child: the container's head
    ("4561626364650102", {"max_size": 5}, "limit_exceeded", 0),  # string runs past the limit
    ("190100", {"max_size": 2}, "limit_exceeded", 0),  # head cut by the limit
    ("0102", {"max_size": 1}, "limit_exceeded", 0),  # the input is over: refused upfront
    ("0102", {"max_size": 2}, "trailing_data", 1),  # the input fits: the rest is trailing
    ("a20100f500", {"max_size": 4}, "limit_exceeded", 0),  # before the keys decode refuses
    ("01", {"max_size": 0}, "limit_exceeded", 0),
    ("8301", {"max_size": 2}, "truncated", 0),  # the input ends before the limit does
    ("83010203", {"max_items": 3}, None, None),
    ("83010203", {"max_items": 2}, "limit_exceeded", 0),
    ("a2616101616202", {"max_items": 3}, "limit_exceeded", 0),  # a map counts keys and values
    ("a2616101616202", {"max_items": 4}, None, None),
    ("8282010203", {"max_items": 3}, "limit_exceeded", 1),  # declared counts add up
    ("c1c100", {"max_items": 1}, "limit_exceeded", 1),  # a tag's content counts one
    ("01", {"max_items": 0}, None, None),  # scalars contain nothing
    ("80", {"max_items": 0}, None, None),
    ("9b8000000000000000", {"max_items": 10}, "limit_exceeded", 0),  # before truncated
    ("9b7fffffffffffffff", {"max_items": 2**63 - 1}, "truncated", 0),
    ("bb7fffffffffffffff", {"max_items": 2**63 - 1}, "limit_exceeded", 0),
    ("818181818100", {"max_depth": 4, "max_items": 1}, "limit_exceeded", 1),
    ("818181818100", {"max_depth": 1, "max_items": 1}, "depth_exceeded", 1),
])
def test_limits(cbor_impl: ModuleType, hex_: str, limits: dict[str, int], code: str | None,
                offset: int | None) -> None:
    data = bytes.fromhex(hex_)
    if code is None:
        value = cbor_impl.decode(data, **limits)
        assert cbor_impl.encode(value) == data
        assert cbor_impl.Decoder(**limits).decode(data) == value
        cbor_impl.check(data, **limits)
        return
    decoder = cbor_impl.Decoder(**limits)
    for fn, kwargs in ((cbor_impl.decode, limits), (cbor_impl.check, limits),
                       (decoder.decode, {}), (decoder.check, {})):
        assert _error(fn, data, **kwargs) == (code, offset)
    if code == "limit_exceeded":
        with pytest.raises(errors.LimitExceededError, match="max_"):
            cbor_impl.decode(data, **limits)


def test_limit_rejects_claimed_huge_count_fast(cbor_impl: ModuleType) -> None:
    with pytest.raises(errors.LimitExceededError) as info:
        cbor_impl.decode(b"\x9b" + b"\xff" * 8, max_items=1_000_000)
    assert "more than max_items=1000000 data items" in str(info.value)
    with pytest.raises(errors.LimitExceededError) as info2:
        cbor_impl.decode(b"\x5a\x00\x10\x00\x00" + bytes(2000), max_size=1000)
    assert "input of 2005 bytes is longer than max_size=1000 bytes" in str(info2.value)
    with pytest.raises(errors.LimitExceededError) as info3:  # the item's own extent
        cbor_impl.decode_prefix(b"\x5a\x00\x10\x00\x00" + bytes(2000), max_size=1000)
    assert "data item longer than max_size=1000 bytes" in str(info3.value)


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True, 2**63])
@pytest.mark.parametrize("name", ["max_size", "max_items"])
def test_limit_values_are_checked(cbor_impl: ModuleType, name: str, bad: Any) -> None:
    with pytest.raises(errors.InvalidOptionError) as info:
        cbor_impl.decode(b"\x01", **{name: bad})
    assert isinstance(info.value, ValueError)
    with pytest.raises(errors.InvalidOptionError):
        cbor_impl.Decoder(**{name: bad})


def test_decoder_keeps_its_options(cbor_impl: ModuleType) -> None:
    decoder = cbor_impl.Decoder(profile="dcbor", max_depth=3, max_size=10, max_items=5)
    assert (decoder.profile, decoder.max_depth, decoder.max_size, decoder.max_items) == \
        ("dcbor", 3, 10, 5)
    assert cbor_impl.Decoder().max_size is None and cbor_impl.Decoder().max_items is None


# --- decode_prefix, sequences, files ------------------------------------------------------

def test_decode_prefix(cbor_impl: ModuleType) -> None:
    data = bytes.fromhex("01a1616102" "83010203")
    assert cbor_impl.decode_prefix(data) == (1, 1)
    assert cbor_impl.decode_prefix(data, 1) == ({"a": 2}, 5)
    assert cbor_impl.decode_prefix(memoryview(data), 5) == ([1, 2, 3], 9)
    assert cbor_impl.Decoder().decode_prefix(bytearray(data), 5) == ([1, 2, 3], 9)
    assert _error(cbor_impl.decode_prefix, data, 9) == ("empty_input", 9)
    assert _error(cbor_impl.decode_prefix, data[:7], 5) == ("truncated", 5)
    assert _error(cbor_impl.decode_prefix, data, 5, max_size=3) == ("limit_exceeded", 5)
    for bad in (-1, 10, "1", 1.0):
        with pytest.raises(errors.InvalidOptionError):
            cbor_impl.decode_prefix(data, bad)
    with pytest.raises(errors.InputTypeError):
        cbor_impl.decode_prefix("01", 0)


def test_check_prefix(cbor_impl: ModuleType) -> None:
    """decode_prefix's ends and errors, without building the values."""
    data = bytes.fromhex("01a1616102" "83010203")
    assert [cbor_impl.check_prefix(data, at) for at in (0, 1, 5)] == [1, 5, 9]
    assert cbor_impl.check_prefix(memoryview(data)) == 1
    assert cbor_impl.Decoder().check_prefix(bytearray(data), 5) == 9
    assert _error(cbor_impl.check_prefix, data, 9) == ("empty_input", 9)
    assert _error(cbor_impl.check_prefix, data[:7], 5) == ("truncated", 5)
    assert _error(cbor_impl.check_prefix, data, 5, max_size=3) == ("limit_exceeded", 5)
    assert _error(cbor_impl.check_prefix, bytes.fromhex("a2617401617402")) == \
        ("duplicate_map_key", 4)
    for bad in (-1, 10, "1", 1.0):
        with pytest.raises(errors.InvalidOptionError):
            cbor_impl.check_prefix(data, bad)
    with pytest.raises(errors.InputTypeError):
        cbor_impl.check_prefix("01", 0)


def test_check_sequence(cbor_impl: ModuleType) -> None:
    assert cbor_impl.check_sequence(b"") == 0
    assert cbor_impl.check_sequence(bytes.fromhex("0102a16161f6")) == 3
    assert _error(cbor_impl.check_sequence, bytes.fromhex("01028301")) == ("truncated", 2)
    assert _error(cbor_impl.check_sequence, bytes.fromhex("01021817")) == \
        ("non_shortest_integer", 2)
    assert _error(cbor_impl.check_sequence, bytes.fromhex("01830102"), max_items=2) == \
        ("limit_exceeded", 1)


SEQUENCE = [1, {"a": [1.5, "x" * 40]}, b"\x00" * 3000, [], "é" * 100, None]


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_iter_sequence_file_and_buffer(cbor_impl: ModuleType, chunk: int,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cbor_stream, "CHUNK", chunk)
    data = b"".join(cbor_impl.encode(v) for v in SEQUENCE)
    assert list(cbor_impl.iter_sequence(data)) == SEQUENCE
    assert list(cbor_impl.iter_sequence(memoryview(data))) == SEQUENCE
    assert list(cbor_impl.iter_sequence(io.BytesIO(data))) == SEQUENCE
    assert list(cbor_impl.Decoder().iter_sequence(io.BytesIO(data))) == SEQUENCE
    assert list(cbor_impl.iter_sequence(io.BytesIO(b""))) == []
    # an error deep in the stream has the same class, offset and message either way
    bad = data + bytes.fromhex("a2617401617402") + data
    want = _outcome(lambda: list(cbor_impl.iter_sequence(bad)))
    assert want[0] == "error" and want[1][1:3] == ("duplicate_map_key", len(data) + 4)
    assert _outcome(lambda: list(cbor_impl.iter_sequence(io.BytesIO(bad)))) == want
    truncated = data + bytes.fromhex("83010203")[:3]
    want = _outcome(lambda: list(cbor_impl.iter_sequence(truncated)))
    assert want[1][1:3] == ("truncated", len(data))
    assert _outcome(lambda: list(cbor_impl.iter_sequence(io.BytesIO(truncated)))) == want


def test_iter_sequence_file_respects_max_size(cbor_impl: ModuleType,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cbor_stream, "CHUNK", 16)
    data = cbor_impl.encode(1) + cbor_impl.encode(b"\x00" * 5000)
    items = cbor_impl.iter_sequence(io.BytesIO(data), max_size=100)
    assert next(items) == 1
    with pytest.raises(errors.LimitExceededError) as info:
        next(items)
    assert info.value.offset == 1


def test_iter_sequence_checks_its_argument(cbor_impl: ModuleType) -> None:
    with pytest.raises(errors.InputTypeError):
        cbor_impl.iter_sequence("0102")
    with pytest.raises(errors.UnknownProfileError):
        cbor_impl.iter_sequence(b"", profile="json")


def test_load(cbor_impl: ModuleType) -> None:
    data = cbor_impl.encode({"a": [1, 2]})
    assert cbor_impl.load(io.BytesIO(data)) == {"a": [1, 2]}
    assert cbor_impl.Decoder(profile="dag-cbor").load(io.BytesIO(data)) == {"a": [1, 2]}
    assert _error(cbor_impl.load, io.BytesIO(data + b"\x00")) == ("trailing_data", len(data))
    assert _error(cbor_impl.load, io.BytesIO(data + b"\x00" * 100), max_size=len(data)) == \
        ("limit_exceeded", 0)
    assert _error(cbor_impl.load, io.BytesIO(data + b"\x00"), max_size=len(data) + 1) == \
        ("trailing_data", len(data))
    assert _error(cbor_impl.load, io.BytesIO(data), max_size=3) == ("limit_exceeded", 0)
    assert _error(cbor_impl.load, io.BytesIO(b"")) == ("empty_input", 0)


# --- usage errors are canonkit errors -----------------------------------------------------

def test_usage_errors_are_canonkit_errors(cbor_impl: ModuleType) -> None:
    for call in (lambda: cbor_impl.decode(b"\x01", profile="json"),
                 lambda: cbor_impl.encode(1, profile="json"),
                 lambda: cbor_impl.Decoder(profile="cbor"),
                 lambda: cbor_impl.Encoder(profile="cbor")):
        with pytest.raises(errors.UnknownProfileError) as info:
            call()
        assert isinstance(info.value, ValueError) and isinstance(info.value,
                                                                 canonkit.CanonkitError)
    with pytest.raises(errors.InvalidOptionError) as bad_depth:
        cbor_impl.decode(b"\x01", max_depth=-1)
    assert "max_depth must be a non-negative int" in str(bad_depth.value)
    for data in ("01", 1, [1]):
        with pytest.raises(errors.InputTypeError) as info2:
            cbor_impl.decode(data)
        assert isinstance(info2.value, TypeError)
        assert not isinstance(info2.value, ValueError)


def test_error_families_are_disjoint() -> None:
    for cls in (errors.LimitExceededError, errors.UnrepresentableMapError):
        assert issubclass(cls, errors.DecodeError) and not issubclass(cls, errors.EncodeError)
    for cls in (errors.UnknownProfileError, errors.InvalidOptionError):
        assert issubclass(cls, errors.CBORError)
        assert not issubclass(cls, (errors.DecodeError, errors.EncodeError))
    assert reverify.InputError is errors.InputError
    assert issubclass(errors.InputError, errors.CanonkitError)
    assert issubclass(errors.InputError, ValueError)


# --- compiled vs twin -----------------------------------------------------------------------

FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture],
                      max_examples=200)
limits = st.fixed_dictionaries({}, optional={
    "max_depth": st.integers(0, 8),
    "max_size": st.one_of(st.none(), st.integers(0, 48)),
    "max_items": st.one_of(st.none(), st.integers(0, 24)),
})


def _hostile(profile: str) -> st.SearchStrategy[bytes]:
    from canonkit.cbor import _codec_py as _cbor_py

    valid = PROFILE_VALUES[profile]().map(lambda v: _cbor_py.encode(v, profile=profile))
    colliding = st.sampled_from([bytes.fromhex(h) for h, _, _ in COLLIDING])
    return st.one_of(st.binary(max_size=40), cbor_ish, mutated(valid), valid, colliding)


@pytest.mark.parametrize("profile", PROFILES)
def test_differential_check_and_decode_with_limits(profile: str) -> None:
    compiled, twin = backend_pair("cbor")

    @settings(max_examples=300)
    @given(_hostile(profile), limits)
    @example(bytes.fromhex("a20a00f9490000"), {})
    @example(bytes.fromhex("a20100f500"), {"max_size": 4})
    def run(data: bytes, options: dict[str, int]) -> None:
        decoded = _outcome(compiled.decode, data, profile=profile, **options)
        assert _agree(decoded, _outcome(twin.decode, data, profile=profile, **options))
        checked = _outcome(compiled.check, data, profile=profile, **options)
        assert checked == _outcome(twin.check, data, profile=profile, **options)
        # check raises what decode raises, except for maps decode cannot represent (then
        # check passes or meets a violation later in the pass, which may be reported at
        # an earlier offset: a container whose last child is missing)
        if decoded[0] == "ok":
            assert checked == ("ok", None)
        elif decoded[1][1] != "unrepresentable_map":
            assert checked == decoded
        else:
            assert checked == ("ok", None) or checked[1][1] != "unrepresentable_map"

    run()


@pytest.mark.parametrize("profile", PROFILES)
def test_differential_sequences(profile: str) -> None:
    compiled, twin = backend_pair("cbor")

    @settings(max_examples=200)
    @given(st.lists(_hostile(profile), max_size=4).map(b"".join), st.integers(0, 60), limits)
    def run(data: bytes, offset: int, options: dict[str, int]) -> None:
        offset = min(offset, len(data))
        assert _agree(_outcome(compiled.decode_prefix, data, offset, profile=profile, **options),
                      _outcome(twin.decode_prefix, data, offset, profile=profile, **options))
        assert _outcome(compiled.check_sequence, data, profile=profile, **options) == \
            _outcome(twin.check_sequence, data, profile=profile, **options)
        prefix = _outcome(compiled.decode_prefix, data, offset, profile=profile, **options)
        checked = _outcome(compiled.check_prefix, data, offset, profile=profile, **options)
        assert checked == _outcome(twin.check_prefix, data, offset, profile=profile, **options)
        if prefix[0] == "ok":
            assert checked == ("ok", prefix[1][1])
        elif prefix[1][1] != "unrepresentable_map":
            assert checked == prefix
        got = _outcome(lambda: list(compiled.iter_sequence(data, profile=profile, **options)))
        assert _agree(got, _outcome(lambda: list(twin.iter_sequence(data, profile=profile,
                                                                      **options))))
        assert _agree(got, _outcome(lambda: list(compiled.iter_sequence(
            io.BytesIO(data), profile=profile, **options))))

    run()


@pytest.mark.parametrize("profile", PROFILES)
def test_sequence_is_its_items(cbor_impl: ModuleType, profile: str) -> None:
    """iter_sequence of concatenated encodings gives the values back, decode_prefix walks
    the same ends, and check_sequence counts them."""
    @FIXTURE_OK
    @given(st.lists(PROFILE_VALUES[profile](), max_size=5))
    def run(values: list[Any]) -> None:
        parts = [cbor_impl.encode(v, profile=profile) for v in values]
        data = b"".join(parts)
        decoded = list(cbor_impl.iter_sequence(data, profile=profile))
        assert [cbor_impl.encode(v, profile=profile) for v in decoded] == parts
        assert cbor_impl.check_sequence(data, profile=profile) == len(values)
        pos = 0
        for part in parts:
            _, end = cbor_impl.decode_prefix(data, pos, profile=profile)
            assert end == pos + len(part)
            pos = end

    run()


def test_tag_in_key_is_hashable(cbor_impl: ModuleType) -> None:
    assert cbor_impl.decode(bytes.fromhex("a1c16161f6")) == {Tag(1, "a"): None}


# --- hooks ----------------------------------------------------------------------------------

def test_tag_hook(cbor_impl: ModuleType) -> None:
    seen: list[Any] = []

    def hook(tag: Tag) -> Any:
        seen.append(tag)
        return ("tag", tag.number, tag.value)

    data = cbor_impl.encode([Tag(1, Tag(7, "x")), {"k": Tag(0, "2026-01-01T00:00:00Z")}])
    assert cbor_impl.decode(data, tag_hook=hook) == \
        [("tag", 1, ("tag", 7, "x")), {"k": ("tag", 0, "2026-01-01T00:00:00Z")}]
    assert seen == [Tag(7, "x"), Tag(1, ("tag", 7, "x")), Tag(0, "2026-01-01T00:00:00Z")]
    # inside a map key the result is the key
    assert cbor_impl.decode(bytes.fromhex("a1c16161f6"), tag_hook=lambda t: t.value) == \
        {"a": None}
    # bignums and links are not tags the hook sees
    big = cbor_impl.encode(1 << 70)
    assert cbor_impl.decode(big, tag_hook=lambda t: 1 / 0) == 1 << 70
    link = bytes.fromhex("d82a5823001220") + bytes(32)
    assert cbor_impl.decode(link, profile="dag-cbor", tag_hook=lambda t: 1 / 0) is not None


def test_object_hook(cbor_impl: ModuleType) -> None:
    seen: list[Any] = []

    def hook(mapping: dict[Any, Any]) -> Any:
        seen.append(dict(mapping))
        return sorted(mapping.items(), key=repr)

    data = cbor_impl.encode({"a": {"b": 1}, "c": {}, "d": [{"e": None}]})
    assert cbor_impl.decode(data, object_hook=hook) == \
        [("a", [("b", 1)]), ("c", []), ("d", [[("e", None)]])]
    assert seen == [{"b": 1}, {}, {"e": None}, {"a": [("b", 1)], "c": [], "d": [[("e", None)]]}]
    # maps inside map keys are FrozenDicts, not passed to the hook
    key_map = bytes.fromhex("a1a1616101f6")
    assert cbor_impl.decode(key_map, object_hook=lambda m: ("M", len(m))) == ("M", 1)


def test_hooks_everywhere_and_errors(cbor_impl: ModuleType) -> None:
    data = cbor_impl.encode(Tag(5, {"a": 1}))
    both = {"tag_hook": lambda t: ("T", t.value), "object_hook": lambda m: ("M", dict(m))}
    assert cbor_impl.decode_prefix(data + b"\x01", **both) == (("T", ("M", {"a": 1})), len(data))
    assert list(cbor_impl.iter_sequence(data + data, **both)) == [("T", ("M", {"a": 1}))] * 2
    assert cbor_impl.load(io.BytesIO(data), **both) == ("T", ("M", {"a": 1}))
    assert cbor_impl.Decoder(**both).decode(data) == ("T", ("M", {"a": 1}))
    cbor_impl.Decoder(**both).check(data)  # check builds no values: hooks do not run

    class Refused(Exception):
        pass

    def refuse(_: Any) -> Any:
        raise Refused

    with pytest.raises(Refused):
        cbor_impl.decode(data, tag_hook=refuse)
    with pytest.raises(Refused):
        cbor_impl.decode(data, object_hook=refuse)
    with pytest.raises(TypeError):  # an unhashable key made by the hook
        cbor_impl.decode(bytes.fromhex("a1c10100"), tag_hook=lambda t: [t.value])
    for name in ("tag_hook", "object_hook"):
        with pytest.raises(errors.InvalidOptionError):
            cbor_impl.decode(data, **{name: 3})


@pytest.mark.parametrize("profile", ["core", "dcbor"])
def test_differential_hooks(profile: str) -> None:
    compiled, twin = backend_pair("cbor")

    def recorder(log: list[Any]) -> dict[str, Any]:
        def tag_hook(tag: Tag) -> Any:
            log.append(("tag", tag.number))
            return ("T", tag.number, tag.value)

        def object_hook(mapping: dict[Any, Any]) -> Any:
            log.append(("map", len(mapping)))
            return ("M", tuple(mapping.items()))

        return {"tag_hook": tag_hook, "object_hook": object_hook}

    @settings(max_examples=150)
    @given(PROFILE_VALUES[profile]())
    def run(value: Any) -> None:
        data = twin.encode(value, profile=profile)
        got_log: list[Any] = []
        want_log: list[Any] = []
        got = _outcome(compiled.decode, data, profile=profile, **recorder(got_log))
        want = _outcome(twin.decode, data, profile=profile, **recorder(want_log))
        assert _agree(got, want) and got_log == want_log

    run()


def test_hook_value_errors_are_located(cbor_impl: ModuleType) -> None:
    """A hook refusing content with ValueError (as the tag handlers of canonkit.cbor.tags
    do) becomes hook_refused at the head of the tag or map, like any other bad input."""
    def refuse(_: Any) -> Any:
        raise ValueError("not a time")

    cases = [(cbor_impl.encode([1, Tag(1, "x")]), {"tag_hook": refuse}, 2,
              "tag_hook refused tag 1: not a time"),
             (cbor_impl.encode([{"a": 1}]), {"object_hook": refuse}, 1,
              "object_hook refused the map: not a time"),
             (cbor_impl.encode([0, {}]), {"object_hook": refuse}, 2,
              "object_hook refused the map: not a time")]
    for data, hooks, offset, message in cases:
        with pytest.raises(errors.HookRefusedError) as info:
            cbor_impl.decode(data, **hooks)
        assert info.value.offset == offset and str(info.value).startswith(message)
        assert isinstance(info.value.__cause__ or info.value.__context__, ValueError)
        assert isinstance(info.value, errors.DecodeError)

    def canonkit_error(_: Any) -> Any:
        raise errors.InvalidLinkError("mine")

    with pytest.raises(errors.InvalidLinkError, match="mine"):
        cbor_impl.decode(cbor_impl.encode(Tag(9, 0)), tag_hook=canonkit_error)
