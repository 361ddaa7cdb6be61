"""The store's speed targets, each a ratio against its peer or floor, timed in one process
with the contenders interleaved round by round (minimum of ``--rounds``).

    python bench/store_targets.py --objects 20000 [--rounds 3] [--data half-random]

On ``store_datasets.objects_1k`` (``--data half-random``: ``objects_half_random``), each
store and git repository built once, outside the timings (loose objects: ``Store.put``
with ``durable=False`` and ``git hash-object -w --stdin-paths``; every round that changes
a store starts from a copy of them made with hard links, since no file is ever edited):

- **fsck**: ``git fsck --full --no-dangling`` vs ``Store.fsck()`` (one worker) on the packed
  store (``repack``, ``deflate="auto"``) and git's pack (``pack-objects``, deltas);
- **get_many**: ``git cat-file --batch`` of N random ids (output drained) vs
  ``Store.get_many`` of the same N addresses, and a Python loop of ``Store.get``;
- **repack**: ``git pack-objects --window=0`` + ``prune-packed`` vs ``Store.repack()``;
- **packed get**: a loop of ``Store.get`` over N random addresses of a pack of raw entries
  (``deflate="never"``) vs the same from the loose store;
- **fsck of 1 MiB objects**: ``Store.fsck()`` of a pack of 64 random objects of 1 MiB vs
  one ``blake3(x).digest()`` pass over the same objects in memory.

Prints a Markdown table: each row's two times and their ratio (peer / canonkit, or
floor / canonkit for the last: the fraction of the floor's rate).
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from blake3 import blake3
from store_datasets import objects_1k, objects_1m, objects_half_random

from canonkit.store import Store


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin,
                          stdout=subprocess.PIPE, check=True).stdout


def _linked_copy(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=os.link)


Timed = tuple[Callable[[], object], Callable[[], None] | None]


def _race(a: Timed, b: Timed, rounds: int) -> tuple[float, float]:
    """Minimum times of ``a`` and ``b`` (each ``(run, fresh)``), alternated round by round."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for i, (run, fresh) in enumerate((a, b)):
            if fresh is not None:
                fresh()
            start = time.perf_counter()
            run()
            best[i] = min(best[i], time.perf_counter() - start)
    return best[0], best[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", choices=["cbor", "half-random"], default="cbor")
    args = parser.parse_args()
    n, rounds = args.objects, args.rounds
    items = objects_1k(n) if args.data == "cbor" else objects_half_random(n)
    base = Path(tempfile.mkdtemp(prefix="canonkit-targets-"))
    rows: list[tuple[str, str, float, str, float]] = []
    try:
        files = base / "files"
        files.mkdir()
        for i, data in enumerate(items):
            (files / f"{i:06d}").write_bytes(data)
        loose_git, loose_store = base / "git-loose", base / "store-loose"
        subprocess.run(["git", "init", "-q", "--bare", str(loose_git)], check=True)
        oids = _git(loose_git, "hash-object", "-w", "--stdin-paths", stdin="".join(
            f"{files / f'{i:06d}'}\n" for i in range(n)).encode()).split()
        store = Store.init(loose_store, durable=False)
        addresses = [store.put(data) for data in items]
        ids = b"".join(oid + b"\n" for oid in oids)
        git_repo, store_dir = base / "git", base / "store"

        def git_pack() -> None:
            _git(git_repo, "pack-objects", "-q", "--window=0",
                 str(git_repo / "objects" / "pack" / "pack"), stdin=ids)
            _git(git_repo, "prune-packed")

        g, c = _race((git_pack, lambda: _linked_copy(loose_git, git_repo)),
                     (lambda: Store(store_dir, durable=False).repack(),
                      lambda: _linked_copy(loose_store, store_dir)), rounds)
        rows.append(("repack", "`git pack-objects --window=0` + `prune-packed`", g,
                     "`Store.repack()`", c))
        # git keeps its delta pack for fsck and reads, as `git gc` would leave it
        _linked_copy(loose_git, git_repo)
        _git(git_repo, "pack-objects", "-q", str(git_repo / "objects" / "pack" / "pack"),
             stdin=ids)
        _git(git_repo, "prune-packed")
        packed = Store(store_dir, durable=False)
        report = packed.fsck()
        assert report.ok and report.objects == n
        g, c = _race((lambda: _git(git_repo, "fsck", "--full", "--no-dangling"), None),
                     (packed.fsck, None), rounds)
        rows.append(("fsck", "`git fsck --full`", g, "`Store.fsck()`", c))

        rng = random.Random(5)
        picks = [rng.randrange(n) for _ in range(n)]
        batch = b"".join(oids[i] + b"\n" for i in picks)
        wanted = [addresses[i] for i in picks]

        def cat_file() -> None:
            with subprocess.Popen(["git", "-C", str(git_repo), "cat-file", "--batch"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
                out, _ = proc.communicate(batch)
                assert len(out) > n * 1024

        def get_loop(store: Store) -> Callable[[], object]:
            get = store.get
            return lambda: [get(a) for a in wanted]

        g, c = _race((cat_file, None), (lambda: packed.get_many(wanted), None), rounds)
        rows.append(("read N random objects", "`git cat-file --batch`", g,
                     "`Store.get_many`", c))
        g, c = _race((get_loop(packed), None), (lambda: packed.get_many(wanted), None), rounds)
        rows.append(("read N random objects", "loop of `Store.get`", g, "`Store.get_many`", c))

        raw_dir = base / "store-raw"
        _linked_copy(loose_store, raw_dir)
        raw = Store(raw_dir, durable=False)
        raw.repack(deflate="never")
        loose = Store(loose_store, durable=False)
        g, c = _race((get_loop(raw), None), (lambda: raw.get_many(wanted), None), rounds)
        rows.append(("read N random objects (raw entries)", "loop of `Store.get`", g,
                     "`Store.get_many`", c))
        g, c = _race((get_loop(loose), None), (get_loop(raw), None), rounds)
        rows.append(("`get` of 1 KiB", "loose (a file each)", g, "packed (raw entries)", c))

        big = objects_1m(64)
        mib = Store.init(base / "store-1m", durable=False)
        for data in big:
            mib.put(data)
        mib.repack(deflate="never")
        assert mib.fsck().ok
        g, c = _race((lambda: [blake3(x).digest() for x in big], None), (mib.fsck, None),
                     rounds)
        rows.append(("fsck of 64 MiB in objects of 1 MiB", "one `blake3` pass (floor)", g,
                     "`Store.fsck()`", c))

        print(f"\n{n} objects of 1 KiB ({args.data}); minimum of {rounds} interleaved rounds; "
              f"{subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}\n")
        print("| operation | peer or floor | s | canonkit | s | ratio |")
        print("|---|---|---|---|---|---|")
        for op, gname, gt, cname, ct in rows:
            print(f"| {op} | {gname} | {gt:.3f} | {cname} | {ct:.3f} | {gt / ct:.2f}x |")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
