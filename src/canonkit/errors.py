"""Every exception canonkit raises, for both backends.

Messages are for people; ``code`` (a stable string), ``offset`` and the class are for
programs. A code never changes meaning. ``CODES`` maps each code to its class and is
frozen by ``tests/test_errors.py``.

Sections: CBOR (CBOR.md §2), FPS (FPS.md §2), objects (OBJECTS.md §1),
ASTP (ASTP.md), manifests and corpora, re-verification, engines, files, object storage, the object
store (STORE.md), CAR files (docs/car.md).
"""
from __future__ import annotations

from typing import Any

__all__ = ["CODES", "CanonkitError", "error_for_code"]

CODES: dict[str, type[CanonkitError]] = {}


class CanonkitError(Exception):
    """Root of every canonkit error."""

    code: str = "canonkit_error"

    def __init__(
        self, message: str = "", *, offset: int | None = None, detail: Any = None
    ) -> None:
        super().__init__(message or self.__doc__ or self.code)
        self.offset = offset
        self.detail = detail

    def __reduce__(self) -> Any:  # keep code/offset/detail across process pools
        return (_rebuild, (type(self), str(self), self.offset, self.detail))


def _rebuild(cls: type[CanonkitError], message: str, offset: Any, detail: Any) -> CanonkitError:
    return cls(message, offset=offset, detail=detail)


def _register(cls: type[CanonkitError]) -> type[CanonkitError]:
    if cls.code in CODES:
        raise RuntimeError(f"duplicate error code {cls.code!r}")
    CODES[cls.code] = cls
    return cls


def error_for_code(code: str) -> type[CanonkitError]:
    """The class registered for ``code`` (KeyError if none)."""
    return CODES[code]


def _export(*classes: type[CanonkitError]) -> None:
    for cls in classes:
        __all__.append(cls.__name__)


# --- Objects in use (any capability) ----------------------------------------------------

@_register
class InUseError(CanonkitError, RuntimeError):
    """An object was re-initialised while one of its own calls is running (from a hook)."""
    code = "object_in_use"


_export(InUseError)


# --- CBOR ---------------------------------------------------------------------------

class CBORError(CanonkitError, ValueError):
    """A CBOR encoding or decoding error."""

    code = "cbor_error"


class DecodeError(CBORError):
    """Input bytes are not a valid encoding under the chosen profile."""

    code = "decode_error"


class EncodeError(CBORError):
    """A Python value cannot be encoded under the chosen profile."""

    code = "encode_error"

    @property
    def path(self) -> str | None:
        """Where the offending value sits in the encoded value (``$[3]["a"]``)."""
        return self.detail if isinstance(self.detail, str) else None


@_register
class UnknownProfileError(CBORError):
    """A profile name that is not one of ``PROFILES`` (a usage error, not bad data)."""
    code = "unknown_profile"


@_register
class InvalidOptionError(CBORError):
    """An option value out of its domain (``max_depth``, ``max_size``, ``offset``, ...)."""
    code = "invalid_option"


@_register
class InputTypeError(CanonkitError, TypeError):
    """The data argument is not a C-contiguous bytes-like object."""
    code = "input_type"


@_register
class EmptyInputError(DecodeError):
    """The input has zero bytes."""
    code = "empty_input"


@_register
class NonShortestIntegerError(DecodeError):
    """A head (integer, length, count, tag, simple value) is not in its shortest form."""
    code = "non_shortest_integer"


@_register
class IndefiniteLengthError(DecodeError):
    """An indefinite-length item or a stray break byte."""
    code = "indefinite_length"


@_register
class UnsortedMapKeysError(DecodeError):
    """A map key sorts before the previous key."""
    code = "unsorted_map_keys"


@_register
class DuplicateMapKeyError(DecodeError):
    """A map key equals the previous key."""
    code = "duplicate_map_key"


@_register
class InvalidUTF8Error(DecodeError):
    """A text string is not valid UTF-8."""
    code = "invalid_utf8"


