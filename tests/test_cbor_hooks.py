"""default= hooks, the registered-tag handlers (canonkit.cbor.tags), encode_into, dump and
max_depth on encode: each on both backends, and compiled vs twin by hypothesis."""
from __future__ import annotations

import datetime as dt
import io
import math
import uuid
from decimal import Decimal
from types import ModuleType
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import PROFILE_VALUES

from canonkit.cbor import tags as cbor_tags
from canonkit import cbor, errors
from canonkit.cbor._types import MAX_ENCODE_DEPTH, Tag

UTC = dt.timezone.utc


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except errors.CanonkitError as exc:
        return "error", (type(exc), exc.code,
                         exc.path if isinstance(exc, errors.EncodeError) else exc.offset)


# --- default= -----------------------------------------------------------------------

class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y


def point_hook(value: Any) -> Any:
    if isinstance(value, Point):
        return {"x": value.x, "y": value.y}
    return value


def test_default_maps_custom_types(cbor_impl: ModuleType) -> None:
    data = cbor_impl.encode([Point(1, 2), {"p": Point(3, 4)}], default=point_hook)
    assert data == cbor_impl.encode([{"x": 1, "y": 2}, {"p": {"x": 3, "y": 4}}])
    assert cbor_impl.Encoder(default=point_hook).encode(Point(5, 6)) == \
        cbor_impl.encode({"x": 5, "y": 6})


def test_default_result_is_not_hooked_again(cbor_impl: ModuleType) -> None:
    calls: list[Any] = []

    def same(value: Any) -> Any:
        calls.append(value)
        return value

    with pytest.raises(errors.UnsupportedTypeError) as info:
        cbor_impl.encode({"a": [Point(0, 0)]}, default=same)
    assert info.value.path == '$["a"][0]'
    # items inside what the hook returns do go through it
    nested = cbor_impl.encode(Point(1, Point(2, 3)), default=point_hook)  # type: ignore[arg-type]
    assert nested == cbor_impl.encode({"x": 1, "y": {"x": 2, "y": 3}})


def test_default_exceptions_propagate(cbor_impl: ModuleType) -> None:
    def boom(value: Any) -> Any:
        raise KeyError("no")

    with pytest.raises(KeyError):
        cbor_impl.encode([object()], default=boom)


def test_default_is_only_called_for_unmapped_values(cbor_impl: ModuleType) -> None:
    seen: list[Any] = []

    def spy(value: Any) -> Any:
        seen.append(value)
        return 0

    value = [1, 1.5, "a", b"b", None, True, [2], {"k": 3}, (4,), bytearray(b"x"), Tag(5, 6)]
    assert cbor_impl.encode(value, default=spy) == cbor_impl.encode(value)
    assert seen == []


def test_encoder_options_are_checked(cbor_impl: ModuleType) -> None:
    with pytest.raises(TypeError):
        cbor_impl.encode(1, default=3)
    for bad in (-1, MAX_ENCODE_DEPTH + 1, 1.5, True, "9"):
        with pytest.raises(ValueError):
            cbor_impl.encode(1, max_depth=bad)
        with pytest.raises(ValueError):
            cbor_impl.Encoder(max_depth=bad)
    encoder = cbor_impl.Encoder(profile="dcbor", default=point_hook, max_depth=7)
    assert (encoder.profile, encoder.default, encoder.max_depth) == ("dcbor", point_hook, 7)


# --- max_depth ------------------------------------------------------------------------

def _nest(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [0, 1, 5])
def test_max_depth_is_the_decoders(cbor_impl: ModuleType, depth: int) -> None:
    value = _nest(depth)
    assert cbor_impl.encode(value, max_depth=depth) == cbor_impl.encode(value)
    with pytest.raises(errors.EncodeDepthExceededError):
        cbor_impl.encode([value], max_depth=depth)
    with pytest.raises(errors.DepthExceededError):
        cbor_impl.decode(cbor_impl.encode([value]), max_depth=depth)


