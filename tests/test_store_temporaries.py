"""Work in progress in tmp/ survives any sweep of leftovers (STORE.md §3, §6).

repack and gc remove leftovers of tmp/ older than the grace period (all of them with
``grace_seconds=0``), but never a file a live writer is still using: every temporary is
held with ``flock`` by its writer from the moment it exists until it is renamed into
place, and a sweep removes only what it can lock itself. A sweep that comes between a
writer's create and its lock removes the file while holding it; the writer notices and
starts over under a new name.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from canonkit import objects
from canonkit.store import Store, mutations
from canonkit.store.inventory import leftovers, sweep_leftovers

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).parent.parent / "src"), os.environ.get("PYTHONPATH", "")])}


def _sweep_before_renames(monkeypatch: pytest.MonkeyPatch, root: str, sweep: Any) -> list[int]:
    """Run ``sweep`` right before the first rename of the store (when a put's or a ref
    update's temporary is complete and about to be renamed into place)."""
    real = mutations.rename
    swept: list[int] = []

    def rename(src: str, dst: str) -> None:
        if not swept:
            swept.append(len(os.listdir(f"{root}/tmp")))
            sweep()
        real(src, dst)

    monkeypatch.setattr(mutations, "rename", rename)
    return swept


@pytest.mark.parametrize("form", ["loose", "deflate"])
def test_gc_with_no_grace_leaves_a_live_puts_temporary(tmp_path: Path, form: str,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    store = Store.init(tmp_path / "s")
    other = Store(store.root)  # another writer's view, as another process would have
    swept = _sweep_before_renames(monkeypatch, store.root,
                                  lambda: other.gc(grace_seconds=0))
    data = b"a put racing a gc " * 20
    address = store.put(data, form=form)
    assert swept and swept[0] >= 1  # the temporary was there when gc swept
    assert store.get(address) == data and os.listdir(Path(store.root, "tmp")) == []


def test_repack_with_no_grace_leaves_a_live_ref_updates_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store.init(tmp_path / "s")
    address = store.put(b"target")
    other = Store(store.root)
    swept = _sweep_before_renames(monkeypatch, store.root,
                                  lambda: other.repack(grace_seconds=0))
    store.set_ref("main", address)
    assert swept and swept[0] >= 2  # the new value and the ref's lock file
    assert store.ref("main") == address


def test_a_sweep_between_create_and_lock_makes_the_writer_start_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    real = mutations.create
    created: list[str] = []

    def create(path: str) -> int:
        fd = real(path)
        created.append(path)
        if len(created) == 1:  # the worst moment: the file exists, not yet held
            assert sweep_leftovers(store.root, 0) == 1
        return fd

    monkeypatch.setattr(mutations, "create", create)
    address = store.put(b"started over")
    assert len(created) == 2 and not os.path.exists(created[0])
    assert store.get(address) == b"started over"


def test_a_dead_writers_temporaries_are_leftovers(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    code = ("import os, sys\nfrom canonkit.store import mutations\n"
            "t = mutations.write_temporary(sys.argv[1] + '/tmp', 'obj', b'x' * 100, "
            "durable=False)\nos._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, store.root], env=ENV, check=True)
    assert [item.what for item in leftovers(store.root)] == ["tmp"]
    held = mutations.write_temporary(f"{store.root}/tmp", "obj", b"live", durable=False)
    try:
        assert sweep_leftovers(store.root, 0) == 1  # the dead one only
        assert os.listdir(Path(store.root, "tmp")) == [os.path.basename(held.path)]
    finally:
        held.discard()


_PUTS = """
import sys
from canonkit.store import Store
store = Store(sys.argv[1])
failed = 0
for i in range(int(sys.argv[2])):
    try:
        store.put(b"put %d " % i * 40, form="deflate" if i % 2 else "loose")
    except FileNotFoundError:
        failed += 1
print(failed, flush=True)
"""


def test_puts_racing_back_to_back_gc_with_no_grace_all_succeed(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s")
    writer = subprocess.Popen([sys.executable, "-c", _PUTS, store.root, "250"], env=ENV,
                              stdout=subprocess.PIPE, text=True)
    rounds = 0
    while True:  # the last round starts after the writer has exited
        finished = writer.poll() is not None
        Store(store.root).gc(grace_seconds=0)
        rounds += 1
        if finished and rounds >= 3:
            break
    out, _ = writer.communicate()
    assert writer.returncode == 0 and out.strip() == "0"
    assert rounds >= 3 and leftovers(store.root) == []
    assert objects.address(b"put 0 " * 40) not in Store(store.root)  # gc'd: unreachable
