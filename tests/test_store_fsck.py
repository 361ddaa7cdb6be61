"""fsck (STORE.md §4): every kind of damage is found, with its stable code and the path
of the file; findings are identical whatever the engine and the number of jobs."""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from store_helpers import populate

from canonkit import objects
from canonkit.store import CODES, Store
from canonkit.store import fsck as fsck_module

HELLO = b"hello tovio\n"


def _loose(store: Store, address: str) -> Path:
    return Path(store.root, "objects", address[7:9], address[9:])


def _pack(store: Store, ext: str) -> Path:
    (path,) = Path(store.root, "packs").glob(f"*.{ext}")
    return path


def _edit(path: Path, fn: Callable[[bytearray], bytes | bytearray]) -> None:
    path.chmod(0o644)
    path.write_bytes(bytes(fn(bytearray(path.read_bytes()))))


def _flip(at: int) -> Callable[[bytearray], bytearray]:
    def edit(data: bytearray) -> bytearray:
        data[at] ^= 0x40
        return data
    return edit


@pytest.fixture
def small(tmp_path: Path, store_impl: ModuleType) -> tuple[Store, dict[str, str]]:
    """A commit -> tree -> blob chain under ref main; blob and tree loose, plus a packed
    manifest with two chunks."""
    store = Store.init(tmp_path / "s", durable=False, backend=store_impl)
    c0, c1 = store.put(b"chunk zero " * 30, form="deflate"), store.put(b"chunk one")
    manifest = store.put_object("chunk-manifest", {"size": 339, "chunks": [
        [objects.digest_of(b"chunk zero " * 30), 330], [objects.digest_of(b"chunk one"), 9]]})
    store.repack()
    blob = store.put(HELLO)
    text = store.put(b"some text " * 40, form="deflate")
    tree = store.put_object("tree", {"entries": [
        {"name": "hello", "mode": 0o100644, "ref": objects.digest_of(HELLO)},
        {"name": "m", "mode": 0o100644, "ref": bytes.fromhex(manifest[7:])},
        {"name": "text", "mode": 0o100644, "ref": bytes.fromhex(text[7:])}]})
    commit = store.put_object("commit", {"tree": bytes.fromhex(tree[7:]), "parents": [],
                                         "author": "a", "time": 0, "message": "m"})
    store.set_ref("main", commit)
    names = {"c0": c0, "c1": c1, "manifest": manifest, "blob": blob, "text": text,
             "tree": tree, "commit": commit}
    assert store.fsck().findings == []
    return store, names


def _codes(store: Store) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for f in store.fsck().findings:
        out[(f.code, f.path)] = out.get((f.code, f.path), 0) + 1
    return out


