"""CIDs: ``Link`` accessors, ``Link.for_block`` and ``multiformats.CID`` conversion, checked
against multiformats, cbrrr and libipld (same CID bytes and strings for the same block)."""
from __future__ import annotations

import hashlib
import pickle
import sys
from pathlib import Path

import cbrrr
import libipld
import multiformats
import pytest
from hypothesis import given
from hypothesis import strategies as st

from canonkit import errors
from canonkit.cbor._types import Link
from canonkit.cbor._cid import HASHES, b32decode, b32encode, read_varint, write_varint

FIXTURES = Path(__file__).parent / "vectors" / "ipld-codec-fixtures" / "fixtures"
FIXTURE_FILES = sorted(FIXTURES.glob("*/*.dag-*"))
CODECS = ["raw", "dag-cbor", "dag-json", "dag-pb", "json", "cbor", 0x300001]


def _multiformats_cid(data: bytes, codec: str | int, hash_name: str) -> multiformats.CID:
    size = 32 if hash_name == "blake3" else None
    digest = multiformats.multihash.digest(data, hash_name, size=size)
    return multiformats.CID("base32", 1, codec, digest)


# --- for_block against the peers -----------------------------------------------------

@pytest.mark.parametrize("hash_name", sorted(HASHES))
@pytest.mark.parametrize("codec", ["raw", "dag-cbor", "dag-json", "dag-pb", "json"])
def test_for_block_equals_multiformats(codec: str, hash_name: str) -> None:
    for data in (b"", b"hello", bytes(range(256)) * 5):
        link = Link.for_block(data, codec, hash_name)
        expected = _multiformats_cid(data, codec, hash_name)
        assert link.cid_bytes == bytes(expected)
        assert str(link) == str(expected)
        assert link.codec == codec and link.hash_function == hash_name
        assert link.digest == expected.raw_digest
        assert link.multihash == bytes(expected.digest)


@given(st.binary(max_size=2000))
def test_for_block_equals_cbrrr_and_libipld(data: bytes) -> None:
    dag = Link.for_block(data)
    raw = Link.for_block(data, "raw")
    assert dag.cid_bytes == cbrrr.CID.cidv1_dag_cbor_sha256_32_from(data).cid_bytes
    assert raw.cid_bytes == cbrrr.CID.cidv1_raw_sha256_32_from(data).cid_bytes
    assert str(dag) == cbrrr.CID.cidv1_dag_cbor_sha256_32_from(data).encode()
    assert str(dag) == libipld.encode_cid(dag.cid_bytes)
    parsed = libipld.decode_cid(str(raw))
    assert parsed == {"version": 1, "codec": raw.codec_code,
                      "hash": {"code": raw.hash_code, "size": 32, "digest": raw.digest}}


@given(st.binary(max_size=300), st.sampled_from(sorted(HASHES)),
       st.sampled_from(["raw", "dag-cbor"]))
def test_for_block_digest_is_the_hash_of_the_block(data: bytes, hash_name: str,
                                                   codec: str) -> None:
    link = Link.for_block(bytearray(data), codec, hash_name)
    assert link == Link.for_block(memoryview(data), codec, hash_name)
    assert link.digest == HASHES[hash_name][1](data)
    if hash_name == "sha2-256":
        assert link.digest == hashlib.sha256(data).digest()
    if hash_name == "identity":
        assert link.digest == data


def test_for_block_blake3_uses_the_multicodec_code() -> None:
    link = Link.for_block(b"abc", "raw", "blake3")
    assert link.hash_code == 0x1E and link.hash_function == "blake3"
    assert link.multihash[:2] == b"\x1e\x20" and len(link.digest) == 32
    assert str(link).startswith("bafkr4i")


def test_for_block_cidv0() -> None:
    link = Link.for_block(b"x", "dag-pb", "sha2-256", version=0)
    assert link.version == 0 and link.cid_bytes == b"\x12\x20" + hashlib.sha256(b"x").digest()
    assert str(link).startswith("Qm") and link.codec == "dag-pb"
    assert str(link) == str(multiformats.CID("base58btc", 0, "dag-pb",
                                             multiformats.multihash.digest(b"x", "sha2-256")))


