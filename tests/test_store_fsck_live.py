"""fsck on a store that others write to meanwhile (STORE.md §3, §4).

A writer that puts objects and then a ref naming them, a repack that moves every object
into a new pack and removes the old ones, a ref that moves and a gc that collects what
only its old value reached: none of them may make fsck report an error it would not find
in a consistent view of the store. Each test makes the writer act at the worst moment of
fsck deterministically: between the plan (which lists the packs and fan-out
directories) and the units (which read them), or after the units.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from store_helpers import populate

from canonkit.store import Store
from canonkit.store import fsck as fsck_module


def _between(monkeypatch: pytest.MonkeyPatch, before: Callable[[], Any] | None = None,
             after: Callable[[], Any] | None = None) -> None:
    """Run ``before`` once the plan is made (before any unit reads a file), ``after``
    once every unit has run (before the refs and reachability are judged)."""
    real = fsck_module.execute

    def execute(*args: Any, **kwargs: Any) -> Iterator[Any]:
        if before is not None:
            before()
        yield from real(*args, **kwargs)
        if after is not None:
            after()

    monkeypatch.setattr(fsck_module, "execute", execute)


def _errors(store: Store) -> list[tuple[str, str]]:
    return [(f.code, f.path) for f in store.fsck().errors()]


@pytest.fixture
def live(tmp_path: Path) -> Store:
    store = Store.init(tmp_path / "s", durable=False)
    populate(store, 60, seed=1, unreachable=5)
    store.repack(grace_seconds=0)
    populate(store, 40, seed=2, unreachable=5, prefix="b/")
    store.repack(merge=False, grace_seconds=0)  # two packs now
    fresh = populate(store, 30, seed=3, unreachable=3, prefix="c/")  # and loose objects
    assert store.fsck().ok
    store.fresh_reachable = sorted(fresh.reachable)  # type: ignore[attr-defined]
    return store


def test_a_writer_putting_objects_then_a_ref_during_fsck(live: Store,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    writer = Store(live.root, durable=False)

    def write() -> None:
        tree = writer.put_object("tree", {"entries": [
            {"name": "new", "mode": 0, "ref": bytes.fromhex(writer.put(b"fresh")[7:])}]})
        writer.set_ref("fresh/main", tree)
        writer.set_ref("main", tree)  # an existing ref moves too

    _between(monkeypatch, after=write)
    assert _errors(live) == []


def test_a_repack_between_plan_and_units(live: Store,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    other = Store(live.root, durable=False)
    _between(monkeypatch, before=lambda: other.repack(grace_seconds=0))
    report = live.fsck()
    assert report.errors() == []
    assert report.reachable > 100  # what moved was found in the new pack and followed


def test_a_repack_after_the_units_and_a_gc_after_a_ref_moved(
        live: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    other = Store(live.root, durable=False)
    main = other.ref("main")
    assert main is not None

    def move_and_collect() -> None:
        other.set_ref("main", other.put(b"main is just this now"))
        other.gc(grace_seconds=0)  # collects what only the old main reached

    _between(monkeypatch, before=move_and_collect)
    assert _errors(live) == []
    _between(monkeypatch, before=lambda: None)
    assert _errors(Store(live.root)) == []  # and a plain fsck agrees


def test_a_truly_missing_object_is_still_reported(live: Store,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    address = next(a for a in live.fresh_reachable  # type: ignore[attr-defined]
                   if live.form(a) != "packed" and a not in live.refs().values())
    victim = Path(live.root, "objects", address[7:9], address[9:])

    _between(monkeypatch, before=victim.unlink)
    report = live.fsck()
    assert [(f.code, f.address) for f in report.errors()] == [("missing_object", address)]


def test_a_removed_index_with_its_pack_is_no_error_but_a_lost_pack_is(
        live: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    packs = sorted(Path(live.root, "packs").glob("*.pack"))

    def lose_pack_only() -> None:
        packs[0].unlink()  # its index stays published: that is damage

    _between(monkeypatch, before=lose_pack_only)
    assert ("pack_missing", f"packs/{packs[0].stem}.idx") in _errors(live)