@_register
class TrailingDataError(DecodeError):
    """Bytes follow the top-level data item."""
    code = "trailing_data"


@_register
class FloatOutsideProfileError(DecodeError):
    """A float the profile forbids or not in the profile's preferred form."""
    code = "float_outside_profile"


@_register
class TruncatedError(DecodeError):
    """The input ends inside a data item."""
    code = "truncated"


@_register
class NotWellFormedError(DecodeError):
    """Reserved additional information, or another RFC 8949 well-formedness violation."""
    code = "not_well_formed"


@_register
class UnsupportedItemError(DecodeError):
    """A type, tag or simple value the profile excludes."""
    code = "unsupported_item"


@_register
class IntegerOutOfRangeError(DecodeError):
    """An integer outside the profile's range."""
    code = "integer_out_of_range"


@_register
class NonNFCTextError(DecodeError):
    """A text string not in Unicode NFC (dcbor)."""
    code = "non_nfc_text"


@_register
class InvalidLinkError(DecodeError):
    """Tag 42 content is not a valid CID with the 0x00 prefix (dag-cbor)."""
    code = "invalid_link"


@_register
class DepthExceededError(DecodeError):
    """Nesting deeper than the configured limit."""
    code = "depth_exceeded"


@_register
class LimitExceededError(DecodeError):
    """A data item exceeds a size limit the caller set (``max_size``, ``max_items``)."""
    code = "limit_exceeded"


# Encode errors: one class per code, none of them a DecodeError. Where a decode code has
# an encode counterpart the class is the decode name with an ``Encode`` prefix and the
# code the decode code with an ``encode_`` prefix. ``detail`` (also ``path``) locates the
# offending value inside the encoded one: ``$`` is the value itself, ``[3]`` an array
# item, ``["a"]`` a map entry (non-text keys by ``repr``), ``.value`` a tag's content.

@_register
class HookRefusedError(DecodeError):
    """A decode ``tag_hook`` or ``object_hook`` raised ValueError for the item here."""
    code = "hook_refused"


@_register
class UnrepresentableMapError(DecodeError):
    """A valid map whose distinct keys are equal as Python values (a dict holds only one)."""
    code = "unrepresentable_map"


@_register
class UnsupportedTypeError(EncodeError, TypeError):
    """A Python object with no CBOR mapping."""
    code = "unsupported_type"


@_register
class EncodeUnsupportedItemError(EncodeError):
    """A value the profile excludes (tag, simple value, key type, Link) or not a valid CBOR item."""
    code = "encode_unsupported_item"


@_register
class EncodeIntegerOutOfRangeError(EncodeError):
    """An integer outside the profile's range."""
    code = "encode_integer_out_of_range"


@_register
class EncodeFloatOutsideProfileError(EncodeError):
    """A float the profile cannot represent (NaN or infinity in dag-cbor)."""
    code = "encode_float_outside_profile"


@_register
class EncodeNonNFCTextError(EncodeError):
    """A text string not in Unicode NFC (dcbor)."""
    code = "encode_non_nfc_text"


@_register
class EncodeDuplicateMapKeyError(EncodeError):
    """Two keys of one map have the same encoding."""
    code = "encode_duplicate_map_key"


@_register
class EncodeDepthExceededError(EncodeError):
    """Nesting deeper than the encoder's max_depth (or a self-referencing container)."""
    code = "encode_depth_exceeded"


@_register
class BufferTooSmallError(EncodeError):
    """encode_into: the encoding does not fit the buffer at the offset (nothing written)."""
    code = "buffer_too_small"


@_register
class ChangedDuringEncodingError(EncodeError, RuntimeError):
    """A list changed its length while it was being encoded."""
    code = "changed_during_encoding"


_export(CBORError, DecodeError, EncodeError, *[c for c in CODES.values()])


# --- DAG-JSON (same classes as CBOR where the condition is the same) --------------------

