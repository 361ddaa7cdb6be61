"""What ``--journal`` costs and what a fully cached ``--cache`` run saves: a measurement
(docs/scale.md, "Resume and incremental runs").

    python bench/reverify_resume.py [--episodes 2000] [--median-segments 60] [--jobs 1]
                                    [--repeat 5] [--grow 0.01] [--corpus FILE.jsonl]
                                    [--runs plain,journal,cached,grown,moved]
                                    [--against PYTHON] [--hashing]

Writes a synthetic corpus (``canonkit synth``, seed-table mix; or takes ``--corpus``) to a
temporary directory,
fills a result cache once, then runs, interleaved, ``--repeat`` rounds of:

- ``plain``: ``reverify CORPUS --jobs N`` with no journal and no cache;
- ``journal``: the same with a fresh ``--journal``;
- ``cached``: the same with the filled ``--cache`` (every unit found whole);
- ``grown``: the corpus grown by ``--grow`` (new Episodes appended) with a copy of the
  filled cache: the ranges before the end are found whole, the new Episodes verified;
- ``moved``: the same corpus cut into other ranges (``batch_bytes`` 5 MB, the cache was
  filled with 8 MB) with a copy of the filled cache: every Episode is looked up alone.

``--against PYTHON`` runs the three cache runs with another interpreter too (another
build of canonkit, with a cache of its own), in the same rounds. ``--hashing`` measures
only the ways a client can read and hash the corpus (CPU per GB).

Each run is a fresh process. Two figures per run: the whole command (wall, and CPU =
user + system of the process and its workers), and the run alone, measured inside the
process from making the ``Run`` to its summary (the interpreter's start and imports, the
same for every variant, left out). Each cell is the minimum over the rounds; the journal's
CPU is also given as the median of its per-round ratio to the plain run of the same round,
and as the CPU of its own calls, timed inside three runs in one process, against the CPU
of every process of those runs (a figure the noise of whole runs does not drown).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

_CHILD = "--child"


def _child(spec: str) -> None:
    """Run one re-verification in this process and print its own wall and CPU time."""
    options = json.loads(spec)
    from canonkit import reverify

    start = time.perf_counter()
    before = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    run = reverify.run(options.pop("paths"), **options)
    summary = run.summary
    wall = time.perf_counter() - start
    after = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum((a.ru_utime - b.ru_utime) + (a.ru_stime - b.ru_stime)
              for a, b in zip(after, before))
    print(json.dumps({"wall": wall, "cpu": cpu, "from_cache": summary.from_cache,
                      "episodes": summary.episodes}))


_SHARE = "--journal-share"


def _journal_share(spec: str) -> None:
    """Run with a fresh journal three times in this process, timing the journal's own
    calls (``unit_key``, ``Journal.open/get/record/close``) against the CPU of every
    process of the run; print the three shares."""
    from canonkit import reverify
    from canonkit.reverify import journal, runner

    options = json.loads(spec)
    spent = [0.0]

    def timed(owner: object, name: str) -> None:
        call = getattr(owner, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            start = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - start

        setattr(owner, name, wrapper)

    timed(runner, "unit_key")
    for name in ("open", "get", "record", "close"):
        timed(journal.Journal, name)

    def cpu() -> float:
        return sum(u.ru_utime + u.ru_stime for u in
                   (resource.getrusage(resource.RUSAGE_SELF),
                    resource.getrusage(resource.RUSAGE_CHILDREN)))

    shares = []
    for _ in range(3):
        if os.path.exists(options["journal"]):
            os.unlink(options["journal"])
        spent[0] = 0.0
        start = cpu()
        reverify.run(options["paths"],
                     **{k: v for k, v in options.items() if k != "paths"}).summary
        shares.append((spent[0], cpu() - start))
    print(json.dumps(shares))


def _timed(spec: dict[str, object], python: str = sys.executable) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([python, __file__, _CHILD, json.dumps(spec)],
                          capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    inner = json.loads(done.stdout.splitlines()[-1])
    return {"cmd_wall": wall,
            "cmd_cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "run_wall": inner["wall"], "run_cpu": inner["cpu"],
            "from_cache": inner["from_cache"], "episodes": inner["episodes"]}


def _hashing(path: str, rounds: int) -> None:
    """CPU of reading a file's bytes and hashing them with BLAKE3, by 8 MiB ranges, each
    way a client could: read into one range-sized buffer, read ``HASH_BLOCK`` at a time
    into a small one, or hash a memory map (as it is, or populated at once); and the
    hash alone, of a buffer already in the CPU's cache."""
    import mmap

    from blake3 import blake3

    size = os.path.getsize(path)
    span = 8 << 20

    def in_range_buffer() -> None:
        view = memoryview(bytearray(span))
        with open(path, "rb", buffering=0) as f:
            while got := f.readinto(view):
                blake3(view[:got]).digest()

    def in_small_blocks(block: int) -> None:
        view = memoryview(bytearray(block))
        with open(path, "rb", buffering=0) as f:
            for start in range(0, size, span):
                digest, at, end = blake3(), start, min(size, start + span)
                while at < end:
                    got = os.preadv(f.fileno(), [view[:min(block, end - at)]], at)
                    digest.update(view[:got])
                    at += got
                digest.digest()

    def mapped(flags: int) -> None:
        with open(path, "rb") as f:
            with mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | flags,
                           prot=mmap.PROT_READ) as m:
                view = memoryview(m)
                for start in range(0, size, span):
                    blake3(view[start:start + span]).digest()
                view.release()

    hot = bytes(1 << 20)
    ways = {
        "read into an 8 MiB buffer, hash": in_range_buffer,
        "read 1 MiB at a time, hash": lambda: in_small_blocks(1 << 20),
        "read 256 KiB at a time, hash": lambda: in_small_blocks(256 << 10),
        "read 64 KiB at a time, hash": lambda: in_small_blocks(64 << 10),
        "memory map, hash": lambda: mapped(0),
        "memory map (MAP_POPULATE), hash": lambda: mapped(getattr(mmap, "MAP_POPULATE", 0)),
        "hash alone (a 1 MiB buffer in cache)": lambda: [blake3(hot).digest()
                                                          for _ in range(size >> 20)],
    }
    cpu: dict[str, list[float]] = {k: [] for k in ways}
    for _ in range(rounds):
        for name, way in ways.items():
            start = time.process_time()
            way()
            cpu[name].append(time.process_time() - start)
    print(f"reading and hashing {size / 1e6:.0f} MB (page cache), CPU, min of {rounds} "
          "interleaved rounds\n\n| way | CPU s | GB/s per core |\n|---|---:|---:|")
    for name, seconds in cpu.items():
        print(f"| {name} | {min(seconds):.3f} | {size / min(seconds) / 1e9:.2f} |")


