"""Encode-side faults: values that change while they are encoded, value types altered
behind their backs, one error family per class, and the path every encode error carries.
Each case runs on both backends, and the differential tests compare class, code and path."""
from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st

from canonkit import errors
from canonkit.cbor._types import FrozenDict, Simple, Tag


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except errors.CanonkitError as exc:
        return "error", (type(exc), exc.code, exc.path if isinstance(exc, errors.EncodeError)
                         else None)


# --- a list that changes length while it is encoded -----------------------------------

class Shrinking(float):
    """A float whose conversion removes the last item of ``target`` (once)."""

    target: list[Any] = []

    def __float__(self) -> float:
        if Shrinking.target:
            Shrinking.target.pop()
            Shrinking.target = []
        return 0.5


class Growing(float):
    target: list[Any] = []

    def __float__(self) -> float:
        if Growing.target:
            Growing.target.append(99)
            Growing.target = []
        return 0.5


def test_list_shrinking_during_encode_is_refused(cbor_impl: ModuleType) -> None:
    # the twin once wrote 8401f93e00: a 4-item head followed by two items
    value: list[Any] = [1, Shrinking(1.5), 3, 4]
    Shrinking.target = value
    with pytest.raises(errors.ChangedDuringEncodingError) as info:
        cbor_impl.encode(value)
    assert info.value.code == "changed_during_encoding"
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, errors.EncodeError)


def test_list_growing_during_encode_is_refused(cbor_impl: ModuleType) -> None:
    value: list[Any] = [1, Growing(1.5), 3]
    Growing.target = value
    with pytest.raises(errors.ChangedDuringEncodingError):
        cbor_impl.encode({"a": [value]})


def test_list_change_same_outcome_on_both_backends() -> None:
    compiled, twin = backend_pair("cbor")
    outcomes = []
    for impl in (compiled, twin):
        value: list[Any] = [1, [0, Shrinking(1.5), 3]]
        Shrinking.target = value[1]
        outcomes.append(_outcome(impl.encode, value)[1][:2])
    assert outcomes[0] == outcomes[1] == (errors.ChangedDuringEncodingError,
                                         "changed_during_encoding")


# --- value types altered behind their backs -------------------------------------------

def test_value_types_refuse_assignment() -> None:
    for obj, name in ((Simple(16), "value"), (Tag(1, 2), "number"), (Tag(1, 2), "value"),
                      (FrozenDict({1: 2}), "_d")):
        with pytest.raises(AttributeError):
            setattr(obj, name, 1000)
        with pytest.raises(AttributeError):
            delattr(obj, name)


def _forced(obj: Any, name: str, value: Any) -> Any:
    object.__setattr__(obj, name, value)
    return obj


ALTERED = [
    _forced(Simple(16), "value", 1000),   # once encoded f8e8 (decodes as 232)
    _forced(Simple(16), "value", -1),     # once encoded ff, a break byte
    _forced(Simple(16), "value", 24),
    _forced(Simple(16), "value", True),
    _forced(Simple(16), "value", "16"),
    _forced(Tag(1, 0), "number", -1),     # once an OverflowError
    _forced(Tag(1, 0), "number", 2**64),
    _forced(Tag(1, 0), "number", 1.0),
    _forced(FrozenDict({1: 2}), "_d", [1, 2]),  # once a SystemError
    _forced(FrozenDict({1: 2}), "_d", None),
]


@pytest.mark.parametrize("value", ALTERED, ids=repr)
def test_altered_value_types_are_refused(cbor_impl: ModuleType, value: Any) -> None:
    with pytest.raises(errors.EncodeUnsupportedItemError) as info:
        cbor_impl.encode({"k": [value]})
    assert info.value.code == "encode_unsupported_item"
    assert info.value.path == '$["k"][0]'


# --- one family per class ---------------------------------------------------------------

FAILING_ENCODES = [
    ({float("nan"): 1, -float("nan"): 2}, "dcbor", errors.EncodeDuplicateMapKeyError),
    ([math.nan], "dag-cbor", errors.EncodeFloatOutsideProfileError),
    ({1: 2}, "dag-cbor", errors.EncodeUnsupportedItemError),
    (1 << 64, "dcbor", errors.EncodeIntegerOutOfRangeError),
    ("e\u0301", "dcbor", errors.EncodeNonNFCTextError),
]


