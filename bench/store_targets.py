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
floor / canonkit for the last: the fraction of the floor's rate). ``--clock cpu`` times
CPU seconds instead (this process's threads and git's), the measure that a machine busy
with other work disturbs least; it does not credit work done on two cores at once.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from blake3 import blake3
from store_datasets import DATA_SETS, objects_1m, objects_named
from store_git import (Contender, cat_file, cpu_seconds, git, init_bare, interleaved,
                       random_reads, write_files)

from canonkit.store import Store


def _linked_copy(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=os.link)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", choices=sorted(DATA_SETS), default="cbor")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: CPU seconds of this process and of git (every thread)")
    args = parser.parse_args()
    clock = cpu_seconds if args.clock == "cpu" else time.perf_counter
    n, rounds = args.objects, args.rounds
    items = objects_named(args.data, n)
    base = Path(tempfile.mkdtemp(prefix="canonkit-targets-"))
    rows: list[tuple[str, str, float, str, float]] = []
    try:
        _, paths = write_files(base, items)
        loose_git, loose_store = base / "git-loose", base / "store-loose"
        init_bare(loose_git)
        oids = git(loose_git, "hash-object", "-w", "--stdin-paths", stdin=paths).split()
        store = Store.init(loose_store, durable=False)
        addresses = [store.put(data) for data in items]
        ids = b"".join(oid + b"\n" for oid in oids)
        git_repo, store_dir = base / "git", base / "store"

        def pair(a: Contender, b: Contender) -> tuple[float, float]:
            (ta, _), (tb, _) = interleaved([a, b], rounds, clock)
            return ta, tb

        def git_pack() -> None:
            git(git_repo, "pack-objects", "-q", "--window=0",
                str(git_repo / "objects" / "pack" / "pack"), stdin=ids)
            git(git_repo, "prune-packed")

        g, c = pair((git_pack, lambda: _linked_copy(loose_git, git_repo)),
                    (lambda: Store(store_dir, durable=False).repack(),
                     lambda: _linked_copy(loose_store, store_dir)))
        rows.append(("repack", "`git pack-objects --window=0` + `prune-packed`", g,
                     "`Store.repack()`", c))
        # git keeps its delta pack for fsck and reads, as `git gc` would leave it
        _linked_copy(loose_git, git_repo)
        git(git_repo, "pack-objects", "-q", str(git_repo / "objects" / "pack" / "pack"),
            stdin=ids)
        git(git_repo, "prune-packed")
        packed = Store(store_dir, durable=False)
        report = packed.fsck()
        assert report.ok and report.objects == n
        g, c = pair((lambda: git(git_repo, "fsck", "--full", "--no-dangling"), None),
                    (packed.fsck, None))
        rows.append(("fsck", "`git fsck --full`", g, "`Store.fsck()`", c))

        batch, wanted = random_reads(oids, addresses)

        def get_loop(store: Store) -> Callable[[], object]:
            get = store.get
            return lambda: [get(a) for a in wanted]

        g, c = pair((cat_file(git_repo, batch), None), (lambda: packed.get_many(wanted), None))
        rows.append(("read N random objects", "`git cat-file --batch`", g,
                     "`Store.get_many`", c))
        g, c = pair((get_loop(packed), None), (lambda: packed.get_many(wanted), None))
        rows.append(("read N random objects", "loop of `Store.get`", g, "`Store.get_many`", c))

        raw_dir = base / "store-raw"
        _linked_copy(loose_store, raw_dir)
        raw = Store(raw_dir, durable=False)
        raw.repack(deflate="never")
        loose = Store(loose_store, durable=False)
        g, c = pair((get_loop(raw), None), (lambda: raw.get_many(wanted), None))
        rows.append(("read N random objects (raw entries)", "loop of `Store.get`", g,
                     "`Store.get_many`", c))
        g, c = pair((get_loop(loose), None), (get_loop(raw), None))
        rows.append(("`get` of 1 KiB", "loose (a file each)", g, "packed (raw entries)", c))

        big = objects_1m(64)
        mib = Store.init(base / "store-1m", durable=False)
        for data in big:
            mib.put(data)
        mib.repack(deflate="never")
        assert mib.fsck().ok
        g, c = pair((lambda: [blake3(x).digest() for x in big], None), (mib.fsck, None))
        rows.append(("fsck of 64 MiB in objects of 1 MiB", "one `blake3` pass (floor)", g,
                     "`Store.fsck()`", c))

        print(f"\n{n} objects of 1 KiB ({args.data}); {args.clock} time, minimum of {rounds} "
              f"interleaved rounds; "
              f"{subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}\n")
        print("| operation | peer or floor | s | canonkit | s | ratio |")
        print("|---|---|---|---|---|---|")
        for op, gname, gt, cname, ct in rows:
            print(f"| {op} | {gname} | {gt:.3f} | {cname} | {ct:.3f} | {gt / ct:.2f}x |")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
