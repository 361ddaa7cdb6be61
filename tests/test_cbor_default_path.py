"""The module functions called with no options but ``profile`` (the compiled backend
serves them from one read-only option set per profile, parsing nothing): they agree with
the twin and with a ``Decoder`` of the same profile on every input, errors included (class,
code, offset), and the option set is safe to read from nested calls and threads."""
from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import PROFILE_VALUES, cbor_ish, mutated, same

from canonkit import errors
from canonkit.cbor import Link, Tag

PROFILES = ["core", "dcbor", "dag-cbor"]


def _twin_encode(value: Any, profile: str) -> bytes:
    from canonkit.cbor import _codec_py

    return _codec_py.encode(value, profile=profile)


def _hostile(profile: str) -> st.SearchStrategy[bytes]:
    valid = PROFILE_VALUES[profile]().map(lambda v: _twin_encode(v, profile))
    return st.one_of(valid, st.binary(max_size=40), cbor_ish, mutated(valid))


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except errors.CanonkitError as exc:
        return "error", (type(exc), exc.code, exc.offset, str(exc))


def _agree(outcomes: list[tuple[str, Any]]) -> None:
    first = outcomes[0]
    for other in outcomes[1:]:
        assert other[0] == first[0], outcomes
        if first[0] == "ok":
            assert same(other[1], first[1]), outcomes
        else:
            assert other[1] == first[1], outcomes


@pytest.mark.parametrize("profile", PROFILES)
def test_default_decode_and_check_agree_with_twin_and_decoder(profile: str) -> None:
    compiled, twin = backend_pair("cbor")
    decoder = compiled.Decoder(profile=profile)
    twin_decoder = twin.Decoder(profile=profile)

    @settings(max_examples=300)
    @given(_hostile(profile))
    def run(data: bytes) -> None:
        _agree([_outcome(compiled.decode, data, profile=profile),
                _outcome(twin.decode, data, profile=profile),
                _outcome(decoder.decode, data),
                _outcome(twin_decoder.decode, data)])
        _agree([_outcome(compiled.check, data, profile=profile),
                _outcome(twin.check, data, profile=profile),
                _outcome(decoder.check, data)])
        _agree([_outcome(compiled.check_sequence, data, profile=profile),
                _outcome(twin.check_sequence, data, profile=profile),
                _outcome(decoder.check_sequence, data)])

    run()


@pytest.mark.parametrize("profile", PROFILES)
def test_default_prefix_calls_agree_with_twin_and_decoder(profile: str) -> None:
    compiled, twin = backend_pair("cbor")
    decoder = compiled.Decoder(profile=profile)

    @settings(max_examples=200)
    @given(_hostile(profile), st.integers(0, 48))
    def run(data: bytes, offset: int) -> None:
        _agree([_outcome(compiled.decode_prefix, data, offset, profile=profile),
                _outcome(twin.decode_prefix, data, offset, profile=profile),
                _outcome(decoder.decode_prefix, data, offset)])
        _agree([_outcome(compiled.check_prefix, data, offset, profile=profile),
                _outcome(twin.check_prefix, data, offset, profile=profile),
                _outcome(decoder.check_prefix, data, offset)])

    run()


def test_default_options_are_the_documented_defaults(cbor_impl: ModuleType) -> None:
    """The default set is the keyword defaults: max_depth 512, no size or item limit, an
    unknown profile still refused."""
    deep = b"\x81" * 512 + b"\x00"
    assert cbor_impl.decode(deep, profile="core") == cbor_impl.decode(deep, max_depth=512)
    with pytest.raises(errors.DepthExceededError) as info:
        cbor_impl.decode(b"\x81" + deep)
    assert info.value.offset == 512
    big = cbor_impl.encode(list(range(100_000)))
    assert cbor_impl.check(big) is None
    assert len(cbor_impl.decode(big)) == 100_000
    with pytest.raises(errors.UnknownProfileError):
        cbor_impl.decode(b"\x00", profile="CORE")
    with pytest.raises(errors.UnknownProfileError):
        cbor_impl.check(b"\x00", profile=None)


