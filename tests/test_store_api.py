"""The Store API (STORE.md §1-§3, §6): opening, objects in every form, refs, the lock,
and never leaving the store through a symlink or a ref name."""
from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType

import pytest
from blake3 import blake3

from canonkit import errors, objects
from canonkit.store import Store

HELLO = b"hello tovio\n"
HELLO_ADDRESS = "blake3:4321fae3f39665682914de5dec718fd33c3be477b162546057f7b321e961dfd3"


@pytest.fixture
def store(tmp_path: Path, store_impl: ModuleType) -> Store:
    return Store.init(tmp_path / "store", durable=False, backend=store_impl)


def test_init_creates_the_layout_and_refuses_what_is_not_empty(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s")
    assert sorted(os.listdir(tmp_path / "s")) == ["canonkit-store", "objects", "packs",
                                                   "refs", "tmp"]
    marker = json.loads((tmp_path / "s" / "canonkit-store").read_bytes())
    assert marker == {"format": "canonkit-store", "version": 1, "address": "blake3"}
    assert store.fsck().findings == []
    with pytest.raises(errors.StoreInitError):
        Store.init(tmp_path / "s")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "file").write_text("x")
    with pytest.raises(errors.StoreInitError) as info:
        Store.init(tmp_path / "other")
    assert str(tmp_path / "other") in str(info.value)
    (tmp_path / "empty").mkdir()
    Store.init(tmp_path / "empty")


@pytest.mark.parametrize("marker", [None, b"", b"{}", b'{"format": "canonkit-store", '
                                    b'"version": 2, "address": "blake3"}', b"\xff"])
def test_open_refuses_what_is_not_a_version_1_store(tmp_path: Path, marker: bytes | None
                                                    ) -> None:
    Store.init(tmp_path / "s")
    path = tmp_path / "s" / "canonkit-store"
    if marker is None:
        path.unlink()
    else:
        path.write_bytes(marker)
    with pytest.raises(errors.NotAStoreError) as info:
        Store(tmp_path / "s")
    assert info.value.path == str(tmp_path / "s") and str(tmp_path / "s") in str(info.value)
    with pytest.raises(errors.NotAStoreError):
        Store(tmp_path / "nothing-here")


def test_objects_in_every_form(store: Store) -> None:
    assert store.put(HELLO) == HELLO_ADDRESS
    text = b"compressible " * 100
    deflated = store.put(text, form="deflate")
    assert (store.form(HELLO_ADDRESS), store.form(deflated)) == ("loose", "deflate")
    assert store.get(HELLO_ADDRESS) == HELLO and store.get(deflated) == text
    assert HELLO_ADDRESS in store and store.has(deflated) and "x" not in store
    assert sorted(store.addresses()) == sorted([HELLO_ADDRESS, deflated])
    stats = store.repack()
    assert stats.objects == 2 and stats.loose_removed == 2 and stats.pack is not None
    assert "objects" in str(stats) and stats.to_dict()["objects"] == 2
    assert store.form(HELLO_ADDRESS) == store.form(deflated) == "packed"
    assert store.get(deflated) == text
    view = store.get(HELLO_ADDRESS, copy=False)
    assert isinstance(view, memoryview) and view.readonly and bytes(view) == HELLO
    assert sorted(store.addresses()) == sorted([HELLO_ADDRESS, deflated])
    assert store.get_many([deflated, HELLO_ADDRESS, deflated]) == [text, HELLO, text]
    with pytest.raises(ValueError):
        store.put(b"x", form="packed")


def test_put_of_an_existing_object_keeps_its_form_and_refreshes_it(store: Store) -> None:
    address = store.put(HELLO)
    path = Path(store.root, "objects", address[7:9], address[9:])
    os.utime(path, (1000, 1000))
    assert store.put(HELLO, form="deflate") == address
    assert store.form(address) == "loose" and path.stat().st_mtime > 1000
    store.repack()
    pack = next(Path(store.root, "packs").glob("*.pack"))
    os.utime(pack, (1000, 1000))
    store.put(HELLO)
    assert pack.stat().st_mtime > 1000 and not path.exists()