def test_clean_store_has_no_findings_and_counts_what_it_checked(
        small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    report = Store(store.root).fsck()
    assert report.ok and report.exit_status == 0
    assert (report.objects, report.reachable, report.refs, report.packs) == (7, 7, 1, 1)
    assert report.loose_files == 4 and report.pack_entries == 3
    doc = report.to_dict()
    assert doc["ok"] is True and doc["findings"] == [] and doc["objects"] == 7


@pytest.mark.parametrize("at, code", [(13, "digest_mismatch"), (0, "bad_magic"),
                                      (4, "bad_form"), (12, "truncated"), (-1, "digest_mismatch")])
def test_damaged_loose_raw_file(small: tuple[Store, dict[str, str]], at: int, code: str
                                ) -> None:
    store, names = small
    path = _loose(store, names["blob"])
    _edit(path, _flip(at if at >= 0 else len(HELLO) + 12))
    rel = f"objects/{names['blob'][7:9]}/{names['blob'][9:]}"
    report = store.fsck()
    found = [f for f in report.findings if f.severity == "error"]
    assert found[0].code == code and found[0].path == rel
    assert found[0].address == names["blob"]
    assert not report.ok and report.exit_status == 1


def test_damaged_loose_deflate_file(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    rel = f"objects/{names['text'][7:9]}/{names['text'][9:]}"
    for edit, code in [(_flip(20), {"deflate_invalid", "digest_mismatch", "length_mismatch"}),
                       (lambda d: d + b"\x00", {"trailing_bytes"}),
                       (lambda d: d[:-3], {"deflate_invalid"})]:
        path = _loose(store, names["text"])
        before = path.read_bytes()
        _edit(path, edit)
        found = [f for f in store.fsck().findings if f.severity == "error"]
        assert len(found) == 1 and found[0].code in code and found[0].path == rel
        path.write_bytes(before)


def test_truncated_and_extended_loose_files(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    path = _loose(store, names["blob"])
    rel = f"objects/{names['blob'][7:9]}/{names['blob'][9:]}"
    _edit(path, lambda d: d[:-1])
    assert _codes(store)[("truncated", rel)] == 1
    _edit(path, lambda d: d + b"zz")
    assert _codes(store)[("trailing_bytes", rel)] == 1
    _edit(path, lambda d: d[:5])
    assert _codes(store)[("truncated", rel)] == 1


def test_flipped_byte_in_a_pack_entry(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    pack = _pack(store, "pack")
    data = pack.read_bytes()
    _edit(pack, _flip(data.index(b"chunk one")))
    codes = _codes(store)
    rel = f"packs/{pack.name}"
    assert codes[("digest_mismatch", rel)] == 1 and codes[("pack_trailer", rel)] == 1
    report = store.fsck()
    bad = [f for f in report.findings if f.code == "digest_mismatch"][0]
    assert bad.address == names["c1"] and bad.offset == data.index(b"chunk one")


def test_flipped_index_digest(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    idx = _pack(store, "idx")
    _edit(idx, _flip(16 + 2048 + 32 + 5))  # inside the second digest
    codes = _codes(store)
    rel = f"packs/{idx.name}"
    assert codes[("index_checksum", rel)] == 1
    assert codes[("digest_mismatch", f"packs/{_pack(store, 'pack').name}")] == 1


def test_flipped_fanout(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    idx = _pack(store, "idx")
    _edit(idx, _flip(16 + 8 * 255 + 7))  # the last fan-out entry: != count
    codes = _codes(store)
    rel = f"packs/{idx.name}"
    assert codes[("index_fanout", rel)] == 1 and codes[("index_checksum", rel)] == 1


def test_flipped_trailer(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    pack = _pack(store, "pack")
    _edit(pack, _flip(len(pack.read_bytes()) - 1))
    codes = _codes(Store(store.root))
    rel = f"packs/{pack.name}"
    assert codes[("pack_trailer", rel)] == 1 and codes[("pack_name", rel)] == 1
    assert codes[("index_pack_mismatch", f"packs/{_pack(store, 'idx').name}")] == 1


def test_truncated_pack_and_index(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    pack, idx = _pack(store, "pack"), _pack(store, "idx")
    before = pack.read_bytes()
    _edit(pack, lambda d: d[:-40])
    codes = _codes(store)
    assert ("truncated", f"packs/{pack.name}") in codes or (
        "pack_count", f"packs/{pack.name}") in codes
    pack.write_bytes(before)
    _edit(idx, lambda d: d[:-1])
    assert _codes(store)[("truncated", f"packs/{idx.name}")] == 1
    _edit(idx, lambda d: d[:10])
    assert _codes(store)[("truncated", f"packs/{idx.name}")] == 1


def test_bad_index_offset(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    idx = _pack(store, "idx")
    at = 16 + 2048 + 3 * 32
    _edit(idx, lambda d: d[:at] + (17).to_bytes(8, "big") + d[at + 8:])
    codes = _codes(store)
    assert codes[("bad_offset", f"packs/{idx.name}")] == 1
    assert codes[("index_unlisted_entry", f"packs/{_pack(store, 'pack').name}")] == 1


def test_deleted_referenced_object(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    _loose(store, names["blob"]).unlink()
    report = store.fsck()
    (missing,) = [f for f in report.findings if f.code == "missing_object"]
    assert missing.address == names["blob"] and missing.severity == "error"
    assert missing.path == f"objects/{names['tree'][7:9]}/{names['tree'][9:]}"
    assert f"ref main -> {names['commit']} -> {names['tree']} -> {names['blob']}" in \
        missing.detail


def test_refs_findings(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    refs = Path(store.root, "refs")
    (refs / "bad name").write_text(names["blob"] + "\n")
    (refs / "short").write_text(names["blob"])
    (refs / "gone").write_text("blake3:" + "00" * 32 + "\n")
    codes = _codes(store)
    assert codes[("ref_bad_name", "refs/bad name")] == 1
    assert codes[("ref_bad_content", "refs/short")] == 1
    assert codes[("ref_target_missing", "refs/gone")] == 1


def test_layout_and_leftover_findings(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    root = Path(store.root)
    (root / "tmp" / "obj-123-abc").write_bytes(b"partial")
    (root / "packs" / ("pack-" + "ab" * 32 + ".pack")).write_bytes(b"CKPK")
    (root / "packs" / ("pack-" + "cd" * 32 + ".idx")).write_bytes(b"CKIX")
    (root / "packs" / "notes.txt").write_text("x")
    (root / "extra").write_text("x")
    (root / "objects" / "zz").mkdir()
    (root / "objects" / names["blob"][7:9] / "short").write_text("x")
    store.put(b"unreachable thing")
    codes = {(f.code, f.severity): f.path for f in store.fsck().findings}
    assert codes[("tmp_leftover", "info")] == "tmp/obj-123-abc"
    assert codes[("unpublished_pack", "info")] == "packs/pack-" + "ab" * 32 + ".pack"
    assert codes[("pack_missing", "error")] == "packs/pack-" + "cd" * 32 + ".idx"
    assert codes[("unreachable", "info")].startswith("objects/")
    warnings = sorted(f.path for f in store.fsck().findings if f.code == "unexpected_file")
    assert warnings == ["extra", f"objects/{names['blob'][7:9]}/short", "objects/zz",
                        "packs/notes.txt"]


def test_duplicates_unfollowed_and_dangling(small: tuple[Store, dict[str, str]]) -> None:
    store, names = small
    store.put(b"chunk one", form="deflate")  # refreshes the pack: no second copy
    Path(store.root, "objects", names["c1"][7:9]).mkdir(exist_ok=True)
    _loose(store, names["c1"]).write_bytes(b"CKL1\x00" + (9).to_bytes(8, "big") + b"chunk one")
    objects.register_kind("test.fsck-note", 1, fields={"ref": objects.REF})
    try:
        note = store.put_object("test.fsck-note", {"ref": b"\x01" * 32})
    finally:
        objects.unregister_kind("test.fsck-note", 1)
    report = store.fsck()
    codes = {f.code: f for f in report.findings}
    assert codes["duplicate_object"].address == names["c1"]
    assert codes["unfollowed"].address == note and "unknown_kind" in codes["unfollowed"].detail
    assert report.ok
    dangling = store.put_object("tree", {"entries": [{"name": "x", "mode": 0,
                                                      "ref": b"\x02" * 32}]})
    found = {f.code: f for f in store.fsck().findings}
    assert found["dangling_reference"].address == "blake3:" + "02" * 32
    assert dangling in found["dangling_reference"].detail


def test_every_code_is_documented() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "store.md")
    text = docs.read_text() if docs.exists() else ""
    for code, (severity, description) in CODES.items():
        assert severity in ("error", "warning", "info") and description
        assert f"`{code}`" in text, f"docs/store.md does not list {code}"


def _damaged_store(tmp_path: Path) -> Store:
    store = Store.init(tmp_path / "s", durable=False)
    populate(store, 120, seed=3, unreachable=15)
    store.repack()
    populate(store, 60, seed=4, unreachable=5, prefix="b/")
    store.repack(merge=False)
    pop = populate(store, 60, seed=5, unreachable=5, prefix="c/")
    packs = sorted(Path(store.root, "packs").glob("*.pack"))
    _edit(packs[0], _flip(5000))
    some = sorted(pop.reachable)[:3]
    _loose(store, some[0]).unlink()
    _edit(_loose(store, some[1]), _flip(15))
    return store


def test_findings_identical_across_jobs_and_engines(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = _damaged_store(tmp_path)
    monkeypatch.setattr(fsck_module, "RANGE_ENTRIES", 17)  # many ranges per pack
    one = store.fsck(jobs=1)
    assert not one.ok and len({f.code for f in one.findings}) >= 4
    two = store.fsck(jobs=2)
    assert two.findings == one.findings
    assert (two.objects, two.reachable, two.logical_bytes) == (
        one.objects, one.reachable, one.logical_bytes)
    twin = Store(store.root, backend=importlib.import_module("canonkit.store._format_py")
                 ).fsck(jobs=2)
    assert twin.findings == one.findings


@pytest.mark.slow
def test_findings_identical_on_dask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dask.distributed")
    store = _damaged_store(tmp_path)
    monkeypatch.setattr(fsck_module, "RANGE_ENTRIES", 17)
    local = store.fsck(jobs=1)
    dask = store.fsck(jobs=2, engine="dask")
    assert dask.findings == local.findings and dask.engine == "dask"


def test_engine_arguments_are_checked(small: tuple[Store, dict[str, str]]) -> None:
    store, _ = small
    with pytest.raises(ValueError):
        store.fsck(engine="spark")
    with pytest.raises(ValueError):
        store.fsck(jobs=0)
    with pytest.raises(ValueError):
        store.fsck(scheduler="tcp://x:1")


def test_fsck_reads_nothing_outside(small: tuple[Store, dict[str, str]], tmp_path: Path
                                    ) -> None:
    store, names = small
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"x" * 100)
    os.symlink(outside, Path(store.root, "tmp", "link"))
    os.symlink(outside / "big", Path(store.root, "refs", "linked"))
    report = store.fsck()
    assert {(f.code, f.path) for f in report.findings} >= {("symlink", "refs/linked"),
                                                          ("tmp_leftover", "tmp/link")}
