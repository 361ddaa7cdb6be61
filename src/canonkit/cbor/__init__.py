"""Deterministic CBOR: ``encode``/``decode`` under the profiles ``core`` (default),
``dcbor`` and ``dag-cbor`` (see docs/cbor.md and CBOR.md).

The backend is the compiled ``canonkit.cbor._codec`` when built, else the pure-Python twin
``canonkit.cbor._codec_py`` (``canonkit.backend()["cbor"]`` says which). The functions below are
the backend's own objects, bound without a wrapper, so the facade costs nothing per call.
"""
from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any, Callable

from .. import _backend
from . import dag_json
from ._diagnostic import diagnose
from ._options import MAX_KEY_DEPTH
from ._types import (
    DEFAULT_MAX_DEPTH,
    MAX_ENCODE_DEPTH,
    PROFILES,
    UNDEFINED,
    FrozenDict,
    Link,
    Simple,
    Tag,
    UndefinedType,
)
from ..errors import (
    BufferTooSmallError,
    CBORError,
    ChangedDuringEncodingError,
    DecodeError,
    DepthExceededError,
    DuplicateMapKeyError,
    EmptyInputError,
    EncodeDepthExceededError,
    EncodeDuplicateMapKeyError,
    EncodeError,
    EncodeFloatOutsideProfileError,
    EncodeIntegerOutOfRangeError,
    EncodeNonNFCTextError,
    EncodeUnsupportedItemError,
    FloatOutsideProfileError,
    HookRefusedError,
    IndefiniteLengthError,
    IntegerOutOfRangeError,
    InputTypeError,
    InUseError,
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
    from ._codec_py import (
        Decoder,
        Encoder,
        check,
        check_prefix,
        check_sequence,
        decode,
        decode_prefix,
        encode,
        encode_into,
        encode_merged,
        iter_sequence,
        load,
    )
else:
    _impl = _backend.select("cbor", compiled="canonkit.cbor._codec",
                            twin="canonkit.cbor._codec_py")
    encode = _impl.encode
    encode_into = _impl.encode_into
    encode_merged = _impl.encode_merged
    decode = _impl.decode
    Encoder = _impl.Encoder
    Decoder = _impl.Decoder
    check = _impl.check
    check_prefix = _impl.check_prefix
    check_sequence = _impl.check_sequence
    decode_prefix = _impl.decode_prefix
    iter_sequence = _impl.iter_sequence
    load = _impl.load

dumps = encode
loads = decode


def dump(obj: Any, fp: IO[bytes], /, *, profile: str = "core",
         default: Callable[[Any], Any] | None = None, max_depth: int = DEFAULT_MAX_DEPTH) -> int:
    """Encode ``obj`` and write it to the binary file ``fp``; return the bytes written.

    The value is encoded completely before anything is written, so an encode error
    leaves ``fp`` untouched."""
    data = encode(obj, profile=profile, default=default, max_depth=max_depth)
    fp.write(data)
    return len(data)


__all__ = [
    "DEFAULT_MAX_DEPTH", "MAX_ENCODE_DEPTH", "MAX_KEY_DEPTH", "PROFILES", "UNDEFINED",
    "BufferTooSmallError", "CBORError", "ChangedDuringEncodingError", "DecodeError",
    "Decoder", "DepthExceededError", "DuplicateMapKeyError", "EmptyInputError",
    "EncodeDepthExceededError", "EncodeDuplicateMapKeyError", "EncodeError",
    "EncodeFloatOutsideProfileError", "EncodeIntegerOutOfRangeError",
    "EncodeNonNFCTextError", "EncodeUnsupportedItemError", "Encoder",
    "FloatOutsideProfileError", "FrozenDict", "HookRefusedError", "IndefiniteLengthError",
    "InputTypeError", "InUseError",
    "IntegerOutOfRangeError", "InvalidLinkError", "InvalidOptionError", "InvalidUTF8Error",
    "LimitExceededError", "Link", "NonNFCTextError", "NonShortestIntegerError",
    "NotWellFormedError", "Simple", "Tag", "TrailingDataError", "TruncatedError",
    "UndefinedType", "UnknownProfileError", "UnrepresentableMapError",
    "UnsortedMapKeysError", "UnsupportedItemError", "UnsupportedTypeError", "check",
    "check_prefix", "check_sequence", "dag_json", "decode", "decode_prefix", "diagnose", "dump", "dumps",
    "encode", "encode_into", "encode_merged", "iter_sequence", "load", "loads",
]
