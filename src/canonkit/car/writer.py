"""Writing CAR files: CARv1, or CARv2 with either index format (docs/car.md, "Writing").

The output is exactly what ``verify`` accepts: a canonical DAG-CBOR header, one section
per block, and for a CARv2 the pragma, the 40-byte header, optional zero padding and an
index laid out as go-car lays it out (buckets in ascending order, digests sorted bytewise
within a bucket, bucket lengths in bytes). Identity CIDs are indexed only when the file is
marked fully indexed, as the CARv2 specification recommends.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from typing import Any

from .. import cbor
from .._files import AtomicWriter
from ..cbor._cid import write_varint
from .format import (
    CARV2_PREFIX,
    FULLY_INDEXED,
    IDENTITY,
    INDEX_SORTED,
    MULTIHASH_INDEX_SORTED,
    PRAGMA,
    parse_cid,
)

__all__ = ["INDEX_NAMES", "block", "encode", "write"]

PathLike = str | os.PathLike[str]
Block = tuple["cbor.Link | bytes", Any]

#: index format name -> multicodec code
INDEX_NAMES = {"car-index-sorted": INDEX_SORTED,
               "car-multihash-index-sorted": MULTIHASH_INDEX_SORTED}


def block(data: Any, codec: str | int = "dag-cbor", hash: str = "sha2-256"
          ) -> tuple[cbor.Link, bytes]:
    """``(CID, bytes)`` of an encoded block, for ``encode``'s ``blocks``."""
    data = bytes(data)
    return cbor.Link.for_block(data, codec, hash), data


def _cid_bytes(cid: cbor.Link | bytes) -> bytes:
    return cid.cid_bytes if isinstance(cid, cbor.Link) else bytes(cbor.Link(cid).cid_bytes)


def _payload(roots: Sequence[cbor.Link], blocks: Iterable[Block]
             ) -> tuple[bytes, list[tuple[bytes, int]]]:
    """The CARv1 bytes and each section's (CID, offset from the payload's start)."""
    header = cbor.encode({"roots": list(roots), "version": 1}, profile="dag-cbor")
    parts = [write_varint(len(header)), header]
    size = len(parts[0]) + len(header)
    sections = []
    for cid, data in blocks:
        raw = _cid_bytes(cid)
        body = bytes(data)
        head = write_varint(len(raw) + len(body))
        sections.append((raw, size))
        parts += [head, raw, body]
        size += len(head) + len(raw) + len(body)
    return b"".join(parts), sections


def _width_buckets(entries: list[tuple[bytes, int]]) -> bytes:
    """An IndexSorted body: int32 bucket count, then per digest length (ascending) the
    width (uint32), the length in bytes (uint64) and the entries sorted by digest."""
    by_length: dict[int, list[tuple[bytes, int]]] = {}
    for digest, offset in entries:
        by_length.setdefault(len(digest), []).append((digest, offset))
    out = [struct.pack("<i", len(by_length))]
    for length in sorted(by_length):
        group = sorted(by_length[length])
        body = b"".join(digest + struct.pack("<Q", offset) for digest, offset in group)
        out.append(struct.pack("<IQ", length + 8, len(body)) + body)
    return b"".join(out)


def _index(format_code: int, sections: list[tuple[bytes, int]], fully_indexed: bool) -> bytes:
    by_code: dict[int, list[tuple[bytes, int]]] = {}
    for cid, offset in sections:
        fields = parse_cid(cid, 0, len(cid))
        if fields.hash_code == IDENTITY and not fully_indexed:
            continue
        digest = cid[fields.digest_start:fields.end]
        by_code.setdefault(fields.hash_code, []).append((digest, offset))
    if format_code == INDEX_SORTED:
        body = _width_buckets([entry for code in by_code for entry in by_code[code]])
    else:
        body = struct.pack("<i", len(by_code)) + b"".join(
            struct.pack("<Q", code) + _width_buckets(by_code[code]) for code in sorted(by_code))
    return write_varint(format_code) + body


def encode(roots: Sequence[cbor.Link], blocks: Iterable[Block], *, version: int = 1,
           index: str | None = "car-multihash-index-sorted", fully_indexed: bool = False,
           data_padding: int = 0, index_padding: int = 0) -> bytes:
    """The CAR file of ``roots`` and ``blocks`` (``(CID, bytes)`` pairs, in order; a CID is
    a ``Link`` or its binary form). ``version=2`` wraps the CARv1 payload in a CARv2 with
    ``index`` (``"car-index-sorted"``, ``"car-multihash-index-sorted"`` or None),
    ``data_padding`` zero bytes before the payload and ``index_padding`` before the index;
    ``fully_indexed`` sets that characteristic and indexes identity CIDs too."""
    if version not in (1, 2):
        raise ValueError(f"version must be 1 or 2, not {version!r}")
    if index is not None and index not in INDEX_NAMES:
        raise ValueError(f"index must be one of {', '.join(INDEX_NAMES)} or None, "
                         f"not {index!r}")
    if data_padding < 0 or index_padding < 0:
        raise ValueError("padding cannot be negative")
    payload, sections = _payload(roots, blocks)
    if version == 1:
        return payload
    data_offset = CARV2_PREFIX + data_padding
    index_bytes = b"" if index is None else _index(INDEX_NAMES[index], sections, fully_indexed)
    index_offset = data_offset + len(payload) + index_padding if index is not None else 0
    characteristics = bytes([FULLY_INDEXED if fully_indexed else 0]) + bytes(15)
    header = characteristics + struct.pack("<QQQ", data_offset, len(payload), index_offset)
    return b"".join([PRAGMA, header, bytes(data_padding), payload,
                     bytes(index_padding) if index is not None else b"", index_bytes])


def write(path: PathLike, roots: Sequence[cbor.Link], blocks: Iterable[Block], *,
          replace: bool = True, **options: Any) -> None:
    """Write ``encode(roots, blocks, **options)`` to ``path``, completely or not at all."""
    data = encode(roots, blocks, **options)
    with AtomicWriter(path, replace=replace) as out:
        out.write(data)
