"""Every state a power loss may leave the store in, during put, set_ref, repack and gc,
built and checked (the method of ALICE, "All File Systems Are Not Created Equal",
OSDI 2014). docs/robustness.md ("Crash states") states the model and the promise.

    python tests/crash_states.py --full --jobs 2  # every state of every operation
    python tests/crash_states.py --op repack      # one operation, every 25th state
    python tests/crash_states.py --stride 97      # every 97th state (the test suite's run)

(with canonkit importable: the virtualenv ``make test`` makes, ``.venv/bin/python``).

1. **Record.** The operation runs once, in a fresh process, on a copy of a prepared store
   (``durable=True``), with a recorder on the store's I/O layer (``mutations.record``):
   every create, write, fsync, rename, link, unlink, rmtree and mkdir, in order.
2. **Model.** From the store's files before the operation and the trace, a crash after
   any prefix of the trace leaves:
   - every directory operation (create, mkdir, rename, link, unlink, rmtree) followed by
     an fsync of its directory (the destination's, for rename and link) before the crash;
     of the others, any subset (exhaustively when there are at most ``EXHAUSTIVE``;
     otherwise: none, all, each one alone, all but each one, and each prefix in order) —
     so operations between two fsyncs may persist in any order, and a create or rename not
     followed by an fsync of its directory may be undone;
   - for every file, the bytes written up to its last fsync before the crash; of later
     writes, all, none, or the file cut at any 4 KiB boundary in between.
   Timestamps are not modelled (the checks do not depend on them).
3. **Check** each distinct state (by the bytes of every file, and every directory):
   - the store opens and fsck reports no error and no warning but a ``stale_lock`` (the
     dead operation's lock): leftovers are info;
   - every object that was reachable before (for put, set_ref and repack: every object
     stored before) reads back as its bytes, through ``get`` and ``get_many``;
   - a ref being set holds its old value or its new one; after the operation returned,
     whatever it promised (the object put, the ref's new value) holds;
   - after breaking the stale lock (as a user would), the next repack (gc after gc)
     completes, leaves no leftover, fsck is clean, and every object above still reads.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # run as a script: store_helpers sits beside it
    sys.path.insert(0, str(HERE))

import canonkit  # noqa: E402
from store_helpers import populate  # noqa: E402

from canonkit import objects  # noqa: E402
from canonkit.store import Store, mutations  # noqa: E402
from canonkit.store.inventory import leftovers  # noqa: E402

EXHAUSTIVE = 6   # unsynced directory operations: every subset up to this many
BLOCK = 4096     # a file written after its last fsync may be cut at these boundaries
DIR = "dir"
NAMESPACE = frozenset({"create", "mkdir", "rename", "link", "unlink", "rmtree"})


# -- the operations ---------------------------------------------------------------------

@dataclass
class Scenario:
    """A prepared store and an operation on it: ``must_read`` the objects that must read
    back in every crash state, ``after`` what must hold once the operation returned."""

    name: str
    prepare: Callable[[Store], dict[str, Any]]
    run: Callable[[Store, dict[str, Any]], None]
    must_read: Callable[[dict[str, Any]], dict[str, bytes]]
    after: Callable[[Store, dict[str, Any]], str | None] = lambda s, c: None
    during: Callable[[Store, dict[str, Any]], str | None] = lambda s, c: None
    recover: str = "repack"


def _base(store: Store, seed: int) -> dict[str, Any]:
    pop = populate(store, 40, seed=seed, unreachable=8)
    store.repack(grace_seconds=0)
    more = populate(store, 20, seed=seed + 1, unreachable=6, prefix="b/")
    return {"all": {**pop.data, **more.data},
            "reachable": {a: pop.data.get(a, more.data.get(a, b""))
                          for a in pop.reachable | more.reachable},
            "refs": {**pop.refs, **more.refs}}


PUTS = [(b"put %d " % i * (i * 37 % 400), "deflate" if i % 3 == 0 else "loose")
        for i in range(1, 31)]


def _prepare_put(store: Store) -> dict[str, Any]:
    ctx = _base(store, 11)
    ctx["puts"] = {objects.address(data): data for data, _ in PUTS}
    return ctx


def _run_put(store: Store, ctx: dict[str, Any]) -> None:
    for data, form in PUTS:
        store.put(data, form=form)
    store.put(next(iter(ctx["all"].values())))  # an object stored already


def _after_put(store: Store, ctx: dict[str, Any]) -> str | None:
    for address, data in ctx["puts"].items():
        if store.get(address) != data:
            return f"{address} was put but does not read back"
    return None


def _during_put(store: Store, ctx: dict[str, Any]) -> str | None:
    for address, data in ctx["puts"].items():
        if address in store and store.get(address) != data:
            return f"{address} reads back wrong"
    return None


def _prepare_set_ref(store: Store) -> dict[str, Any]:
    ctx = _base(store, 21)
    targets = sorted(ctx["reachable"])
    ctx["updates"] = [("main", targets[0]), ("new/deeper/ref", targets[1]),
                      ("tags/v0", targets[2]), ("x" * 200 + "/y", targets[3]),
                      ("main", targets[4]), ("new/other", targets[5]),
                      ("team/feature", targets[6]), ("new/deeper/ref", targets[7])]
    ctx["old"] = {}
    for name, address in ctx["updates"]:  # what each update expects: the value before it
        ctx["old"].setdefault(name, ctx["refs"].get(name))
    return ctx


def _run_set_ref(store: Store, ctx: dict[str, Any]) -> None:
    for name, address in ctx["updates"]:
        store.set_ref(name, address, expect=store.ref(name) or Store.ABSENT)


def _refs_ok(store: Store, ctx: dict[str, Any], done: bool) -> str | None:
    """Each ref holds a value it held at some moment of the operation: its old value or
    one it was set to (after the operation returned: the last one)."""
    for name in {n for n, _ in ctx["updates"]}:
        values = [ctx["old"][name]] + [a for n, a in ctx["updates"] if n == name]
        now = store.ref(name)
        if now != values[-1] and (done or now not in values):
            return f"ref {name} holds {now}, expected {values[-1] if done else values}"
    return None


def _must_all(ctx: dict[str, Any]) -> dict[str, bytes]:
    return dict(ctx["all"])


def _prepare_repack(store: Store) -> dict[str, Any]:
    ctx = _base(store, 31)
    store.repack(merge=False, grace_seconds=0)  # a second pack
    more = populate(store, 80, seed=33, unreachable=12, prefix="c/")  # and loose objects
    ctx["all"].update(more.data)
    return ctx


def _prepare_small_repack(store: Store) -> dict[str, Any]:
    pop = populate(store, 6, seed=41, unreachable=1)
    store.repack(grace_seconds=0)
    more = populate(store, 6, seed=42, unreachable=1, prefix="b/")
    store.repack(merge=False, grace_seconds=0)
    last = populate(store, 4, seed=43, unreachable=1, prefix="c/")
    return {"all": {**pop.data, **more.data, **last.data}}


def _prepare_gc(store: Store) -> dict[str, Any]:
    ctx = _prepare_repack(store)
    for name in ("tags/v0", "b/team/feature", "c/main", "c/team/feature"):
        store.delete_ref(name)  # what only these reached: packed and loose garbage
    ctx["reachable"] = {a: ctx["all"][a] for a in _reachable(store)}
    return ctx


def _reachable(store: Store) -> set[str]:
    from canonkit.store.gc import _reader

    marker = _reader(store)
    marker.mark([(n, bytes.fromhex(a[7:])) for n, a in store.refs().items()], strict=True)
    return {"blake3:" + d.hex() for d in marker.marked}


SCENARIOS = {
    "put": Scenario("put", _prepare_put, _run_put, _must_all, _after_put, _during_put),
    "set_ref": Scenario("set_ref", _prepare_set_ref, _run_set_ref, _must_all,
                        lambda s, c: _refs_ok(s, c, True), lambda s, c: _refs_ok(s, c, False)),
    "repack": Scenario("repack", _prepare_repack,
                       lambda s, c: (s.repack(grace_seconds=0), None)[1], _must_all),
    "gc": Scenario("gc", _prepare_gc, lambda s, c: (s.gc(grace_seconds=0), None)[1],
                   lambda c: dict(c["reachable"]), recover="gc"),
}
# a repack of a few objects: every state of it is checked in seconds (the harness's own
# tests plant bugs in its trace)
OPERATIONS = ("put", "set_ref", "repack", "gc")
SMALL = {"repack-small": Scenario("repack-small", _prepare_small_repack,
                                  lambda s, c: (s.repack(grace_seconds=0), None)[1],
                                  _must_all)}
SCENARIOS.update(SMALL)


# -- recording ------------------------------------------------------------------------

def _record_child(scenario: str, root: str, out: str) -> None:
    """In a fresh process: run the operation on ``root`` under the recorder."""
    events: list[tuple[Any, ...]] = []

    def recorder(op: str, *args: Any) -> None:
        events.append((op, *args))

    spec = SCENARIOS[scenario]
    with open(f"{out}.ctx", "rb") as fh:
        ctx = pickle.load(fh)
    store = Store(root, durable=True)
    with mutations.record(recorder):
        spec.run(store, ctx)
    with open(out, "wb") as fh:
        pickle.dump(events, fh)


@dataclass
class Recording:
    """The files before the operation, and what it did to them."""

    before: dict[str, bytes | str]   # rel -> bytes, or DIR
    ops: list[tuple[Any, ...]]
    ctx: dict[str, Any]


def _snapshot(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for here, dirs, files in os.walk(root):
        rel = os.path.relpath(here, root)
        if rel != ".":
            out[rel] = DIR
        for name in files:
            path = os.path.join(here, name)
            out[os.path.relpath(path, root)] = Path(path).read_bytes()
    return out


def record(scenario: str, work: Path) -> Recording:
    """Prepare the scenario's store under ``work``, record its operation."""
    spec = SCENARIOS[scenario]
    pristine = work / "pristine"
    store = Store.init(pristine, durable=False)
    ctx = spec.prepare(store)
    store.close()
    before = _snapshot(pristine)
    target = work / "recorded"
    shutil.copytree(pristine, target)
    out = work / "trace.pickle"
    with open(f"{out}.ctx", "wb") as fh:
        pickle.dump(ctx, fh)
    # the child imports the canonkit this process runs (an installed one, or a checkout's)
    where = str(Path(canonkit.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [where, str(HERE), os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, __file__, "--record", scenario, str(target), str(out)],
                   check=True, env=env)
    with open(out, "rb") as fh:
        events = pickle.load(fh)
    return Recording(before, _translate(events, str(target), before), ctx)


def _translate(events: list[tuple[Any, ...]], root: str, before: dict[str, bytes | str]
               ) -> list[tuple[Any, ...]]:
    """The trace with store-relative paths, and inodes in place of descriptors: files
    of the store before are inodes named by their path, new files by a number."""
    live: dict[str, Any] = {rel: (DIR if v == DIR else rel) for rel, v in before.items()}
    inode_of: dict[int, Any] = {}
    position: dict[int, int] = {}
    ops: list[tuple[Any, ...]] = []
    fresh = itertools.count()

    def rel(path: str) -> str:
        return os.path.relpath(path, root)

    for event in events:
        name, args = event[0], event[1:]
        if name in ("create", "open_lock"):
            where, fd = rel(args[0]), args[1]
            if name == "open_lock" and where in live:
                inode_of[fd] = live[where]
            else:
                inode = next(fresh)
                live[where] = inode_of[fd] = inode
                ops.append(("create", where, inode))
            position[fd] = 0
        elif name == "write":
            fd, data = args
            ops.append(("write", inode_of[fd], position[fd], data))
            position[fd] += len(data)
        elif name == "pwrite":
            fd, data, offset = args
            ops.append(("write", inode_of[fd], offset, data))
        elif name == "fsync":
            ops.append(("fsync", inode_of[args[0]]))
        elif name == "fsync_dir":
            ops.append(("fsync_dir", rel(args[0])))
        elif name in ("rename", "link"):
            src, dst = rel(args[0]), rel(args[1])
            inode = live.pop(src) if name == "rename" else live[src]
            live[dst] = inode
            ops.append((name, src, dst, inode))
        elif name == "unlink":
            where = rel(args[0])
            ops.append(("unlink", where, live.pop(where)))
        elif name == "rmtree":
            where = rel(args[0])
            for key in [k for k in live if k == where or k.startswith(where + "/")]:
                del live[key]
            ops.append(("rmtree", where))
        elif name == "mkdir":
            where = rel(args[0])
            live[where] = DIR
            ops.append(("mkdir", where))
        # utime: timestamps are not modelled
    return ops


# -- the crash states -----------------------------------------------------------------

def _directory_of(op: tuple[Any, ...]) -> str:
    where = op[2] if op[0] in ("rename", "link") else op[1]
    return os.path.dirname(where) or "."


class Model:
    """The crash states of one recording. A state is given as the files and directories
    the operation may have touched (``dynamic``); every other path of the store before
    is in every state as it was (``static``)."""

    def __init__(self, rec: Recording) -> None:
        self.rec = rec
        self.ops = rec.ops
        self._content: dict[tuple[Any, ...], bytes] = {}
        touched = {op[1] for op in rec.ops if op[0] in NAMESPACE} | {
            op[2] for op in rec.ops if op[0] in ("rename", "link")}
        trees = [op[1] for op in rec.ops if op[0] == "rmtree"]
        self.touched = {rel for rel in rec.before if rel in touched or any(
            rel.startswith(t + "/") for t in trees)}
        self.static = {rel: v for rel, v in rec.before.items() if rel not in self.touched}

    def points(self) -> range:
        return range(len(self.ops) + 1)

    def states(self, k: int) -> Iterator[dict[str, bytes | str]]:
        """The distinct-by-construction states of a crash after the first ``k``
        operations (the caller removes the duplicates by content)."""
        ops = self.ops[:k]
        namespace = [j for j, op in enumerate(ops) if op[0] in NAMESPACE]
        synced_dirs: dict[str, int] = {}
        for j, op in enumerate(ops):
            if op[0] == "fsync_dir":
                synced_dirs[op[1]] = j
        cuts = self._cuts(k)
        unsynced_data = bool(cuts) or any(
            self.content(op[1], k, "synced") != self.content(op[1], k, "full")
            for op in ops if op[0] == "write")
        unsynced = [j for j in namespace if synced_dirs.get(_directory_of(ops[j]), -1) < j]
        durable = [j for j in namespace if j not in unsynced]
        # a name created, then moved or removed for good: whether the create persisted
        # changes nothing (the inode is where the durable operation put it)
        settled = {(ops[j][1], ops[j][-1]) for j in durable
                   if ops[j][0] in ("rename", "unlink")}
        unsynced = [j for j in unsynced if not (
            ops[j][0] in ("create", "link") and (ops[j][1 if ops[j][0] == "create" else 2],
                                                 ops[j][-1]) in settled)]
        subsets = list(_subsets(unsynced))
        for keep in subsets:
            chosen = sorted(durable + list(keep))
            yield self._build(k, chosen, "full", None)
            if unsynced_data:
                yield self._build(k, chosen, "synced", None)
        for keep in (tuple(unsynced), ()):
            chosen = sorted(durable + list(keep))
            for inode, lengths in cuts.items():
                for length in lengths:
                    yield self._build(k, chosen, "full", (inode, length))

    def _writes(self, inode: Any, k: int) -> tuple[list[tuple[int, int, bytes]], int]:
        writes = [(j, op[2], op[3]) for j, op in enumerate(self.ops[:k])
                  if op[0] == "write" and op[1] == inode]
        syncs = [j for j, op in enumerate(self.ops[:k]) if op[0] == "fsync" and op[1] == inode]
        return writes, (syncs[-1] if syncs else -1)

    def _cuts(self, k: int) -> dict[Any, list[int]]:
        out: dict[Any, list[int]] = {}
        for inode in {op[1] for op in self.ops[:k] if op[0] == "write"}:
            writes, last = self._writes(inode, k)
            synced = len(self.content(inode, k, "synced"))
            full = len(self.content(inode, k, "full"))
            if any(j > last for j, _, _ in writes) and full > synced:
                first = (synced // BLOCK + 1) * BLOCK
                out[inode] = list(range(first, full, BLOCK))
        return out

    def content(self, inode: Any, k: int, mode: str, cut: int | None = None) -> bytes:
        if isinstance(inode, str):  # a file of the store before: never written
            data = self.rec.before[inode]
            assert isinstance(data, bytes)
            return data
        writes, last = self._writes(inode, k)
        if mode == "synced":
            writes = [w for w in writes if w[0] < last]
        key = (inode, len(writes), cut)
        if key not in self._content:
            out = bytearray()
            for _, offset, data in writes:
                if len(out) < offset:
                    out += bytes(offset - len(out))
                out[offset:offset + len(data)] = data
            self._content[key] = bytes(out if cut is None else out[:cut])
        return self._content[key]

    def _build(self, k: int, chosen: list[int], mode: str, cut: tuple[Any, int] | None
               ) -> dict[str, bytes | str]:
        names: dict[str, Any] = {rel: (DIR if self.rec.before[rel] == DIR else rel)
                                 for rel in self.touched}
        static = self.static

        def parent_ok(where: str) -> bool:
            parent = os.path.dirname(where)
            return not parent or names.get(parent, static.get(parent)) == DIR

        for j in chosen:
            op = self.ops[j]
            kind = op[0]
            if kind in ("create", "mkdir"):
                if parent_ok(op[1]) and op[1] not in names:
                    names[op[1]] = DIR if kind == "mkdir" else op[2]
            elif kind in ("rename", "link"):
                _, src, dst, inode = op
                if kind == "rename" and names.get(src) == inode:
                    del names[src]
                if parent_ok(dst):
                    names[dst] = inode
            elif kind == "unlink":
                if names.get(op[1]) == op[2]:
                    del names[op[1]]
            elif kind == "rmtree":
                for key in [n for n in names if n == op[1] or n.startswith(op[1] + "/")]:
                    del names[key]
        state: dict[str, bytes | str] = {}
        for where, inode in names.items():
            if inode == DIR:
                state[where] = DIR
            else:
                length = cut[1] if cut is not None and cut[0] == inode else None
                state[where] = self.content(inode, k, mode, length)
        return state


def _subsets(items: list[int]) -> Iterator[tuple[int, ...]]:
    if len(items) <= EXHAUSTIVE:
        for n in range(len(items) + 1):
            yield from itertools.combinations(items, n)
        return
    yield ()
    yield tuple(items)
    for i in range(len(items)):
        yield (items[i],)
        yield tuple(items[:i] + items[i + 1:])
        yield tuple(items[:i])


def fingerprint(state: dict[str, bytes | str],
                cache: dict[int, tuple[bytes, bytes]] | None = None) -> bytes:
    """What tells two states apart: every path, and each file's bytes (hashed once per
    distinct ``bytes`` object when ``cache`` is given: the model shares them)."""
    h = hashlib.blake2b(digest_size=16)
    for where in sorted(state):
        value = state[where]
        h.update(where.encode() + b"\0")
        if value == DIR:
            h.update(b"D")
            continue
        assert isinstance(value, bytes)
        known = cache.get(id(value)) if cache is not None else None
        if known is None or known[0] is not value:
            known = (value, hashlib.blake2b(value, digest_size=16).digest())
            if cache is not None:
                cache[id(value)] = known
        h.update(b"F" + known[1])
    return h.digest()


# -- checking -------------------------------------------------------------------------

def materialize(state: dict[str, bytes | str], root: Path,
                static: dict[str, bytes | str] | None = None) -> None:
    """Lay out ``state`` (and the ``static`` paths every state shares) at ``root``."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    whole = {**(static or {}), **state}
    for where in sorted(whole):
        value = whole[where]
        path = root / where
        if value == DIR:
            path.mkdir()
        else:
            assert isinstance(value, bytes)
            path.write_bytes(value)


def _fsck_problems(store: Store, allow_stale: bool) -> list[str]:
    report = store.fsck()
    return [f"fsck: {f.severity} {f.code} {f.path} {f.detail}" for f in report.findings
            if f.severity == "error" or (f.severity == "warning" and not (
                allow_stale and f.code == "stale_lock"))]


def _reads(store: Store, must: dict[str, bytes]) -> list[str]:
    ordered = sorted(must)
    try:
        if store.get_many(ordered) != [must[a] for a in ordered]:
            return ["get_many does not give back every object"]
        for address in ordered:
            if store.get(address) != must[address]:
                return [f"get {address} does not give back its bytes"]
    except Exception as exc:  # noqa: BLE001 -- any failure to read is the finding
        return [f"reading: {type(exc).__name__}: {exc}"]
    return []


def check(root: Path, spec: Scenario, ctx: dict[str, Any], done: bool) -> list[str]:
    """What is wrong with the crash state at ``root`` (nothing: [])."""
    try:
        store = Store(root, durable=False)
    except Exception as exc:  # noqa: BLE001
        return [f"open: {type(exc).__name__}: {exc}"]
    must = spec.must_read(ctx)
    problems = _fsck_problems(store, True) + _reads(store, must)
    try:
        extra = (spec.after if done else spec.during)(store, ctx)
    except Exception as exc:  # noqa: BLE001
        extra = f"{type(exc).__name__}: {exc}"
    if extra:
        problems.append(extra)
    if problems:
        return problems
    try:
        info = store.lock_info()
        if info is not None:
            if not info.stale:
                return [f"the dead operation's lock is not stale: {info.describe()}"]
            store.break_lock()
        (store.gc if spec.recover == "gc" else store.repack)(grace_seconds=0)
    except Exception as exc:  # noqa: BLE001
        return [f"recovery {spec.recover}: {type(exc).__name__}: {exc}"]
    left = leftovers(store.root)
    problems = _fsck_problems(store, False) + _reads(store, must)
    if left:
        problems.append(f"leftovers after recovery: {[item.rel for item in left]}")
    store.close()
    return problems


@dataclass
class Result:
    operation: str
    trace_ops: int = 0
    crash_points: int = 0
    states: int = 0          # distinct states
    checked: int = 0
    failures: list[tuple[int, list[str]]] = field(default_factory=list)
    seconds: float = 0.0


_WORK: tuple[Path, Scenario, dict[str, Any], dict[str, bytes | str]] | None = None


def _check_one(item: tuple[int, bool, dict[str, bytes | str]]) -> tuple[int, list[str]]:
    assert _WORK is not None  # what explore set up for the checking processes
    work, spec, ctx, static = _WORK
    k, done, state = item
    root = work / f"state-{os.getpid()}"
    materialize(state, root, static)
    return k, check(root, spec, ctx, done)


def explore(name: str, work: Path, *, stride: int = 1, jobs: int = 1,
            edit: Callable[[list[tuple[Any, ...]]], list[tuple[Any, ...]]] | None = None
            ) -> Result:
    """Record ``name``, build its distinct crash states, check every ``stride``-th (in
    ``jobs`` processes). ``edit`` changes the trace first (the tests plant bugs with it)."""
    global _WORK
    started = time.perf_counter()
    spec = SCENARIOS[name]
    rec = record(name, work)
    if edit is not None:
        rec.ops = edit(rec.ops)
    model = Model(rec)
    result = Result(name, trace_ops=len(rec.ops))
    seen: set[bytes] = set()
    hashes: dict[int, tuple[bytes, bytes]] = {}
    todo: list[tuple[int, bool, dict[str, bytes | str]]] = []
    for k in model.points():
        result.crash_points += 1
        for state in model.states(k):
            key = fingerprint(state, hashes)
            if key in seen:
                continue
            seen.add(key)
            result.states += 1
            if (result.states - 1) % stride == 0:
                todo.append((k, k == len(rec.ops), state))
    _WORK = (work, spec, rec.ctx, model.static)
    try:
        if jobs > 1:
            import multiprocessing

            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                checked = list(pool.imap(_check_one, todo, chunksize=8))
        else:
            checked = [_check_one(item) for item in todo]
    finally:
        _WORK = None
    result.checked = len(checked)
    result.failures = [(k, problems) for k, problems in checked if problems]
    result.seconds = time.perf_counter() - started
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", action="append", choices=sorted(SCENARIOS),
                        help="the operation(s) to explore (default: all four)")
    parser.add_argument("--full", action="store_true", help="check every state (stride 1)")
    parser.add_argument("--stride", type=int, default=25,
                        help="check every N-th distinct state (default 25; --full: 1)")
    parser.add_argument("--jobs", type=int, default=1, help="checking processes")
    parser.add_argument("--record", nargs=3, metavar=("OP", "STORE", "OUT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record:
        _record_child(*args.record)
        return 0
    stride = 1 if args.full else max(1, args.stride)
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None
    total = failed = 0
    for name in args.op or OPERATIONS:
        with tempfile.TemporaryDirectory(prefix="canonkit-crash-", dir=base) as work:
            result = explore(name, Path(work), stride=stride, jobs=args.jobs)
        total += result.states
        failed += len(result.failures)
        print(f"{name:8} {result.trace_ops:4} operations, {result.crash_points:4} crash "
              f"points, {result.states:6} distinct states, {result.checked:6} checked, "
              f"{len(result.failures)} failures ({result.seconds:.0f} s)", flush=True)
        for k, problems in result.failures[:10]:
            print(f"  after operation {k}: " + "; ".join(problems[:3]))
    print(f"total: {total} distinct crash states, {failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
