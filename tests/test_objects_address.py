"""The compiled addresser (canonkit.objects._address) against its twin: the same addresses
and digests for any buffer, and ``Addresser.address_object`` takes its common case or
hands the call to ``slow`` exactly as the twin does."""
from __future__ import annotations

from typing import Any

import pytest
from blake3 import blake3
from conftest import backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st

from canonkit import cbor, errors, objects
from canonkit.objects import Array, Bool, Bytes, Kind, Text, UInt

buffers = st.binary(max_size=300).flatmap(
    lambda b: st.sampled_from([b, bytearray(b), memoryview(b)]))


@settings(max_examples=300)
@given(buffers)
def test_address_and_digest_agree(data: Any) -> None:
    compiled, twin = backend_pair("objects", "addresser")
    want = blake3(bytes(data)).digest()
    assert compiled.digest_of(data) == twin.digest_of(data) == want
    assert compiled.address(data) == twin.address(data) == "blake3:" + want.hex()
    assert compiled.addresses([data, b""]) == twin.addresses([data, b""])


def test_address_refusals_agree() -> None:
    compiled, twin = backend_pair("objects", "addresser")
    for bad in ("text", 3, None, [b"x"]):
        for module in (compiled, twin):
            with pytest.raises(TypeError):
                module.address(bad)
            with pytest.raises(TypeError):
                module.addresses([b"ok", bad])


KINDS = {
    "file": Kind("file", 1, fields={"name": Text(), "size": UInt(), "ok": Bool(),
                                    "tags": Array(Text())}),
    "digest": Kind("digest", 1, fields={"sha256": Bytes(32)}),
    "checked": Kind("checked", 1, fields={"size": UInt()}, check=lambda f: None),
    "optional": Kind("optional", 1, fields={"a": UInt()}, optional={"b": Text()}),
}

values = st.one_of(st.none(), st.booleans(), st.integers(-5, 2**64 + 1), st.text(max_size=5),
                   st.binary(max_size=33), st.lists(st.text(max_size=2), max_size=3))
fields_maps = st.dictionaries(st.sampled_from(["name", "size", "ok", "tags", "sha256", "a",
                                               "b", "t"]), values, max_size=5)


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - the class and args are what is compared
        return type(exc).__name__, exc.args


@settings(max_examples=400)
@given(st.sampled_from([*KINDS, "unknown", 7]), fields_maps,
       st.sampled_from([1, 2, True, 1.0]))
def test_address_object_agrees(kind: Any, fields: dict[str, Any], version: Any) -> None:
    compiled, twin = backend_pair("objects", "addresser")
    encode_merged = cbor.Encoder(profile="core").encode_merged
    calls: list[tuple[str, Any, Any, Any]] = []

    def slow(which: str) -> Any:
        def call(kind: Any, fields: Any, *, version: Any = 1) -> str:
            calls.append((which, kind, fields, version))
            return "slow"
        return call

    got = _outcome(lambda: compiled.Addresser(KINDS, encode_merged, slow("c"))
                   .address_object(kind, fields, version=version))
    want = _outcome(lambda: twin.Addresser(KINDS, encode_merged, slow("py"))
                    .address_object(kind, fields, version=version))
    assert got == want
    assert [c[1:] for c in calls if c[0] == "c"] == [c[1:] for c in calls if c[0] == "py"]
    if want[0] == "ok" and want[1] != "slow":  # the common case: the object's address
        spec = KINDS[kind]
        data = cbor.encode({"t": kind, "v": 1, **fields}, profile="core")
        assert want[1] == "blake3:" + blake3(data).hexdigest()
        assert spec.check is None and spec._fast(fields)


def test_address_object_keeps_the_errors_of_encode_object() -> None:
    """The live ``address_object`` (compiled addresser) raises what ``encode_object``
    raises, and gives ``address(encode_object(...))`` otherwise."""
    good = {"path": "p", "base": None, "ours": None, "theirs": None}
    assert objects.address_object("conflict", good) == objects.address(
        objects.encode_object("conflict", good))
    for kind, fields, version, error in (
            ("conflict", {**good, "path": 1}, 1, errors.SchemaViolationError),
            ("no-such-kind", good, 1, errors.UnknownKindError),
            ("conflict", good, 2, errors.UnsupportedVersionError),
            (b"conflict", good, 1, TypeError),
            ("conflict", good, -1, TypeError),
            ("conflict", good, True, TypeError),  # equal to 1, but no version
            ("conflict", good, 1.0, TypeError)):
        with pytest.raises(error):
            objects.encode_object(kind, fields, version=version)
        with pytest.raises(error):
            objects.address_object(kind, fields, version=version)


class _CheckedLater(Kind):
    """A kind class whose ``check`` is a property: not the slot the compiled addresser
    may read."""

    __slots__ = ()

    @property  # type: ignore[override]
    def check(self) -> Any:
        return lambda fields: None

    @check.setter
    def check(self, value: Any) -> None:
        pass  # Kind.__init__ sets it; the property keeps answering


class _LoudKind(Kind):
    """A kind class that customises attribute access."""

    __slots__ = ("reads",)

    def __getattribute__(self, name: str) -> Any:
        if name in ("check", "_fast", "_envelope"):
            object.__getattribute__(self, "reads").append(name)
        return object.__getattribute__(self, name)


def test_address_object_reads_what_attribute_access_reads() -> None:
    """The compiled addresser reads a kind's check, _fast and _envelope from its slots
    only where attribute access would read those slots: a kind whose check is set after it
    was made, a subclass defining check as a property, one customising attribute access,
    and an empty slot all give what the twin gives, kind after kind on one addresser."""
    compiled, twin = backend_pair("objects", "addresser")
    encode_merged = cbor.Encoder(profile="core").encode_merged
    fields = {"size": 3}
    reassigned = Kind("reassigned", 1, fields={"size": UInt()})
    reassigned.check = lambda f: None  # the slow path takes it from now on
    loud = _LoudKind("loud", 1, fields={"size": UInt()})
    loud.reads = []
    emptied = Kind("emptied", 1, fields={"size": UInt()})
    del emptied._envelope
    kinds = {"plain": Kind("plain", 1, fields={"size": UInt()}), "reassigned": reassigned,
             "property": _CheckedLater("property", 1, fields={"size": UInt()}), "loud": loud,
             "emptied": emptied}

    def slow(kind: Any, fields: Any, *, version: Any = 1) -> str:
        return "slow"

    addressers = [module.Addresser(kinds, encode_merged, slow) for module in (compiled, twin)]
    for kind in ("plain", "reassigned", "property", "loud", "plain", "emptied", "plain"):
        outcomes = [_outcome(lambda: a.address_object(kind, fields)) for a in addressers]
        assert outcomes[0] == outcomes[1], kind
    assert loud.reads == ["check", "_fast", "_envelope"] * 2
    assert _outcome(lambda: addressers[0].address_object("plain", fields))[1].startswith(
        "blake3:")
    assert _outcome(lambda: addressers[0].address_object("emptied", fields))[0] == \
        "AttributeError"