def test_put_object_and_get_object(store: Store) -> None:
    blob = store.put(HELLO)
    tree = store.put_object("tree", {"entries": [
        {"name": "hello.txt", "mode": 0o100644, "ref": objects.digest_of(HELLO)}]})
    assert tree == objects.address_object("tree", {"entries": [
        {"name": "hello.txt", "mode": 0o100644, "ref": objects.digest_of(HELLO)}]})
    obj = store.get_object(tree)
    assert obj.kind == "tree" and obj.fields["entries"][0]["ref"] == objects.digest_of(HELLO)
    assert store.get_object(blob).kind == "blob" and store.get_object(blob).fields == HELLO
    assert store.get_object(blob, kind="chunk").kind == "chunk"
    with pytest.raises(errors.SchemaViolationError):
        store.put_object("tree", {"entries": "nope"})


def test_missing_and_malformed_addresses(store: Store) -> None:
    missing = "blake3:" + "00" * 32
    with pytest.raises(errors.MissingObjectError) as info:
        store.get(missing)
    assert info.value.address == missing and missing in str(info.value)
    store.put(HELLO)
    with pytest.raises(errors.MissingObjectError) as info:
        store.get_many([HELLO_ADDRESS, missing])
    assert info.value.address == missing
    with pytest.raises(errors.MissingObjectError):
        store.form(missing)
    for bad in ["blake3:" + "AB" * 32, "sha256:" + "ab" * 32, "", HELLO_ADDRESS[:-1]]:
        with pytest.raises(errors.SchemaViolationError):
            store.get(bad)
        with pytest.raises(errors.SchemaViolationError):
            store.get_many([bad])
    assert store.get_many([]) == []


def test_get_never_returns_wrong_bytes(store: Store) -> None:
    address = store.put(HELLO)
    path = Path(store.root, "objects", address[7:9], address[9:])
    path.write_bytes(path.read_bytes()[:-1] + b"!")
    with pytest.raises(errors.CorruptObjectError) as info:
        store.get(address)
    assert info.value.path == f"objects/{address[7:9]}/{address[9:]}"
    assert info.value.detail == "digest_mismatch" and info.value.offset == 13
    assert store.get(address, verify=False) == b"hello tovio!"  # asked for it


def test_a_corrupt_form_falls_back_to_an_intact_one(store: Store) -> None:
    address = store.put(HELLO)
    store.repack()
    pack = next(Path(store.root, "packs").glob("*.pack"))
    data = bytearray(pack.read_bytes())
    at = data.index(HELLO)
    data[at] ^= 1
    pack.write_bytes(bytes(data))
    with pytest.raises(errors.CorruptObjectError) as info:
        Store(store.root).get(address)
    assert info.value.path == f"packs/{pack.name}"
    store.put(HELLO)  # a second, intact form: loose (the packed one is still found)
    assert store.form(address) == "packed"
    fresh = Store(store.root)
    Path(store.root, "objects", address[7:9]).mkdir(exist_ok=True)
    Path(store.root, "objects", address[7:9], address[9:]).write_bytes(
        b"CKL1\x00" + len(HELLO).to_bytes(8, "big") + HELLO)
    assert fresh.get(address) == HELLO
    assert fresh.get_many([address]) == [HELLO]


def test_refs_with_compare_and_swap(store: Store) -> None:
    a, b = store.put(b"a"), store.put(b"b")
    assert store.ref("main") is None and store.refs() == {}
    store.set_ref("main", a, expect=Store.ABSENT)
    with pytest.raises(errors.RefConflictError) as info:
        store.set_ref("main", b, expect=Store.ABSENT)
    assert info.value.detail == {"expected": "", "actual": a}
    with pytest.raises(errors.RefConflictError):
        store.set_ref("main", b, expect=b)
    store.set_ref("main", b, expect=a)
    store.set_ref("team/x.y/z-1", a)
    assert store.refs() == {"main": b, "team/x.y/z-1": a}
    assert Path(store.root, "refs", "main").read_bytes() == (b + "\n").encode()
    with pytest.raises(errors.MissingObjectError):
        store.set_ref("main", "blake3:" + "00" * 32)
    with pytest.raises(errors.RefConflictError):
        store.delete_ref("main", expect=a)
    assert store.delete_ref("main", expect=b) is True
    assert store.delete_ref("main") is False and store.ref("main") is None
    with pytest.raises(errors.InvalidRefNameError):
        store.set_ref("team/x.y/z-1/deeper", a)  # a ref cannot also be a directory
    with pytest.raises(errors.InvalidRefNameError):
        store.set_ref("team", a)
    assert os.listdir(Path(store.root, "tmp")) == []


@pytest.mark.parametrize("name", ["", "..", ".", "../escape", "a/../b", "a//b", "/abs",
                                  "a/", "sp ace", "tab\t", "ü", "a\\b", "x" * 1100,
                                  "refs/../../x", "a/./b"])
