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
from types import ModuleType
from typing import Any

from blake3 import blake3 as _blake3

from ..errors import MissingKindError, SchemaViolationError, UnknownKindError
from .hashing import PARALLEL_MIN, PREFIX, Buffer, _hasher_local, address
from .registry import _KINDS, get_kind
from .schema import Kind

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
        from . import encode_object  # the live backend, resolved at call time

        self._set(kind, version, fields, encode_object(kind, fields, version=version))

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


_SPLICE_MAX = 21  # fields; with t and v the map head stays one byte (count <= 23)


def _splices_after_envelope(name: str) -> bool:
    """True if the text key ``name`` sorts after "v" in core (bytewise) key order: every
    key of two or more UTF-8 bytes (head 0x62+), and one-byte keys above "v"."""
    return len(name.encode("utf-8")) >= 2 or name > "v"


def _make_encoders(encode: Callable[..., bytes]
                   ) -> tuple[Callable[..., bytes], Callable[..., str]]:
    """``encode_object`` and ``address_object`` over one backend's ``encode``, as
    closures: the hot path (one small object, many times) does one dict lookup, the
    kind's generated validity predicate, one encoder call and — for ``address_object``,
    inlined rather than calling ``address`` — one reused hasher.

    The envelope is spliced rather than merged: when every field key sorts after "v"
    (true for all of canonkit's kinds), the canonical map ``{t, v, **fields}`` is the
    map head for ``n + 2`` pairs, then the encoded ``t`` and ``v`` pairs, then the pairs
    of the canonical ``fields`` map in their order — RFC 8949 §4.2.1 sorts pairs by
    their keys' bytes. The ``t``/``v`` pairs come from this backend's own encoding of
    ``{"t": kind, "v": version}``; building a 7-key dict per call costs more than the
    encoding itself. Kinds with other keys (or more than 21 fields) take the plain path.
    """
    kinds = _KINDS
    local = _hasher_local
    blake3 = _blake3
    splices: dict[Kind, tuple[bytes, ...]] = {}  # kind -> head+envelope bytes by field count

    def splice_heads(spec: Kind) -> tuple[bytes, ...]:
        names = [*spec.fields, *spec.optional]
        if not all(_splices_after_envelope(n) for n in names):
            heads: tuple[bytes, ...] = ()
        else:
            pairs = encode({"t": spec.name, "v": spec.version}, profile=PROFILE)[1:]
            heads = tuple(bytes((0xA0 + n + 2,)) + pairs for n in range(_SPLICE_MAX + 1))
        splices[spec] = heads
        return heads

    def envelope(spec: Kind, kind: str, version: int, fields: Any) -> bytes:
        heads = splices.get(spec)
        if heads is None:
            heads = splice_heads(spec)
        if type(fields) is dict and len(fields) < len(heads):
            return heads[len(fields)] + encode(fields, profile=PROFILE)[1:]
        return encode({"t": kind, "v": version, **fields}, profile=PROFILE)

    def encode_object(kind: str, fields: Any, *, version: int = 1) -> bytes:
        """The addressed bytes of an object; validates ``fields`` against the schema
        first (``SchemaViolationError`` naming the field), so every encoded object
        decodes again."""
        spec = kinds.get((kind, version)) if type(kind) is str else None
        if spec is None:
            spec = _lookup(kind, version)
        if spec.raw:
            spec.validate(fields)
            return bytes(fields)
        if not spec._fast(fields):
            spec.validate(fields)  # raises the precise violation, or accepts (bytearray ...)
        elif spec.check is not None:
            spec.check(fields)
        heads = splices.get(spec)
        if heads is not None and type(fields) is dict and len(fields) < len(heads):
            return heads[len(fields)] + encode(fields, profile=PROFILE)[1:]
        return envelope(spec, kind, version, fields)

    def address_object(kind: str, fields: Any, *, version: int = 1) -> str:
        """``address(encode_object(kind, fields, version=version))``."""
        spec = kinds.get((kind, version)) if type(kind) is str else None
        if spec is None or spec.raw:
            return address(encode_object(kind, fields, version=version))
        if not spec._fast(fields):
            spec.validate(fields)
        elif spec.check is not None:
            spec.check(fields)
        heads = splices.get(spec)
        if heads is not None and type(fields) is dict and len(fields) < len(heads):
            data = heads[len(fields)] + encode(fields, profile=PROFILE)[1:]
        else:
            data = envelope(spec, kind, version, fields)
        if len(data) >= PARALLEL_MIN:
            return address(data)
        try:
            hasher = local.hasher
        except AttributeError:
            hasher = local.hasher = blake3()
        hasher.reset()
        hasher.update(data)
        digest: bytes = hasher.digest()
        return PREFIX + digest.hex()

    return encode_object, address_object


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
        self.encode_object, self.address_object = _make_encoders(cbor.encode)

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