@_register
class InvalidJSONError(DecodeError):
    """The input is not JSON (RFC 8259 syntax)."""
    code = "invalid_json"


@_register
class NonCanonicalJSONError(DecodeError):
    """Valid DAG-JSON data, but not the one canonical spelling (whitespace, escapes, numbers)."""
    code = "non_canonical_json"


@_register
class ReservedNamespaceError(DecodeError):
    """A map whose first key is "/" that is neither a well-formed link nor bytes form."""
    code = "reserved_namespace"


_export(InvalidJSONError, NonCanonicalJSONError, ReservedNamespaceError)


# --- Links and multiformats -----------------------------------------------------------

@_register
class UnknownMulticodecError(CanonkitError, ValueError):
    """A codec or hash name the multicodec table does not define for that use, or a bad code."""
    code = "unknown_multicodec"


@_register
class UnsupportedHashError(CanonkitError, ValueError):
    """A multihash function in the table that canonkit does not compute."""
    code = "unsupported_hash"


@_register
class MissingDependencyError(CanonkitError, ImportError):
    """An optional package needed by this call is not installed; the message names the extra."""
    code = "missing_dependency"


_export(UnknownMulticodecError, UnsupportedHashError, MissingDependencyError)


# --- FPS ----------------------------------------------------------------------------

class FPSError(CanonkitError, ValueError):
    """An FPS/1 operation was refused; ``code`` is one of the ERR_* codes of FPS.md."""

    code = "ERR_FPS"


@_register
class FPSArgumentError(FPSError):
    """A negative, non-integer or too large offset/length, bad hex, a missing argument or wrong input type."""
    code = "ERR_ARG_INVALID"


@_register
class FPSLevelError(FPSError):
    """A missing or unknown level."""
    code = "ERR_LEVEL_INVALID"


@_register
class FPSRangeError(FPSError):
    """offset + length exceeds the input's unit count."""
    code = "ERR_RANGE"


@_register
class FPSMisalignedError(FPSError):
    """The result or input is not a whole number of bytes/units."""
    code = "ERR_LENGTH_MISALIGNED"


@_register
class FPSArityError(FPSError):
    """concat was given no inputs."""
    code = "ERR_ARITY"


_export(FPSError, FPSArgumentError, FPSLevelError, FPSRangeError, FPSMisalignedError, FPSArityError)


# --- Content-addressed objects --------------------------------------------------------

class ObjectError(CanonkitError, ValueError):
    """An object's envelope or schema is invalid (after strict CBOR decoding succeeded)."""

    code = "object_error"


@_register
class MissingKindError(ObjectError):
    """The object map has no text "t" (kind) or unsigned "v" (version)."""
    code = "missing_kind"


@_register
class UnknownKindError(ObjectError):
    """No kind of that name is registered."""
    code = "unknown_kind"


@_register
class UnsupportedVersionError(ObjectError):
    """The kind is registered but not at that format version."""
    code = "unsupported_version"


@_register
class SchemaViolationError(ObjectError):
    """A field is missing, unexpected or of the wrong type/order; ``detail`` names the field."""
    code = "schema_violation"


_export(ObjectError, MissingKindError, UnknownKindError, UnsupportedVersionError,
        SchemaViolationError)


# --- ASTP -----------------------------------------------------------------------------

class ASTPError(CanonkitError, ValueError):
    """An ASTP construction refused its input."""

    code = "astp_error"


@_register
class InvalidFieldError(ASTPError):
    """A field value cannot be canonically encoded (naive timestamp, NaN, out-of-range UINT, ...)."""
    code = "invalid_field"


@_register
class InvalidHashError(ASTPError):
    """A digest is not 64 hex characters or 32 bytes."""
    code = "invalid_hash"


@_register
class EmptyTreeError(ASTPError):
    """A Merkle tree or spine was given no leaves."""
    code = "empty_tree"


