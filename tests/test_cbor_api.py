"""The public facade ``canonkit.cbor``: names, backend binding, keyword-only options."""
from __future__ import annotations

import importlib
import inspect
from types import ModuleType

import pytest

import canonkit
from canonkit import cbor, errors


def test_all_names_exist() -> None:
    for name in cbor.__all__:
        assert hasattr(cbor, name), name
    for name in ("encode", "decode", "dumps", "loads", "Encoder", "Decoder", "diagnose", "Tag",
                 "Simple", "UNDEFINED", "UndefinedType", "FrozenDict", "Link", "PROFILES",
                 "DEFAULT_MAX_DEPTH", "DecodeError", "EncodeError", "TruncatedError"):
        assert name in cbor.__all__, name
    codes = {getattr(cbor, n).code for n in cbor.__all__
             if isinstance(getattr(cbor, n), type) and issubclass(getattr(cbor, n),
                                                                  errors.CBORError)}
    assert {"empty_input", "non_shortest_integer", "indefinite_length", "unsorted_map_keys",
            "duplicate_map_key", "invalid_utf8", "trailing_data", "float_outside_profile",
            "truncated", "not_well_formed", "unsupported_item", "integer_out_of_range",
            "non_nfc_text", "invalid_link", "depth_exceeded", "unsupported_type"} <= codes
    assert cbor.PROFILES == ("core", "dcbor", "dag-cbor") and cbor.DEFAULT_MAX_DEPTH == 512


def test_functions_are_the_backends_own() -> None:
    live = canonkit.backend()["cbor"]
    impl = importlib.import_module("canonkit.cbor._codec" if live == "compiled" else "canonkit.cbor._codec_py")
    assert cbor.encode is impl.encode and cbor.decode is impl.decode
    assert cbor.Encoder is impl.Encoder and cbor.Decoder is impl.Decoder
    assert cbor.dumps is cbor.encode and cbor.loads is cbor.decode


def test_profile_is_keyword_only(cbor_impl: ModuleType) -> None:
    with pytest.raises(TypeError):
        cbor_impl.encode(1, "core")
    with pytest.raises(TypeError):
        cbor_impl.decode(b"\x01", "core")
    with pytest.raises(TypeError):
        cbor_impl.Encoder("core")
    with pytest.raises(TypeError):
        cbor_impl.Decoder("core")
    assert cbor_impl.decode(b"\x01", profile="dcbor", max_depth=0) == 1


def test_twin_signatures() -> None:
    from canonkit.cbor import _codec_py as _cbor_py

    enc = inspect.signature(_cbor_py.encode).parameters
    assert enc["obj"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert enc["profile"].kind is inspect.Parameter.KEYWORD_ONLY
    assert enc["profile"].default == "core"
    dec = inspect.signature(_cbor_py.decode).parameters
    assert dec["max_depth"].default == 512


def test_reusable_objects(cbor_impl: ModuleType) -> None:
    encoder = cbor_impl.Encoder(profile="dag-cbor")
    decoder = cbor_impl.Decoder(profile="dag-cbor", max_depth=2)
    for value in ({"a": [1.5]}, [], "x"):
        assert decoder.decode(encoder.encode(value)) == value
    with pytest.raises(errors.DepthExceededError):
        decoder.decode(encoder.encode([[[1]]]))


def test_errors_are_value_errors_with_code_and_offset() -> None:
    with pytest.raises(ValueError) as info:
        cbor.decode(b"\xa1\x61\x74\x01\x00")
    err = info.value
    assert isinstance(err, cbor.TrailingDataError) and isinstance(err, canonkit.CanonkitError)
    assert (err.code, err.offset) == ("trailing_data", 4)
    assert "offset 4" in str(err) and "[00]" in str(err)
