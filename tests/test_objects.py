"""canonkit.objects: addresses, the kind registry, encode/decode and their error order."""
from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from blake3 import blake3

from canonkit import errors, objects
from canonkit.objects import ObjectCodec

HELLO = bytes.fromhex("68656c6c6f20746f76696f0a")
HELLO_ADDRESS = "blake3:4321fae3f39665682914de5dec718fd33c3be477b162546057f7b321e961dfd3"
REF_A = bytes(range(32))
REF_B = bytes(range(1, 33))

VALID: dict[str, Any] = {
    "chunk-manifest": {"size": 10, "chunks": [[REF_A, 4], [REF_B, 6]]},
    "tree": {"entries": [{"name": "a", "mode": 0o100644, "ref": REF_A},
                         {"name": "b", "mode": 0o040000, "ref": REF_B}]},
    "commit": {"tree": REF_A, "parents": [REF_B], "author": "A <a@example.org>",
               "time": -1, "message": "m"},
    "conflict": {"path": "x", "base": None, "ours": REF_A, "theirs": REF_B},
}


@pytest.fixture
def codec(cbor_impl: ModuleType) -> ObjectCodec:
    return ObjectCodec(cbor_impl)


# --- addresses ------------------------------------------------------------------------

def test_seed_address_of_blob_hello() -> None:
    assert objects.address(HELLO) == HELLO_ADDRESS
    assert objects.address(memoryview(HELLO)) == HELLO_ADDRESS
    assert objects.address(bytearray(HELLO)) == HELLO_ADDRESS
    assert objects.Object("blob", HELLO).address == HELLO_ADDRESS


def test_address_is_blake3_of_the_bytes() -> None:
    for data in (b"", b"x", bytes(range(256)) * 40):
        assert objects.address(data) == "blake3:" + blake3(data).hexdigest()
        assert objects.digest_of(data) == blake3(data).digest()


