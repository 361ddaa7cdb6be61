"""A store under a prefix of object storage (STORE.md §7), on the suite's S3 endpoint:
the same objects, forms, refs and errors as a local store, conditional requests for every
mutation, a lease for the lock."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import ModuleType

import pytest
from services import S3Prefix, needs_obstore

from canonkit import errors
from canonkit._files import remote
from canonkit.cli import main
from canonkit.store import Store
from canonkit.store import bucket_lease, loose
from canonkit.store.bucket import BucketStore
from canonkit.store.bucket_io import Bucket
from canonkit.store.layout import loose_path
from canonkit.store.packwriter import encode_pack

pytestmark = needs_obstore


def _digest(address: str) -> bytes:
    return bytes.fromhex(address[7:])


def test_init_open_and_refusals(s3: S3Prefix) -> None:
    url = s3.url + "st"
    with pytest.raises(errors.NotAStoreError):
        Store(url)
    store = Store.init(url)
    assert isinstance(store, BucketStore) and isinstance(store, Store)
    assert store.root == url + "/" and repr(store) == f"Store({url + '/'!r})"
    with pytest.raises(errors.StoreInitError, match="a store already"):
        Store.init(url)
    s3.put("other/x", b"x")
    with pytest.raises(errors.StoreInitError, match="not empty"):
        Store.init(s3.url + "other/")
    s3.put("bad/canonkit-store", b'{"format": "canonkit-store", "version": true, '
                                 b'"address": "blake3"}\n')
    with pytest.raises(errors.NotAStoreError, match="version True"):
        Store(s3.url + "bad")


@pytest.mark.parametrize("form", ["loose", "deflate"])
def test_put_get_and_forms_match_a_local_store(s3: S3Prefix, tmp_path: Path,
                                               form: str) -> None:
    store = Store.init(s3.url + "st")
    local = Store.init(tmp_path / "st")
    data = [b"", b"hello tovio\n", os.urandom(3000), b"a" * 100_000]
    for item in data:
        address = store.put(item, form=form)
        assert address == local.put(item, form=form)
        assert store.get(address) == item and store.has(address) and address in store
        assert store.form(address) == form
        key = loose_path(_digest(address))
        assert remote.read_object(remote.head(s3.url + "st/" + key)) == (
            (tmp_path / "st" / key).read_bytes())  # the same bytes as a local loose file
    assert sorted(store.addresses()) == sorted(local.addresses())
    assert store.get_many(list(local.addresses())) == local.get_many(list(local.addresses()))
    missing = "blake3:" + "0" * 64
    with pytest.raises(errors.MissingObjectError):
        store.get(missing)
    assert not store.has(missing) and missing not in store and "nonsense" not in store


def test_a_corrupt_loose_object_is_refused_with_its_url(s3: S3Prefix) -> None:
    store = Store.init(s3.url + "st")
    address = store.put(b"payload")
    key = loose_path(_digest(address))
    s3.put("st/" + key, b"CKL1\x00" + (7).to_bytes(8, "big") + b"PAYLOAD")
    with pytest.raises(errors.CorruptObjectError) as caught:
        store.get(address)
    assert caught.value.detail == "digest_mismatch" and caught.value.path == key
    assert store.get(address, verify=False) == b"PAYLOAD"


def _publish_pack(s3: S3Prefix, items: list[bytes], *, deflate: bool = False
                  ) -> tuple[str, list[str]]:
    import zlib

    from blake3 import blake3

    entries = []
    for item in items:
        payload = zlib.compress(item) if deflate else item
        entries.append((blake3(item).digest(), deflate, payload, len(item)))
    entries.sort()
    pack, index = encode_pack(entries)
    hex_name = pack[-32:].hex()
    s3.put(f"st/packs/pack-{hex_name}.pack", pack)
    s3.put(f"st/packs/pack-{hex_name}.idx", index)
    return hex_name, ["blake3:" + blake3(i).hexdigest() for i in items]


@pytest.mark.parametrize("deflate", [False, True])
def test_packed_objects_are_read_by_ranged_gets(s3: S3Prefix, deflate: bool,
                                                store_impl: ModuleType) -> None:
    store = Store.init(s3.url + "st", backend=store_impl)
    items = [os.urandom(n) for n in (0, 1, 500, 70_000, 200_000)] + [b"z" * 5000]
    _, addresses = _publish_pack(s3, items, deflate=deflate)
    fresh = Store(s3.url + "st", backend=store_impl)  # lists the pack on first use
    for item, address in zip(items, addresses):
        assert fresh.get(address) == item and fresh.form(address) == "packed"
    assert fresh.get_many(addresses[::-1] + addresses) == items[::-1] + items
    assert sorted(fresh.addresses()) == sorted(set(addresses))
    assert store.get(addresses[2]) == items[2]  # an open store finds a new pack on a miss


def test_an_index_of_the_wrong_size_or_pack_is_not_used(s3: S3Prefix) -> None:
    Store.init(s3.url + "st")
    hex_name, addresses = _publish_pack(s3, [b"one", b"two"])
    idx = f"st/packs/pack-{hex_name}.idx"
    index = remote.read_object(remote.head(s3.key_url(idx)))
    s3.put(idx, index + b"\0")
    store = Store(s3.url + "st")
    with pytest.raises(errors.CorruptObjectError, match="cannot be read") as caught:
        store.get(addresses[0])
    assert caught.value.path == idx[3:]
    s3.put(idx, index)
    s3.put(f"st/packs/pack-{hex_name}.pack", b"CKPK" + b"\0" * 60)  # the entry bytes lie
    with pytest.raises(errors.CorruptObjectError):
        Store(s3.url + "st").get(addresses[0])


def test_a_loose_copy_is_read_when_the_pack_entry_is_corrupt(s3: S3Prefix,
                                                            store_impl: ModuleType) -> None:
    # both format readers: the compiled one and its twin give the same error and offset
    store = Store.init(s3.url + "st", backend=store_impl)
    hex_name, addresses = _publish_pack(s3, [b"alpha", b"beta"])
    pack_key = f"st/packs/pack-{hex_name}.pack"
    pack = bytearray(remote.read_object(remote.head(s3.key_url(pack_key))))
    at = pack.index(b"alpha")
    pack[at] ^= 1
    s3.put(pack_key, bytes(pack))
    with pytest.raises(errors.CorruptObjectError) as caught:
        Store(s3.url + "st", backend=store_impl).get(addresses[0])
    assert caught.value.offset == at and caught.value.detail == "digest_mismatch"
    assert caught.value.path == pack_key[3:] and f"at offset {at}" in str(caught.value)
    store.put(b"alpha")  # listed in a young pack: left as it is, as on a local store
    s3.put("st/" + loose_path(_digest(addresses[0])), loose.encode(b"alpha", False))
    assert Store(s3.url + "st", backend=store_impl).get(addresses[0]) == b"alpha"


def test_refs_are_compare_and_swap_on_etags(s3: S3Prefix) -> None:
    store = Store.init(s3.url + "st")
    a, b = store.put(b"a"), store.put(b"b")
    store.set_ref("main", a, expect=Store.ABSENT)
    with pytest.raises(errors.RefConflictError):
        store.set_ref("main", b, expect=Store.ABSENT)
    with pytest.raises(errors.RefConflictError):
        store.set_ref("main", b, expect=b)
    store.set_ref("main", b, expect=a)
    store.set_ref("team/x", a)
    assert store.ref("main") == b and store.ref("nothing") is None
    assert store.refs() == {"main": b, "team/x": a}
    with pytest.raises(errors.MissingObjectError):
        store.set_ref("main", "blake3:" + "1" * 64)
    with pytest.raises(errors.InvalidRefNameError):
        store.set_ref("../x", a)
    with pytest.raises(errors.RefConflictError):
        store.delete_ref("main", expect=a)
    assert store.delete_ref("main", expect=b) and not store.delete_ref("main")
    s3.put("st/refs/bad", b"not an address\n")
    scan = BucketStore(s3.url + "st").ref_scan()
    assert [p.code for p in scan.problems] == ["ref_bad_content"]
    with pytest.raises(errors.CorruptRefError):
        store.ref("bad")


def test_an_old_object_put_again_is_made_young(s3: S3Prefix,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.store import bucket

    store = Store.init(s3.url + "st")
    address = store.put(b"old")
    key = s3.key_url("st/" + loose_path(_digest(address)))
    first = remote.head(key).last_modified
    time.sleep(1.1)  # LastModified has a resolution of one second
    store.put(b"old")  # young: left alone
    assert remote.head(key).last_modified == first
    monkeypatch.setattr(bucket, "FRESHEN_AFTER", 0.0)
    store.put(b"old")
    assert remote.head(key).last_modified > first


def test_the_lease_excludes_a_second_holder_and_is_broken_only_explicitly(
        s3: S3Prefix) -> None:
    store = Store.init(s3.url + "st")
    bucket = Bucket(s3.url + "st")
    assert store.lock_info() is None
    with bucket_lease.Lease(bucket) as lease:
        info = store.lock_info()
        assert info is not None and not info.stale and info.pid == os.getpid()
        with pytest.raises(errors.LockHeldError):
            bucket_lease.Lease(bucket).__enter__()
        with pytest.raises(errors.LockHeldError, match="not breaking"):
            store.break_lock()
        before = lease.etag
        lease.refresh()
        assert lease.etag != before and lease.lost is None
        lease.check()
    assert store.lock_info() is None  # released
    doc = {"holder": "7-ab", "host": "elsewhere", "started": 1.0, "expires": 2.0}
    s3.put("st/lock", json.dumps(doc).encode())
    info = store.lock_info()
    assert info is not None and info.stale and "expired" in info.reason
    with pytest.raises(errors.StaleLockError):
        bucket_lease.Lease(bucket).__enter__()
    assert store.break_lock() == info and store.lock_info() is None


def test_a_lease_broken_under_its_holder_is_lost(s3: S3Prefix) -> None:
    Store.init(s3.url + "st")
    bucket = Bucket(s3.url + "st")
    with bucket_lease.Lease(bucket) as lease:
        Store(s3.url + "st").break_lock(force=True)
        lease.refresh()
        assert lease.lost is not None
        with pytest.raises(errors.LockHeldError, match="stopping"):
            lease.check()


def test_the_cli_on_a_bucket(s3: S3Prefix, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    url = s3.url + "cli"
    assert main(["store", "init", url]) == 0
    assert url in capsys.readouterr().err
    source = tmp_path / "f.bin"
    source.write_bytes(b"file bytes")
    assert main(["store", "put", url, str(source)]) == 0
    address = capsys.readouterr().out.split()[0]
    assert main(["store", "ref", url, "main", address]) == 0
    assert main(["store", "ref", url, "main"]) == 0
    assert capsys.readouterr().out.strip() == address
    out = tmp_path / "out.bin"
    assert main(["store", "get", url, address, "-o", str(out)]) == 0
    assert out.read_bytes() == b"file bytes"
    assert main(["store", "fsck", url]) == 0
    assert capsys.readouterr().out.startswith("clean: 1 objects (1 loose files")
