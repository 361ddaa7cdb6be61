"""The physical forms beside conformance/v1 (STORE.md §5): frozen, reproducible byte for
byte, decoded to every vector's bytes and address by both store readers, and every kind
of damage or drift reported by the corpus check."""
from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path
from types import ModuleType

import pytest
from blake3 import blake3
from conftest import REPO, backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st

from canonkit import conformance
from canonkit.conformance import fixed_deflate
from canonkit.conformance.forms import FORM_REASONS, build_forms
from canonkit.conformance.layout import MANIFEST, dump_json, file_entry
from canonkit.store import Store
from canonkit.store.deflate import inflate

V1 = REPO / "conformance" / "v1"
VECTORS = json.loads((V1 / "vectors.json").read_bytes())["vectors"]


def _forms_on_disk(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in (root / "forms").rglob("*") if p.is_file()}


def test_frozen_forms_are_reproduced_byte_for_byte() -> None:
    built = build_forms((v["name"], bytes.fromhex(v["hex"])) for v in VECTORS)
    assert _forms_on_disk(V1) == built
    assert len(built) == 2 * len(VECTORS) + 2
    manifest = json.loads((V1 / MANIFEST).read_bytes())
    listed = {e["path"]: e for e in manifest["files"]}
    for path, data in built.items():
        assert listed[path] == file_entry(path, data)


def test_every_form_decodes_on_both_backends() -> None:
    packs = sorted((V1 / "forms").glob("pack-*.pack"))
    assert len(packs) == 1
    for kernel in backend_pair("store"):
        pack = kernel.Pack(packs[0].read_bytes())
        index = kernel.Index(packs[0].with_suffix(".idx").read_bytes())
        assert index.check() == [] and pack.scan()[1] is None
        forms = set()
        for v in VECTORS:
            data, digest = bytes.fromhex(v["hex"]), bytes.fromhex(v["address"][7:])
            assert blake3(data).digest() == digest
            for sub, form in (("loose", 0), ("deflate", 1)):
                content = (V1 / "forms" / sub / f"{v['name']}.ckl").read_bytes()
                assert content[4] == form
                assert kernel.read_loose(content, digest, inflate) == data
            offset = index.lookup(digest)
            forms.add(pack.frame(offset)[0])
            assert pack.entry(offset, digest, inflate) == data
        assert forms == {0, 1}  # raw and DEFLATE entries mixed
        pack.release()
        index.release()


def test_any_zlib_reads_the_deflate_forms() -> None:
    for v in VECTORS:
        content = (V1 / "forms" / "deflate" / f"{v['name']}.ckl").read_bytes()
        assert zlib.decompress(content[13:]) == bytes.fromhex(v["hex"])


def test_the_forms_serve_a_store_in_every_form(tmp_path: Path) -> None:
    """The same bytes through a store: loose raw, loose DEFLATE, packed — one address."""
    for form in ("loose", "deflate", "packed"):
        store = Store.init(tmp_path / form, durable=False)
        for v in VECTORS:
            address = store.put(bytes.fromhex(v["hex"]),
                                form="deflate" if form == "deflate" else "loose")
            assert address == v["address"]
        if form == "packed":
            store.repack(deflate="always")
        for v in VECTORS:
            assert store.form(v["address"]) == form
            assert store.get(v["address"]) == bytes.fromhex(v["hex"])


@settings(max_examples=300)
@given(st.one_of(st.binary(max_size=600),
                 st.builds(lambda a, n: (a * n)[:700], st.binary(min_size=1, max_size=9),
                           st.integers(1, 200))))
def test_fixed_deflate_is_a_valid_zlib_stream(data: bytes) -> None:
    stream = fixed_deflate.compress(data)
    assert stream[:2] == b"\x78\x01" and stream[2] & 0b111 == 0b011  # final, fixed codes
    decoder = zlib.decompressobj()
    assert decoder.decompress(stream) == data and decoder.eof and not decoder.unused_data
    assert inflate(stream, len(data)) == data


def _tamperable(tmp_path: Path) -> Path:
    root = tmp_path / "v1"
    shutil.copytree(V1, root)
    return root