def test_deep_values_decoded_with_max_depth_encode_again() -> None:
    """Up to MAX_ENCODE_DEPTH, on the main thread and on a default-sized thread stack,
    including the failing case (whose second walk locates the error)."""
    import threading

    compiled, _ = backend_pair("cbor")
    failures: list[BaseException] = []

    def run() -> None:
        try:
            for depth in (1000, MAX_ENCODE_DEPTH):
                for unit, profile in ((b"\x81", "core"), (b"\xa1\x61k", "dag-cbor"),
                                      (b"\xc6", "core"), (b"\x81\xa1\x61k", "core")):
                    data = unit * (depth // 2 if len(unit) == 4 else depth) + b"\x00"
                    value = compiled.decode(data, max_depth=depth)
                    assert compiled.encode(value, max_depth=depth, profile=profile) == data
                    assert compiled.Encoder(max_depth=depth, profile=profile).encode(value) \
                        == data
                    with pytest.raises(errors.EncodeDepthExceededError):
                        compiled.encode([value], max_depth=depth)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    run()
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert not failures, failures


def smallest_thread_stack() -> int:
    """The smallest stack ``threading.stack_size`` accepts here (32 KiB where the platform
    allows it)."""
    import threading

    size = 32 << 10
    while True:
        try:
            previous = threading.stack_size(size)
        except ValueError:
            size *= 2
            continue
        threading.stack_size(previous)
        return size


def on_thread_stack(size: int, job: Any) -> Any:
    """``job()`` on a new thread with a ``size``-byte stack; its result, or its exception
    raised here."""
    import threading

    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(("ok", job()))
        except BaseException as exc:  # reported by the calling thread
            outcome.append(("error", exc))

    previous = threading.stack_size(size)
    try:
        thread = threading.Thread(target=run)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    kind, value = outcome[0]
    if kind == "error":
        raise value
    return value


DEEP_UNITS = {"array": b"\x81", "map": b"\xa1\x61k", "tag": b"\xc6"}


@pytest.mark.parametrize("stack", ["smallest", "256 KiB"])
def test_deep_values_on_a_small_thread_stack_fail_closed(stack: str) -> None:
    """On a thread stack too small for the nesting — down to the smallest a thread may be
    given — encoding raises EncodeDepthExceededError (both walks: the encode and the one
    locating a failure; with a default hook too) and decoding DepthExceededError before it
    builds a value the interpreter could not release there (CPython 3.13 frees nested
    values one C frame per level); never a crash. Shallow values still encode, and the
    deepest value decode accepts is released on that thread."""
    compiled, _ = backend_pair("cbor")
    size = smallest_thread_stack() if stack == "smallest" else 256 << 10
    # built on this thread, whose stack holds them; the leaf needs the default hook
    deep: dict[str, Any] = {}
    for name, wrap in (("array", lambda v: [v]), ("map", lambda v: {"k": v}),
                       ("tag", lambda v: Tag(6, v))):
        value: Any = dt.date(2026, 1, 1)
        for _ in range(MAX_ENCODE_DEPTH - 1):
            value = wrap(value)
        deep[name] = value

    def encode_deep() -> list[str]:
        messages = []
        for value in deep.values():
            for outer in (value, [value, object()], {"k": value, "z": object()}):
                for hook in (None, repr):
                    with pytest.raises(errors.EncodeDepthExceededError, match="C stack") as info:
                        compiled.encode(outer, max_depth=MAX_ENCODE_DEPTH, default=hook)
                    messages.append(str(info.value))
        return messages

    def decode_deep() -> list[int]:
        limits = []
        for unit in DEEP_UNITS.values():
            with pytest.raises(errors.DepthExceededError, match="C stack") as info:
                compiled.decode(unit * MAX_ENCODE_DEPTH + b"\x00", max_depth=MAX_ENCODE_DEPTH)
            levels = int(str(info.value).split("nesting of ")[1].split()[0])
            # the deepest value accepted here is built and dropped here
            value = compiled.decode(unit * (levels - 1) + b"\x00", max_depth=MAX_ENCODE_DEPTH)
            del value
            limits.append(levels - 1)
        return limits

    assert len(on_thread_stack(size, encode_deep)) == 3 * 3 * 2
    limits = on_thread_stack(size, decode_deep)
    assert all(0 < limit < MAX_ENCODE_DEPTH for limit in limits), limits
    assert on_thread_stack(size, lambda: compiled.encode([[[1]]], max_depth=MAX_ENCODE_DEPTH)) \
        == b"\x81\x81\x81\x01"
    assert on_thread_stack(size, lambda: compiled.decode(b"\x81\x81\x81\x01")) == [[[1]]]


# --- the registered-tag handlers -----------------------------------------------------

TAGGED = [
    (dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC), "c11a663881d9"),
    (dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), "c120"),
    (dt.datetime(2024, 5, 6, 9, 8, 9, 500000, tzinfo=dt.timezone(dt.timedelta(hours=2))),
     "c1fb41d98e2076600000"),
    (uuid.UUID("12345678-1234-5678-1234-567812345678"),
     "d8255012345678123456781234567812345678"),
    (Decimal("273.15"), "c48221196ab3"),
    (Decimal("-1.50"), "c482213895"),
    (Decimal("1E+3"), "c4820301"),
    ({3, -1, 0, 300}, "d90102840003190 12c20".replace(" ", "")),
    (frozenset({"bb", "a", "c"}), "d90102836161616362626 2".replace(" ", "")),
    (set(), "d9010280"),
]


