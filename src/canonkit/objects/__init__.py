"""Content-addressed objects (OBJECTS.md §1).

    >>> from canonkit import objects
    >>> objects.address(b"hello tovio\\n")
    'blake3:4321fae3f39665682914de5dec718fd33c3be477b162546057f7b321e961dfd3'
    >>> data = objects.encode_object("conflict", {"path": "a", "base": None,
    ...                                           "ours": None, "theirs": None})
    >>> objects.decode_object(data).fields["path"]
    'a'

``blob`` and ``chunk`` are raw bytes; every other kind is one ``core``-profile CBOR map
``{"t": kind, "v": version, ...fields}``. The functions here use the live CBOR backend
(``canonkit.cbor``); ``ObjectCodec(module)`` binds another one.
"""
from __future__ import annotations

from .codec import Object, ObjectCodec, live
from .hashing import PREFIX, address, addresses, digest_of, parse_address
from .registry import BUILTIN_KINDS, get_kind, register_kind, registered_kinds, unregister_kind
from .schema import (
                     REF,
                     Array,
                     Bool,
                     Bytes,
                     FieldType,
                     Int,
                     Kind,
                     Nullable,
                     Record,
                     Text,
                     Tuple,
                     UInt,
                     violation,
)

__all__ = [
    "BUILTIN_KINDS", "PREFIX", "REF", "Array", "Bool", "Bytes", "FieldType", "Int", "Kind",
    "Nullable", "Object", "ObjectCodec", "Record", "Text", "Tuple", "UInt", "address",
    "address_object", "addresses", "decode_object", "digest_of", "encode_object", "get_kind",
    "parse_address", "register_kind", "registered_kinds", "unregister_kind", "violation",
]

_live = live()
encode_object = _live.encode_object
decode_object = _live.decode_object
address_object = _live.address_object