def test_explicit_options_next_to_the_default_path(cbor_impl: ModuleType) -> None:
    """An option equal to its default, given explicitly, takes the checking path and gives
    the same answer; a limit given is applied, then the next default call has none."""
    data = cbor_impl.encode([1, 2, 3])
    assert cbor_impl.decode(data, max_depth=int("512"), max_size=None) == [1, 2, 3]
    with pytest.raises(errors.LimitExceededError):
        cbor_impl.decode(data, max_items=2)
    assert cbor_impl.decode(data) == [1, 2, 3]
    with pytest.raises(errors.InvalidOptionError):
        cbor_impl.decode(data, max_depth=-1)
    with pytest.raises(errors.InvalidOptionError):
        cbor_impl.decode(data, tag_hook=3)


def test_default_decode_inside_a_hook(cbor_impl: ModuleType) -> None:
    """A hook may call the module functions (default path or not) and a Decoder: each
    nested call has its own state, and the outer decode resumes unchanged."""
    inner = cbor_impl.encode({"x": [1, 2]}, profile="dag-cbor")
    seen = []

    def tag_hook(tag: Any) -> Any:
        seen.append(cbor_impl.decode(inner, profile="dag-cbor"))
        seen.append(cbor_impl.decode_prefix(inner + b"\x00", 0, profile="dag-cbor"))
        assert cbor_impl.check(inner, profile="dag-cbor") is None
        seen.append(cbor_impl.decode(inner, object_hook=dict))
        return ("tag", tag.number, tag.value)

    outer = cbor_impl.encode([Tag(100, 1), {"k": Tag(101, "v")}, "end"])
    assert cbor_impl.decode(outer, tag_hook=tag_hook) == [
        ("tag", 100, 1), {"k": ("tag", 101, "v")}, "end"]
    assert seen == [{"x": [1, 2]}, ({"x": [1, 2]}, len(inner)), {"x": [1, 2]}] * 2


def test_default_path_from_many_threads(cbor_impl: ModuleType) -> None:
    """Threads decoding, checking and encoding different messages through the module
    functions at once each get their own results (hooks on some threads, none on others,
    so the default and the checked path interleave)."""
    messages = [
        ({"id": i, "name": f"file-{i}.txt", "tags": ["a", "b"] * (i % 3)}, "core")
        for i in range(8)
    ] + [({"cid": Link.for_block(bytes([i])), "n": i}, "dag-cbor") for i in range(8)]
    encoded = [(cbor_impl.encode(value, profile=profile), value, profile)
               for value, profile in messages]
    failures: list[str] = []
    start = threading.Barrier(4)

    def worker(index: int) -> None:
        start.wait()
        for _ in range(300):
            for data, value, profile in encoded[index::2]:
                hooked = index % 2 == 1
                got = (cbor_impl.decode(data, profile=profile, object_hook=dict) if hooked
                       else cbor_impl.decode(data, profile=profile))
                if (got != value or cbor_impl.encode(value, profile=profile) != data
                        or cbor_impl.decode_prefix(data, 0, profile=profile)
                        != (value, len(data))):
                    failures.append(f"thread {index}: {value!r}")
                    return
                cbor_impl.check(data, profile=profile)
            try:
                cbor_impl.decode(b"\xa2\x61b\x00\x61a\x00", profile="dag-cbor")
            except errors.UnsortedMapKeysError as exc:
                if exc.offset != 4:
                    failures.append(f"thread {index}: offset {exc.offset}")
            else:
                failures.append(f"thread {index}: unsorted keys accepted")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.parametrize("data", [
    bytes.fromhex("d82a4400017000"),          # CIDv1 whose digest length is wrong
    bytes.fromhex("d82a450001711220"),        # sha2-256 digest missing
    bytes.fromhex("d82a4101"),                # no 0x00 multibase prefix
    bytes.fromhex("d82a4500020000ff"),        # CID version 2
])
def test_invalid_links_fail_alike(data: bytes) -> None:
    """The decoder's C-checked Link path reports a bad CID as the twin does."""
    compiled, twin = backend_pair("cbor")
    got = _outcome(compiled.decode, data, profile="dag-cbor")
    assert got[0] == "error"
    assert got == _outcome(twin.decode, data, profile="dag-cbor")