@pytest.mark.parametrize("value,hex_", TAGGED, ids=repr)
def test_handlers_write_one_form_and_read_it_back(cbor_impl: ModuleType, value: Any,
                                                  hex_: str) -> None:
    data = cbor_impl.encode(value, default=cbor_tags.default)
    assert data.hex() == hex_
    back = cbor_tags.tag_hook(cbor_impl.decode(data))
    assert back == value
    assert cbor_impl.encode(back, default=cbor_tags.default) == data


REFUSED = [
    dt.datetime(2024, 1, 1),  # naive
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),  # float loses the µs
    Decimal("NaN"),
    Decimal("-Infinity"),
    Decimal("-0.00"),
    {1, "a"},
    {1.5, 2.5},
    {(1, 2)},
]


@pytest.mark.parametrize("value", REFUSED, ids=repr)
def test_handlers_refuse_what_has_no_canonical_form(cbor_impl: ModuleType, value: Any) -> None:
    with pytest.raises(errors.EncodeUnsupportedItemError) as info:
        cbor_impl.encode({"v": value}, default=cbor_tags.default)
    assert info.value.path == '$["v"]'


def test_handlers_are_tags_so_dag_cbor_refuses_them(cbor_impl: ModuleType) -> None:
    with pytest.raises(errors.EncodeUnsupportedItemError):
        cbor_impl.encode(uuid.UUID(int=1), profile="dag-cbor", default=cbor_tags.default)


def test_default_leaves_other_values_to_the_encoder(cbor_impl: ModuleType) -> None:
    with pytest.raises(errors.UnsupportedTypeError):
        cbor_impl.encode([complex(1, 2)], default=cbor_tags.default)


@pytest.mark.parametrize("number,content", [
    (1, 1.0), (1, math.nan), (1, "x"), (1, 0.1 + 0.2), (1, 10**30),
    (0, "2024-01-01T00:00:00"), (0, 5),
    (37, b"short"), (4, [1]), (4, [1.0, 2]), (258, [2, 1]), (258, [1, 1]), (258, [1, "a"]),
])
def test_decoders_refuse_non_canonical_content(number: int, content: Any) -> None:
    with pytest.raises(ValueError):
        cbor_tags.tag_hook(Tag(number, content))