@pytest.mark.parametrize(("codec", "hash_name", "version", "error"), [
    ("no-such-codec", "sha2-256", 1, errors.UnknownMulticodecError),
    ("sha2-256", "sha2-256", 1, errors.UnknownMulticodecError),   # a hash, not a codec
    ("ip4", "sha2-256", 1, errors.UnknownMulticodecError),        # multiaddr, not content
    (-1, "sha2-256", 1, errors.UnknownMulticodecError),
    (1 << 63, "sha2-256", 1, errors.UnknownMulticodecError),
    (True, "sha2-256", 1, errors.UnknownMulticodecError),
    (b"raw", "sha2-256", 1, errors.UnknownMulticodecError),
    ("raw", "no-such-hash", 1, errors.UnknownMulticodecError),
    ("raw", "dag-cbor", 1, errors.UnknownMulticodecError),        # a codec, not a hash
    ("raw", "skein256-8", 1, errors.UnsupportedHashError),        # in the table, not computed
    ("raw", "sha2-256", 0, errors.UnknownMulticodecError),        # CIDv0 is dag-pb only
    ("dag-pb", "blake3", 0, errors.UnknownMulticodecError),
    ("raw", "sha2-256", 2, errors.UnknownMulticodecError),
])
def test_for_block_refusals(codec: object, hash_name: str, version: int,
                            error: type[Exception]) -> None:
    with pytest.raises(error) as info:
        Link.for_block(b"x", codec, hash_name, version=version)  # type: ignore[arg-type]
    assert info.value.code in errors.CODES


def test_for_block_codec_by_code() -> None:
    assert Link.for_block(b"x", 0x71) == Link.for_block(b"x", "dag-cbor")
    unnamed = Link.for_block(b"x", 0x300001)
    assert unnamed.codec == "0x300001" and unnamed.codec_code == 0x300001


# --- accessors on every CID of the codec fixtures ------------------------------------

def _fixture_cids() -> list[str]:
    names = {p.name.split(".")[0] for p in FIXTURE_FILES}
    for path in FIXTURE_FILES:  # the links inside the cid-* fixtures, v0 ones included
        if path.parent.name.startswith("cid-") and path.suffix == ".dag-json":
            text = path.read_text("utf-8")
            names.update(part.split('"')[0] for part in text.split('{"/":"')[1:])
    return sorted(names)


@pytest.mark.parametrize("text", _fixture_cids())
def test_accessors_match_multiformats(text: str) -> None:
    link = Link.from_string(text)
    try:
        expected = multiformats.CID.decode(text)
    except Exception:  # multiformats does not know every code in the table
        pytest.skip(f"multiformats cannot decode {text}")
    assert str(link) == text
    assert link.version == expected.version
    assert link.codec == expected.codec.name and link.codec_code == expected.codec.code
    assert link.hash_function == expected.hashfun.name
    assert link.hash_code == expected.hashfun.code
    assert link.digest == expected.raw_digest and link.multihash == bytes(expected.digest)
    assert Link.from_multiformats(expected) == link
    assert link.to_multiformats() == expected and str(link.to_multiformats()) == text


def test_fixture_cids_decode_like_libipld() -> None:
    for text in _fixture_cids():
        link = Link.from_string(text)
        parsed = libipld.decode_cid(text)
        assert parsed["version"] == link.version and parsed["codec"] == link.codec_code
        assert parsed["hash"]["code"] == link.hash_code
        assert parsed["hash"]["digest"] == link.digest


def test_unknown_codes_are_shown_as_hex() -> None:
    link = Link(b"\x01" + write_varint(0x3FFFFF) + write_varint(0x3FFFFE) + b"\x01\xaa")
    assert link.codec == "0x3fffff" and link.hash_function == "0x3ffffe"
    assert link.multihash == write_varint(0x3FFFFE) + b"\x01\xaa" and link.digest == b"\xaa"


def test_link_stays_small_immutable_and_picklable() -> None:
    link = Link.for_block(b"x", "raw", "blake3")
    assert not hasattr(link, "__dict__")
    assert pickle.loads(pickle.dumps(link)) == link
    with pytest.raises(AttributeError):
        link.codec = "raw"  # type: ignore[misc]


# --- multiformats conversion ---------------------------------------------------------

@given(st.binary(max_size=100), st.sampled_from(["raw", "dag-cbor", "dag-json"]))
def test_multiformats_round_trip(data: bytes, codec: str) -> None:
    link = Link.for_block(data, codec)
    cid = link.to_multiformats()
    assert isinstance(cid, multiformats.CID) and str(cid) == str(link)
    assert Link.from_multiformats(cid) == link
    assert Link.from_multiformats(multiformats.CID.decode(str(link)).set(base="base58btc")) \
        == link


def test_to_multiformats_without_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "multiformats", None)
    with pytest.raises(errors.MissingDependencyError, match=r"canonkit\[multiformats\]") as info:
        Link.for_block(b"x").to_multiformats()
    assert isinstance(info.value, ImportError) and info.value.code == "missing_dependency"


