"""Encoding and decoding objects through a CBOR backend (OBJECTS.md §1).

``ObjectCodec(cbor)`` binds the object layer to one CBOR backend module (anything with
``encode(obj, *, profile=...)`` and ``decode(data, *, profile=...)``): the conformance
checker runs the compiled backend and the pure-Python twin side by side this way. The
module-level functions of ``canonkit.objects`` use the live backend (``canonkit.cbor``).

Decoding checks, in this order and each with its own error: strict ``core`` CBOR (the
CBOR error classes), the envelope (``missing_kind``, ``unknown_kind``,
``unsupported_version``), the schema (``schema_violation`` naming the field).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import _backend
from ..errors import MissingKindError, SchemaViolationError, UnknownKindError
from .hashing import Buffer, address
from .registry import _KINDS, _V1, get_kind
from .schema import Kind

if TYPE_CHECKING:  # the twin is the typed surface
    from . import _address_py as _kernel
else:
    _kernel = _backend.select("objects", compiled="canonkit.objects._address",
                              twin="canonkit.objects._address_py")

__all__ = ["Object", "ObjectCodec"]

PROFILE = "core"
_U64 = 2**64


class Object:
    """One decoded or built object: ``kind``, ``version``, ``fields`` and its addressed
    bytes ``data``; ``address`` is computed on first use.

    ``fields`` is the field map without ``t``/``v`` for structured kinds, the raw
    ``bytes`` for ``blob``/``chunk``. It is a snapshot: the address is that of ``data``,
    whatever happens to ``fields`` later.
    """

    __slots__ = ("_address", "data", "fields", "kind", "version")

    kind: str
    version: int
    fields: Any
    data: bytes

    def __init__(self, kind: str, fields: Any, *, version: int = 1) -> None:
        self._set(kind, version, fields, live().encode_object(kind, fields, version=version))

    def _set(self, kind: str, version: int, fields: Any, data: bytes) -> None:
        self.kind = kind
        self.version = version
        self.fields = fields
        self.data = data
        self._address: str | None = None

    @classmethod
    def _from_parts(cls, kind: str, version: int, fields: Any, data: bytes) -> Object:
        obj = cls.__new__(cls)
        obj._set(kind, version, fields, data)
        return obj

    @property
    def address(self) -> str:
        """``"blake3:" + hex`` of ``data``."""
        if self._address is None:
            self._address = address(self.data)
        return self._address

    @property
    def raw(self) -> bool:
        """True for kinds without an envelope (blob, chunk)."""
        return get_kind(self.kind, self.version).raw

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Object):
            return NotImplemented
        return self.kind == other.kind and self.data == other.data

    def __hash__(self) -> int:
        return hash((self.kind, self.data))

    def __repr__(self) -> str:
        return f"Object({self.kind!r}, v{self.version}, {self.address})"


def _make_encoders(cbor: ModuleType) -> tuple[Callable[..., bytes], Callable[..., str]]:
    """``encode_object`` and ``address_object`` over one backend. The hot path (one small
    object, many times) of ``address_object`` is the addresser kernel's
    (``canonkit.objects._address``): one dict lookup, the kind's fields check, one
    ``encode_merged`` call (the kind's cached ``{"t", "v"}`` envelope and the caller's
    fields as one canonical map, no merged dict built) and one hash; every other call
    goes through ``encode_object``."""
    v1 = _V1
    encoder = getattr(cbor, "Encoder", None)
    if encoder is not None and hasattr(encoder, "encode_merged"):
        # a reusable core encoder's bound method: no option parsing per call
        encode_merged: Callable[[Any, Any], bytes] = encoder(profile=PROFILE).encode_merged
    else:
        encode_merged = _merged_through(cbor.encode)

    def encode_object(kind: str, fields: Any, *, version: int = 1) -> bytes:
        """The addressed bytes of an object; validates ``fields`` against the schema
        first (``SchemaViolationError`` naming the field), so every encoded object
        decodes again."""
        # True and 1.0 equal 1 but are no version: _lookup refuses them
        common = type(version) is int and version == 1 and type(kind) is str
        spec = v1.get(kind) if common else None
        if spec is None:
            spec = _lookup(kind, version)
        if spec.raw:
            spec.validate(fields)
            return bytes(fields)
        if not spec._fast(fields):
            spec.validate(fields)  # raises the precise violation, or accepts (bytearray ...)
        elif spec.check is not None:
            spec.check(fields)
        return encode_merged(spec._envelope, fields)

    def address_encoded(kind: str, fields: Any, *, version: int = 1) -> str:
        return address(encode_object(kind, fields, version=version))

    address_object: Callable[..., str] = _kernel.Addresser(
        v1, encode_merged, address_encoded).address_object
    return encode_object, address_object


def _merged_through(encode: Callable[..., bytes]) -> Callable[[Any, Any], bytes]:
    """``encode_merged`` for a backend module that has only ``encode`` (fields never hold
    ``t`` or ``v``: the schema refuses them before encoding)."""
    def encode_merged(first: Mapping[str, Any], second: Mapping[str, Any], /) -> bytes:
        return encode({**first, **second}, profile=PROFILE)
    return encode_merged


class ObjectCodec:
    """The object layer over one CBOR backend module.

    ``encode_object(kind, fields, *, version=1) -> bytes``,
    ``address_object(kind, fields, *, version=1) -> str`` and
    ``decode_object(data, /, *, kind=None) -> Object``.
    """

    __slots__ = ("_decode", "address_object", "cbor", "encode_object")

    def __init__(self, cbor: ModuleType) -> None:
        self.cbor = cbor
        self._decode = cbor.decode
        self.encode_object, self.address_object = _make_encoders(cbor)

    def decode_object(self, data: Buffer, /, *, kind: str | None = None) -> Object:
        """Decode addressed bytes into an ``Object``.

        Without ``kind`` the bytes must be a structured object (an envelope). Raw bytes
        carry no kind, so a ``blob``/``chunk`` is decoded by naming it (``kind="blob"``);
        naming a structured kind also checks that ``t`` matches (``schema_violation`` on
        ``"t"`` otherwise).
        """
        if kind is not None:
            named = [spec for (name, _), spec in list(_KINDS.items()) if name == kind]
            if not named:
                raise UnknownKindError(f"unknown kind {kind!r}", detail=kind)
            for spec in named:
                if spec.raw:
                    content = bytes(data)
                    return Object._from_parts(kind, spec.version, content, content)
        value = self._decode(data, profile=PROFILE)
        t, v = _envelope(value)
        spec = _lookup(t, v)
        if spec.raw:
            raise UnknownKindError(f"{t!r} is a raw kind and has no envelope", detail=t)
        if kind is not None and t != kind:
            raise SchemaViolationError(f"schema violation at field 't': expected {kind!r}, "
                                       f"got {t!r}", detail="t")
        fields = {key: val for key, val in value.items() if key != "t" and key != "v"}
        spec.validate(fields)
        return Object._from_parts(t, v, fields, bytes(data))


def _lookup(kind: Any, version: Any) -> Kind:
    if type(kind) is not str:
        raise TypeError(f"kind must be str, got {type(kind).__name__}")
    if type(version) is not int or not 0 <= version < _U64:
        raise TypeError(f"version must be an int in 0..2**64-1, got {version!r}")
    return get_kind(kind, version)


def _envelope(value: Any) -> tuple[str, int]:
    if not isinstance(value, Mapping):
        raise MissingKindError(f"an object is a CBOR map; got {type(value).__name__}",
                               detail="t")
    t = value.get("t")
    if type(t) is not str:
        raise MissingKindError("the object map has no text field 't' (kind)", detail="t")
    v = value.get("v")
    if type(v) is not int or v < 0:
        raise MissingKindError("the object map has no unsigned integer field 'v' (version)",
                               detail="v")
    return t, v


@cache
def live() -> ObjectCodec:
    """The codec over the live CBOR backend (``canonkit.cbor``), made on first use."""
    from .. import cbor

    return ObjectCodec(cbor)
