"""Re-verification on an already running Dask cluster against the local pool, interleaved,
with where the cluster's time goes and what starting a ``LocalCluster`` costs.

    python bench/reverify_cluster.py [--episodes 30000] [--rounds 3] [--corpus PATH]

Starts a ``dask scheduler`` and two ``dask worker --nthreads 1`` processes (default
nannies; ``reverify_throughput.DaskProcesses``) and keeps them up; then, in fresh
processes, interleaved: ``reverify --jobs 2`` (the local pool) and ``reverify --engine dask
--scheduler ADDRESS``. The first cluster run is reported apart (its workers import
canonkit then); the table gives the minimum over ``--rounds`` of the wall time and the CPU
of every process of the run (parent, pool workers, and the scheduler, nannies and workers
of the cluster), and the per-worker rate (Episodes per second per worker). Then the
pieces of a cluster run: tasks and their size, the pickled size of one task's result,
the client's CPU, the workers' CPU against the pool workers'; and, alone, the start-up
and shut-down of a ``LocalCluster`` of two workers.
"""
from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reverify_throughput import CHILD_RUN, DaskProcesses, child, ensure_corpus  # noqa: E402

CHILD_LOCAL_CLUSTER = r"""
import json, time
t = time.perf_counter()
from canonkit.engines.dask import DaskEngine
imported = time.perf_counter()
engine = DaskEngine(2)
up = time.perf_counter()
engine.close()
print(json.dumps({"import": imported - t, "start": up - imported,
                  "close": time.perf_counter() - up}))
"""


def _task_pieces(corpus: Path) -> dict[str, float]:
    """The units a two-worker run sends, and what one unit's result weighs pickled."""
    from canonkit.reverify.ranges import chunk_bytes_for, plan_ranges
    from canonkit.reverify.runner import DEFAULT_BATCH_BYTES
    from canonkit.reverify.units import LineRange, verify_unit

    size = corpus.stat().st_size
    spans = list(plan_ranges(str(corpus), chunk_bytes_for(size, 2, DEFAULT_BATCH_BYTES)))
    first = LineRange(str(corpus), str(corpus), *spans[0], True)
    start = time.process_time()
    result = verify_unit(first, 40320)
    seconds = time.process_time() - start
    return {"tasks": len(spans), "task_bytes": spans[0][1] - spans[0][0],
            "result_bytes": len(pickle.dumps(result)), "task_cpu": seconds,
            "episodes": len(result.verdicts), "unit_bytes": len(pickle.dumps(first))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=30_000)
    ap.add_argument("--median-segments", type=int, default=200)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--dir", default="/tmp/canonkit-reverify-bench")
    ap.add_argument("--corpus", help="an existing corpus to use instead of generating one")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    # the dask command of this interpreter's environment
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    corpus = (Path(args.corpus) if args.corpus else
              ensure_corpus(Path(args.dir), args.episodes, args.median_segments, args.seed))
    runs: dict[str, list[dict]] = {"pool": [], "cluster": []}
    cluster = DaskProcesses(2)
    with cluster as address:
        cold = child(CHILD_RUN, [str(corpus), "dask", "2", address], also=cluster.pids)
        for _ in range(args.rounds):
            runs["pool"].append(child(CHILD_RUN, [str(corpus), "local", "2", ""]))
            runs["cluster"].append(child(CHILD_RUN, [str(corpus), "dask", "2", address],
                                         also=cluster.pids))
    local = [child(CHILD_LOCAL_CLUSTER, []) for _ in range(2)]
    pieces = _task_pieces(corpus)
    episodes = cold["episodes"]
    size = corpus.stat().st_size
    print(f"corpus: {corpus} ({episodes:,} Episodes, {size / 1e9:.2f} GB) on "
          f"{os.cpu_count()} CPUs; min of {args.rounds} interleaved rounds\n")
    print("| engine | wall s | per-worker rate | all processes' CPU s | client CPU s "
          "| wall / pool |")
    print("|---|---:|---:|---:|---:|---:|")
    best = {k: {f: min(r[f] for r in v) for f in ("seconds", "total_cpu_seconds",
                                                   "parent_cpu_seconds")}
            for k, v in runs.items()}
    rows = [("local pool, --jobs 2", best["pool"]),
            ("running cluster (scheduler + 2 workers)", best["cluster"]),
            ("the same, first run (workers cold)", {k: cold[k] for k in best["pool"]})]
    for name, b in rows:
        print(f"| {name} | {b['seconds']:.2f} | {episodes / b['seconds'] / 2:.0f} Episodes/s "
              f"| {b['total_cpu_seconds']:.1f} | {b['parent_cpu_seconds']:.2f} "
              f"| {b['seconds'] / best['pool']['seconds']:.3f} |")
    ratios = [c["seconds"] / p["seconds"] for p, c in zip(runs["pool"], runs["cluster"])]
    print(f"\ncluster / pool wall, per round: {', '.join(f'{r:.3f}' for r in ratios)} "
          f"(median {statistics.median(ratios):.3f})")
    print(f"tasks: {pieces['tasks']} byte ranges of {pieces['task_bytes'] / 1e6:.1f} MB "
          f"(a task pickles to {pieces['unit_bytes']} bytes); one task: "
          f"{pieces['episodes']} Episodes, {pieces['task_cpu']:.2f} s CPU, its result "
          f"{pieces['result_bytes'] / 1e3:.0f} kB pickled "
          f"({pieces['result_bytes'] * pieces['tasks'] / 1e6:.0f} MB for the run)")
    print("LocalCluster of 2 workers, alone: " + "; ".join(
        f"import {r['import']:.2f} s, start {r['start']:.2f} s, close {r['close']:.2f} s"
        for r in local))


if __name__ == "__main__":
    main()
