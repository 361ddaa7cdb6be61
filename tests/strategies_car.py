"""Hypothesis strategies for CAR files: sections of every kind (valid blocks of each hash
function and codec, wrong digests, truncated or over-long digests, unknown multihashes,
broken CIDs, zero-length sections), whole files of them with mutations, and index
entries that point well or badly."""
from __future__ import annotations

import hashlib
import struct

from hypothesis import strategies as st

from canonkit import cbor
from canonkit.cbor._cid import write_varint as varint
from canonkit.car import encode

# hash code -> digest of a block (the functions CAR files use most, and sha2-512)
_HASHES = {
    0x12: lambda d: hashlib.sha256(d).digest(),
    0x13: lambda d: hashlib.sha512(d).digest(),
    0xB220: lambda d: hashlib.blake2b(d, digest_size=32).digest(),
    0x00: lambda d: bytes(d),
}

_DAG_CBOR_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**64 + 1, 2**64 - 1) | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8)


def _cid(code: int, digest: bytes, codec: int) -> bytes:
    return b"\x01" + varint(codec) + varint(code) + varint(len(digest)) + digest


@st.composite
def block_sections(draw: st.DrawFn) -> bytes:
    """One section: mostly a block whose CID verifies, sometimes one that breaks a rule."""
    codec = draw(st.sampled_from([0x55, 0x71, 0x70]))
    if codec == 0x71 and draw(st.booleans()):
        data = cbor.encode(draw(_DAG_CBOR_VALUES), profile="dag-cbor")
    else:
        data = draw(st.binary(max_size=300))
    kind = draw(st.sampled_from(["good", "good", "good", "cidv0", "wrong", "short", "long",
                                 "unknown", "blake3", "broken", "zero", "strict"]))
    code = draw(st.sampled_from(sorted(_HASHES)))
    digest = _HASHES[code](data)
    if kind == "cidv0":
        cid = b"\x12\x20" + hashlib.sha256(data).digest()
    elif kind == "wrong":
        cid = _cid(code, bytes(len(digest)) if digest else b"\x01", codec)
    elif kind == "short":
        cid = _cid(code, digest[:draw(st.integers(0, max(0, len(digest) - 1)))], codec)
    elif kind == "long":
        cid = _cid(code, digest + draw(st.binary(min_size=1, max_size=8)), codec)
    elif kind == "unknown":
        cid = _cid(draw(st.sampled_from([0x11, 0x22, 0x1014, 2**40])), digest, codec)
    elif kind == "blake3":
        from blake3 import blake3

        cid = _cid(0x1E, blake3(data).digest(length=draw(st.integers(1, 80))), codec)
    elif kind == "broken":
        cid = draw(st.binary(max_size=12))
    elif kind == "zero":
        return b"\x00" * draw(st.integers(1, 3))
    else:  # "good" and "strict": a dag-cbor block that may not be strict DAG-CBOR
        cid = _cid(code, digest, codec)
    body = cid + data
    return varint(len(body)) + body


@st.composite
def car_payloads(draw: st.DrawFn) -> tuple[bytes, int]:
    """``(CARv1 bytes, where its sections start)``: a header, sections, sometimes a
    mutation (a flipped byte, a cut end, garbage appended)."""
    roots = [cbor.Link.for_block(b"root")]
    head = encode(roots, [])
    sections = draw(st.lists(block_sections(), max_size=12))
    data = bytearray(head + b"".join(sections))
    mutation = draw(st.sampled_from(["none", "none", "flip", "cut", "garbage"]))
    if mutation == "flip" and len(data) > len(head):
        at = draw(st.integers(len(head), len(data) - 1))
        data[at] ^= 1 << draw(st.integers(0, 7))
    elif mutation == "cut" and len(data) > len(head):
        del data[draw(st.integers(len(head), len(data) - 1)):]
    elif mutation == "garbage":
        data += draw(st.binary(min_size=1, max_size=20))
    return bytes(data), len(head)


@st.composite
def index_entries(draw: st.DrawFn, offsets: list[int], digests: list[bytes], width: int
                  ) -> bytes:
    """Entries of one bucket: real sections' digests and offsets, and wrong ones."""
    size = width - 8
    out: list[bytes] = []
    if size > 4096:  # a bucket that declares a huge width holds no entry (the file is short)
        return b""
    for _ in range(draw(st.integers(0, len(offsets) + 3))):
        if offsets and draw(st.booleans()):
            k = draw(st.integers(0, len(offsets) - 1))
            digest = digests[k]
            digest = (digest + bytes(size))[:size] if draw(st.booleans()) else \
                draw(st.binary(min_size=size, max_size=size))
            offset = offsets[k] + draw(st.sampled_from([0, 0, 0, 1]))
        else:
            digest = draw(st.binary(min_size=size, max_size=size))
            offset = draw(st.integers(0, 2**64 - 1))
        out.append(digest + struct.pack("<Q", offset))
    if draw(st.booleans()):
        out.sort()
    return b"".join(out)