_CACHE_RUNS = ("cached", "grown", "moved")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == _CHILD:
        _child(sys.argv[2])
        return
    if len(sys.argv) == 3 and sys.argv[1] == _SHARE:
        _journal_share(sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--median-segments", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--grow", type=float, default=0.01)
    ap.add_argument("--corpus", help="an existing JSON-lines corpus instead of a new one")
    ap.add_argument("--runs", default="plain,journal,cached,grown,moved",
                    help="which runs (plain is always one)")
    ap.add_argument("--against", metavar="PYTHON",
                    help="also the cache runs with this interpreter (another build), with a "
                         "cache of its own, interleaved")
    ap.add_argument("--hashing", action="store_true",
                    help="only the ways of reading and hashing the corpus")
    args = ap.parse_args()
    wanted = {"plain", *args.runs.split(",")}
    canonkit = [sys.executable, "-m", "canonkit"]
    builds = {"": sys.executable, **({" (against)": args.against} if args.against else {})}
    with tempfile.TemporaryDirectory() as d:
        corpus, extra = os.path.join(d, "c.jsonl"), os.path.join(d, "extra.jsonl")
        if args.corpus:
            os.symlink(os.path.abspath(args.corpus), corpus)
            with open(corpus, "rb") as f:
                args.episodes = sum(1 for _ in f)
        for out, n, seed in ((corpus, args.episodes, 5),
                             (extra, max(1, int(args.episodes * args.grow)), 6)):
            if out == corpus and args.corpus:
                continue
            subprocess.run([*canonkit, "synth", "--episodes", str(n), "--seed", str(seed),
                            "--out", out, "--median-segments", str(args.median_segments),
                            "--no-progress"], stdout=subprocess.DEVNULL, check=True)
        if args.hashing:
            _hashing(corpus, args.repeat)
            return
        grown = os.path.join(d, "grown.jsonl")
        with open(grown, "wb") as f:
            for part in (corpus, extra):
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, f)
        journal, copy = os.path.join(d, "j"), os.path.join(d, "copy")
        base = {"paths": [corpus], "jobs": args.jobs, "report": os.path.join(d, "r.jsonl")}
        caches = {b: os.path.join(d, f"cache{n}") for n, b in enumerate(builds)}
        fill = {b: _timed({**base, "cache": caches[b]}, python) for b, python in builds.items()}
        names = ["plain", *(f"{k}{b}" for k in ("journal", *_CACHE_RUNS) if k in wanted
                            for b in (builds if k in _CACHE_RUNS else [""]))]
        cells: dict[str, list[dict[str, float]]] = {k: [] for k in names}
        for _ in range(args.repeat):
            cells["plain"].append(_timed(base))
            if "journal" in wanted:
                if os.path.exists(journal):
                    os.unlink(journal)
                cells["journal"].append(_timed({**base, "journal": journal}))
            for b, python in builds.items():
                cache = caches[b]
                if "cached" in wanted:
                    cells[f"cached{b}"].append(_timed({**base, "cache": cache}, python))
                if "grown" in wanted:
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(cache, copy)
                    cells[f"grown{b}"].append(
                        _timed({**base, "paths": [grown], "cache": copy}, python))
                if "moved" in wanted:
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(cache, copy)
                    cells[f"moved{b}"].append(
                        _timed({**base, "cache": copy, "batch_bytes": 5_000_000}, python))
        share = None
        if "journal" in wanted:
            done = subprocess.run([sys.executable, __file__, _SHARE,
                                   json.dumps({**base, "journal": journal})],
                                  capture_output=True, text=True, check=True)
            share = json.loads(done.stdout.splitlines()[-1])
        size = os.path.getsize(corpus)
        cache_bytes = sum(os.path.getsize(os.path.join(r, f))
                          for r, _, fs in os.walk(caches[""]) for f in fs)
    grew = (f"; grown by {args.grow:.0%}: from_cache {cells['grown'][0]['from_cache']:.0f} of "
            f"{cells['grown'][0]['episodes']:.0f}" if "grown" in cells else "")
    print(f"{args.episodes} Episodes, {size / 1e6:.1f} MB, --jobs {args.jobs}, min of "
          f"{args.repeat} interleaved rounds; filling the cache: {fill['']['run_wall']:.2f} s "
          f"wall, {fill['']['run_cpu']:.2f} s CPU (run alone); cache {cache_bytes / 1e6:.2f} MB"
          f"{grew}\n")
    print("| run | command wall s | command CPU s | run wall s | run CPU s "
          "| run wall / plain | run CPU / plain |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    best = {k: {f: min(c[f] for c in v) for f in v[0]} for k, v in cells.items()}
    plain = best["plain"]
    for name, b in best.items():
        print(f"| {name} | {b['cmd_wall']:.3f} | {b['cmd_cpu']:.3f} | {b['run_wall']:.3f} "
              f"| {b['run_cpu']:.3f} | {b['run_wall'] / plain['run_wall']:.3f} "
              f"| {b['run_cpu'] / plain['run_cpu']:.3f} |")
    if "journal" in cells:
        ratios = [j["run_cpu"] / p["run_cpu"]
                  for j, p in zip(cells["journal"], cells["plain"])]
        print(f"\njournal run CPU / plain, per round: "
              f"{', '.join(f'{r:.3f}' for r in ratios)} "
              f"(median {statistics.median(ratios):.3f})")
    if share is not None:
        print("the journal's own calls, timed in-process: " + ", ".join(
            f"{own * 1e3:.1f} ms of {total:.3f} s = {own / total:.2%}" for own, total in share))
    for b in builds:
        if f"cached{b}" in cells:
            for what in ("wall", "cpu"):
                speed = [p[f"run_{what}"] / c[f"run_{what}"]
                         for p, c in zip(cells["plain"], cells[f"cached{b}"])]
                print(f"plain / cached{b} run {what}, per round: "
                      f"{', '.join(f'{r:.1f}' for r in speed)}")


if __name__ == "__main__":
    main()
