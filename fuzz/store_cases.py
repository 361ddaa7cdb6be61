"""A small store whose files the store fuzz target (and the differential test) mutate,
and how an outcome is compared between the compiled store readers and their twin.

The store holds every physical form: a pack with raw and DEFLATE entries (blobs and the
tree that names them), a raw loose object, a DEFLATE loose object, and ``refs/main`` at
the tree. It is a pure function of the objects below (DEFLATE streams by canonkit's own
fixed-Huffman encoder), so its files are the same bytes everywhere.

A case is ``[selector][bytes]``: ``selector % len(FILES)`` picks the file the bytes
replace. Both backends then answer the same questions — ``get`` of every address, with and
without verification and ``copy=False``; ``get_many`` of all of them; the fsck report —
and must give the same value, or the same error class, code, path and offset; fsck the
same findings.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from blake3 import blake3

from canonkit import objects
from canonkit.conformance.fixed_deflate import compress
from canonkit.errors import CanonkitError
from canonkit.store import Store
from canonkit.store.layout import MARKER, MARKER_BYTES, loose_path, pack_paths
from canonkit.store.loose import encode
from canonkit.store.packwriter import encode_pack

BLOBS = [b"", b"x", b"raw packed blob " * 8, bytes(range(256)) * 3,
         b"deflated packed blob " * 40]
LOOSE_RAW = b"a loose raw object " * 5
LOOSE_DEFLATE = b"a loose DEFLATE object " * 30


def _digest(data: bytes) -> bytes:
    return blake3(data).digest()


def _tree() -> bytes:
    named = [*BLOBS, LOOSE_RAW, LOOSE_DEFLATE]
    entries = [{"name": f"f{i}", "mode": 0o100644, "ref": _digest(d)}
               for i, d in enumerate(named)]
    return objects.encode_object("tree", {"entries": entries})


def image() -> dict[str, bytes]:
    """The store's files, ``{store-relative path: bytes}``."""
    packed = [*BLOBS, _tree()]
    entries = []
    for i, data in enumerate(sorted(packed, key=_digest)):
        deflated = i % 2 == 1
        payload = compress(data) if deflated else data
        entries.append((_digest(data), deflated, payload, len(data)))
    pack, index = encode_pack(entries)
    pack_rel, idx_rel = pack_paths(blake3(pack[:-32]).digest())
    tree = _tree()
    deflated_loose = encode(LOOSE_DEFLATE, True, compress=compress)
    return {
        MARKER: MARKER_BYTES,
        pack_rel: pack,
        idx_rel: index,
        loose_path(_digest(LOOSE_RAW)): encode(LOOSE_RAW, False),
        loose_path(_digest(LOOSE_DEFLATE)): deflated_loose,
        "refs/main": ("blake3:" + blake3(tree).hexdigest() + "\n").encode(),
    }


IMAGE = image()
FILES = [rel for rel in IMAGE if rel.startswith(("packs/", "objects/"))]
ADDRESSES = sorted("blake3:" + blake3(d).hexdigest()
                   for d in [*BLOBS, _tree(), LOOSE_RAW, LOOSE_DEFLATE])


def seeds() -> list[bytes]:
    """One seed per file: its selector and its intact bytes."""
    return [bytes([i]) + IMAGE[rel] for i, rel in enumerate(FILES)]


def write(root: Path, case: bytes) -> None:
    """Lay the store out at ``root`` (emptied first), with the case's file replaced."""
    if root.exists():
        shutil.rmtree(root)
    for name in ("objects", "packs", "refs", "tmp"):
        (root / name).mkdir(parents=True)
    files = dict(IMAGE)
    if case:
        files[FILES[case[0] % len(FILES)]] = case[1:]
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _outcome(call: Any) -> tuple[Any, ...]:
    try:
        value = call()
    except CanonkitError as exc:
        return ("error", type(exc).__name__, exc.code, exc.detail, getattr(exc, "path", None),
                exc.offset)
    if isinstance(value, list):
        return ("value", [bytes(v) for v in value])
    return ("value", bytes(value))


def answers(root: Path, kernel: Any) -> list[Any]:
    """Everything the store says about its objects, read with ``kernel``'s readers."""
    out: list[Any] = []
    store = Store(root, durable=False, backend=kernel)
    try:
        for address in ADDRESSES:
            for verify, copy in ((True, True), (False, True), (True, False)):
                out.append(_outcome(lambda: store.get(address, verify=verify, copy=copy)))
        for verify in (True, False):
            out.append(_outcome(lambda: store.get_many(ADDRESSES, verify=verify)))
            store.close()  # again from a fresh mapping: no state left by the reads before
        report = store.fsck()
        out.append([f.to_dict() for f in report.findings])
        out.append((report.objects, report.reachable, report.logical_bytes))
    finally:
        store.close()
    return out


def scratch(name: str) -> Path:
    """A directory for the store, on tmpfs when there is one (cases write files)."""
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else Path(
        os.environ.get("TMPDIR", "/tmp"))
    path = base / f"canonkit-{name}-{os.getpid()}"
    return path
