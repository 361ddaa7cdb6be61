"""Building stores with every kind of object for the store tests, and running a store
operation in a child process that ends at a chosen mutation (the crash sweeps)."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from canonkit import objects
from canonkit.store import Store


@dataclass
class Populated:
    """What ``populate`` put: every address, the reachable ones, and the refs."""

    all: set[str] = field(default_factory=set)
    reachable: set[str] = field(default_factory=set)
    refs: dict[str, str] = field(default_factory=dict)
    data: dict[str, bytes] = field(default_factory=dict)


def _digest(address: str) -> bytes:
    return bytes.fromhex(address[7:])


def populate(store: Store, n: int = 200, *, seed: int = 0, unreachable: int = 30,
             deflate_every: int = 3, prefix: str = "") -> Populated:
    """About ``n`` reachable objects — blobs, chunks, chunk-manifests, trees, commits,
    conflicts — under three refs (named with ``prefix``), plus ``unreachable`` objects no
    ref reaches."""
    rng = random.Random(seed)
    out = Populated()
    count = 0

    def put(data: bytes, reachable: bool = True) -> str:
        nonlocal count
        count += 1
        form = "deflate" if deflate_every and count % deflate_every == 0 else "loose"
        address = store.put(data, form=form)
        out.all.add(address)
        out.data[address] = data
        if reachable:
            out.reachable.add(address)
        return address

    def blob() -> bytes:
        size = rng.choice([0, 5, 60, 300, 1024, 3000])
        if rng.random() < 0.5:
            return (f"line {rng.random()}\n" * (size // 20 + 1)).encode()[:size]
        return rng.randbytes(size)

    parent: list[bytes] = []
    commits: list[str] = []
    per_commit = max(1, n // 20)
    while len(out.reachable) < n:
        entries = []
        for j in range(per_commit):
            b = put(blob())
            entries.append({"name": f"f{j:03d}-{rng.randrange(1000)}", "mode": 0o100644,
                            "ref": _digest(b)})
        chunks = [put(rng.randbytes(rng.randrange(1, 400))) for _ in range(3)]
        sizes = [len(out.data[c]) for c in chunks]
        manifest = put(objects.encode_object("chunk-manifest", {
            "size": sum(sizes), "chunks": [[_digest(c), s] for c, s in zip(chunks, sizes)]}))
        entries.append({"name": "zz-manifest", "mode": 0o100644, "ref": _digest(manifest)})
        entries.sort(key=lambda e: e["name"].encode())
        tree = put(objects.encode_object("tree", {"entries": entries}))
        conflict = put(objects.encode_object("conflict", {
            "path": "a", "base": None, "ours": _digest(tree), "theirs": entries[0]["ref"]}))
        inner = put(objects.encode_object("tree", {"entries": [
            {"name": "conflict", "mode": 0, "ref": _digest(conflict)},
            {"name": "root", "mode": 0o40000, "ref": _digest(tree)}]}))
        commit = put(objects.encode_object("commit", {
            "tree": _digest(inner), "parents": parent, "author": "tester",
            "time": 1_700_000_000_000 + len(commits), "message": f"commit {len(commits)}"}))
        parent = [_digest(commit)]
        commits.append(commit)
    for _ in range(unreachable):
        put(blob() + b"unreachable" + rng.randbytes(8), reachable=False)
    orphan_tree = put(objects.encode_object("tree", {"entries": [
        {"name": "x", "mode": 0, "ref": _digest(put(b"orphan blob", reachable=False))}]}),
        reachable=False)
    del orphan_tree
    out.refs = {f"{prefix}main": commits[-1], f"{prefix}tags/v0": commits[0],
                f"{prefix}team/feature": commits[len(commits) // 2]}
    for name, address in out.refs.items():
        store.set_ref(name, address)
    return out


def assert_resolvable(store: Store, addresses: set[str], data: dict[str, bytes]) -> None:
    """Every address reads back (through ``get`` and ``get_many``) as its bytes."""
    ordered = sorted(addresses)
    assert store.get_many(ordered) == [data[a] for a in ordered]
    for address in ordered:
        assert store.get(address) == data[address]


class ForkServer:
    """``store_crash_worker.py`` in a process of its own: ``run`` has it fork a child
    that runs one operation on a store, ended right before mutation ``crash_at``; the
    child's exit status is returned (137: ended there; 0: the operation finished first,
    its mutation count written to ``report``). ``env`` reaches the children (the
    endpoint of a store in object storage: the server itself never makes a request, so
    each child makes its own client)."""

    WORKER = Path(__file__).parent / "store_crash_worker.py"

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, str(self.WORKER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def run(self, store: Path | str, op: str, crash_at: int, report: Path,
            arg: dict[str, object] | None = None) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"store": str(store), "op": op, "crash_at": crash_at,
                                          "report": str(report), "arg": arg or {}}) + "\n")
        self.proc.stdin.flush()
        return int(json.loads(self.proc.stdout.readline())["exit"])

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()
