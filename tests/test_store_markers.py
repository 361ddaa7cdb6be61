"""The two small files a store believes: the ``canonkit-store`` marker and the ``lock``
(STORE.md §1, §6). Both are read with a bound (never whole, whatever size they claim),
as strict JSON, and their fields are checked before they are used: a version that is
``true`` or ``1.0`` is no version 1; a pid that cannot be a process (huge, 0, -1) is no
holder. ``unlock --force`` removes any lock, whatever it holds."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from canonkit import errors
from canonkit.store import Store

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).parent.parent / "src"), os.environ.get("PYTHONPATH", "")])}


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "canonkit", "store", *args],
                          capture_output=True, env=ENV, timeout=120)


@pytest.mark.parametrize("doc", [
    '{"format": "canonkit-store", "version": true, "address": "blake3"}',
    '{"format": "canonkit-store", "version": 1.0, "address": "blake3"}',
    '{"format": "canonkit-store", "version": "1", "address": "blake3"}',
    '{"format": "canonkit-store", "version": 1, "version": 1, "address": "blake3"}',
    '{"format": "canonkit-store", "version": 1, "address": "blake3", "address": "sha256"}',
    '{"format": "canonkit-store", "version": 1, "address": "blake3"}' + " " * 5000,
    '\ufeff{"format": "canonkit-store", "version": 1, "address": "blake3"}',
])
def test_a_marker_that_is_not_exactly_version_1_is_no_store(tmp_path: Path, doc: str) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    Path(store.root, "canonkit-store").write_text(doc)
    with pytest.raises(errors.NotAStoreError) as info:
        Store(store.root)
    assert info.value.path == store.root


def test_a_huge_sparse_marker_is_refused_without_reading_it(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    with open(Path(store.root, "canonkit-store"), "r+b") as fh:
        fh.truncate(3 << 30)  # 3 GiB, sparse: read whole it would be a MemoryError
    started = time.perf_counter()
    with pytest.raises(errors.NotAStoreError, match="larger than 4096 bytes"):
        Store(store.root)
    assert time.perf_counter() - started < 1.0
    proc = _cli("fsck", store.root)
    assert proc.returncode == 2 and b"larger than 4096 bytes" in proc.stderr
    assert b"Traceback" not in proc.stderr and b"MemoryError" not in proc.stderr


def _lock(store: Store, content: bytes | str, age: float = 0.0) -> Path:
    path = Path(store.root, "lock")
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    if age:
        os.utime(path, (time.time() - age, time.time() - age))
    return path


def _doc(**fields: object) -> str:
    doc = {"pid": 12345, "host": socket.gethostname(), "started": time.time()}
    doc.update(fields)
    return json.dumps(doc)


BAD_LOCKS = {
    "huge pid": _doc(pid=99999999999999999999),
    "pid -1": _doc(pid=-1),
    "pid 0": _doc(pid=0),
    "pid true": _doc(pid=True),
    "pid text": _doc(pid="12345"),
    "pid float": _doc(pid=12345.0),
    "started huge": _doc(started=10 ** 400),
    "started infinite": _doc(started=1e308) .replace("1e+308", "1e999"),
    "started negative": _doc(started=-5),
    "host long": _doc(host="h" * 300),
    "repeated key": _doc()[:-1] + ', "pid": 1}',
    "missing field": json.dumps({"pid": 1, "host": socket.gethostname()}),
    "extra field": _doc(extra=1),
    "not json": "pid=1",
    "empty": "",
    "huge": _doc() + " " * 10000,
}


@pytest.mark.parametrize("kind", BAD_LOCKS)
def test_a_lock_that_cannot_be_believed_is_judged_by_its_age(tmp_path: Path, kind: str
                                                             ) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    store.put(b"x")
    _lock(store, BAD_LOCKS[kind])
    info = store.lock_info()
    assert info is not None and info.pid is None and not info.stale
    assert "unreadable lock file" in info.reason
    report = store.fsck()
    assert report.ok and report.counts().get("lock_held") == 1
    for op in (store.repack, store.gc):
        with pytest.raises(errors.LockHeldError):
            op()
    with pytest.raises(errors.LockHeldError):
        store.break_lock()
    _lock(store, BAD_LOCKS[kind], age=60)  # its writer had all the time it needed
    info = store.lock_info()
    assert info is not None and info.stale
    assert store.fsck().counts().get("stale_lock") == 1
    with pytest.raises(errors.StaleLockError):
        store.repack()
    proc = _cli("unlock", store.root, "--json")
    assert proc.returncode == 0, proc.stderr
    assert not Path(store.root, "lock").exists()
    store.repack()


@pytest.mark.parametrize("kind", ["huge pid", "pid -1", "pid 0", "started infinite",
                                  "huge"])
def test_unlock_force_always_works(tmp_path: Path, kind: str) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    _lock(store, BAD_LOCKS[kind])
    for args in (("fsck", store.root), ("repack", store.root), ("gc", store.root),
                 ("unlock", store.root)):
        proc = _cli(*args)
        assert b"Traceback" not in proc.stderr and b"OverflowError" not in proc.stderr, args
    proc = _cli("unlock", store.root, "--force")
    assert proc.returncode == 0, proc.stderr
    assert not Path(store.root, "lock").exists()


def test_unlock_force_removes_a_symlinked_lock_and_nothing_it_points_at(tmp_path: Path
                                                                        ) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text(_doc())
    Path(store.root, "lock").symlink_to(elsewhere)
    with pytest.raises(errors.UnsafePathError):
        store.break_lock()
    proc = _cli("unlock", store.root, "--force")
    assert proc.returncode == 0, proc.stderr
    assert not os.path.lexists(Path(store.root, "lock")) and elsewhere.exists()


def test_a_believable_lock_of_a_dead_pid_is_stale_at_once(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    _lock(store, _doc(pid=int(dead.stdout)))
    info = store.lock_info()
    assert info is not None and info.stale and info.pid == int(dead.stdout)
    assert store.break_lock() == info