def test_ref_names_never_leave_refs(store: Store, name: str, tmp_path: Path) -> None:
    address = store.put(b"x")
    for call in (lambda: store.set_ref(name, address), lambda: store.ref(name),
                 lambda: store.delete_ref(name)):
        with pytest.raises(errors.InvalidRefNameError):
            call()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_symlinks_are_never_followed(store: Store, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret"
    secret.write_bytes(b"CKL1\x00" + len(HELLO).to_bytes(8, "big") + HELLO)
    root = Path(store.root)
    # a loose object that is a symlink to a file outside
    (root / "objects" / HELLO_ADDRESS[7:9]).mkdir()
    (root / "objects" / HELLO_ADDRESS[7:9] / HELLO_ADDRESS[9:]).symlink_to(secret)
    with pytest.raises(errors.UnsafePathError):
        store.get(HELLO_ADDRESS)
    with pytest.raises(errors.UnsafePathError):
        store.put(HELLO)
    report = store.fsck()
    assert [(f.code, f.severity) for f in report.findings] == [("symlink", "error")]
    (root / "objects" / HELLO_ADDRESS[7:9] / HELLO_ADDRESS[9:]).unlink()
    (root / "objects" / HELLO_ADDRESS[7:9]).rmdir()
    # a fan-out directory that is a symlink to a directory outside
    (root / "objects" / HELLO_ADDRESS[7:9]).symlink_to(outside, target_is_directory=True)
    os.rename(secret, outside / HELLO_ADDRESS[9:])
    fresh = Store(root, durable=False)
    with pytest.raises(errors.UnsafePathError):
        fresh.get(HELLO_ADDRESS)
    with pytest.raises(errors.UnsafePathError):
        fresh.put(HELLO)
    assert os.listdir(outside) == [HELLO_ADDRESS[9:]]  # nothing written outside
    assert fresh.fsck().counts() == {"symlink": 1}
    (root / "objects" / HELLO_ADDRESS[7:9]).unlink()
    # a ref directory that is a symlink
    address = fresh.put(b"y")
    (root / "refs" / "team").symlink_to(outside, target_is_directory=True)
    with pytest.raises(errors.UnsafePathError):
        fresh.set_ref("team/x", address)
    with pytest.raises(errors.UnsafePathError):
        fresh.ref("team/x")
    assert sorted(os.listdir(outside)) == [HELLO_ADDRESS[9:]]
    assert fresh.refs() == {}
    (root / "refs" / "main").symlink_to(outside / HELLO_ADDRESS[9:])
    with pytest.raises(errors.UnsafePathError):
        fresh.ref("main")
    assert fresh.fsck().counts() == {"symlink": 2, "unreachable": 1}
    # a store subdirectory that is a symlink: the store does not open
    os.rename(root / "packs", root / "packs-real")
    (root / "packs").symlink_to(root / "packs-real", target_is_directory=True)
    with pytest.raises(errors.UnsafePathError):
        Store(root)


def test_durable_false_writes_the_same_bytes(tmp_path: Path) -> None:
    a = Store.init(tmp_path / "a", durable=True)
    b = Store.init(tmp_path / "b", durable=False)
    for s in (a, b):
        s.put(HELLO)
        s.put(b"z" * 500, form="deflate")
        s.set_ref("main", HELLO_ADDRESS)
        s.repack()

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
                if p.is_file()}

    assert files(tmp_path / "a") == files(tmp_path / "b")


def test_a_store_sees_another_processes_repack(tmp_path: Path) -> None:
    first = Store.init(tmp_path / "s", durable=False)
    address = first.put(HELLO)
    assert first.get(address) == HELLO
    second = Store(tmp_path / "s", durable=False)
    second.repack()  # deletes the loose file `first` would look at
    assert first.form(address) == "packed" and first.get(address) == HELLO
    assert first.get_many([address]) == [HELLO]
    second.put(b"more")
    second.repack()  # the pack `first` mapped is gone now
    assert first.get(address) == HELLO and first.has(objects.address(b"more"))


def test_pack_readers_report_which_pack_is_unreadable(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    address = store.put(HELLO)
    store.repack()
    idx = next(Path(store.root, "packs").glob("*.idx"))
    idx.write_bytes(b"CKIX" + idx.read_bytes()[4:-1])
    fresh = Store(store.root)
    with pytest.raises(errors.CorruptObjectError) as info:
        fresh.get(address)
    assert info.value.path == f"packs/{idx.name}" and info.value.detail == "truncated"
    assert blake3(HELLO).hexdigest() in str(info.value)
