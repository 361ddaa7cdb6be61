"""Physical forms of a corpus's vectors (STORE.md §5): the object store's loose, DEFLATE
and packed encodings of every vector, frozen beside the corpus and checked by any reader.

    forms/loose/<name>.ckl       the vector as a raw loose file
    forms/deflate/<name>.ckl     the vector as a DEFLATE loose file
    forms/pack-<hex>.pack, .idx  every vector in one pack, raw and DEFLATE entries mixed

The files are a pure function of the vectors' bytes: DEFLATE payloads come from the
pinned encoder of ``fixed_deflate`` (never from a library whose output may change), pack
entries are in digest order, every second one DEFLATE. So ``build_forms`` reproduces a
frozen set byte for byte on any machine, and the corpus manifest (which lists every
file with its SHA-256) freezes them.

``check_forms`` is the corpus checker's hook: every form must decode, through the store's
format readers, to the vector's bytes and address — with the compiled readers when the
checker runs with the compiled CBOR backend, with the pure-Python ones with the twin.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from blake3 import blake3

from .._files import read_regular
from ..errors import CorruptObjectError, FileTooLargeError
from ..store.deflate import inflate
from ..store.layout import parse_pack_name
from ..store.loose import encode as loose_file
from ..store.packwriter import encode_pack
from . import fixed_deflate

__all__ = ["FORMS", "FORM_REASONS", "build_forms", "check_forms"]

FORMS = "forms"
LOOSE = f"{FORMS}/loose"
DEFLATE = f"{FORMS}/deflate"
MAX_FORM_BYTES = 64 << 20  # never an unbounded read (the checker's JSON limit)

FORM_REASONS: dict[str, str] = {
    "form_missing": "a vector lacks one of its physical forms (loose, DEFLATE, packed)",
    "form_mismatch": "a physical form does not decode to the vector's bytes and address",
    "form_unknown": "a file under forms/ that no vector accounts for",
    "form_not_mixed": "the forms pack does not hold both raw and DEFLATE entries",
}


def _paths(name: str) -> tuple[str, str]:
    return f"{LOOSE}/{name}.ckl", f"{DEFLATE}/{name}.ckl"


def build_forms(vectors: Iterable[tuple[str, bytes]]) -> dict[str, bytes]:
    """``{path: bytes}`` of every form of the ``(name, addressed bytes)`` vectors."""
    vectors = list(vectors)
    files: dict[str, bytes] = {}
    for name, data in vectors:
        raw, deflated = _paths(name)
        files[raw] = loose_file(data, False)
        files[deflated] = loose_file(data, True, compress=fixed_deflate.compress)
    ordered = sorted(vectors, key=lambda v: blake3(v[1]).digest())
    entries = []
    for i, (_, data) in enumerate(ordered):
        deflated_entry = i % 2 == 1
        payload = fixed_deflate.compress(data) if deflated_entry else data
        entries.append((blake3(data).digest(), deflated_entry, payload, len(data)))
    pack, index = encode_pack(entries)
    stem = f"{FORMS}/pack-{pack[-32:].hex()}"
    files[stem + ".pack"] = pack
    files[stem + ".idx"] = index
    return dict(sorted(files.items()))


def kernel_for(cbor: ModuleType) -> ModuleType:
    """The store readers matching a CBOR backend: the twin with the twin, else compiled."""
    from .. import _backend

    if getattr(cbor, "__name__", "").endswith("_py") or _backend.NO_EXTENSIONS:
        return importlib.import_module("canonkit.store._format_py")
    try:
        return importlib.import_module("canonkit.store._format")
    except ImportError:
        return importlib.import_module("canonkit.store._format_py")


def _described(exc: CorruptObjectError) -> str:
    return f"{exc.detail} at offset {exc.offset}: {exc}"


class _FormsCheck:
    def __init__(self, run: Any, vectors: dict[str, tuple[bytes, str]],
                 accounted: set[str]) -> None:
        self.run = run
        self.vectors = vectors  # name -> (bytes, address) of the intact vectors
        self.accounted = accounted  # every vector name (intact or not)
        self.kernel = kernel_for(run.cbor)
        self.seen: set[str] = set()

    def read(self, rel: str) -> bytes | None:
        path = self.run.locate(rel)
        if path is None:
            return None
        self.seen.add(rel)
        try:  # a regular file only (a FIFO is refused, never waited on), bounded
            return read_regular(path, max_bytes=MAX_FORM_BYTES)
        except FileTooLargeError:
            self.run.fail(rel, "file_unreadable", f"larger than {MAX_FORM_BYTES} bytes")
        except OSError as exc:
            self.run.unreadable(rel, exc)
        return None

    def loose(self, name: str, rel: str, form: int) -> None:
        data, address = self.vectors[name]
        if not os.path.lexists(self.run.root / rel):
            self.run.fail(rel, "form_missing", f"no {'DEFLATE' if form else 'raw'} loose file "
                                               f"for vector {name}")
            return
        content = self.read(rel)
        if content is None:
            return
        if len(content) < 5 or content[4] != form:
            self.run.fail(rel, "form_mismatch", f"not a {'DEFLATE' if form else 'raw'} "
                                                f"loose file")
            return
        try:
            out = self.kernel.read_loose(content, bytes.fromhex(address[7:]), inflate)
        except CorruptObjectError as exc:
            self.run.fail(rel, "form_mismatch", _described(exc))
            return
        if out != data:
            self.run.fail(rel, "form_mismatch", "decodes to other bytes")

    def pack(self) -> None:
        entries = sorted(os.listdir(self.run.root / FORMS)) if (
            self.run.root / FORMS).is_dir() else []
        packs = [n for n in entries if (parse_pack_name(n) or ("", ""))[1] == "pack"]
        if not packs:
            self.run.fail(f"{FORMS}/pack-*.pack", "form_missing", "no pack of the vectors")
            return
        for extra in packs[1:]:
            self.run.fail(f"{FORMS}/{extra}", "form_unknown", "more than one pack")
        pack_rel = f"{FORMS}/{packs[0]}"
        idx_rel = pack_rel[:-len(".pack")] + ".idx"
        pack_bytes = self.read(pack_rel)
        if not os.path.lexists(self.run.root / idx_rel):
            self.run.fail(idx_rel, "form_missing", "the pack has no index")
            return
        idx_bytes = self.read(idx_rel)
        if pack_bytes is None or idx_bytes is None:
            return
        try:
            pack = self.kernel.Pack(pack_bytes)
        except CorruptObjectError as exc:
            self.run.fail(pack_rel, "form_mismatch", _described(exc))
            return
        try:
            index = self.kernel.Index(idx_bytes)
        except CorruptObjectError as exc:
            self.run.fail(idx_rel, "form_mismatch", _described(exc))
            return
        self.pack_contents(pack, index, pack_bytes, pack_rel, idx_rel)

    def pack_contents(self, pack: Any, index: Any, pack_bytes: bytes, pack_rel: str,
                      idx_rel: str) -> None:
        fail = self.run.fail
        if blake3(pack_bytes[:-32]).digest() != pack.trailer:
            fail(pack_rel, "form_mismatch", "pack_trailer: the trailer is not BLAKE3 of the "
                                            "pack's bytes")
        if pack_rel != f"{FORMS}/pack-{pack.trailer.hex()}.pack":
            fail(pack_rel, "form_mismatch", "pack_name: not named by its trailer")
        if index.pack_trailer != pack.trailer:
            fail(idx_rel, "form_mismatch", "index_pack_mismatch")
        for code, offset, detail in index.check():
            fail(idx_rel, "form_mismatch", f"{code} at offset {offset}: {detail}")
        offsets, problem = pack.scan()
        if problem is not None:
            fail(pack_rel, "form_mismatch", f"{problem[0]} at offset {problem[1]}: "
                                            f"{problem[2]}")
        total = len(self.accounted)
        if index.count != total or pack.count != total:
            fail(idx_rel, "form_unknown" if index.count > total else "form_missing",
                 f"the pack holds {index.count} objects, the corpus has {total} vectors")
        forms = set()
        for name, (data, address) in sorted(self.vectors.items()):
            digest = bytes.fromhex(address[7:])
            offset = index.lookup(digest)
            if offset < 0:
                fail(pack_rel, "form_missing", f"vector {name} is not in the pack")
                continue
            try:
                forms.add(pack.frame(offset)[0])
                out = pack.entry(offset, digest, inflate)
            except CorruptObjectError as exc:
                fail(pack_rel, "form_mismatch", f"vector {name}: {_described(exc)}")
                continue
            if out != data:
                fail(pack_rel, "form_mismatch", f"vector {name} decodes to other bytes")
        if forms and forms != {0, 1}:
            fail(pack_rel, "form_not_mixed", f"only {'DEFLATE' if 1 in forms else 'raw'} "
                                             f"entries")
        pack.release()
        index.release()

    def unknown_files(self) -> None:
        base = self.run.root / FORMS
        if not base.is_dir():
            return
        expected = {p for name in self.accounted for p in _paths(name)}
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                rel = os.path.relpath(os.path.join(dirpath, name), self.run.root).replace(
                    os.sep, "/")
                if rel not in expected and rel not in self.seen:
                    self.run.fail(rel, "form_unknown", "no vector is stored in this file")


def check_forms(run: Any, vectors: list[dict[str, Any]]) -> None:
    """The checker's hook: check the forms of the well-formed ``vectors`` entries of
    ``run`` (a ``checker._Run``), reporting through ``run.fail``. A corpus without a
    ``forms/`` directory, whose manifest lists none, has no forms to check."""
    listed = any(p.startswith(FORMS + "/") for p in getattr(run, "listed_files", ()))
    if not listed and not os.path.lexists(run.root / FORMS):
        return
    good: dict[str, tuple[bytes, str]] = {}
    accounted: set[str] = set()
    for entry in vectors:
        accounted.add(entry["name"])
        try:
            data = bytes.fromhex(entry["hex"])
        except ValueError:
            continue  # a malformed vector is already the checker's failure
        # only vectors whose bytes hash to their address: a vector that does not is
        # already a failure (address_mismatch), and holding its forms to one of its two
        # disagreeing halves would only repeat it
        if blake3(data).hexdigest() == entry["address"][7:]:
            good[entry["name"]] = (data, entry["address"])
    check = _FormsCheck(run, good, accounted)
    for name in sorted(good):
        raw, deflated = _paths(name)
        check.loose(name, raw, 0)
        check.loose(name, deflated, 1)
    check.pack()
    check.unknown_files()
