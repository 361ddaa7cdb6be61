"""Crash sweeps of repack and gc of a store in object storage (STORE.md §7, last bullet):
the client is ended right before each of its mutating requests in turn
(``CANONKIT_STORE_CRASH_AT=N``, armed in a forked child: ``store_crash_worker.py``), on
the same store uploaded afresh under a prefix of its own for every N, and after each crash

- every object resolvable before (repack: every object; gc: every reachable one) reads
  back, through ``get`` and ``get_many``;
- fsck finds no error and no warning: leftovers (an unpublished ``.pack``) are info, and so
  is the dead holder's lease (``lock_held``) until it expires;
- once the lease is broken (the holder is known dead: ``break_lock(force=True)``), the
  operation run again completes, leaves no leftover and no lease, fsck is clean, and
  after gc nothing unreachable remains.

    python tests/bucket_crashes.py                  # every request of repack and gc
    python tests/bucket_crashes.py --op gc --stride 4

(with canonkit importable: ``.venv/bin/python``). Run as a script it starts moto's server
itself, or uses ``CANONKIT_TEST_S3_ENDPOINT``; the test suite (``test_store_bucket_crash.py``)
runs a sample of the points on a smaller store.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # run as a script: the helpers sit beside it
    sys.path.insert(0, str(HERE))

from bucket_helpers import upload  # noqa: E402
from store_helpers import ForkServer, assert_resolvable, populate  # noqa: E402

from canonkit._files import remote  # noqa: E402
from canonkit.store import Store  # noqa: E402
from canonkit.store.bucket_site import leftovers  # noqa: E402
from canonkit.store.inventory import loose_objects  # noqa: E402
from canonkit.store.sites import store_reader  # noqa: E402

OPS: dict[str, Callable[[Store], object]] = {
    "repack": lambda store: store.repack(grace_seconds=0),
    "gc": lambda store: store.gc(grace_seconds=0),
}


@dataclass
class Image:
    """A store laid out locally (``root``), to be uploaded for every crash point: what
    every object holds and which ones the refs reach."""

    root: Path
    data: dict[str, bytes]
    reachable: set[str]
    loose_garbage: int  # unreachable loose objects: gc deletes each with a request

    def requests(self, op: str) -> int:
        """How many mutating requests ``op`` makes on this store: the lease, the
        leftover's deletion, the new pack and its index, the deletions (repack: the loose
        objects in one batch; gc: one each), the old pack's index and pack, the lease's
        release."""
        return 7 + (1 if op == "repack" else self.loose_garbage)


def prepare(root: Path, size: int) -> Image:
    """Packed and loose objects, reachable and not, and a leftover ``.pack`` for the
    sweep of leftovers to remove: every kind of request repack and gc make."""
    store = Store.init(root, durable=False)
    first = populate(store, size, seed=1, unreachable=2)
    store.repack(merge=False, grace_seconds=0)
    more = populate(store, size, seed=2, unreachable=2, prefix="b/")
    for name in ("tags/v0", "b/main", "b/tags/v0", "b/team/feature"):  # garbage: packed, loose
        store.delete_ref(name)
    Path(root, "packs", "pack-" + "0" * 64 + ".pack").write_bytes(b"CKPK left by a crash")
    data = first.data | more.data
    marker = store_reader(store)  # the reachable set, as gc computes it
    marker.mark([(n, bytes.fromhex(a[7:])) for n, a in store.refs().items()], strict=True)
    reachable = {"blake3:" + d.hex() for d in marker.marked}
    loose = {"blake3:" + item.digest.hex() for item in loose_objects(str(root))}
    return Image(root, data, reachable, len(loose - reachable))


def check_crashed(url: str, image: Image, op: str) -> None:
    """What must hold after a crash of ``op`` (see the module's docstring)."""
    must = set(image.data) if op == "repack" else image.reachable
    store = Store(url)
    assert_resolvable(store, must, image.data)
    report = store.fsck()
    bad = [f for f in report.findings if f.severity != "info"]
    assert bad == [], bad
    if store.lock_info() is not None:
        assert not store.lock_info().stale  # type: ignore[union-attr]  # the lease lasts
        store.break_lock(force=True)
    check_completed(url, image, op)


def check_completed(url: str, image: Image, op: str, *, run: bool = True) -> None:
    """``op`` run to completion (``run``: here, now) left a clean store."""
    if run:
        OPS[op](Store(url))
    store = Store(url)
    listed = {info.url[len(url):]: info for info in remote.list_prefix(url)}
    assert leftovers(listed) == [], leftovers(listed)
    assert store.lock_info() is None
    report = store.fsck()
    assert report.ok and [f for f in report.findings if f.code != "unreachable"] == [], (
        report.findings)
    must = sorted(set(image.data) if op == "repack" else image.reachable)
    assert store.get_many(must) == [image.data[a] for a in must]
    if op == "gc":
        assert not any(store.has(a) for a in set(image.data) - image.reachable)
        assert report.counts().get("unreachable", 0) == 0


def points(total: int, stride: int) -> list[int]:
    """The crash points to try of ``total``: every one with ``stride`` 1; else the first
    five (the lease, the sweep, the pack, its index, the first deletion), every
    ``stride``-th, and the last two (the final deletion, the lease's release)."""
    if stride <= 1:
        return list(range(1, total + 1))
    chosen = set(range(1, min(total, 5) + 1)) | set(range(1, total + 1, stride))
    chosen |= {n for n in (total - 1, total) if n >= 1}
    return sorted(chosen)


def sweep(server: ForkServer, image: Image, base: str, op: str, stride: int,
          report: Path, log: Callable[[str], None] = lambda line: None) -> tuple[int, int]:
    """Run ``op`` once to count its requests, then crash it at each chosen point;
    ``(requests, points tried)``."""
    url = f"{base}{op}-full/"
    upload(image.root, url)
    assert server.run(url, op, 0, report) == 0
    total = int(report.read_text())
    assert total == image.requests(op), (op, total)
    check_completed(url, image, op, run=False)
    chosen = points(total, stride)
    for n in chosen:
        url = f"{base}{op}-{n}/"
        upload(image.root, url)
        status = server.run(url, op, n, report)
        assert status == 137, f"{op}: request {n} of {total}: exit status {status}"
        check_crashed(url, image, op)
        log(f"{op}: crashed before request {n} of {total}: checked")
    return total, len(chosen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", choices=sorted(OPS), action="append",
                        help="the operation (repeatable; default: both)")
    parser.add_argument("--stride", type=int, default=1,
                        help="try every N-th point (and the first five and last two); "
                             "default 1: every request")
    parser.add_argument("--size", type=int, default=20,
                        help="reachable objects per half of the store (default 20)")
    args = parser.parse_args()
    from services import S3Endpoint, start_moto

    with tempfile.TemporaryDirectory(prefix="canonkit-bucket-crashes-") as tmp:
        endpoint: S3Endpoint | None = None
        given = os.environ.get("CANONKIT_TEST_S3_ENDPOINT")
        if given:
            bucket = os.environ.get("CANONKIT_TEST_S3_BUCKET", "canonkit-test")
        else:
            endpoint = start_moto(Path(tmp))
            os.environ.update(endpoint.env)
            bucket = endpoint.bucket
        server = ForkServer(dict(os.environ))
        try:
            image = prepare(Path(tmp, "store"), args.size)
            base = f"s3://{bucket}/crashes-{uuid.uuid4().hex[:8]}/"
            for op in args.op or sorted(OPS):
                started = time.perf_counter()
                total, tried = sweep(server, image, base, op, args.stride, Path(tmp, "count"),
                                     lambda line: print(line, flush=True))
                print(f"{op}: {tried} of {total} crash points checked in "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
        finally:
            server.close()
            if endpoint is not None and endpoint.service is not None:
                endpoint.service.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
