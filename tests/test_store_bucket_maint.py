"""repack, gc and fsck of a store in object storage (STORE.md §7), on the suite's S3
endpoint: the decisions of a local store, made by requests; fsck's report the same as a
local fsck's of the same bytes, on this process, the local pool and a real Dask cluster."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from bucket_helpers import comparable, upload
from conftest import REPO
from services import DaskCluster, S3Prefix, needs_obstore
from store_helpers import assert_resolvable, populate

from canonkit import errors, objects
from canonkit._files import remote
from canonkit.cli import main
from canonkit.store import Store, bucket
from canonkit.store.bucket_site import BucketSite
from canonkit.store.layout import loose_path

pytestmark = needs_obstore


def _keys(s3: S3Prefix, sub: str = "st/") -> list[str]:
    return [i.url[len(s3.url + sub):] for i in remote.list_prefix(s3.url + sub)]


def _digest(address: str) -> bytes:
    return bytes.fromhex(address[7:])


def _without_time(stats: Any) -> dict[str, Any]:
    return {k: v for k, v in stats.to_dict().items() if k != "seconds"}


# --- repack -----------------------------------------------------------------------------

def test_repack_packs_every_loose_object_and_merges_packs(s3: S3Prefix, tmp_path: Path
                                                          ) -> None:
    """The same objects repacked on a directory and on a bucket give the same pack, byte
    for byte (same name); every object reads back; nothing loose is left."""
    url = s3.url + "st"
    store = Store.init(url)
    local = Store.init(tmp_path / "st", durable=False)
    first = populate(store, 20, seed=4, unreachable=3)
    populate(local, 20, seed=4, unreachable=3)
    stats = store.repack(merge=False)
    assert _without_time(stats) == _without_time(local.repack(merge=False))
    assert stats.objects == len(first.all) == stats.loose_removed and stats.skipped == 0
    more = populate(store, 10, seed=5, unreachable=2, prefix="b/")
    populate(local, 10, seed=5, unreachable=2, prefix="b/")
    merged = store.repack(grace_seconds=0)
    local_merged = local.repack(grace_seconds=0)
    assert merged.pack == local_merged.pack and merged.packs_removed == 1
    assert merged.objects == local_merged.objects == len(first.all | more.all)
    pack_key = merged.pack
    assert pack_key is not None
    assert remote.read_object(remote.head(s3.url + "st/" + pack_key)) == (
        Path(local.root, pack_key).read_bytes())
    assert [k for k in _keys(s3) if k.startswith("objects/")] == []
    assert sorted(k for k in _keys(s3) if k.startswith("packs/")) == sorted([
        pack_key, pack_key[:-5] + ".idx"])
    everything = first.data | more.data
    assert_resolvable(Store(url), set(everything), everything)
    assert store.fsck().ok and store.lock_info() is None
    assert store.repack().objects == 0  # one pack, nothing loose: nothing to do


def test_repack_skips_a_corrupt_loose_object_and_leaves_it(s3: S3Prefix) -> None:
    store = Store.init(s3.url + "st")
    good = [store.put(b"good %d" % i) for i in range(5)]
    bad = store.put(b"bad object")
    s3.put("st/" + loose_path(_digest(bad)), b"CKL1\x00" + (10).to_bytes(8, "big") +
           b"BAD OBJECT")
    stats = store.repack()
    assert stats.objects == 5 and stats.skipped == 1 and stats.loose_removed == 5
    assert _keys(s3, "st/objects/") == [loose_path(_digest(bad))[len("objects/"):]]
    assert Store(s3.url + "st").get_many(good) == [b"good %d" % i for i in range(5)]


def test_a_reader_holding_an_old_index_finds_objects_after_a_repack(s3: S3Prefix) -> None:
    """A repack elsewhere removes the pack a reader's cached index names: the reader lists
    the packs again instead of failing."""
    url = s3.url + "st"
    writer = Store.init(url)
    addresses = [writer.put(b"object %d" % i) for i in range(6)]
    writer.repack()
    reader = Store(url)
    assert reader.get(addresses[0]) == b"object 0"  # the index is cached now
    writer.put(b"one more")
    writer.repack(grace_seconds=0)  # a new pack; the old one deleted
    assert reader.get(addresses[1]) == b"object 1"
    assert reader.get_many(addresses) == [b"object %d" % i for i in range(6)]


def test_an_old_unpublished_pack_is_removed_by_the_next_repack(s3: S3Prefix) -> None:
    store = Store.init(s3.url + "st")
    store.put(b"x")
    leftover = "packs/pack-" + "0" * 64 + ".pack"
    s3.put("st/" + leftover, b"CKPK half a pack")
    s3.put("st/tmp/left", b"work in progress")
    report = store.fsck()
    assert report.ok and report.counts() == {"tmp_leftover": 1, "unpublished_pack": 1,
                                             "unreachable": 1}
    assert store.repack().leftovers_removed == 0  # younger than the grace period
    assert leftover in _keys(s3)
    assert store.gc(grace_seconds=0).leftovers_removed == 2
    assert leftover not in _keys(s3) and store.fsck().findings == []


def test_a_lost_lease_stops_before_anything_is_deleted(s3: S3Prefix,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """The lease is broken while the new pack is published: the repack stops at its
    first deletion, every object still readable (in the new pack and loose)."""
    url = s3.url + "st"
    store = Store.init(url)
    addresses = [store.put(b"object %d" % i) for i in range(5)]
    publish = BucketSite.publish

    def broken_meanwhile(site: BucketSite, *args: Any) -> str:
        out = publish(site, *args)
        Store(url).break_lock(force=True)
        assert site._lease is not None
        site._lease.refresh()  # its refresh finds the lease gone
        return out

    monkeypatch.setattr(BucketSite, "publish", broken_meanwhile)
    with pytest.raises(errors.LockHeldError, match="stopping before anything more"):
        store.repack()
    assert len(_keys(s3, "st/objects/")) == 5  # nothing deleted
    assert Store(url).get_many(addresses) == [b"object %d" % i for i in range(5)]


# --- gc ---------------------------------------------------------------------------------

def test_gc_deletes_what_no_root_reaches_and_rewrites_packs(s3: S3Prefix, tmp_path: Path
                                                            ) -> None:
    url = s3.url + "st"
    store = Store.init(url)
    pop = populate(store, 24, seed=6, unreachable=4)
    store.repack()  # packed: the unreachable ones too
    extra = populate(store, 8, seed=7, unreachable=3, prefix="x/")  # loose
    for name in extra.refs:
        store.delete_ref(name)
    kept_root = sorted(extra.all)[0]
    stats = store.gc(grace_seconds=0, roots=[kept_root])
    assert stats.packs_written == 1 and stats.packs_removed == 1
    reachable = pop.reachable | {kept_root}
    everything = pop.data | extra.data
    assert_resolvable(Store(url), reachable, everything)
    fresh = Store(url)
    assert not any(fresh.has(a) for a in (pop.all | extra.all) - reachable
                   - _referenced(fresh, kept_root))
    report = fresh.fsck()
    assert report.ok and report.reachable == len(pop.reachable) and report.counts().get(
        "unreachable", 0) == len(_referenced(fresh, kept_root) | {kept_root})


def _referenced(store: Store, address: str) -> set[str]:
    from canonkit.store.sites import store_reader

    marker = store_reader(store)
    marker.mark([("root", _digest(address))], strict=True)
    return {"blake3:" + d.hex() for d in marker.marked}


def test_gc_keeps_young_objects_and_checks_each_age_again(
        s3: S3Prefix, monkeypatch: pytest.MonkeyPatch) -> None:
    """Objects younger than the grace period stay; an old one re-put between the marking
    and its deletion (a concurrent writer) is seen young by the HEAD before the DELETE."""
    url = s3.url + "st"
    store = Store.init(url)
    old = [store.put(b"old garbage %d" % i) for i in range(3)]
    time.sleep(2.2)  # LastModified counts whole seconds
    young = store.put(b"young garbage")
    monkeypatch.setattr(bucket, "FRESHEN_AFTER", 0.0)
    loose_mtime = BucketSite.loose_mtime

    def put_meanwhile(site: BucketSite, item: Any) -> float | None:
        if item.rel == loose_path(_digest(old[0])):
            Store(url).put(b"old garbage 0")  # older than FRESHEN_AFTER: made young
        return loose_mtime(site, item)

    monkeypatch.setattr(BucketSite, "loose_mtime", put_meanwhile)
    stats = store.gc(grace_seconds=2.0)
    assert stats.deleted_loose == 2 and stats.kept_young == 1
    fresh = Store(url)
    assert fresh.has(old[0]) and fresh.has(young)
    assert not fresh.has(old[1]) and not fresh.has(old[2])


def test_gc_refuses_a_missing_reachable_object_or_a_bad_ref(s3: S3Prefix) -> None:
    url = s3.url + "st"
    store = Store.init(url)
    blob = store.put(b"blob")
    garbage = store.put(b"garbage")
    tree = store.put_object("tree", {"entries": [{"name": "b", "mode": 0,
                                                  "ref": _digest(blob)}]})
    store.set_ref("main", tree)
    remote.delete(s3.url + "st/" + loose_path(_digest(blob)))
    with pytest.raises(errors.MissingReachableError, match="reachable but missing") as got:
        store.gc(grace_seconds=0)
    assert got.value.detail == ["ref main", tree, blob]
    s3.put("st/" + loose_path(_digest(blob)), objects_loose(b"blob"))
    s3.put("st/refs/broken", b"nonsense")
    with pytest.raises(errors.CorruptRefError, match="gc stopped before deleting"):
        store.gc(grace_seconds=0)
    assert Store(url).has(garbage) and store.lock_info() is None


def objects_loose(data: bytes) -> bytes:
    from canonkit.store import loose

    return loose.encode(data, False)


# --- fsck -------------------------------------------------------------------------------

def _damaged_store(root: Path) -> Store:
    """A store with packed and loose objects and damage of every kind a bucket can hold."""
    store = Store.init(root, durable=False)
    pop = populate(store, 24, seed=8, unreachable=4)
    store.repack(grace_seconds=0)
    more = populate(store, 12, seed=9, unreachable=3, prefix="b/")
    (pack,) = Path(root, "packs").glob("*.pack")
    data = bytearray(pack.read_bytes())
    data[len(data) // 2] ^= 0x10  # an entry (and the trailer) broken
    pack.write_bytes(bytes(data))
    loose = sorted(more.all - pop.all)
    victim = Path(root, loose_path(_digest(loose[0])))
    content = bytearray(victim.read_bytes())
    content[-1] ^= 0x01
    victim.write_bytes(bytes(content))
    os.unlink(Path(root, loose_path(_digest(loose[1]))))  # missing, maybe referenced
    Path(root, "objects", "ab").mkdir(exist_ok=True)
    Path(root, "objects", "ab", "junk").write_bytes(b"j")
    Path(root, "notes.txt").write_bytes(b"n")
    Path(root, "packs", "pack-" + "1" * 64 + ".pack").write_bytes(b"CKPK")
    Path(root, "refs", "bad").write_bytes(b"not an address\n")
    Path(root, "refs", "gone").write_bytes(("blake3:" + "2" * 64 + "\n").encode())
    return store


@pytest.fixture
def damaged(s3: S3Prefix, tmp_path: Path) -> tuple[Store, dict[str, object]]:
    """The damaged store in object storage, and the local fsck of the same bytes."""
    local = _damaged_store(tmp_path / "st")
    upload(tmp_path / "st", s3.url + "st/")
    expected = comparable(local.fsck())
    assert len(expected["findings"]) > 8  # type: ignore[arg-type]
    return Store(s3.url + "st"), expected


def test_fsck_of_a_bucket_reports_what_a_local_fsck_does(
        damaged: tuple[Store, dict[str, object]]) -> None:
    store, expected = damaged
    report = store.fsck()
    assert comparable(report) == expected
    codes = {f.code for f in report.findings}
    assert {"digest_mismatch", "pack_trailer", "unexpected_file", "unpublished_pack",
            "ref_bad_content", "ref_target_missing"} <= codes
    assert report.exit_status == 1 and report.engine == "local"


def test_fsck_of_a_bucket_on_the_local_pool(damaged: tuple[Store, dict[str, object]]
                                            ) -> None:
    store, expected = damaged
    assert comparable(store.fsck(jobs=2)) == expected


def test_fsck_of_a_bucket_on_a_dask_cluster(damaged: tuple[Store, dict[str, object]],
                                            dask_cluster: DaskCluster) -> None:
    """The cluster's workers read the packs and loose objects from the bucket themselves
    (their environment holds the endpoint; this process's bytes never reach them)."""
    store, expected = damaged
    report = store.fsck(engine="dask", scheduler=dask_cluster.address)
    assert comparable(report) == expected and report.engine == "dask"
    assert report.jobs == 1  # as asked; the cluster has its own workers


def test_fsck_refuses_workers_that_cannot_reach_the_bucket(
        s3: S3Prefix, monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit import engines
    from canonkit.store import bucket_fsck

    store = Store.init(s3.url + "st")
    monkeypatch.setattr(engines.InProcessEngine, "run_on_workers",
                        lambda self, fn, *args: {"tcp://w1": False, "tcp://w2": True})
    with pytest.raises(errors.StoreError, match="tcp://w1 cannot read the store"):
        store.fsck()
    assert bucket_fsck.reaches(s3.url + "st/") and not bucket_fsck.reaches(
        s3.url + "nothing/")


# --- the command line -------------------------------------------------------------------

def test_the_maintenance_commands_on_a_bucket(s3: S3Prefix, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    url = s3.url + "cli"
    assert main(["store", "init", url]) == 0
    corpus = REPO / "conformance" / "v1"
    assert main(["store", "import", url, str(corpus), "--json"]) == 0
    imported = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert imported and all(r["ok"] for r in imported)
    assert main(["store", "repack", url, "--json", "--no-progress"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["objects"] == len({r["address"] for r in imported})
    html = tmp_path / "fsck.html"
    assert main(["store", "fsck", url, "--json", "--html", str(html), "--jobs", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["pack_entries"] == stats["objects"]
    assert url in html.read_text() and "exit status 0" in html.read_text()
    assert main(["store", "gc", url, "--grace", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["deleted"] == stats["objects"]  # no ref
    assert main(["store", "fsck", url]) == 0
    assert capsys.readouterr().out.startswith("clean: 0 objects")
    s3.put("cli/refs/bad", b"x")
    assert main(["store", "fsck", url]) == 1
    assert "ref_bad_content" in capsys.readouterr().out
    assert main(["store", "gc", url]) == 2
    assert "gc stopped before deleting anything" in capsys.readouterr().err


def test_an_imported_corpus_reads_back_from_the_bucket_in_every_form(s3: S3Prefix) -> None:
    """``store import`` over a bucket: every vector as its bytes, loose and then packed."""
    from canonkit.store.corpus import import_corpus

    store = Store.init(s3.url + "st")
    corpus = REPO / "conformance" / "v1"
    got = list(import_corpus(store, corpus, form="deflate", progress=False))
    vectors = {address: expected for _, address, expected in got}
    assert all(a == e for a, e in vectors.items())
    vectors_json = json.loads((corpus / "vectors.json").read_text())["vectors"]
    data = {v["address"]: bytes.fromhex(v["hex"]) for v in vectors_json}
    assert {store.form(a) for a in data} == {"deflate"}
    assert store.get_many(sorted(data)) == [data[a] for a in sorted(data)]
    store.repack(deflate="never")
    fresh = Store(s3.url + "st")
    assert {fresh.form(a) for a in data} == {"packed"}
    assert fresh.get_many(sorted(data)) == [data[a] for a in sorted(data)]
    assert objects.address(data[sorted(data)[0]]) == sorted(data)[0]