def test_decoded_links_are_ordinary_links(cbor_impl: ModuleType) -> None:
    link = Link.for_block(b"block", codec="raw", hash="blake3")
    value = cbor_impl.decode(cbor_impl.encode({"l": link}, profile="dag-cbor"),
                             profile="dag-cbor")["l"]
    assert type(value) is Link and value == link and hash(value) == hash(link)
    assert value.cid_bytes == link.cid_bytes and str(value) == str(link)
    with pytest.raises(AttributeError):
        value.cid_bytes = b""  # type: ignore[misc]


def test_module_functions_accept_every_call_shape(cbor_impl: ModuleType) -> None:
    """Positional arguments, ``profile=`` alone, other keywords, keywords unpacked from a
    dict with a name built at run time: the same values and the same TypeErrors."""
    data = cbor_impl.encode({"a": [1]}, profile="dag-cbor")
    profile_key = "".join(["pro", "file"])  # not the interned call-site name
    for kwargs in ({}, {"profile": "dag-cbor"}, {profile_key: "dcbor"},
                   {"profile": "core", "max_depth": 4}, {"max_items": 10}):
        assert cbor_impl.decode(data, **kwargs) == {"a": [1]}
        assert cbor_impl.check(data, **kwargs) is None
        assert cbor_impl.decode_prefix(data + b"\x00", 0, **kwargs) == ({"a": [1]}, len(data))
        assert cbor_impl.decode_prefix(b"\x00" + data, 1, **kwargs) == ({"a": [1]}, len(data) + 1)
        assert cbor_impl.check_prefix(data + b"\x00", **kwargs) == len(data)
    for kwargs in ({}, {"profile": "dag-cbor"}, {profile_key: "dcbor"}, {"max_depth": 3}):
        assert cbor_impl.encode({"a": [1]}, **kwargs) == data
    for bad in (lambda: cbor_impl.decode(), lambda: cbor_impl.decode(data, "core"),
                lambda: cbor_impl.decode(data, profil="core"),
                lambda: cbor_impl.decode(data=data),
                lambda: cbor_impl.check(data, data), lambda: cbor_impl.encode(),
                lambda: cbor_impl.encode(1, "core"), lambda: cbor_impl.encode(1, profle="core"),
                lambda: cbor_impl.decode_prefix(data, 0, 0),
                lambda: cbor_impl.check_prefix()):
        with pytest.raises(TypeError):
            bad()
    with pytest.raises(errors.InvalidOptionError):
        cbor_impl.decode_prefix(data, len(data) + 1)
    with pytest.raises(errors.InvalidOptionError):
        cbor_impl.check_prefix(data, -1, profile="dag-cbor")
    with pytest.raises(errors.InputTypeError):
        cbor_impl.decode("not bytes", profile="dag-cbor")


def test_module_functions_keep_their_signatures_and_pickle() -> None:
    import inspect
    import pickle

    compiled, twin = backend_pair("cbor")
    for name in ("decode", "check", "decode_prefix", "check_prefix", "encode"):
        function = getattr(compiled, name)
        want = [(p.name, p.kind, p.default)
                for p in inspect.signature(getattr(twin, name)).parameters.values()]
        assert [(p.name, p.kind, p.default)
                for p in inspect.signature(function).parameters.values()] == want, name
        assert function.__doc__ and function.__name__ == name
        assert pickle.loads(pickle.dumps(function)) is function