def _reseal(root: Path) -> None:
    """Rewrite the manifest's file list for the files now present (so that only the
    forms check, not the inventory, sees what changed)."""
    manifest = json.loads((root / MANIFEST).read_bytes())
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                   if p.is_file() and p.name != MANIFEST)
    manifest["files"] = [file_entry(rel, (root / rel).read_bytes()) for rel in files]
    (root / MANIFEST).write_bytes(dump_json(manifest))


def _reasons(root: Path, cbor: ModuleType) -> set[tuple[str, str]]:
    return {(f.path, f.reason) for f in conformance.check(root, cbor=cbor).failures}


def test_damaged_forms_are_reported(tmp_path: Path, cbor_impl: ModuleType) -> None:
    root = _tamperable(tmp_path)
    loose = root / "forms" / "loose" / "blob_hello.ckl"
    loose.write_bytes(loose.read_bytes()[:-1] + b"!")
    deflated = root / "forms" / "deflate" / "tree_hello.ckl"
    deflated.write_bytes(deflated.read_bytes() + b"\x00")
    _reseal(root)
    assert _reasons(root, cbor_impl) == {
        ("forms/loose/blob_hello.ckl", "form_mismatch"),
        ("forms/deflate/tree_hello.ckl", "form_mismatch")}
    failures = conformance.check(root, cbor=cbor_impl).failures
    assert any("digest_mismatch" in f.detail for f in failures)
    assert any("trailing_bytes" in f.detail for f in failures)


def test_missing_unknown_and_unmixed_forms(tmp_path: Path, cbor_impl: ModuleType) -> None:
    root = _tamperable(tmp_path)
    (root / "forms" / "deflate" / "blob_empty.ckl").unlink()
    (root / "forms" / "loose" / "not_a_vector.ckl").write_bytes(b"CKL1")
    _reseal(root)
    assert _reasons(root, cbor_impl) == {
        ("forms/deflate/blob_empty.ckl", "form_missing"),
        ("forms/loose/not_a_vector.ckl", "form_unknown")}
    # a pack of raw entries only
    from canonkit.store.packwriter import encode_pack

    for p in (root / "forms").glob("pack-*"):
        p.unlink()
    entries = sorted((blake3(bytes.fromhex(v["hex"])).digest(), False, bytes.fromhex(v["hex"]),
                      len(v["hex"]) // 2) for v in VECTORS)
    pack, index = encode_pack(entries)
    (root / "forms" / f"pack-{pack[-32:].hex()}.pack").write_bytes(pack)
    (root / "forms" / f"pack-{pack[-32:].hex()}.idx").write_bytes(index)
    _reseal(root)
    assert ("forms/pack-" + pack[-32:].hex() + ".pack", "form_not_mixed") in _reasons(
        root, cbor_impl)


def test_without_a_manifest_entry_a_changed_form_is_drift(tmp_path: Path) -> None:
    root = _tamperable(tmp_path)
    path = root / "forms" / "loose" / "blob_hello.ckl"
    path.write_bytes(path.read_bytes()[:-1] + b"?")
    reasons = {(f.path, f.reason) for f in conformance.check(root).failures}
    assert ("forms/loose/blob_hello.ckl", "digest_mismatch") in reasons
    assert ("forms/loose/blob_hello.ckl", "form_mismatch") in reasons


def test_both_backends_agree_on_the_forms(tmp_path: Path) -> None:
    c, py = backend_pair("cbor")
    reports, disagreements = conformance.check_backends(str(V1), {"c": c, "py": py})
    assert disagreements == [] and all(r.ok for r in reports.values())
    root = _tamperable(tmp_path)
    idx = next((root / "forms").glob("*.idx"))
    data = bytearray(idx.read_bytes())
    data[16 + 8 * 255] ^= 1  # the fan-out
    idx.write_bytes(bytes(data))
    _reseal(root)
    reports, disagreements = conformance.check_backends(str(root), {"c": c, "py": py})
    assert disagreements == []
    for report in reports.values():
        assert {(f.path, f.reason) for f in report.failures} == {
            (f"forms/{idx.name}", "form_mismatch")}


def test_reasons_are_registered() -> None:
    for reason in FORM_REASONS:
        assert reason in conformance.REASONS