@_register
class UnknownIdentifierError(ASTPError):
    """An unknown version identifier (spine_algorithm_version, hash_version, ...)."""
    code = "unknown_identifier"


@_register
class WriteGuardError(ASTPError):
    """G-1: a write to a record in a fixed state."""
    code = "write_guard"


@_register
class Layer3GovernanceError(ASTPError):
    """A Layer 3 write or record breaks a rule of ASTP.md §19.3; ``code`` names the vector."""
    code = "layer3_governance"

    def __init__(self, message: str = "", *, vector: str, node_id: str | None = None,
                 field: str | None = None, offset: int | None = None, detail: Any = None) -> None:
        super().__init__(message, offset=offset, detail=detail if detail is not None else field)
        self.code = vector          # the CONFORMANCE-LAYER3 vector, e.g. "WF-004"
        self.vector = vector
        self.node_id = node_id
        self.field = field

    def __reduce__(self) -> Any:
        return (_rebuild_layer3, (str(self), self.vector, self.node_id, self.field))


def _rebuild_layer3(message: str, vector: str, node_id: str | None,
                    field: str | None) -> Layer3GovernanceError:
    return Layer3GovernanceError(message, vector=vector, node_id=node_id, field=field)


_export(ASTPError, InvalidFieldError, InvalidHashError, EmptyTreeError, UnknownIdentifierError,
        WriteGuardError, Layer3GovernanceError)


# --- Manifests, corpora and re-verification -------------------------------------------

@_register
class ManifestError(CanonkitError, ValueError):
    """A manifest or corpus file cannot be read at all (not JSON, unknown schema, ...)."""
    code = "manifest_invalid"


@_register
class CorpusExistsError(CanonkitError, FileExistsError):
    """A corpus exists where one would be written (a recorded version; synth without force)."""
    code = "corpus_exists"


@_register
class InvalidRecordError(CanonkitError, ValueError):
    """A re-verification input document cannot be read as an Episode."""
    code = "invalid_record"


@_register
class InputError(CanonkitError, ValueError):
    """A path given as input cannot be used (missing, of unknown type, holding no inputs)."""
    code = "invalid_input"


@_register
class AnswersError(CanonkitError, ValueError):
    """An answer file (``canonkit synth --answers``) has a line that is not an answer; the
    message names the file and line."""
    code = "invalid_answers"


@_register
class JournalError(CanonkitError, ValueError):
    """A reverify journal is not one, or was written for other options; ``detail`` is the path."""
    code = "invalid_journal"


@_register
class CacheError(CanonkitError, ValueError):
    """A reverify result cache directory cannot be used; ``detail`` is the path."""
    code = "invalid_cache"


_export(ManifestError, CorpusExistsError, InvalidRecordError, InputError, AnswersError,
        JournalError, CacheError)


# --- Engines (canonkit.engines) ----------------------------------------------------------

@_register
class WorkersLostError(CanonkitError, RuntimeError):
    """A Dask cluster had no worker for longer than the engine waits; ``detail`` is the address."""
    code = "workers_lost"


_export(WorkersLostError)


# --- Files: inputs read and outputs written (canonkit._files) ---------------------------

@_register
class NotRegularFileError(CanonkitError, OSError):
    """An input path is a FIFO, socket, device or directory; ``detail`` is the path."""
    code = "not_regular_file"


@_register
class OutputPathError(CanonkitError, OSError):
    """An output path cannot be written: missing or read-only directory, not a file, or an input."""
    code = "invalid_output_path"


@_register
class FileTooLargeError(CanonkitError, ValueError):
    """An input file is larger than the limit for its kind; ``detail`` is the path."""
    code = "file_too_large"


@_register
class JSONInputError(CanonkitError, ValueError):
    """A JSON input is not UTF-8 JSON, has NaN/Infinity or an over-long integer; ``offset`` locates it."""
    code = "invalid_json_input"


