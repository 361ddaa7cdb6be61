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
from reverify_throughput import (  # noqa: E402
    CHILD_RUN, DaskProcesses, child, corpus_arguments, corpus_of)

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
    """The units a two-worker Dask run sends, and what one unit's result weighs pickled."""
    from canonkit.reverify.ranges import chunk_bytes_for, plan_ranges
    from canonkit.reverify.runner import DASK_BATCH_BYTES
    from canonkit.reverify.units import LineRange, verify_unit

    size = corpus.stat().st_size
    spans = list(plan_ranges(str(corpus), chunk_bytes_for(size, 2, DASK_BATCH_BYTES)))
    first = LineRange(str(corpus), str(corpus), *spans[0], True)
    verify_unit(first, 40320)  # (imports and warm-up)
    start = time.process_time()
    result = verify_unit(first, 40320)
    seconds = time.process_time() - start
    return {"tasks": len(spans), "task_bytes": spans[0][1] - spans[0][0],
            "result_bytes": len(pickle.dumps(result)), "task_cpu": seconds,
            "episodes": len(result.verdicts), "unit_bytes": len(pickle.dumps(first))}


#: a cluster started with the worker's statistical profiler off and a slower system
#: monitor (what a LocalCluster of the engine is given: canonkit.engines.dask)
QUIET = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
         "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "5s"}


def _cpu_by_role(cluster: DaskProcesses) -> dict[str, float]:
    """CPU seconds so far of the cluster's scheduler, nannies and workers."""
    import psutil

    out = {"scheduler": 0.0, "nannies": 0.0, "workers": 0.0}
    for n, pid in enumerate(cluster.pids):
        top = psutil.Process(pid)
        for p in [top, *top.children(recursive=True)]:
            t = p.cpu_times()
            role = "scheduler" if n == 0 else ("nannies" if p.pid == pid else "workers")
            out[role] += t.user + t.system
    return out


def _cluster_run(corpus: Path, cluster: DaskProcesses, address: str) -> dict:
    before = _cpu_by_role(cluster)
    result = child(CHILD_RUN, [str(corpus), "dask", "2", address], also=cluster.pids)
    after = _cpu_by_role(cluster)
    result.update({role: after[role] - before[role] for role in after})
    return result


def _compare(corpus: Path, rounds: int, env: dict[str, str] | None
             ) -> tuple[dict, list[dict], list[dict]]:
    """A cold run, then ``rounds`` interleaved rounds of the pool and the cluster."""
    pool: list[dict] = []
    runs: list[dict] = []
    cluster = DaskProcesses(2, env)
    with cluster as address:
        cold = _cluster_run(corpus, cluster, address)
        for _ in range(rounds):
            pool.append(child(CHILD_RUN, [str(corpus), "local", "2", ""]))
            runs.append(_cluster_run(corpus, cluster, address))
    return cold, pool, runs


def _best(runs: list[dict]) -> dict:
    return {f: min(r[f] for r in runs) for f in runs[0] if isinstance(runs[0][f], float)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus_arguments(ap, 30_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quiet-workers", action="store_true",
                    help="also a cluster whose workers run no profiler (QUIET)")
    args = ap.parse_args()
    # the dask command of this interpreter's environment
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    corpus = corpus_of(args)
    variants = {"defaults": None, **({"quiet workers": QUIET} if args.quiet_workers else {})}
    results = {name: _compare(corpus, args.rounds, env) for name, env in variants.items()}
    local = [child(CHILD_LOCAL_CLUSTER, []) for _ in range(2)]
    pieces = _task_pieces(corpus)
    episodes = next(iter(results.values()))[0]["episodes"]
    size = corpus.stat().st_size
    print(f"corpus: {corpus} ({episodes:,} Episodes, {size / 1e9:.2f} GB) on "
          f"{os.cpu_count()} CPUs; min of {args.rounds} interleaved rounds\n")
    print("| engine | wall s | per-worker rate (wall) | wall / pool | all CPU s "
          "| client CPU s | workers' CPU s | scheduler + nannies CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (cold, pool, runs) in results.items():
        p, c = _best(pool), _best(runs)
        pool_workers = p["total_cpu_seconds"] - p["parent_cpu_seconds"]
        rows = [(f"local pool, --jobs 2 (with {name})", p, pool_workers, 0.0),
                (f"running cluster, {name}", c, c["workers"], c["scheduler"] + c["nannies"]),
                (f"the same, first run (workers cold)", cold, cold["workers"],
                 cold["scheduler"] + cold["nannies"])]
        for label, b, workers, rest in rows:
            print(f"| {label} | {b['seconds']:.2f} | {episodes / b['seconds'] / 2:.0f} "
                  f"Episodes/s | {b['seconds'] / p['seconds']:.3f} "
                  f"| {b['total_cpu_seconds']:.1f} | {b['parent_cpu_seconds']:.2f} "
                  f"| {workers:.1f} | {rest:.1f} |")
        ratios = [r["seconds"] / q["seconds"] for q, r in zip(pool, runs)]
        cpu = [(r["workers"]) / (q["total_cpu_seconds"] - q["parent_cpu_seconds"])
               for q, r in zip(pool, runs)]
        print(f"\n{name}: cluster / pool wall, per round: "
              f"{', '.join(f'{r:.3f}' for r in ratios)} (median {statistics.median(ratios):.3f});"
              f" cluster workers' CPU / pool workers' CPU: {', '.join(f'{r:.3f}' for r in cpu)};"
              f" the client's import of distributed, outside the timing, as canonkit's is: "
              f"{min(r['import_seconds'] for r in runs):.2f} s\n")
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
