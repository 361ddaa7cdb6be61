"""Hypothesis: random objects of every kind round-trip and address identically on both
CBOR backends; arbitrary and mutated bytes get the same verdict from both."""
from __future__ import annotations

from typing import Any

import pytest
from conftest import backend_module, backend_pair
from hypothesis import example, given, settings
from hypothesis import strategies as st

from canonkit import errors, objects
from canonkit.objects import ObjectCodec

refs = st.binary(min_size=32, max_size=32)
uints = st.integers(min_value=0, max_value=2**64 - 1)
texts = st.text(max_size=40)


@st.composite
def chunk_manifests(draw: st.DrawFn) -> dict[str, Any]:
    chunks = draw(st.lists(st.tuples(refs, st.integers(0, 2**40)).map(list), max_size=8))
    return {"size": sum(size for _, size in chunks), "chunks": chunks}


tree_names = st.text(min_size=1, max_size=20).filter(lambda s: "/" not in s)


@st.composite
def trees(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(tree_names, max_size=10, unique_by=lambda n: n.encode("utf-8")))
    names.sort(key=lambda n: n.encode("utf-8"))
    return {"entries": [{"name": n, "mode": draw(uints), "ref": draw(refs)} for n in names]}


commits = st.fixed_dictionaries({
    "tree": refs, "parents": st.lists(refs, max_size=4), "author": texts,
    "time": st.integers(-(2**64), 2**64 - 1), "message": st.text(max_size=200)})

conflicts = st.fixed_dictionaries({
    "path": texts, "base": st.none() | refs, "ours": st.none() | refs,
    "theirs": st.none() | refs})

any_object = st.one_of(
    st.tuples(st.just("blob"), st.binary(max_size=300)),
    st.tuples(st.just("chunk"), st.binary(max_size=300)),
    st.tuples(st.just("chunk-manifest"), chunk_manifests()),
    st.tuples(st.just("tree"), trees()),
    st.tuples(st.just("commit"), commits),
    st.tuples(st.just("conflict"), conflicts),
)


@pytest.fixture(scope="module")
def codecs() -> tuple[ObjectCodec, ObjectCodec]:
    c, py = backend_pair("cbor")
    return ObjectCodec(c), ObjectCodec(py)


@settings(max_examples=150)
@given(any_object)
def test_every_kind_round_trips_on_the_twin(obj: tuple[str, Any]) -> None:
    codec = ObjectCodec(backend_module("cbor", "py"))
    kind, fields = obj
    data = codec.encode_object(kind, fields)
    decoded = codec.decode_object(data, kind=kind)
    assert (decoded.kind, decoded.version, decoded.fields) == (kind, 1, fields)
    assert codec.encode_object(kind, decoded.fields) == data
    assert decoded.address == objects.address(data)


@settings(max_examples=150)
@given(any_object)
def test_both_backends_encode_and_address_identically(
        codecs: tuple[ObjectCodec, ObjectCodec], obj: tuple[str, Any]) -> None:
    c, py = codecs
    kind, fields = obj
    data = c.encode_object(kind, fields)
    assert py.encode_object(kind, fields) == data
    if kind not in ("blob", "chunk"):  # the spliced envelope is the merged map's encoding
        assert data == py.cbor.encode({"t": kind, "v": 1, **fields}, profile="core")
    assert c.address_object(kind, fields) == py.address_object(kind, fields)
    from_c, from_py = c.decode_object(data, kind=kind), py.decode_object(data, kind=kind)
    assert from_c.fields == from_py.fields == fields
    assert from_c.address == from_py.address == objects.addresses([data])[0]


def _verdict(codec: ObjectCodec, data: bytes) -> tuple[str, Any]:
    try:
        obj = codec.decode_object(data)
    except errors.CanonkitError as exc:
        return exc.code, exc.detail if isinstance(exc, errors.ObjectError) else exc.offset
    return "ok", (obj.kind, obj.fields)


@settings(max_examples=200)
@given(any_object.filter(lambda o: o[0] not in ("blob", "chunk")),
       st.integers(0, 10**6), st.integers(0, 255))
def test_mutated_objects_get_the_same_verdict(
        codecs: tuple[ObjectCodec, ObjectCodec], obj: tuple[str, Any], where: int,
        byte: int) -> None:
    c, py = codecs
    data = bytearray(c.encode_object(*obj))
    data[where % len(data)] = byte
    assert _verdict(c, bytes(data)) == _verdict(py, bytes(data))


@settings(max_examples=200)
@given(st.binary(max_size=64))
@example(bytes.fromhex("a2617468636f6d6d6974617601"))  # commit without fields
@example(bytes.fromhex("a26174647472656561761864"))  # tree v100
def test_arbitrary_bytes_get_the_same_verdict(
        codecs: tuple[ObjectCodec, ObjectCodec], data: bytes) -> None:
    c, py = codecs
    assert _verdict(c, data) == _verdict(py, data)


junk = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**65), 2**65) | st.floats() | st.text(max_size=5)
    | st.sampled_from(["", "a/b", "\u00e9"]) | st.binary(min_size=31, max_size=33)
    | st.builds(bytearray, st.binary(max_size=33)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8)


@settings(max_examples=300)
@given(any_object.filter(lambda o: o[0] not in ("blob", "chunk")), st.data())
def test_the_generated_fast_path_never_accepts_what_the_schema_rejects(
        obj: tuple[str, Any], data: st.DataObject) -> None:
    """The per-kind predicate (generated code) says True only for valid fields; the
    precise slow path is the reference."""
    kind_name, fields = obj
    kind = objects.get_kind(kind_name, 1)
    assert kind._fast(fields)  # valid objects take the fast path
    mutated = dict(fields)
    key = data.draw(st.sampled_from(sorted(mutated) + ["extra"]))
    mutated[key] = data.draw(junk)
    if data.draw(st.booleans()) and key != "extra":
        del mutated[key]
    try:
        kind.validate(mutated)
    except errors.SchemaViolationError:
        # the fast path is the predicate plus the kind's cross-field rule
        if kind._fast(mutated):
            assert kind.check is not None
            with pytest.raises(errors.SchemaViolationError):
                kind.check(mutated)