@_register
class DuplicateJSONKeyError(JSONInputError):
    """A JSON object repeats a key; ``detail`` is the key, ``offset`` the repeat."""
    code = "duplicate_json_key"


@_register
class FileChangedError(CanonkitError, OSError):
    """An input file is not the one the run started on (another inode, size or mtime); ``detail`` is the path."""
    code = "input_changed"


@_register
class BrokenStreamError(CanonkitError, ValueError):
    """A compressed input does not end cleanly (a cut gzip member or zstd frame, bytes after the last); ``offset`` is in the file."""
    code = "broken_stream"


@_register
class PathOutsideError(CanonkitError, ValueError):
    """A path named inside an input leads out of the directory it must stay in; ``detail`` is the path."""
    code = "path_outside"


_export(NotRegularFileError, OutputPathError, FileTooLargeError, JSONInputError,
        DuplicateJSONKeyError, FileChangedError, BrokenStreamError, PathOutsideError)


# --- Object storage: URLs and requests (canonkit._files.remote; REVERIFY.md §6) -----------

@_register
class UnsupportedURLError(CanonkitError, ValueError):
    """A URL canonkit cannot use where it was given: an unknown scheme, a malformed URL, credentials or a query in it, or a URL where only a local path is accepted; ``detail`` is the URL."""
    code = "unsupported_url"


class ObjectStorageError(CanonkitError, OSError):
    """A request to object storage failed (after retries on throttling and 5xx); ``url`` names the object, ``status`` the HTTP status or None."""

    code = "object_storage_error"

    def __init__(self, message: str = "", *, offset: int | None = None, detail: Any = None,
                 url: str | None = None, status: int | None = None) -> None:
        super().__init__(message, offset=offset, detail=detail)
        self.url = url
        self.status = status

    def __reduce__(self) -> Any:  # keep url/status across process pools and Dask
        return (_rebuild_storage, (type(self), str(self), self.offset, self.detail, self.url,
                                   self.status))


def _rebuild_storage(cls: type[ObjectStorageError], message: str, offset: Any, detail: Any,
                     url: str | None, status: int | None) -> ObjectStorageError:
    return cls(message, offset=offset, detail=detail, url=url, status=status)


_register(ObjectStorageError)


@_register
class ObjectNotFoundError(ObjectStorageError, FileNotFoundError):
    """No object (or no object under a prefix) at the URL; ``url`` names it."""
    code = "object_not_found"


@_register
class PreconditionFailedError(ObjectStorageError):
    """A conditional request lost: the object exists (If-None-Match: *) or holds another ETag (If-Match)."""
    code = "precondition_failed"


_export(UnsupportedURLError, ObjectStorageError, ObjectNotFoundError, PreconditionFailedError)


# --- Object store (STORE.md) ---------------------------------------------------------

class StoreError(CanonkitError):
    """An object store operation failed; ``path`` (store-relative where known) and
    ``address`` say where."""

    code = "store_error"

    def __init__(self, message: str = "", *, offset: int | None = None, detail: Any = None,
                 path: str | None = None, address: str | None = None) -> None:
        super().__init__(message, offset=offset, detail=detail)
        self.path = path
        self.address = address

    def __reduce__(self) -> Any:  # keep path/address across process pools too
        return (_rebuild_store, (type(self), str(self), self.offset, self.detail, self.path,
                                 self.address))


def _rebuild_store(cls: type[StoreError], message: str, offset: Any, detail: Any,
                   path: str | None, address: str | None) -> StoreError:
    return cls(message, offset=offset, detail=detail, path=path, address=address)


@_register
class NotAStoreError(StoreError):
    """The directory is not a version-1 canonkit store (no or unknown canonkit-store file)."""
    code = "not_a_store"


@_register
class StoreInitError(StoreError, FileExistsError):
    """Store.init refused: the directory is a store already, or not empty."""
    code = "store_init_refused"


@_register
class MissingObjectError(StoreError, LookupError):
    """No physical form of the address is in the store."""
    code = "missing_object"


