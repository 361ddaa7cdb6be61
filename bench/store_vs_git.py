"""canonkit's object store next to git's object database, on the same objects.

    python bench/store_vs_git.py [--objects 100000] [--repeat 2] [--data half-random]

The objects are ``store_datasets.objects_1k``: 1 KiB of CBOR each (``--data
half-random``: ``objects_half_random``, their second half random bytes). Every step runs on a
fresh copy where it changes the store, and each contender gets the same input:

- **write loose**: from N files on disk, ``git hash-object -w --stdin-paths`` (zlib loose
  objects, no fsync) vs ``Store.put`` of each file's bytes (raw loose files,
  ``durable=False``: no fsync either);
- **repack**: git's ``repack -a -d`` packs only what a ref reaches, and these objects are
  unreachable, so git does what it does inside: ``git pack-objects`` of every object id
  (delta search window 10, and ``--window=0``: none) then ``git prune-packed``, vs
  ``Store.repack()`` (``deflate="auto"``; it packs every loose object); pack sizes too;
- **fsck**: ``git fsck --full --no-dangling`` vs ``Store.fsck()`` (one worker) on the
  packed stores;
- **read N random objects**: ``git cat-file --batch`` (ids on stdin, contents to a pipe
  that is drained) vs ``Store.get_many`` and a loop of ``Store.get`` (into memory).

Times are the minimum of ``--repeat`` rounds, the contenders of a row called in turn in
each round (read the ratios: docs/performance.md). Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from store_datasets import DATA_SETS, objects_named
from store_git import cat_file, git, init_bare, interleaved, random_reads, write_files

from canonkit.store import Store


def _size(path: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in path.rglob(pattern))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--data", choices=sorted(DATA_SETS), default="cbor")
    args = parser.parse_args()
    n = args.objects
    items = objects_named(args.data, n)
    base = Path(tempfile.mkdtemp(prefix="canonkit-vs-git-"))
    rows: list[tuple[str, str, float, str, float]] = []
    try:
        files, paths = write_files(base, items)

        git_repo, store_dir = base / "git", base / "store"

        def fresh_git() -> None:
            init_bare(git_repo)

        def fresh_store() -> None:
            shutil.rmtree(store_dir, ignore_errors=True)
            Store.init(store_dir, durable=False)

        def put_all() -> list[str]:
            store = Store(store_dir, durable=False)
            out = []
            for i in range(n):
                with open(files / f"{i:06d}", "rb") as fh:
                    out.append(store.put(fh.read()))
            return out

        (g, oids), (c, addresses) = interleaved([
            (lambda: git(git_repo, "hash-object", "-w", "--stdin-paths", stdin=paths).split(),
             fresh_git), (put_all, fresh_store)], args.repeat)
        rows.append((f"write {n} loose objects", "git hash-object -w --stdin-paths", g,
                     "Store.put", c))

        loose_git, loose_store = base / "git-loose", base / "store-loose"
        shutil.copytree(git_repo, loose_git)
        shutil.copytree(store_dir, loose_store)

        def restore(src: Path, dst: Path) -> Callable[[], None]:
            def run() -> None:
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(src, dst)
            return run

        ids = b"".join(oid + b"\n" for oid in oids)

        def git_pack(*options: str) -> Callable[[], None]:
            def run() -> None:
                git(git_repo, "pack-objects", "-q", *options,
                     str(git_repo / "objects" / "pack" / "pack"), stdin=ids)
                git(git_repo, "prune-packed")
            return run

        sizes: dict[str, int] = {}

        def sized(name: str, run: Callable[[], None]) -> Callable[[], None]:
            def wrapped() -> None:
                run()
                sizes[name] = _size(git_repo / "objects" / "pack", "*.pack")
            return wrapped

        (g, _), (g0, _), (c, stats) = interleaved([
            (sized("deltas", git_pack()), restore(loose_git, git_repo)),
            (sized("window0", git_pack("--window=0")), restore(loose_git, git_repo)),
            (lambda: Store(store_dir, durable=False).repack(), restore(loose_store, store_dir)),
        ], args.repeat)
        git_pack_size, git_pack0 = sizes["deltas"], sizes["window0"]
        total = sum(map(len, items))
        rows.append((f"pack {n} loose objects", "git pack-objects + prune-packed", g,
                     "Store.repack", c))
        rows.append((f"pack {n} loose objects", "... --window=0 (no deltas)", g0,
                     "Store.repack", c))
        # leave git with the delta-compressed pack for fsck and reads
        restore(loose_git, git_repo)()
        git_pack()()

        store = Store(store_dir, durable=False)
        (g, _), (c, report) = interleaved([
            (lambda: git(git_repo, "fsck", "--full", "--no-dangling"), None),
            (store.fsck, None)], args.repeat)
        assert report.ok and report.objects == n  # type: ignore[attr-defined]
        assert not list((git_repo / "objects").glob("??"))  # git's objects are all packed
        rows.append((f"fsck {n} packed objects", "git fsck --full", g, "Store.fsck", c))

        batch, wanted = random_reads(oids, addresses)
        (g, _), (c, _), (c2, _) = interleaved([
            (cat_file(git_repo, batch), None), (lambda: store.get_many(wanted), None),
            (lambda: [store.get(a) for a in wanted], None)], args.repeat)
        rows.append((f"read {n} random objects", "git cat-file --batch", g,
                     "Store.get_many", c))
        rows.append((f"read {n} random objects", "git cat-file --batch", g,
                     "loop of Store.get", c2))

        print(f"\n{n} objects of 1 KiB ({args.data}, {total / 1e6:.1f} MB); "
              f"{subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.strip()}\n")
        print("| operation | git | s | canonkit | s | git / canonkit |")
        print("|---|---|---|---|---|---|")
        for op, gname, gt, cname, ct in rows:
            print(f"| {op} | `{gname}` | {gt:.2f} | `{cname}` | {ct:.2f} | {gt / ct:.2f}x |")
        print(f"\npack size / object bytes: canonkit {stats.ratio:.3f} "  # type: ignore[attr-defined]
              f"({stats.deflated} of {stats.objects} entries DEFLATE), "  # type: ignore[attr-defined]
              f"git {git_pack_size / total:.3f} (deltas), git --window=0 {git_pack0 / total:.3f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
