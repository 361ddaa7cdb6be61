"""CAR files for the tests, made here: blocks of every hash function canonkit verifies,
the byte-level pieces of a CAR (header, section, CARv2 header, index buckets) for files
that break a rule, and the ``car`` fixture that runs a test on both kernel backends."""
from __future__ import annotations

import os
import struct
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from canonkit import _backend, cbor
from canonkit.cbor._cid import write_varint as varint
from canonkit.cbor import Link

__all__ = ["PRAGMA", "Link", "car", "carv2", "dag", "entries", "header", "identity", "index_sorted",
           "mh_cid", "mh_index", "raw", "sample_blocks", "section", "varint", "write"]

PRAGMA = bytes.fromhex("0aa16776657273696f6e02")


@pytest.fixture(params=["c", "py"])
def car(request: pytest.FixtureRequest) -> ModuleType:
    """``canonkit.car`` on the compiled kernel ("c") or on its twin ("py")."""
    import canonkit.car

    only = os.environ.get("CANONKIT_TEST_BACKENDS")
    if only and request.param not in only.split(","):
        pytest.skip(f"CANONKIT_TEST_BACKENDS={only}")
    if request.param == "py":
        return _backend.import_on_twins("canonkit.car")
    if os.environ.get("CANONKIT_NO_EXTENSIONS") == "1":
        pytest.skip("CANONKIT_NO_EXTENSIONS=1")
    if _backend.LIVE.get("car") != "compiled":
        pytest.skip(f"canonkit.car._sections not built: {_backend.WHY_NOT_COMPILED.get('car')}")
    return canonkit.car


def dag(value: Any, hash: str = "sha2-256") -> tuple[Link, bytes]:
    data = cbor.encode(value, profile="dag-cbor")
    return Link.for_block(data, "dag-cbor", hash), data


def raw(data: bytes, hash: str = "sha2-256") -> tuple[Link, bytes]:
    return Link.for_block(data, "raw", hash), data


def identity(data: bytes) -> tuple[Link, bytes]:
    return Link.for_block(data, "raw", "identity"), data


def mh_cid(code: int, digest: bytes, codec: int = 0x55) -> bytes:
    """A binary CIDv1 with any multihash."""
    return b"\x01" + varint(codec) + varint(code) + varint(len(digest)) + digest


def header(value: Any) -> bytes:
    """A CARv1 header: varint length, then ``value`` as DAG-CBOR."""
    body = cbor.encode(value, profile="dag-cbor")
    return varint(len(body)) + body


def section(cid: Link | bytes, data: bytes) -> bytes:
    raw_cid = cid.cid_bytes if isinstance(cid, Link) else cid
    return varint(len(raw_cid) + len(data)) + raw_cid + data


def sample_blocks() -> list[tuple[Link, bytes]]:
    """Blocks of every kind a file holds: dag-cbor, raw, each hash function, identity."""
    return [
        dag({"name": "root", "n": 1}),
        dag({"list": [1, 2, 3], "text": "two"}, "blake2b-256"),
        raw(b"raw bytes " * 40),
        raw(b"blake3 hashed", "blake3"),
        raw(b"a sha2-512 block", "sha2-512"),
        identity(b"inline"),
        raw(b"x" * 70_000),  # hashed without the GIL by the compiled kernel
    ]


def carv2(payload: bytes, *, index: bytes = b"", data_padding: int = 0,
          index_padding: int = 0, characteristics: bytes = bytes(16),
          data_offset: int | None = None, data_size: int | None = None,
          index_offset: int | None = None, padding_byte: int = 0) -> bytes:
    """A CARv2 around ``payload`` with ``index`` (already encoded, format code included);
    the header fields can be given to break the rules."""
    if data_offset is None:
        data_offset = 51 + data_padding
    if data_size is None:
        data_size = len(payload)
    if index_offset is None:
        index_offset = 51 + data_padding + len(payload) + index_padding if index else 0
    head = PRAGMA + characteristics + struct.pack("<QQQ", data_offset, data_size, index_offset)
    pad = bytes([padding_byte])
    return (head + pad * data_padding + payload + (pad * index_padding if index else b"")
            + index)


def _buckets(buckets: list[tuple[int, bytes]]) -> bytes:
    return struct.pack("<i", len(buckets)) + b"".join(
        struct.pack("<IQ", width, len(body)) + body for width, body in buckets)


def entries(*pairs: tuple[bytes, int]) -> bytes:
    """Index entries: each digest followed by its offset (little-endian uint64)."""
    return b"".join(digest + struct.pack("<Q", offset) for digest, offset in pairs)


def index_sorted(buckets: list[tuple[int, bytes]]) -> bytes:
    """A car-index-sorted index of ``(width, entry bytes)`` buckets, as given."""
    return varint(0x0400) + _buckets(buckets)


def mh_index(groups: list[tuple[int, list[tuple[int, bytes]]]]) -> bytes:
    """A car-multihash-index-sorted index of ``(code, buckets)`` groups, as given."""
    return varint(0x0401) + struct.pack("<i", len(groups)) + b"".join(
        struct.pack("<Q", code) + _buckets(buckets) for code, buckets in groups)


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