@_register
class CorruptObjectError(StoreError, ValueError):
    """A physical form does not decode to its address; ``detail`` is the fsck finding code."""
    code = "corrupt_object"


@_register
class CorruptRefError(StoreError, ValueError):
    """A ref file does not hold exactly "blake3:<64 lowercase hex>\\n"."""
    code = "corrupt_ref"


@_register
class UnsafePathError(StoreError):
    """A store path is a symlink or would leave the store; it is never followed."""
    code = "unsafe_path"


@_register
class InvalidRefNameError(StoreError, ValueError):
    """A ref name is not [A-Za-z0-9._-] segments joined by "/" (no "", "." or "..")."""
    code = "invalid_ref_name"


@_register
class RefConflictError(StoreError):
    """A ref update lost: compare-and-swap saw another value, or the ref is locked."""
    code = "ref_conflict"


@_register
class LockHeldError(StoreError):
    """Another repack or gc holds the store lock (``detail``: the holder)."""
    code = "lock_held"


@_register
class StaleLockError(StoreError):
    """The store lock's holder is gone; break it explicitly (Store.break_lock)."""
    code = "stale_lock"


@_register
class MissingReachableError(StoreError):
    """gc found a reachable object missing and deleted nothing (``detail``: path from a root)."""
    code = "missing_reachable"


_export(StoreError, NotAStoreError, StoreInitError, MissingObjectError, CorruptObjectError,
        CorruptRefError, UnsafePathError, InvalidRefNameError, RefConflictError, LockHeldError,
        StaleLockError, MissingReachableError)


# --- CAR files (docs/car.md) ---------------------------------------------------------
# One class per finding of severity "error" of ``canonkit.car`` (the finding's code is the
# class's code); the raising readers (``canonkit.car.blocks``) raise them, ``offset`` is
# the byte offset in the file and ``detail`` the block's CID where there is one.

class CARError(CanonkitError, ValueError):
    """A CAR file breaks a rule of the CARv1 or CARv2 format (docs/car.md)."""

    code = "car_error"


@_register
class CarHeaderLengthError(CARError):
    """The header's length varint is malformed, zero, over the limit or runs past the end."""
    code = "car_header_length"


@_register
class CarHeaderInvalidError(CARError):
    """The header is not one strict DAG-CBOR data item."""
    code = "car_header_invalid"


@_register
class CarHeaderSchemaError(CARError):
    """The header is not a map of exactly version and roots, nor the exact CARv2 pragma."""
    code = "car_header_schema"


@_register
class CarRootsInvalidError(CARError):
    """The header's roots are not an array of CIDs."""
    code = "car_roots_invalid"


@_register
class CarVersionError(CARError):
    """The header's version is neither 1 nor the CARv2 pragma's 2; a CARv2 payload's is not 1."""
    code = "car_unsupported_version"


@_register
class CarV2HeaderTruncatedError(CARError):
    """The file ends inside the 40-byte CARv2 header."""
    code = "car_v2_header_truncated"


@_register
class CarDataOffsetError(CARError):
    """The CARv2 data offset points inside the pragma and header or past the end of the file."""
    code = "car_data_offset"


@_register
class CarDataSizeError(CARError):
    """The CARv2 data payload is empty or ends past the end of the file."""
    code = "car_data_size"


@_register
class CarIndexOffsetError(CARError):
    """The CARv2 index offset points inside the header or data payload, or at or past the end."""
    code = "car_index_offset"


@_register
class CarSectionLengthError(CARError):
    """A section's length varint is malformed (over 9 bytes or 2**63, not minimal) or cut off."""
    code = "car_section_length"


@_register
class CarSectionTruncatedError(CARError):
    """A section's declared length runs past the end of the data."""
    code = "car_section_truncated"


@_register
class CarZeroLengthSectionError(CARError):
    """A section of length zero (null padding inside the data)."""
    code = "car_zero_length_section"


