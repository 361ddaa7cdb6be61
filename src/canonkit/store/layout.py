"""Where everything lives in a store directory (STORE.md §1), and the names that are valid.

    STORE/canonkit-store       the marker: {"format": "canonkit-store", "version": 1, ...}
    STORE/objects/ab/<62 hex>  loose objects, fanned out by the first digest byte
    STORE/packs/pack-<hex>.pack, .idx
    STORE/refs/<name>          "blake3:<64 hex>\\n"
    STORE/tmp/                 work in progress; never read as data
    STORE/lock                 held by repack and gc

Every path handed out here is relative to the store root; nothing here touches the disk.
"""
from __future__ import annotations

import json
import os
import re

from ..errors import InvalidRefNameError, SchemaViolationError

__all__ = [
    "LOCK", "MARKER", "MARKER_BYTES", "OBJECTS", "PACKS", "REFS", "TMP", "address_of",
    "check_ref_name", "digest_of_address", "loose_path", "pack_paths", "parse_loose_name",
    "parse_pack_name", "printable",
]

MARKER = "canonkit-store"
OBJECTS = "objects"
PACKS = "packs"
REFS = "refs"
TMP = "tmp"
LOCK = "lock"
MARKER_DOC = {"format": "canonkit-store", "version": 1, "address": "blake3"}
MARKER_BYTES = (json.dumps(MARKER_DOC) + "\n").encode("ascii")
PREFIX = "blake3:"

_HEX64 = re.compile(r"[0-9a-f]{64}")
_FANOUT = re.compile(r"[0-9a-f]{2}")
_REST = re.compile(r"[0-9a-f]{62}")
_PACK = re.compile(r"pack-([0-9a-f]{64})\.(pack|idx)")
_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")
MAX_REF_NAME = 1024  # bytes; far beyond any real name, well inside PATH_MAX
MAX_REF_SEGMENT = 255  # bytes: each segment is a file or directory name (NAME_MAX)


def digest_of_address(address: str) -> bytes:
    """The 32 digest bytes of ``"blake3:<64 lowercase hex>"`` (``SchemaViolationError``,
    detail ``"address"``, otherwise — the same rule as ``objects.parse_address``)."""
    if (type(address) is not str or len(address) != 71 or not address.startswith(PREFIX)
            or not _HEX64.fullmatch(address, 7)):
        raise SchemaViolationError(f"not a blake3 address: {address!r}", detail="address")
    return bytes.fromhex(address[7:])


def address_of(digest: bytes) -> str:
    return PREFIX + digest.hex()


def loose_path(digest: bytes) -> str:
    hexed = digest.hex()
    return f"{OBJECTS}/{hexed[:2]}/{hexed[2:]}"


def parse_loose_name(fanout: str, rest: str) -> bytes | None:
    """The digest named by ``objects/<fanout>/<rest>``, or None if that is no object name."""
    if _FANOUT.fullmatch(fanout) and _REST.fullmatch(rest):
        return bytes.fromhex(fanout + rest)
    return None


def pack_paths(trailer: bytes) -> tuple[str, str]:
    """``(packs/pack-<hex>.pack, packs/pack-<hex>.idx)`` for a pack's trailer."""
    stem = f"{PACKS}/pack-{trailer.hex()}"
    return stem + ".pack", stem + ".idx"


def parse_pack_name(name: str) -> tuple[str, str] | None:
    """``(hex, "pack" | "idx")`` for a file name under packs/, or None."""
    match = _PACK.fullmatch(name)
    return (match.group(1), match.group(2)) if match else None


def check_ref_name(name: str) -> list[str]:
    """The segments of a valid ref name; ``InvalidRefNameError`` otherwise. A name is
    ``[A-Za-z0-9._-]+`` segments joined by "/", none of them "." or "..", at most
    ``MAX_REF_NAME`` bytes in all and ``MAX_REF_SEGMENT`` per segment, given without the
    ``refs/`` prefix — so it can never name a path outside ``refs/``, and every valid
    name can be stored."""
    if type(name) is not str:
        raise InvalidRefNameError(f"a ref name is text, got {type(name).__name__}",
                                  detail=repr(name))
    segments = name.split("/")
    if (not name or len(name) > MAX_REF_NAME
            or any(not _SEGMENT.fullmatch(s) or s in (".", "..") for s in segments)):
        raise InvalidRefNameError(
            f"invalid ref name {printable(name)!r}: [A-Za-z0-9._-] segments joined by '/', "
            f"no empty, '.' or '..' segment, at most {MAX_REF_NAME} bytes",
            detail=printable(name))
    if any(len(s) > MAX_REF_SEGMENT for s in segments):  # ASCII: characters are bytes
        raise InvalidRefNameError(
            f"invalid ref name {name[:40]!r}...: a segment is longer than "
            f"{MAX_REF_SEGMENT} bytes (a file name's limit)", detail=name)
    return segments


def printable(name: str) -> str:
    """A file name as text that can always be printed and written as JSON: bytes that are
    not UTF-8 (kept by the filesystem encoding as lone surrogates) become ``\\xNN``."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")
    return name
