"""Freeze the code -> class table: codes are a contract (CBOR.md §2, FPS.md §2)."""
from canonkit import errors

FROZEN = {
    "empty_input": "EmptyInputError",
    "non_shortest_integer": "NonShortestIntegerError",
    "indefinite_length": "IndefiniteLengthError",
    "unsorted_map_keys": "UnsortedMapKeysError",
    "duplicate_map_key": "DuplicateMapKeyError",
    "invalid_utf8": "InvalidUTF8Error",
    "trailing_data": "TrailingDataError",
    "float_outside_profile": "FloatOutsideProfileError",
    "truncated": "TruncatedError",
    "not_well_formed": "NotWellFormedError",
    "unsupported_item": "UnsupportedItemError",
    "integer_out_of_range": "IntegerOutOfRangeError",
    "non_nfc_text": "NonNFCTextError",
    "invalid_link": "InvalidLinkError",
    "depth_exceeded": "DepthExceededError",
    "limit_exceeded": "LimitExceededError",
    "unsupported_type": "UnsupportedTypeError",
    "unrepresentable_map": "UnrepresentableMapError",
    "hook_refused": "HookRefusedError",
    "unknown_profile": "UnknownProfileError",
    "invalid_option": "InvalidOptionError",
    "input_type": "InputTypeError",
    "invalid_input": "InputError",
    "ERR_ARG_INVALID": "FPSArgumentError",
    "ERR_LEVEL_INVALID": "FPSLevelError",
    "ERR_RANGE": "FPSRangeError",
    "ERR_LENGTH_MISALIGNED": "FPSMisalignedError",
    "ERR_ARITY": "FPSArityError",
    "missing_kind": "MissingKindError",
    "unknown_kind": "UnknownKindError",
    "unsupported_version": "UnsupportedVersionError",
    "schema_violation": "SchemaViolationError",
    "encode_unsupported_item": "EncodeUnsupportedItemError",
    "encode_integer_out_of_range": "EncodeIntegerOutOfRangeError",
    "encode_float_outside_profile": "EncodeFloatOutsideProfileError",
    "encode_non_nfc_text": "EncodeNonNFCTextError",
    "encode_duplicate_map_key": "EncodeDuplicateMapKeyError",
    "encode_depth_exceeded": "EncodeDepthExceededError",
    "buffer_too_small": "BufferTooSmallError",
    "changed_during_encoding": "ChangedDuringEncodingError",
    "object_in_use": "InUseError",
    "not_a_store": "NotAStoreError",
    "store_init_refused": "StoreInitError",
    "missing_object": "MissingObjectError",
    "corrupt_object": "CorruptObjectError",
    "corrupt_ref": "CorruptRefError",
    "unsafe_path": "UnsafePathError",
    "invalid_ref_name": "InvalidRefNameError",
    "ref_conflict": "RefConflictError",
    "lock_held": "LockHeldError",
    "stale_lock": "StaleLockError",
    "missing_reachable": "MissingReachableError",
    "invalid_json": "InvalidJSONError",
    "non_canonical_json": "NonCanonicalJSONError",
    "reserved_namespace": "ReservedNamespaceError",
    "unknown_multicodec": "UnknownMulticodecError",
    "unsupported_hash": "UnsupportedHashError",
    "missing_dependency": "MissingDependencyError",
    "not_regular_file": "NotRegularFileError",
    "invalid_output_path": "OutputPathError",
    "file_too_large": "FileTooLargeError",
    "invalid_json_input": "JSONInputError",
    "duplicate_json_key": "DuplicateJSONKeyError",
    "input_changed": "FileChangedError",
    "broken_stream": "BrokenStreamError",
    "path_outside": "PathOutsideError",
    "unsupported_url": "UnsupportedURLError",
    "object_storage_error": "ObjectStorageError",
    "object_not_found": "ObjectNotFoundError",
    "precondition_failed": "PreconditionFailedError",
    "invalid_journal": "JournalError",
    "invalid_cache": "CacheError",
    "workers_lost": "WorkersLostError",
}


def test_frozen_codes_keep_their_classes() -> None:
    for code, name in FROZEN.items():
        cls = errors.CODES[code]
        assert cls.__name__ == name and cls.code == code
        assert issubclass(cls, errors.CanonkitError)
        assert cls.__doc__ and "\n" not in cls.__doc__.strip()


def test_decode_classes_are_value_errors() -> None:
    for code in list(FROZEN)[:17]:
        cls = errors.CODES[code]
        assert issubclass(cls, ValueError)
    assert issubclass(errors.UnsupportedTypeError, TypeError)


def test_errors_pickle_with_their_attributes() -> None:
    import pickle

    exc = errors.TruncatedError("short", offset=7, detail="x")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is errors.TruncatedError and back.offset == 7 and back.detail == "x"


def test_every_cbor_class_is_in_exactly_one_family() -> None:
    """``except DecodeError`` never catches an encode failure, nor the reverse."""
    usage = (errors.UnknownProfileError, errors.InvalidOptionError)  # neither: bad calls
    cbor_classes = [cls for cls in errors.CODES.values() if issubclass(cls, errors.CBORError)]
    assert len(cbor_classes) >= 25
    for cls in cbor_classes:
        families = issubclass(cls, errors.DecodeError) + issubclass(cls, errors.EncodeError)
        assert families == (0 if issubclass(cls, usage) else 1), cls.__name__
    for name in ("DuplicateMapKeyError", "FloatOutsideProfileError", "UnsupportedItemError",
                 "IntegerOutOfRangeError", "NonNFCTextError", "DepthExceededError"):
        decode_cls = getattr(errors, name)
        encode_cls = getattr(errors, "Encode" + name)
        assert issubclass(decode_cls, errors.DecodeError)
        assert issubclass(encode_cls, errors.EncodeError)
        assert encode_cls.code == "encode_" + decode_cls.code


def test_encode_error_path_survives_pickling() -> None:
    import pickle

    exc = errors.EncodeUnsupportedItemError("x", detail='$[3]["a"]')
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is errors.EncodeUnsupportedItemError and back.path == '$[3]["a"]'


def test_store_errors_keep_path_and_address_across_pickling() -> None:
    import pickle

    exc = errors.CorruptObjectError("bad", offset=13, detail="digest_mismatch",
                                    path="objects/ab/cd", address="blake3:" + "00" * 32)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is errors.CorruptObjectError and str(back) == "bad"
    assert (back.offset, back.detail, back.path, back.address) == (
        13, "digest_mismatch", "objects/ab/cd", "blake3:" + "00" * 32)
    assert isinstance(back, errors.StoreError) and isinstance(back, ValueError)
    assert issubclass(errors.MissingObjectError, LookupError)
