"""DAG-JSON rules: the canonical form, every refusal with its code and byte offset, the
reserved "/" namespace, float spelling, and hypothesis properties against the dag-cbor
codec (round trips, same data model, mutated input never crashes)."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from canonkit.cbor import dag_json
from canonkit import cbor, errors
from canonkit.cbor._types import UNDEFINED, FrozenDict, Link, Simple, Tag
from canonkit.cbor.dag_json import float_text
from strategies import dag_values, expected_after_roundtrip

CID = "bafyreihdb57fdysx5h35urvxz64ros7zvywshber7id6t6c6fek37jgyfe"
CID_V0 = "QmQg1v4o9xdT3Q14wh4S7dxZkDjyZ9ssFzFzyep1YrVJBY"


def test_module_is_reachable_from_cbor() -> None:
    assert cbor.dag_json is dag_json
    from canonkit.cbor import dag_json as again

    assert again is dag_json


# --- the canonical form --------------------------------------------------------------

@pytest.mark.parametrize(("value", "text"), [
    (None, "null"), (True, "true"), (False, "false"), (0, "0"), (-1, "-1"),
    ((1 << 64) - 1, "18446744073709551615"), (-(1 << 64), "-18446744073709551616"),
    ("", '""'), ("a\"\\\n\t\x00\x1f\x7f/é水𐅑", '"a\\"\\\\\\n\\t\\u0000\\u001f\x7f/é水𐅑"'),
    (b"", '{"/":{"bytes":""}}'), (b"\xa1", '{"/":{"bytes":"oQ"}}'),
    (b"abc", '{"/":{"bytes":"YWJj"}}'), (bytearray(b"ab"), '{"/":{"bytes":"YWI"}}'),
    (memoryview(b"a"), '{"/":{"bytes":"YQ"}}'),
    (Link.from_string(CID), f'{{"/":"{CID}"}}'), (Link.from_string(CID_V0), f'{{"/":"{CID_V0}"}}'),
    ([], "[]"), ((1, [2]), "[1,[2]]"), ({}, "{}"),
    ({"b": 1, "a": 2, "aa": 3, "": 4}, '{"":4,"a":2,"aa":3,"b":1}'),
    ({"é": 1, "z": 2, "水": 3, "𐅑": 4}, '{"z":2,"é":1,"水":3,"𐅑":4}'),  # UTF-8 byte order
    (FrozenDict({"k": [None]}), '{"k":[null]}'),
    ({"/": True, "bar": "baz"}, '{"/":true,"bar":"baz"}'),
    ({"/": {"bytes": True}}, '{"/":{"bytes":true}}'),
    ({"/": {"abar": "baz", "bytes": "foo"}}, '{"/":{"abar":"baz","bytes":"foo"}}'),
    ({"!": "x", "/": "foo"}, '{"!":"x","/":"foo"}'),  # a key sorts before "/"
    ({"/": Link.from_string(CID)}, f'{{"/":{{"/":"{CID}"}}}}'),
])
def test_encode_canonical(value: Any, text: str) -> None:
    data = dag_json.encode(value)
    assert data == text.encode("utf-8")
    back = dag_json.decode(data)
    expected = value
    if isinstance(value, (bytearray, memoryview)):
        expected = bytes(value)
    elif isinstance(value, tuple):
        expected = [1, [2]]
    assert back == expected


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0.0"), (-0.0, "0.0"), (1.0, "1.0"), (-1.5, "-1.5"), (0.5, "0.5"),
    (0.1 + 0.2, "0.30000000000000004"), (123.0, "123.0"), (1e20, "100000000000000000000.0"),
    (1e21, "1e+21"), (1.5e300, "1.5e+300"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (1e-6, "0.000001"), (1.25e-6, "0.00000125"), (1e-7, "1e-7"), (-1.5e-7, "-1.5e-7"),
    (5e-324, "5e-324"), (8.940696716308594e-8, "8.940696716308594e-8"),
    (82497.63712086187, "82497.63712086187"), (123456789012345680000.0, "123456789012345680000.0"),
    (2.0**53, "9007199254740992.0"),
])
def test_float_spelling(value: float, text: str) -> None:
    assert float_text(value) == text
    assert dag_json.encode(value) == text.encode()
    assert dag_json.decode(text.encode()) == value


@given(st.floats(allow_nan=False, allow_infinity=False))
@example(1e16)
@example(-1e-5)
def test_float_text_reads_back_as_the_same_float(value: float) -> None:
    text = float_text(value)
    assert float(text) == value and ("." in text or "e" in text)
    assert isinstance(json.loads(text), float)
    assert dag_json.decode(text.encode()) == value


# --- refusals on decode: code and byte offset -----------------------------------------

DECODE_ERRORS: list[tuple[bytes, type[errors.CanonkitError], int]] = [
    (b"", errors.EmptyInputError, 0),
    (b" 1", errors.NonCanonicalJSONError, 0),
    (b"[1, 2]", errors.NonCanonicalJSONError, 3),
    (b'{"a" :1}', errors.NonCanonicalJSONError, 4),
    (b"1\n", errors.NonCanonicalJSONError, 1),
    (b'{"b":1,"a":2}', errors.UnsortedMapKeysError, 7),
    (b'{"aa":1,"b":2,"a":3}', errors.UnsortedMapKeysError, 14),
    (b'{"a":1,"a":2}', errors.DuplicateMapKeyError, 7),
    (b'"\\u0041"', errors.NonCanonicalJSONError, 0),
    (b'"\\/"', errors.NonCanonicalJSONError, 0),
    (b'"\\u00e9"', errors.NonCanonicalJSONError, 0),
    (b'"\\u001F"', errors.NonCanonicalJSONError, 0),
    (b'"\\ud800"', errors.InvalidUTF8Error, 0),
    (b'["\\udc00x"]', errors.InvalidUTF8Error, 1),
    (b"1.50", errors.NonCanonicalJSONError, 0),
    (b"1E5", errors.NonCanonicalJSONError, 0),
    (b"1e5", errors.NonCanonicalJSONError, 0),
    (b"100000.0e0", errors.NonCanonicalJSONError, 0),
    (b"1e-07", errors.NonCanonicalJSONError, 0),
    (b"-0", errors.NonCanonicalJSONError, 0),
    (b"-0.0", errors.NonCanonicalJSONError, 0),
    (b"[1e400]", errors.FloatOutsideProfileError, 1),
    (b"NaN", errors.FloatOutsideProfileError, 0),
    (b"[-Infinity]", errors.FloatOutsideProfileError, 1),
    (b"18446744073709551616", errors.IntegerOutOfRangeError, 0),
    (b"-18446744073709551617", errors.IntegerOutOfRangeError, 0),
    (b"[" + b"9" * 5000 + b"]", errors.IntegerOutOfRangeError, 1),
    (b"01", errors.TrailingDataError, 1),
    (b"1 ", errors.NonCanonicalJSONError, 1),
    (b"[1]x", errors.TrailingDataError, 3),
    (b"[1,2", errors.TruncatedError, 0),
    (b'[[1],{"a":', errors.TruncatedError, 5),
    (b'["ab', errors.TruncatedError, 1),
    (b"tru", errors.TruncatedError, 0),
    (b"[nul", errors.TruncatedError, 0),
    (b"[", errors.TruncatedError, 0),
    (b"[1,]", errors.InvalidJSONError, 3),
    (b"{1:2}", errors.InvalidJSONError, 1),
    (b"'a'", errors.InvalidJSONError, 0),
    (b'"a\tb"', errors.InvalidJSONError, 2),
    (b'"\\x"', errors.InvalidJSONError, 1),
    (b"\xef\xbb\xbf1", errors.InvalidJSONError, 0),  # a byte order mark
    (b'"\xc3\x28"', errors.InvalidUTF8Error, 1),
    (b'["\xe6\xb0\xb4",1.50]', errors.NonCanonicalJSONError, 7),  # byte offset, not chars
    (b'{"/":"foo","bar":"baz"}', errors.ReservedNamespaceError, 0),
    (b'{"/":"foo","0bar":"baz"}', errors.ReservedNamespaceError, 0),  # "0" sorts after "/"
    (b'[{"/":{"bytes":"YQ"},"bar":"baz"}]', errors.ReservedNamespaceError, 1),
    (b'{"/":{"bytes":"YQ","z":1}}', errors.ReservedNamespaceError, 0),
    (b'{"/":{"bytes":"YQ=="}}', errors.ReservedNamespaceError, 0),
    (b'{"/":{"bytes":"YR"}}', errors.ReservedNamespaceError, 0),  # stray bits
    (b'{"/":{"bytes":"Y"}}', errors.ReservedNamespaceError, 0),
    (b'{"/":{"bytes":"Y-Q"}}', errors.ReservedNamespaceError, 0),
    (b'{"/":"foo"}', errors.InvalidLinkError, 0),
    (b'{"/":""}', errors.InvalidLinkError, 0),
    (('{"/":"B' + CID[1:].upper() + '"}').encode(), errors.InvalidLinkError, 0),
    (b'{"/":"zdpuAtX7ZibcWdSKQwiDCkPjWwRvtcKCPku9H7LhgA4qJW4Wk"}', errors.InvalidLinkError, 0),
    (b"[" * 513 + b"]" * 513, errors.DepthExceededError, 512),
]


@pytest.mark.parametrize(("data", "error", "offset"), DECODE_ERRORS)
def test_decode_refusals(data: bytes, error: type[errors.CanonkitError], offset: int) -> None:
    with pytest.raises(error) as info:
        dag_json.decode(data)
    assert type(info.value) is error
    assert info.value.offset == offset
    assert f"at offset {offset}" in str(info.value)


LENIENT_OK = [
    (b" [1 , 2 ]\n", [1, 2]), (b'{"b":1,"a":2}', {"a": 2, "b": 1}), (b'"\\u0041\\/"', "A/"),
    (b"1E5", 100000.0), (b"-0", 0), (b"-0.0", 0.0), (b"1.50", 1.5),
    (b'{ "/" : { "bytes" : "YQ" } }', b"a"), (b'{"!":1,"/":"foo"}', {"!": 1, "/": "foo"}),
]


@pytest.mark.parametrize(("data", "value"), LENIENT_OK)
def test_lenient_decoding(data: bytes, value: Any) -> None:
    result = dag_json.decode(data, strict=False)
    assert result == value and type(result) is type(value)
    if isinstance(value, float):
        assert math.copysign(1, result) == 1  # -0.0 reads as 0.0, as in dag-cbor


@pytest.mark.parametrize("data", [
    b'{"a":1,"a":2}',
    b'{"bar":"baz","/":"foo"}',               # "/" sorts first: it would be written first
    b'{"/":"foo","!":1}',                     # "/" written first
    b'{"0bar":"baz","/":"foo"}',              # the specification's example: "/" sorts first
    b'{"/":{"bytes":"YQ","bar":"baz"}}',      # "bytes" written first in the inner map
    b'{"/":{"z":1,"bytes":"YQ"}}',            # "bytes" sorts first
    b'{"/": "B' + CID[1:].upper().encode() + b'"}',
    b'[1,]', b'NaN', b'{"/":{"bytes":"YQ=="}}',
])
def test_lenient_still_refuses_what_dag_json_forbids(data: bytes) -> None:
    with pytest.raises(errors.DecodeError):
        dag_json.decode(data, strict=False)


def test_decode_takes_buffers_not_text() -> None:
    assert dag_json.decode(bytearray(b"[1]")) == [1]
    assert dag_json.decode(memoryview(b"[1]")) == [1]
    assert dag_json.decode(__import__("numpy").frombuffer(b"[1]", dtype="u1")) == [1]
    for bad in ("[1]", 5, memoryview(b"[1, 2]")[::2]):
        with pytest.raises(errors.InputTypeError):
            dag_json.decode(bad)  # type: ignore[arg-type]
    for depth in (-1, 1.5, True):
        with pytest.raises(errors.InvalidOptionError):
            dag_json.decode(b"1", max_depth=depth)  # type: ignore[arg-type]
        with pytest.raises(errors.InvalidOptionError):
            dag_json.encode(1, max_depth=depth)  # type: ignore[arg-type]


def test_max_depth_both_ways() -> None:
    nested: Any = []
    for _ in range(5):
        nested = [nested]
    data = dag_json.encode(nested)
    assert dag_json.decode(data, max_depth=6) == nested
    with pytest.raises(errors.DepthExceededError):
        dag_json.decode(data, max_depth=5)
    with pytest.raises(errors.DepthExceededError):
        dag_json.encode(nested, max_depth=5)
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(errors.DepthExceededError):
        dag_json.encode(loop)
    deep = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(errors.DepthExceededError):
        dag_json.decode(deep, strict=False)
    cycle: dict[str, Any] = {}
    cycle["a"] = [cycle]
    with pytest.raises(errors.DepthExceededError):
        dag_json.encode(cycle)


@pytest.mark.parametrize("depth", [512, 5000])
def test_deep_maps_need_no_recursion(depth: int) -> None:
    """Both directions keep their own stack: any max_depth is safe."""
    value: Any = {}
    for i in range(depth - 1):
        value = {"k": value} if i % 2 else [value, (1,), {"x": None}]
    data = dag_json.encode(value, max_depth=depth)
    assert data.count(b"{") + data.count(b"[") > depth
    again = dag_json.decode(data, max_depth=depth)
    assert dag_json.encode(again, max_depth=depth) == data
    with pytest.raises(errors.DepthExceededError):
        dag_json.encode(value, max_depth=depth - 1)
    with pytest.raises(errors.DepthExceededError):
        dag_json.decode(data, max_depth=depth - 1)


# --- refusals on encode --------------------------------------------------------------

@pytest.mark.parametrize(("value", "error"), [
    (math.nan, errors.FloatOutsideProfileError),
    ([math.inf], errors.FloatOutsideProfileError),
    (1 << 64, errors.IntegerOutOfRangeError),
    (-(1 << 64) - 1, errors.IntegerOutOfRangeError),
    ({1: 2}, errors.UnsupportedItemError),
    ({"/": "bafy"}, errors.UnsupportedItemError),
    ({"/": "x", "z": 1}, errors.UnsupportedItemError),
    ({"/": {"bytes": "YQ"}}, errors.UnsupportedItemError),
    ({"/": {"bytes": "YQ", "c": 1}}, errors.UnsupportedItemError),
    (Tag(1, 2), errors.UnsupportedItemError),
    (Simple(5), errors.UnsupportedItemError),
    (UNDEFINED, errors.UnsupportedItemError),
    ("\ud800", errors.UnsupportedItemError),
    ({"\udc00": 1}, errors.UnsupportedItemError),
    (object(), errors.UnsupportedTypeError),
    ({1.5}, errors.UnsupportedTypeError),
])
def test_encode_refusals(value: Any, error: type[errors.CanonkitError]) -> None:
    with pytest.raises(error) as info:
        dag_json.encode(value)
    assert type(info.value) is error and info.value.offset is None


# --- properties ----------------------------------------------------------------------

def _writable(value: Any) -> bool:
    """False for values containing a map DAG-JSON cannot hold (the reserved namespace)."""
    if isinstance(value, list):
        return all(_writable(v) for v in value)
    if isinstance(value, Mapping):
        try:
            dag_json.encode({k: None for k in value} | ({"/": value["/"]} if "/" in value
                                                        else {}), max_depth=1)
        except errors.UnsupportedItemError:
            return False
        except errors.CanonkitError:
            pass
        return all(_writable(v) for v in value.values())
    return True


@given(dag_values())
@example({"/": {"bytes": 1}, "a": -0.0})
def test_round_trip_and_same_model_as_dag_cbor(value: Any) -> None:
    if not _writable(value):
        with pytest.raises(errors.UnsupportedItemError):
            dag_json.encode(value)
        return
    data = dag_json.encode(value)
    decoded = dag_json.decode(data)
    assert decoded == expected_after_roundtrip(value, "dag-cbor")
    assert dag_json.encode(decoded) == data
    assert dag_json.decode(data, strict=False) == decoded
    # the same data model as dag-cbor, both directions
    cbor_bytes = cbor.encode(value, profile="dag-cbor")
    assert cbor.encode(decoded, profile="dag-cbor") == cbor_bytes
    assert dag_json.encode(cbor.decode(cbor_bytes, profile="dag-cbor")) == data


@given(dag_values(), st.data())
def test_mutated_input_never_crashes(value: Any, data: st.DataObject) -> None:
    if not _writable(value):
        return
    raw = bytearray(dag_json.encode(value))
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(raw)))
        action = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        byte = data.draw(st.sampled_from(list(b' ,:[]{}"\\/0123456789.eE-+abtfnu') + [0xC3]))
        if action == "insert" or index == len(raw):
            raw.insert(index, byte)
        elif action == "delete":
            del raw[index]
        else:
            raw[index] = byte
    for strict in (True, False):
        try:
            result = dag_json.decode(bytes(raw), strict=strict)
        except errors.DecodeError as exc:
            assert exc.code in errors.CODES and exc.offset is not None
            assert 0 <= exc.offset <= len(raw)
            outcome: Any = (type(exc), exc.offset)
        else:
            again = dag_json.encode(result)
            if strict:
                assert again == bytes(raw)  # strict accepts only the canonical bytes
            outcome = result
        if strict:
            assert _reader_outcome(bytes(raw)) == outcome


def _reader_outcome(raw: bytes) -> Any:
    """What the reference reader alone says (no json.loads fast path)."""
    if not raw:
        return (errors.EmptyInputError, 0)
    try:
        text = raw.decode("utf-8")
        return dag_json._decode_reader(raw, text, True, 512)
    except UnicodeDecodeError as exc:
        return (errors.InvalidUTF8Error, exc.start)
    except errors.DecodeError as exc:
        return (type(exc), exc.offset)


@given(st.binary(max_size=40))
def test_arbitrary_bytes_never_crash(raw: bytes) -> None:
    try:
        dag_json.decode(raw, strict=False)
    except errors.DecodeError as exc:
        assert exc.offset is not None and 0 <= exc.offset <= len(raw)


@given(dag_values())
def test_fast_path_and_reader_agree_on_canonical_input(value: Any) -> None:
    if not _writable(value):
        return
    data = dag_json.encode(value)
    assert dag_json._decode_reader(data, data.decode(), True, 512) == dag_json.decode(data)


def test_encode_matches_the_cbor_backends(cbor_impl: ModuleType) -> None:
    value = {"a": [1, 2.5, b"\x00", Link.from_string(CID)], "b": {"c": None}}
    assert dag_json.decode(dag_json.encode(value)) == cbor_impl.decode(
        cbor_impl.encode(value, profile="dag-cbor"), profile="dag-cbor")
