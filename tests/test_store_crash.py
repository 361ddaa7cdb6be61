"""Crash safety (STORE.md §3), by fault injection.

The sweeps crash a repack, a gc, a put and a set_ref right before each of their
filesystem mutations in turn (``os._exit(137)``, as SIGKILL would), on a store of a few
hundred objects of every kind, and check after every crash that every object that was
resolvable before still is, that fsck finds no error (leftovers are info, the dead
holder's lock a warning), and that the next repack/gc — after breaking the stale lock —
completes and removes the leftovers. Also: the environment knob in a fresh process,
SIGKILL at random moments of a large repack, a writer racing gc, the lock.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import REPO
from store_helpers import ForkServer, Populated, assert_resolvable, populate

from canonkit import errors, objects
from canonkit.store import Store
from canonkit.store.inventory import leftovers
from canonkit.store.lock import StoreLock

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(REPO / "src"), str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A directory on tmpfs when there is one: the sweeps run hundreds of durable
    operations, and a process crash does not depend on fsync reaching the disk."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="canonkit-crash-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    srv = ForkServer(ENV)
    yield srv
    srv.close()


def _check_clean(store: Store) -> None:
    report = store.fsck()
    bad = [f for f in report.findings if f.severity == "error"
           or (f.severity == "warning" and f.code != "stale_lock")]
    assert bad == [], bad


def _recover(store: Store, op: Callable[[Store], object]) -> None:
    """Break the crashed holder's lock (explicitly, as a user would), run the operation
    to completion, and see that no leftover remains."""
    info = store.lock_info()
    if info is not None:
        assert info.stale
        store.break_lock()
    op(store)
    assert leftovers(store.root) == []
    assert store.lock_info() is None


def _sweep(server: ForkServer, pristine: Path, tmp: Path, op: str,
           after: Callable[[Store], None], arg: dict[str, object] | None = None) -> int:
    """Crash ``op`` before mutation 1, 2, ... until it completes; ``after(store)`` checks
    each crashed store. Returns the number of mutation points."""
    n = 1
    while True:
        work = tmp / f"crash-{op}-{n}"
        # hard links: store files are never changed in place (only created, renamed,
        # removed), so every copy starts from the pristine bytes
        shutil.copytree(pristine, work, symlinks=True, copy_function=os.link)
        status = server.run(work, op, n, tmp / "count", arg)
        if status == 0:
            total = int((tmp / "count").read_text())
            assert total == n - 1, (total, n)  # the count is exact: no point was skipped
            shutil.rmtree(work)
            return total
        assert status == 137, f"{op} crashed at {n} with exit {status}"
        after(Store(work, durable=False))
        shutil.rmtree(work)
        n += 1


@pytest.fixture(scope="module")
def loose_store() -> Iterator[tuple[Path, Populated]]:
    """~200 reachable objects + unreachable ones, part packed, most loose."""
    shm = Path("/dev/shm")
    base = Path(tempfile.mkdtemp(prefix="canonkit-pristine-",
                                 dir=shm if shm.is_dir() and os.access(shm, os.W_OK) else None))
    root = base / "store"
    store = Store.init(root, durable=False)
    first = populate(store, 60, seed=1, unreachable=10)
    store.repack(grace_seconds=0)
    more = populate(store, 140, seed=2, unreachable=20, prefix="more/")
    first.all |= more.all
    first.reachable |= more.reachable
    first.data.update(more.data)
    first.refs.update(more.refs)
    yield root, first
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
def test_crash_sweep_repack(server: ForkServer, loose_store: tuple[Path, Populated],
                            fast_tmp: Path) -> None:
    pristine, pop = loose_store
    started = time.perf_counter()

    def after(store: Store) -> None:
        assert_resolvable(store, pop.all, pop.data)  # repack deletes nothing
        _check_clean(store)
        _recover(store, lambda s: s.repack(grace_seconds=0))
        assert store.get_many(sorted(pop.all)) == [pop.data[a] for a in sorted(pop.all)]

    total = _sweep(server, pristine, fast_tmp, "repack", after)
    loose = sum(1 for _ in Path(pristine, "objects").rglob("*") if _.is_file())
    assert total > loose  # one unlink per loose object, plus the pack's own points
    print(f"repack: {total} mutation points in {time.perf_counter() - started:.1f} s")


@pytest.mark.slow
def test_crash_sweep_gc(server: ForkServer, loose_store: tuple[Path, Populated],
                        fast_tmp: Path) -> None:
    pristine, pop = loose_store
    started = time.perf_counter()
    unreachable = pop.all - pop.reachable

    def after(store: Store) -> None:
        assert_resolvable(store, pop.reachable, pop.data)
        _check_clean(store)
        _recover(store, lambda s: s.gc(grace_seconds=0))
        assert_resolvable(store, pop.reachable, pop.data)
        assert not any(a in store for a in unreachable)

    total = _sweep(server, pristine, fast_tmp, "gc", after)
    assert total > len(unreachable)
    print(f"gc: {total} mutation points in {time.perf_counter() - started:.1f} s")


def test_crash_sweep_put_and_set_ref(server: ForkServer, fast_tmp: Path) -> None:
    tmp_path = fast_tmp
    root = tmp_path / "store"
    store = Store.init(root, durable=False)
    old = store.put(b"old object")
    store.set_ref("main", old)
    data = b"new object " * 50
    new = objects.address(data)

    def after_put(s: Store) -> None:
        assert s.get(old) == b"old object"
        if new in s:
            assert s.get(new) == data
        _check_clean(s)

    for form in ("loose", "deflate"):
        total = _sweep(server, root, tmp_path, "put", after_put,
                       {"data": data.hex(), "form": form})
        assert total >= 4  # tmp file: create, write, fsync; rename; + fan-out dir points
    store.put(data)

    def after_ref(s: Store) -> None:
        assert s.ref("main") in (old, new)  # the old value or the new one, never a mix
        _check_clean(s)
        assert s.get(old) == b"old object" and s.get(new) == data
        s.set_ref("main", new, expect=s.ref("main"))  # no leftover lock blocks the ref

    total = _sweep(server, root, tmp_path, "set_ref", after_ref,
                   {"name": "main", "address": new, "expect": old})
    assert total >= 4


def test_environment_knob_crashes_a_fresh_process(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = Store.init(root, durable=False)
    pop = populate(store, 20, unreachable=0)
    code = "from canonkit.store import Store; Store(%r).repack()" % str(root)
    for crash_at in (1, 5):
        proc = subprocess.run([sys.executable, "-c", code], env={
            **ENV, "CANONKIT_STORE_CRASH_AT": str(crash_at)}, capture_output=True)
        assert proc.returncode == 137, proc.stderr
        s = Store(root)
        assert_resolvable(s, pop.all, pop.data)
        s.break_lock()
    proc = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_sigkill_at_random_moments_of_a_large_repack(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = Store.init(root, durable=False)
    rng = random.Random(7)
    data = {store.put(rng.randbytes(rng.randrange(200, 3000)),
                      form="deflate" if i % 4 == 0 else "loose"): b"" for i in range(3000)}
    for address in data:
        data[address] = store.get(address)  # type: ignore[assignment]
    code = "from canonkit.store import Store; Store(%r).repack(grace_seconds=0)" % str(root)
    for trial in range(4):
        proc = subprocess.Popen([sys.executable, "-c", code], env=ENV)
        time.sleep(rng.uniform(0.3, 1.5))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        s = Store(root, durable=False)
        assert_resolvable(s, set(data), data)  # type: ignore[arg-type]
        _check_clean(s)
        if s.lock_info() is not None:
            s.break_lock()
        if trial % 2:
            s.put(rng.randbytes(100))  # more loose objects between attempts
    s = Store(root, durable=False)
    _recover(s, lambda st: st.repack(grace_seconds=0))
    assert_resolvable(s, set(data), data)  # type: ignore[arg-type]


_WRITER = """
import sys, time
from canonkit import objects
from canonkit.store import Store
store = Store(sys.argv[1], durable=False)
old = [bytes.fromhex(x) for x in sys.argv[2].split(",")]
for i in range(int(sys.argv[3])):
    blob = store.put(b"fresh %d" % i + b"." * (i % 50))
    # re-putting an old unreachable object protects it (its mtime is refreshed)
    again = store.put(old[i % len(old)])
    tree = store.put_object("tree", {"entries": [
        {"name": "a", "mode": 0, "ref": bytes.fromhex(again[7:])},
        {"name": "b", "mode": 0, "ref": bytes.fromhex(blob[7:])}]})
    store.set_ref("writer/%d" % (i % 7), tree)