def test_tag_zero_is_read() -> None:
    value = cbor_tags.tag_hook(Tag(0, "2024-05-06T07:08:09.25+02:00"))
    assert value == dt.datetime(2024, 5, 6, 5, 8, 9, 250000, tzinfo=UTC)
    assert cbor_tags.tag_hook(Tag(99, 1)) == Tag(99, 1)


aware = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                     timezones=st.sampled_from([UTC, dt.timezone(dt.timedelta(hours=-5))]))
tag_values = st.one_of(
    aware, st.uuids(), st.decimals(allow_nan=True, allow_infinity=True),
    st.sets(st.integers(-(1 << 66), 1 << 66), max_size=5),
    st.frozensets(st.text(max_size=4), max_size=5), st.sets(st.binary(max_size=4), max_size=4),
    st.sets(st.one_of(st.integers(0, 3), st.text(max_size=1)), max_size=3),
    st.just(dt.datetime(2020, 1, 1)),
)


@settings(max_examples=300)
@given(st.lists(st.one_of(tag_values, st.integers(), st.text(max_size=3)), max_size=6),
       st.sampled_from(["core", "dcbor", "dag-cbor"]))
def test_differential_handlers(value: list[Any], profile: str) -> None:
    compiled, twin = backend_pair("cbor")
    got = _outcome(compiled.encode, value, profile=profile, default=cbor_tags.default)
    want = _outcome(twin.encode, value, profile=profile, default=cbor_tags.default)
    assert got == want
    if got[0] == "ok" and profile == "core":
        back = [cbor_tags.tag_hook(item) if isinstance(item, Tag) else item
                for item in compiled.decode(got[1])]
        assert compiled.encode(back, default=cbor_tags.default) == got[1]


# --- encode_into and dump ----------------------------------------------------------------

def test_encode_into_bytearray_grows_and_appends(cbor_impl: ModuleType) -> None:
    buffer = bytearray(b"head")
    n = cbor_impl.encode_into({"a": 1}, buffer, 4)
    assert buffer == b"head" + cbor_impl.encode({"a": 1}) and n == len(buffer) - 4
    n = cbor_impl.encode_into([1, 2], buffer, 1)
    assert buffer[:1 + n] == b"h" + cbor_impl.encode([1, 2])


def test_encode_into_fixed_buffers(cbor_impl: ModuleType) -> None:
    import array

    memory = memoryview(bytearray(8))
    assert cbor_impl.encode_into([1, 2], memory, 2) == 3
    assert bytes(memory) == b"\0\0\x82\x01\x02\0\0\0"
    words = array.array("I", [0, 0])
    assert cbor_impl.encode_into("abc", words) == 4
    assert words.tobytes()[:4] == b"\x63abc"
    with pytest.raises(errors.BufferTooSmallError):
        cbor_impl.encode_into(b"x" * 8, memory, 0)
    assert bytes(memory) == b"\0\0\x82\x01\x02\0\0\0"  # nothing written
    with pytest.raises(TypeError):
        cbor_impl.encode_into(1, b"read-only")
    with pytest.raises(TypeError):
        cbor_impl.encode_into(1, "text")
    with pytest.raises(ValueError):
        cbor_impl.encode_into(1, bytearray(2), -1)
    with pytest.raises(ValueError):
        cbor_impl.encode_into(1, bytearray(2), 3)


def test_encode_into_writes_nothing_when_encoding_fails(cbor_impl: ModuleType) -> None:
    buffer = bytearray(b"keep")
    with pytest.raises(errors.UnsupportedTypeError):
        cbor_impl.encode_into([1, object()], buffer, 4)
    assert buffer == b"keep"