@_register
class CarCIDInvalidError(CARError):
    """A section does not start with a valid CID that fits inside it."""
    code = "car_cid_invalid"


@_register
class CarDigestMismatchError(CARError):
    """A block's recomputed digest differs from the one its CID holds."""
    code = "car_digest_mismatch"


@_register
class CarUnknownMultihashError(CARError):
    """A block's CID names a hash function canonkit does not compute: the block is unverified."""
    code = "car_unknown_multihash"


@_register
class CarDigestLengthError(CARError):
    """A CID's digest is longer than its hash function's output."""
    code = "car_digest_length"


@_register
class CarStrictDecodeError(CARError):
    """A dag-cbor block is not strict DAG-CBOR (checked with strict=True)."""
    code = "car_strict_decode"


@_register
class CarUnknownIndexError(CARError):
    """The CARv2 index is in neither car-index-sorted nor car-multihash-index-sorted: unchecked."""
    code = "car_unknown_index"


@_register
class CarIndexTruncatedError(CARError):
    """The CARv2 index ends inside its format code, a bucket header or a bucket."""
    code = "car_index_truncated"


@_register
class CarIndexMalformedError(CARError):
    """A negative bucket count, a width below 8, a length not a multiple of it, or bytes after."""
    code = "car_index_malformed"


@_register
class CarIndexUnsortedError(CARError):
    """Index buckets, or the digests within one bucket, are not in ascending order."""
    code = "car_index_unsorted"


@_register
class CarIndexBadOffsetError(CARError):
    """An index entry's offset is not the start of a section of the data payload."""
    code = "car_index_bad_offset"


@_register
class CarIndexMismatchError(CARError):
    """An index entry's digest, digest length or hash code differs from its section's CID."""
    code = "car_index_mismatch"


@_register
class CarIndexMissingError(CARError):
    """A block the index must list is not listed."""
    code = "car_index_missing"


@_register
class CarIndexDuplicateError(CARError):
    """Two index entries point at the same section."""
    code = "car_index_duplicate"


_export(CARError, *[c for c in CODES.values() if issubclass(c, CARError)])


# --- Warnings ---------------------------------------------------------------------------

class ExtensionFallbackWarning(RuntimeWarning):
    """A capability runs on its pure-Python twin because its compiled module is unusable
    (not built, or failed to import); ``CANONKIT_NO_EXTENSIONS=1`` asks for this silently."""


__all__.append("ExtensionFallbackWarning")


CONTEXT_RADIUS = 8  # bytes shown on each side of an error's offset


def context_hex(data: bytes | bytearray | memoryview, offset: int,
                radius: int = CONTEXT_RADIUS, base: int = 0) -> str:
    """The bytes around ``offset`` as hex, the offending byte in brackets:
    ``bytes 4..20: a2 61 74 [18] 17 61 76 01``. ``base`` is added to the positions shown
    (``data`` is then a window starting at that offset of a longer stream)."""
    view = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
    start = max(0, offset - radius)
    stop = min(len(view), offset + radius)
    parts = [
        f"[{view[i]:02x}]" if i == offset else f"{view[i]:02x}" for i in range(start, stop)
    ]
    if offset >= len(view):
        parts.append("[end]")
    return f"bytes {base + start}..{base + stop}: " + " ".join(parts)


def decode_error(code: str, data: bytes | bytearray | memoryview, offset: int,
                 what: str, base: int = 0) -> CanonkitError:
    """Build the exception for ``code`` at ``offset`` with the standard message
    ``"<what> at offset N (bytes a..b: .. [xx] ..)"``. Both CBOR backends use this, so the
    message is the same whichever backend raised it. With ``base``, ``data`` is a window
    of a stream starting at offset ``base``: the error's offset and message are absolute."""
    cls = CODES[code]
    return cls(f"{what} at offset {base + offset} ({context_hex(data, offset, base=base)})",
               offset=base + offset, detail=what)
