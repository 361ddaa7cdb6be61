"""What ``--journal`` costs and what a fully cached ``--cache`` run saves: a measurement
(docs/scale.md, "Resume and incremental runs").

    python bench/reverify_resume.py [--episodes 2000] [--median-segments 60] [--jobs 1]
                                    [--repeat 3]

Writes a synthetic corpus (``canonkit synth``, seed-table mix) to a temporary directory,
fills a result cache once, then runs ``canonkit reverify CORPUS --jobs N --report R``
plain, with a fresh ``--journal``, and with the filled ``--cache``, interleaved,
``--repeat`` rounds; each cell is the minimum over the rounds of the wall time and of
the CPU time (user + system) of the command and its workers. Prints a Markdown table
with the ratios to the plain run.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time


def _timed(argv: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--median-segments", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    canonkit = [sys.executable, "-m", "canonkit"]
    with tempfile.TemporaryDirectory() as d:
        corpus = os.path.join(d, "c.jsonl")
        subprocess.run([*canonkit, "synth", "--episodes", str(args.episodes), "--seed", "5",
                        "--out", corpus, "--median-segments", str(args.median_segments),
                        "--no-progress"], stdout=subprocess.DEVNULL, check=True)
        journal, cache = os.path.join(d, "j"), os.path.join(d, "cache")
        base = [*canonkit, "reverify", corpus, "--jobs", str(args.jobs), "--no-progress",
                "--report", os.path.join(d, "r.jsonl")]
        fill = _timed([*base, "--cache", cache])
        cells: dict[str, list[tuple[float, float]]] = {"plain": [], "journal": [],
                                                       "cached": []}
        for _ in range(args.repeat):
            cells["plain"].append(_timed(base))
            if os.path.exists(journal):
                os.unlink(journal)
            cells["journal"].append(_timed([*base, "--journal", journal]))
            cells["cached"].append(_timed([*base, "--cache", cache]))
        size = os.path.getsize(corpus)
    best = {k: (min(w for w, _ in v), min(c for _, c in v)) for k, v in cells.items()}
    print(f"{args.episodes} Episodes, {size / 1e6:.1f} MB, --jobs {args.jobs}, "
          f"min of {args.repeat} interleaved rounds; filling the cache: "
          f"{fill[0]:.2f} s wall, {fill[1]:.2f} s CPU\n")
    print("| run | wall s | CPU s | wall / plain | CPU / plain |")
    print("|---|---:|---:|---:|---:|")
    pw, pc = best["plain"]
    for name, (w, c) in best.items():
        print(f"| {name} | {w:.3f} | {c:.3f} | {w / pw:.3f} | {c / pc:.3f} |")


if __name__ == "__main__":
    main()
