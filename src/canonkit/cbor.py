"""Deterministic CBOR: ``encode``/``decode`` under the profiles ``core`` (default),
``dcbor`` and ``dag-cbor`` (see docs/cbor.md and CBOR.md).

The backend is the compiled ``canonkit._cbor`` when built, else the pure-Python twin
``canonkit._cbor_py`` (``canonkit.backend()["cbor"]`` says which). The functions below are
the backend's own objects, bound without a wrapper, so the facade costs nothing per call.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _backend, dag_json
from ._cbor_diag import diagnose
from ._cbor_options import MAX_KEY_DEPTH
from ._cbor_types import (
    DEFAULT_MAX_DEPTH,
    PROFILES,
    UNDEFINED,
    FrozenDict,
    Link,
    Simple,
    Tag,
    UndefinedType,
)
from .errors import (
    CBORError,
    DecodeError,
    DepthExceededError,
    DuplicateMapKeyError,
    EmptyInputError,
    EncodeError,
    FloatOutsideProfileError,
    IndefiniteLengthError,
    IntegerOutOfRangeError,
    InputTypeError,
    InvalidLinkError,
    InvalidOptionError,
    InvalidUTF8Error,
    LimitExceededError,
    NonNFCTextError,
    NonShortestIntegerError,
    NotWellFormedError,
    TrailingDataError,
    TruncatedError,
    UnknownProfileError,
    UnrepresentableMapError,
    UnsortedMapKeysError,
    UnsupportedItemError,
    UnsupportedTypeError,
)

if TYPE_CHECKING:  # the twin is the typed surface
    from ._cbor_py import (
        Decoder,
        Encoder,
        check,
        check_sequence,
        decode,
        decode_prefix,
        encode,
        iter_sequence,
        load,
    )
else:
    _impl = _backend.load("cbor")
    encode = _impl.encode
    decode = _impl.decode
    Encoder = _impl.Encoder
    Decoder = _impl.Decoder
    check = _impl.check
    check_sequence = _impl.check_sequence
    decode_prefix = _impl.decode_prefix
    iter_sequence = _impl.iter_sequence
    load = _impl.load

dumps = encode
loads = decode

__all__ = [
    "DEFAULT_MAX_DEPTH", "MAX_KEY_DEPTH", "PROFILES", "UNDEFINED", "CBORError", "DecodeError",
    "Decoder", "DepthExceededError", "DuplicateMapKeyError", "EmptyInputError", "EncodeError",
    "Encoder", "FloatOutsideProfileError", "FrozenDict", "IndefiniteLengthError",
    "InputTypeError", "IntegerOutOfRangeError", "InvalidLinkError", "InvalidOptionError",
    "InvalidUTF8Error", "LimitExceededError", "Link", "NonNFCTextError",
    "NonShortestIntegerError", "NotWellFormedError", "Simple", "Tag", "TrailingDataError",
    "TruncatedError", "UndefinedType", "UnknownProfileError", "UnrepresentableMapError",
    "UnsortedMapKeysError", "UnsupportedItemError", "UnsupportedTypeError", "check",
    "check_sequence", "dag_json", "decode", "decode_prefix", "diagnose", "dumps", "encode",
    "iter_sequence", "load", "loads",
]