print("done", flush=True)
"""


def test_writer_racing_gc_loses_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = Store.init(root, durable=False)
    hours_ago = time.time() - 7200

    def age(path: Path) -> None:
        os.utime(path, (hours_ago, hours_ago))

    def loose_path(address: str) -> Path:
        return root / "objects" / address[7:9] / address[9:]

    packed = [b"old packed %d" % i for i in range(10)]
    for data in packed:
        store.put(data)
    store.repack(grace_seconds=0)
    for name in os.listdir(root / "packs"):
        age(root / "packs" / name)
    touched = [b"old loose %d" % i for i in range(10)]
    garbage = [store.put(b"old garbage %d" % i) for i in range(50)]
    for address in [store.put(d) for d in touched] + garbage:
        age(loose_path(address))
    # the writer re-puts old unreachable objects (which refreshes their mtime) and
    # references them, and fresh ones, from new refs — while gc runs over and over
    old = packed + touched
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(root),
                               ",".join(d.hex() for d in old), "300"], env=ENV,
                              stdout=subprocess.PIPE, text=True)
    rounds = deleted = 0
    while writer.poll() is None or rounds < 2:
        try:
            deleted += Store(root, durable=False).gc().deleted  # the default grace: 1 h
        except errors.LockHeldError:
            pass
        rounds += 1
    out, _ = writer.communicate()
    assert out.strip() == "done" and writer.returncode == 0
    s = Store(root, durable=False)
    # the garbage is gone (old objects the writer had not re-put yet may be too: it
    # writes them again when it re-puts them)
    assert deleted >= len(garbage) and not any(a in s for a in garbage)
    report = s.fsck()
    assert report.ok, report.errors()
    assert len(s.refs()) == 7
    for name, address in s.refs().items():
        for entry in s.get_object(address).fields["entries"]:
            assert s.get("blake3:" + entry["ref"].hex())
    for data in old:
        assert s.get(s.put(data)) == data


def test_second_repack_or_gc_fails_at_once(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = Store.init(root, durable=False)
    store.put(b"x")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom canonkit.store.lock import StoreLock\n"
        "with StoreLock(sys.argv[1], durable=False):\n"
        "    print('held', flush=True); time.sleep(60)\n"), str(root)], env=ENV,
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        for op in (store.repack, store.gc):
            started = time.perf_counter()
            with pytest.raises(errors.LockHeldError) as info:
                op()
            assert time.perf_counter() - started < 1.0  # at once, no waiting
            assert str(holder.pid) in str(info.value)
        assert store.fsck().counts().get("lock_held") == 1
        with pytest.raises(errors.LockHeldError):
            store.break_lock()  # a live holder's lock is not broken without force
    finally:
        holder.kill()
        holder.communicate()
    # the holder is gone now: its lock is stale
    with pytest.raises(errors.StaleLockError):
        store.repack()
    report = store.fsck()
    assert report.ok and report.counts().get("stale_lock") == 1
    info = store.break_lock()
    assert info is not None and info.pid == holder.pid and info.stale
    store.repack()
    with StoreLock(str(root), durable=False):
        with pytest.raises(errors.LockHeldError):
            store.gc()  # our own live lock counts too


def test_unreadable_lock_is_stale_only_when_old(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = Store.init(root, durable=False)
    (root / "lock").write_bytes(b"")
    with pytest.raises(errors.LockHeldError):
        store.gc()
    os.utime(root / "lock", (time.time() - 60, time.time() - 60))
    with pytest.raises(errors.StaleLockError):
        store.gc()
    store.break_lock()
    store.gc()