@pytest.mark.parametrize("value,profile,cls", FAILING_ENCODES)
def test_except_decode_error_never_catches_an_encode_failure(
        cbor_impl: ModuleType, value: Any, profile: str, cls: type[Exception]) -> None:
    with pytest.raises(cls) as info:
        try:
            cbor_impl.encode(value, profile=profile)
        except errors.DecodeError:  # pragma: no cover - the defect this guards against
            pytest.fail("an encode failure was caught as a DecodeError")
    assert isinstance(info.value, errors.EncodeError)
    assert not isinstance(info.value, errors.DecodeError)


def test_decode_failures_are_not_encode_errors(cbor_impl: ModuleType) -> None:
    for data in ("a2617401617402", "fb7ff8000000000000", "a10102"):
        with pytest.raises(errors.DecodeError) as info:
            cbor_impl.decode(bytes.fromhex(data), profile="dag-cbor")
        assert not isinstance(info.value, errors.EncodeError)


def test_encode_depth_is_an_encode_error(cbor_impl: ModuleType) -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(errors.EncodeDepthExceededError) as info:
        cbor_impl.encode(loop)
    assert not isinstance(info.value, errors.DecodeError)
    assert info.value.path == "$" + "[0]" * 512


# --- paths -----------------------------------------------------------------------------

PATHS = [
    (object(), "core", "$"),
    ([1, 2, [3, object()]], "core", "$[2][1]"),
    ({"a": {"b": [0, "\ud800"]}}, "core", '$["a"]["b"][1]'),
    ({"z": 1, "a": [math.inf]}, "dag-cbor", '$["a"][0]'),
    # the first failure in iteration order wins, although keys encode sorted
    ({"zz": math.nan, "a": math.inf}, "dag-cbor", '$["zz"]'),
    ({1: [object()]}, "core", "$[1][0]"),
    ({b"k": 1}, "dag-cbor", "$[b'k']"),
    ({(1, 2): object()}, "core", "$[(1, 2)]"),
    ({'q"\n': object()}, "core", '$["q\\"\\n"]'),
    (Tag(7, [1, Tag(8, object())]), "core", "$.value[1].value"),
    ((1, (2, object())), "core", "$[1][1]"),
    # a map key whose values alone equal another key's encoding is no duplicate
    ([{FrozenDict({"a": 1}): 0, 1: 0}, object()], "core", "$[1]"),
    # two NaN keys are one key in dcbor: the duplicate is the map's fault
    ({"a": 1, "b": {float("nan"): 1, -float("nan"): 2}}, "dcbor", '$["b"]'),
]


@pytest.mark.parametrize("value,profile,path", PATHS, ids=lambda v: repr(v)[:30])
def test_encode_error_carries_the_path(cbor_impl: ModuleType, value: Any, profile: str,
                                       path: str) -> None:
    with pytest.raises(errors.EncodeError) as info:
        cbor_impl.encode(value, profile=profile)
    assert info.value.path == path
    assert info.value.detail == path
    assert info.value.offset is None


def _poisoned(draw: st.DrawFn) -> tuple[Any, str]:
    """A nested value with one or more bad leaves and the profile it fails under."""
    profile = draw(st.sampled_from(["core", "dcbor", "dag-cbor"]))
    bad = st.sampled_from([object(), "\ud800", 1 << 70, math.nan, math.inf, Simple(40),
                           Tag(2, b"x"), "A\u030a", {1: 0}, {b"k": 0},
                           FrozenDict({"a": 1})])
    good = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.booleans())
    leaves = st.one_of(good, good, good, bad)
    value = draw(st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(st.one_of(st.text(max_size=3), st.integers(-3, 3)), inner,
                            max_size=4),
            st.builds(Tag, st.integers(4, 40), inner),
        ),
        max_leaves=12))
    return value, profile


@settings(max_examples=300)
@given(st.composite(_poisoned)())
def test_differential_encode_error_paths(case: tuple[Any, str]) -> None:
    compiled, twin = backend_pair("cbor")
    value, profile = case
    got = _outcome(compiled.encode, value, profile=profile)
    want = _outcome(twin.encode, value, profile=profile)
    assert got == want