@settings(max_examples=150)
@given(st.sampled_from(["core", "dcbor", "dag-cbor"]).flatmap(
    lambda p: st.tuples(st.just(p), PROFILE_VALUES[p]())),
    st.integers(0, 6), st.integers(0, 64), st.booleans())
def test_differential_encode_into(case: tuple[str, Any], offset: int, size: int,
                                  growable: bool) -> None:
    compiled, twin = backend_pair("cbor")
    profile, value = case
    results = []
    for impl in (compiled, twin):
        buffer: Any = bytearray(b"\xee" * size) if growable else \
            memoryview(bytearray(b"\xee" * size))
        try:
            outcome = _outcome(impl.encode_into, value, buffer, offset, profile=profile)
        except ValueError as exc:  # offset past the end of a bytearray
            outcome = ("ValueError", str(exc))
        results.append((outcome, bytes(buffer)))
    assert results[0] == results[1]


def test_dump_writes_the_encoding_once() -> None:
    out = io.BytesIO()
    assert cbor.dump({"a": [1, 2]}, out, profile="dcbor") == out.tell()
    assert out.getvalue() == cbor.encode({"a": [1, 2]}, profile="dcbor")
    with pytest.raises(errors.UnsupportedTypeError):
        cbor.dump([object()], out)
    assert out.getvalue() == cbor.encode({"a": [1, 2]}, profile="dcbor")
    out = io.BytesIO()
    cbor.dump(Point(1, 2), out, default=point_hook, max_depth=1)
    assert out.getvalue() == cbor.encode({"x": 1, "y": 2})


# --- encode_merged ---------------------------------------------------------------------

def test_encode_merged_is_the_merged_map(cbor_impl: ModuleType) -> None:
    envelope = {"t": "commit", "v": 1}
    fields = {"tree": b"x", "message": "m", "a": [1.5, None]}
    want = cbor_impl.encode({**envelope, **fields})
    assert cbor_impl.encode_merged(envelope, fields) == want
    assert cbor_impl.Encoder().encode_merged(envelope, fields) == want
    assert cbor_impl.encode_merged({}, {}) == b"\xa0"
    assert cbor_impl.encode_merged({1: 2}, {"k": (3,)}, profile="dcbor") == \
        cbor_impl.encode({1: 2, "k": [3]}, profile="dcbor")


def test_encode_merged_refuses_a_key_in_both(cbor_impl: ModuleType) -> None:
    for first, second in (({"t": 1}, {"t": 2}), ({1: 0}, {1.0: 0}), ({"a": 0}, FrozenKeys())):
        with pytest.raises(errors.EncodeDuplicateMapKeyError) as info:
            cbor_impl.encode_merged(first, second)
        assert info.value.path == "$"


class FrozenKeys(dict):  # type: ignore[type-arg]
    """A dict subclass (the general path) holding key "a"."""

    def __init__(self) -> None:
        super().__init__(a=1)


merge_keys = st.one_of(st.text(max_size=3), st.integers(-3, 3))
merge_values = st.one_of(st.integers(), st.text(max_size=3), st.floats(),
                         st.lists(st.integers(), max_size=3), st.just(object()))


@settings(max_examples=300)
@given(st.dictionaries(merge_keys, merge_values, max_size=5),
       st.dictionaries(merge_keys, merge_values, max_size=20),
       st.sampled_from(["core", "dcbor", "dag-cbor"]), st.booleans())
def test_differential_encode_merged(first: dict[Any, Any], second: dict[Any, Any],
                                    profile: str, reusable: bool) -> None:
    compiled, twin = backend_pair("cbor")

    def run(impl: ModuleType) -> tuple[str, Any]:
        if reusable:
            return _outcome(impl.Encoder(profile=profile).encode_merged, first, second)
        return _outcome(impl.encode_merged, first, second, profile=profile)

    got, want = run(compiled), run(twin)
    assert got == want
    if got[0] == "ok":
        assert got[1] == compiled.encode({**first, **second}, profile=profile)