def test_large_inputs_hash_in_parallel_to_the_same_address() -> None:
    from canonkit.objects.hashing import PARALLEL_MIN

    data = bytes(range(256)) * (PARALLEL_MIN // 256 + 3)
    expected = "blake3:" + blake3(data).hexdigest()
    assert objects.address(data) == expected
    assert objects.address(memoryview(data)) == expected
    assert objects.addresses([data, b"", data]) == [expected, objects.address(b""), expected]


def test_address_after_a_failed_call_is_unaffected() -> None:
    with pytest.raises(TypeError):
        objects.address("text")  # type: ignore[arg-type]
    assert objects.address(HELLO) == HELLO_ADDRESS


def _in_four_threads(work: Callable[[], list[str]]) -> list[list[str]]:
    """What ``work`` returned in each of four threads running it at once."""
    results: list[list[str]] = []
    threads = [threading.Thread(target=lambda: results.append(work())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_address_is_safe_across_threads() -> None:
    items = [i.to_bytes(4, "big") * 50 for i in range(3000)]
    expected = ["blake3:" + blake3(x).hexdigest() for x in items]
    assert _in_four_threads(lambda: [objects.address(x) for x in items]) == [expected] * 4


def test_reused_hashers_stay_per_call_and_bounded() -> None:
    """Inputs large enough that the blake3 package releases the GIL while hashing, so
    calls in four threads overlap: each call still gets a hasher of its own, and the idle
    ones kept for reuse number at most the callers that ran at once."""
    from canonkit.objects import hashing

    items = [bytes([i]) * (96 * 1024 + i) for i in range(40)]
    expected = ["blake3:" + blake3(x).hexdigest() for x in items]
    assert _in_four_threads(lambda: [objects.address(x) for x in items]) == [expected] * 4
    assert 1 <= len(hashing._address._idle) <= 5  # four threads and this one

def test_addresses_batch_equals_one_by_one() -> None:
    items = [bytes([i % 256]) * i for i in range(300)] + [memoryview(b"abc"), bytearray(b"")]
    assert objects.addresses(items) == [objects.address(x) for x in items]
    assert objects.addresses(iter(items)) == objects.addresses(items)
    assert objects.addresses([]) == []


def test_addresses_is_safe_across_threads() -> None:
    items = [i.to_bytes(4, "big") * 50 for i in range(2000)]
    expected = [objects.address(x) for x in items]
    assert _in_four_threads(lambda: objects.addresses(items)) == [expected] * 4


def test_parse_address() -> None:
    assert objects.parse_address(HELLO_ADDRESS) == objects.digest_of(HELLO)
    for bad in ("", HELLO_ADDRESS.upper(), HELLO_ADDRESS[:-1], "sha256:" + "0" * 64,
                HELLO_ADDRESS + "0", "blake3:" + "g" * 64):
        with pytest.raises(errors.SchemaViolationError) as info:
            objects.parse_address(bad)
        assert info.value.detail == "address"


# --- encode / decode ------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(VALID))
def test_structured_round_trip(codec: ObjectCodec, kind: str) -> None:
    data = codec.encode_object(kind, VALID[kind])
    assert codec.cbor.decode(data, profile="core") == {"t": kind, "v": 1, **VALID[kind]}
    obj = codec.decode_object(data)
    assert (obj.kind, obj.version, obj.fields) == (kind, 1, VALID[kind])
    assert obj.data == data and obj.address == objects.address(data)
    assert codec.encode_object(obj.kind, obj.fields, version=obj.version) == data
    assert codec.decode_object(data, kind=kind) == obj


def test_envelope_bytes_are_core_cbor_with_t_and_v() -> None:
    data = objects.encode_object("conflict", {"path": "a", "base": None, "ours": None,
                                              "theirs": None})
    # keys in bytewise order of their encodings: t, v, then the 4-letter keys, then 6-letter
    assert data.hex() == ("a6" "6174" "68" + b"conflict".hex() + "6176" "01"
                          "6462617365" "f6" "646f757273" "f6" "6470617468" "6161"
                          "66746865697273" "f6")


@pytest.mark.parametrize("kind", ["blob", "chunk"])
def test_raw_kinds_have_no_envelope(codec: ObjectCodec, kind: str) -> None:
    assert codec.encode_object(kind, HELLO) == HELLO
    assert codec.encode_object(kind, bytearray(HELLO)) == HELLO
    obj = codec.decode_object(HELLO, kind=kind)
    assert (obj.kind, obj.version, obj.fields, obj.data) == (kind, 1, HELLO, HELLO)
    assert obj.raw
    with pytest.raises(errors.SchemaViolationError):
        codec.encode_object(kind, "text")
    with pytest.raises(errors.UnsupportedVersionError):
        codec.encode_object(kind, HELLO, version=2)


def test_raw_kind_inside_an_envelope_is_unknown(codec: ObjectCodec) -> None:
    data = codec.cbor.encode({"t": "blob", "v": 1}, profile="core")
    with pytest.raises(errors.UnknownKindError):
        codec.decode_object(data)


def test_decode_checks_cbor_then_envelope_then_schema(codec: ObjectCodec) -> None:
    enc = codec.cbor.encode
    # strict CBOR first: unsorted keys in an otherwise unknown kind with a bad schema
    with pytest.raises(errors.UnsortedMapKeysError):
        codec.decode_object(bytes.fromhex("a2617601617401"))
    with pytest.raises(errors.EmptyInputError):
        codec.decode_object(b"")
    with pytest.raises(errors.TrailingDataError):
        codec.decode_object(enc({"t": "tree", "v": 1, "entries": []}, profile="core") + b"\0")
    cases: list[tuple[Any, type[errors.ObjectError], Any]] = [
        ([1], errors.MissingKindError, "t"),
        ({"v": 1}, errors.MissingKindError, "t"),
        ({"t": 1, "v": 1}, errors.MissingKindError, "t"),
        ({"t": "tree"}, errors.MissingKindError, "v"),
        ({"t": "tree", "v": -1}, errors.MissingKindError, "v"),
        ({"t": "tree", "v": "1"}, errors.MissingKindError, "v"),
        ({"t": "no-such-kind", "v": 1, "x": 1}, errors.UnknownKindError, "no-such-kind"),
        ({"t": "tree", "v": 7, "x": 1}, errors.UnsupportedVersionError, 7),
        ({"t": "tree", "v": 1, "x": 1}, errors.SchemaViolationError, "entries"),
        ({"t": "tree", "v": 1, "entries": [], "x": 1}, errors.SchemaViolationError, "x"),
        ({"t": "tree", "v": 1, "entries": [], 1: 1}, errors.SchemaViolationError, "1"),
    ]
    for value, cls, detail in cases:
        with pytest.raises(cls) as info:
            codec.decode_object(enc(value, profile="core"))
        assert info.value.detail == detail, value


def test_decode_with_expected_kind(codec: ObjectCodec) -> None:
    data = codec.encode_object("tree", {"entries": []})
    with pytest.raises(errors.SchemaViolationError) as info:
        codec.decode_object(data, kind="commit")
    assert info.value.detail == "t"
    with pytest.raises(errors.UnknownKindError):
        codec.decode_object(data, kind="no-such-kind")


BAD_FIELDS: list[tuple[str, dict[str, Any], str]] = [
    ("chunk-manifest", {"size": -1, "chunks": []}, "size"),
    ("chunk-manifest", {"size": 2**64, "chunks": []}, "size"),
    ("chunk-manifest", {"size": True, "chunks": []}, "size"),
    ("chunk-manifest", {"size": 4, "chunks": [[REF_A, 3]]}, "size"),  # sum differs
    ("chunk-manifest", {"size": 4, "chunks": [[REF_A]]}, "chunks[0]"),
    ("chunk-manifest", {"size": 4, "chunks": [[REF_A[:31], 4]]}, "chunks[0][0]"),
    ("chunk-manifest", {"size": 4, "chunks": [[REF_A, "4"]]}, "chunks[0][1]"),
    ("chunk-manifest", {"size": 4, "chunks": {}}, "chunks"),
    ("chunk-manifest", {"chunks": []}, "size"),
    ("tree", {"entries": [{"name": "", "mode": 1, "ref": REF_A}]}, "entries[0].name"),
    ("tree", {"entries": [{"name": "a/b", "mode": 1, "ref": REF_A}]}, "entries[0].name"),
    ("tree", {"entries": [{"name": "b", "mode": 1, "ref": REF_A},
                          {"name": "a", "mode": 1, "ref": REF_A}]}, "entries[1].name"),
    ("tree", {"entries": [{"name": "a", "mode": 1, "ref": REF_A},
                          {"name": "a", "mode": 2, "ref": REF_B}]}, "entries[1].name"),
    # UTF-8 byte order, not code point order: U+FF61 (ef bd a1) < U+1F600 (f0 9f 98 80),
    # and 'é' (c3 a9) sorts after 'z'
    ("tree", {"entries": [{"name": "\U0001f600", "mode": 1, "ref": REF_A},
                          {"name": "\uff61", "mode": 1, "ref": REF_A}]}, "entries[1].name"),
    ("tree", {"entries": [{"name": "\u00e9", "mode": 1, "ref": REF_A},
                          {"name": "z", "mode": 1, "ref": REF_A}]}, "entries[1].name"),
    ("tree", {"entries": [{"name": "a", "mode": -1, "ref": REF_A}]}, "entries[0].mode"),
    ("tree", {"entries": [{"name": "a", "mode": 1, "ref": "00" * 32}]}, "entries[0].ref"),
    ("tree", {"entries": [{"name": "a", "mode": 1}]}, "entries[0].ref"),
    ("tree", {"entries": [{"name": "a", "mode": 1, "ref": REF_A, "x": 0}]}, "entries[0].x"),
    ("tree", {"entries": [["a", 1, REF_A]]}, "entries[0]"),
    ("commit", {**VALID["commit"], "tree": None}, "tree"),
    ("commit", {**VALID["commit"], "parents": [REF_A, b"short"]}, "parents[1]"),
    ("commit", {**VALID["commit"], "author": b"A"}, "author"),
    ("commit", {**VALID["commit"], "time": 1.5}, "time"),
    ("commit", {**VALID["commit"], "time": -(2**64) - 1}, "time"),
    ("commit", {**VALID["commit"], "t": "commit"}, "t"),
    ("commit", {k: v for k, v in VALID["commit"].items() if k != "message"}, "message"),
    ("conflict", {**VALID["conflict"], "theirs": b""}, "theirs"),
    ("conflict", {**VALID["conflict"], "path": None}, "path"),
]


@pytest.mark.parametrize(("kind", "fields", "field"), BAD_FIELDS)
def test_schema_violation_names_the_field(codec: ObjectCodec, kind: str,
                                          fields: dict[str, Any], field: str) -> None:
    with pytest.raises(errors.SchemaViolationError) as info:
        codec.encode_object(kind, fields)
    assert info.value.detail == field
    assert repr(field) in str(info.value)
    if field in ("t", "v"):
        return  # the envelope key itself: as bytes it is just the envelope
    # the same violation arriving as bytes is reported the same way by the decoder
    try:
        data = codec.cbor.encode({"t": kind, "v": 1, **fields}, profile="core")
    except errors.CBORError:
        return  # not encodable at all (e.g. an int beyond the core range)
    with pytest.raises(errors.SchemaViolationError) as info:
        codec.decode_object(data)
    assert info.value.detail == field


def test_accepted_field_types_on_encode() -> None:
    fields = {**VALID["commit"], "tree": bytearray(REF_A), "parents": (memoryview(REF_B),)}
    assert objects.encode_object("commit", fields) == objects.encode_object(
        "commit", {**VALID["commit"], "tree": REF_A, "parents": [REF_B]})


def test_unknown_kind_and_version_on_encode() -> None:
    with pytest.raises(errors.UnknownKindError):
        objects.encode_object("no-such-kind", {})
    with pytest.raises(errors.UnsupportedVersionError):
        objects.encode_object("tree", {"entries": []}, version=2)
    with pytest.raises(TypeError):
        objects.encode_object(b"tree", {"entries": []})  # type: ignore[arg-type]


def test_object_value_semantics() -> None:
    a = objects.Object("tree", VALID["tree"])
    b = objects.decode_object(a.data)
    assert a == b and hash(a) == hash(b) and a.address == b.address
    assert a != objects.Object("blob", a.data)  # same bytes, different kind
    assert repr(a) == f"Object('tree', v1, {a.address})"
    assert objects.address_object("tree", VALID["tree"]) == a.address


# --- the registry ---------------------------------------------------------------------

def test_builtin_kinds() -> None:
    names = {(k.name, k.version, k.raw) for k in objects.BUILTIN_KINDS}
    assert names == {("blob", 1, True), ("chunk", 1, True), ("chunk-manifest", 1, False),
                     ("tree", 1, False), ("commit", 1, False), ("conflict", 1, False)}
    for kind in objects.BUILTIN_KINDS:
        assert objects.get_kind(kind.name, kind.version) is kind
        with pytest.raises(ValueError):
            objects.register_kind(kind, replace=True)
        with pytest.raises(ValueError):
            objects.unregister_kind(kind.name, kind.version)


def test_register_a_user_kind(codec: ObjectCodec) -> None:
    from canonkit.objects import REF, Array, Bool, Text

    def no_self_reference(fields: Any) -> None:
        if fields.get("parent") is not None and fields["parent"] in fields["links"]:
            raise objects.violation("parent", "also listed in links")

    kind = objects.register_kind(
        "example.note", 2, fields={"title": Text(non_empty=True), "links": Array(REF),
                                   "draft": Bool()},
        optional={"tags": Array(Text(), order_by="self"), "parent": objects.Nullable(REF)},
        check=no_self_reference)
    try:
        assert objects.get_kind("example.note", 2) is kind
        fields = {"title": "hi", "links": [REF_A], "draft": False, "tags": ["a", "b"]}
        obj = codec.decode_object(codec.encode_object("example.note", fields, version=2))
        assert (obj.kind, obj.version, obj.fields) == ("example.note", 2, fields)
        for bad, field in [({**fields, "tags": ["b", "a"]}, "tags[1]"),
                           ({**fields, "parent": REF_A}, "parent"),
                           ({**fields, "draft": 0}, "draft"),
                           ({**fields, "title": ""}, "title")]:
            with pytest.raises(errors.SchemaViolationError) as info:
                codec.encode_object("example.note", bad, version=2)
            assert info.value.detail == field
        with pytest.raises(errors.UnsupportedVersionError):
            codec.encode_object("example.note", fields, version=1)
        with pytest.raises(ValueError):
            objects.register_kind("example.note", 2, fields={"title": Text()})
        replaced = objects.register_kind("example.note", 2, fields={"title": Text()},
                                         replace=True)
        assert objects.get_kind("example.note", 2) is replaced
    finally:
        objects.unregister_kind("example.note", 2)
    with pytest.raises(errors.UnknownKindError):
        objects.get_kind("example.note", 2)


@pytest.mark.parametrize("bad", [
    {"name": ""}, {"name": "has space"}, {"name": "caf\u00e9"}, {"name": "ok", "version": -1},
    {"name": "ok", "fields": {"t": objects.Text()}},
    {"name": "ok", "fields": {"a": objects.Text()}, "optional": {"a": objects.Text()}},
    {"name": "ok", "raw": True, "fields": {"a": objects.Text()}},
])
def test_invalid_kind_definitions(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        objects.Kind(**bad)


@pytest.mark.parametrize(("kind", "fields"), [
    ("blob", HELLO), ("chunk", b""), ("commit", VALID["commit"]),
    ("commit", {**VALID["commit"], "message": "x" * (1 << 20)}),  # parallel hashing path
])
def test_address_object_equals_address_of_encode_object(codec: ObjectCodec, kind: str,
                                                        fields: Any) -> None:
    assert codec.address_object(kind, fields) == objects.address(
        codec.encode_object(kind, fields))


def test_address_object_validates_like_encode_object(codec: ObjectCodec) -> None:
    with pytest.raises(errors.SchemaViolationError) as info:
        codec.address_object("commit", {**VALID["commit"], "time": "now"})
    assert info.value.detail == "time"
    with pytest.raises(errors.SchemaViolationError) as info:
        codec.address_object("chunk-manifest", {"size": 1, "chunks": []})
    assert info.value.detail == "size"
    with pytest.raises(errors.UnknownKindError):
        codec.address_object("nope", {})


@pytest.mark.parametrize("names", [
    ["a", "b"],             # one-byte keys before "t": the envelope is not a prefix
    ["u", "w", "zz"],       # "u" sorts between "t" and "v"; "w" after
    ["w", "x", "long name"],
    [f"field{i:02d}" for i in range(22)],   # more fields than the one-byte map head allows
    [f"field{i:02d}" for i in range(21)],
])
def test_envelope_equals_the_merged_map_for_any_field_names(codec: ObjectCodec,
                                                            names: list[str]) -> None:
    from canonkit.objects import UInt

    objects.register_kind("example.keys", 1, fields={n: UInt() for n in names[1:]},
                          optional={names[0]: UInt()})
    try:
        for fields in ({n: i for i, n in enumerate(names)},
                       {n: i for i, n in enumerate(names) if n != names[0]}):
            data = codec.encode_object("example.keys", fields)
            assert data == codec.cbor.encode({"t": "example.keys", "v": 1, **fields},
                                             profile="core")
            assert codec.address_object("example.keys", fields) == objects.address(data)
            assert codec.decode_object(data).fields == fields
    finally:
        objects.unregister_kind("example.keys", 1)