# --- text forms and varints ----------------------------------------------------------

@given(st.binary(max_size=64))
def test_base32_round_trip(data: bytes) -> None:
    assert b32decode(b32encode(data)) == data


@pytest.mark.parametrize("text", ["a", "abc", "abcdef", "ab", "a!"])
def test_base32_refuses_impossible_lengths_and_stray_bits(text: str) -> None:
    with pytest.raises(ValueError):
        b32decode(text)  # "ab": 10 bits, the 2 spare bits of 'b' are not zero


@given(st.integers(0, (1 << 63) - 1))
def test_varint_round_trip(value: int) -> None:
    encoded = write_varint(value)
    assert read_varint(encoded, 0) == (value, len(encoded))


def test_from_string_refuses_non_canonical_base32() -> None:
    text = str(Link.for_block(b"x"))
    with pytest.raises(errors.InvalidLinkError):
        Link.from_string(text + "a")  # one extra character: impossible length


def test_for_block_repeated_arguments_give_checked_cids() -> None:
    """Once a (codec, hash, version) has been seen, later blocks reuse its CID prefix: the
    links equal freshly checked ones, and arguments that only look equal (the bool True
    for codec 1, an int code, CIDv0) still take the checking path."""
    from canonkit.cbor._cid import make_cid

    for data in (b"", b"a", bytes(300)):
        for codec, hash_name, version in (("dag-cbor", "sha2-256", 1), ("raw", "blake3", 1),
                                          ("dag-pb", "sha2-256", 0), (0x71, "sha2-256", 1),
                                          ("raw", "identity", 1)):
            first = Link.for_block(data, codec, hash_name, version=version)
            again = Link.for_block(data, codec, hash_name, version=version)
            checked = Link(make_cid(data, codec, hash_name, version))
            assert type(again) is Link and first == again == checked
            assert again.cid_bytes == checked.cid_bytes and hash(again) == hash(checked)
    Link.for_block(b"x", "raw", "sha2-256", version=1)
    with pytest.raises(errors.UnknownMulticodecError):
        Link.for_block(b"x", True, "sha2-256")  # type: ignore[arg-type]
    with pytest.raises(errors.UnknownMulticodecError):
        Link.for_block(b"x", "raw", "sha2-256", version=0)
    with pytest.raises(errors.UnknownMulticodecError):
        Link.for_block(b"x", "raw", "sha2-256", version=2)
    with pytest.raises(errors.UnsupportedHashError):
        Link.for_block(b"x", "raw", "keccak-256")


def test_for_block_on_a_subclass_runs_its_constructor() -> None:
    class Named(Link):
        __slots__ = ()
        made = 0

        def __init__(self, cid_bytes: bytes) -> None:
            type(self).made += 1
            super().__init__(cid_bytes)

    Link.for_block(b"sub")
    link = Named.for_block(b"sub")
    assert type(link) is Named and Named.made == 1 and link == Link.for_block(b"sub")


def _near_cids() -> st.SearchStrategy[bytes]:
    """CIDv1-shaped bytes: version, codec, hash and length bytes (some past one varint
    byte, some lengths off by a few) and a digest, or arbitrary short bytes."""
    head = st.integers(0, 255)
    return st.one_of(
        st.binary(max_size=40),
        st.builds(lambda v, c, h, d, off: bytes([v, c, h, max(0, min(255, len(d) + off))]) + d,
                  st.sampled_from([0, 1, 2, 0x81]), head, head, st.binary(max_size=40),
                  st.integers(-2, 2)),
        st.builds(lambda h, d: bytes([0x12, 0x20]) + h + d, st.binary(max_size=2),
                  st.binary(min_size=30, max_size=34)))


@given(_near_cids())
def test_cid_problem_fast_path_agrees_with_the_varint_walk(cid: bytes) -> None:
    """``cid_problem``'s shortcut for one-byte varints says what the full walk says."""
    from canonkit.cbor._cid import _walk_problem, cid_problem

    if len(cid) == 34 and cid[:2] == b"\x12\x20":
        assert cid_problem(cid) is None  # a CIDv0
    else:
        assert cid_problem(cid) == _walk_problem(cid)


def test_link_constructor_takes_any_buffer_and_checks_it() -> None:
    cid = Link.for_block(b"buffer").cid_bytes
    for form in (cid, bytearray(cid), memoryview(cid)):
        link = Link(form)
        assert type(link.cid_bytes) is bytes and link.cid_bytes == cid
    for bad in (cid[:-1], cid + b"\0", b"\x01\x71\x12\x81", b""):
        with pytest.raises(errors.InvalidLinkError):
            Link(bad)
