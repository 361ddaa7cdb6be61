"""Re-verification throughput: the cost of verifying against the cost of parsing, compiled
vs twin, 1 vs 2 workers, the local pool vs Dask (a LocalCluster, and a separate
``dask scheduler`` + 2 ``dask worker`` processes), a time breakdown, and peak RSS.

    python bench/reverify_throughput.py --episodes 10000
    python bench/reverify_throughput.py --episodes 30000 --skip twin,rss,parse

The corpus (seed-table mix, median 200 segments) is generated on demand under --dir
(default /tmp/canonkit-reverify-bench; never in the repository) and reused when present.
Every configuration runs in its own subprocess (the twin path with
CANONKIT_NO_EXTENSIONS=1), so backends and peak RSS never mix. CPU-time ratios from one
process are the signal, wall times vary with what else the cores run (docs/performance.md,
How we measure). Prints Markdown; --json writes the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD_RUN = r"""
import json, resource, sys, time
import canonkit, canonkit.reverify as rv
path, engine, jobs, scheduler = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] or None
# imports stay outside the timing, canonkit's above and, for Dask, distributed's (0.4 s
# of CPU, once per client process), which the engine would otherwise import in the run
t = time.perf_counter()
if engine == "dask":
    import distributed
imported = time.perf_counter() - t
t = time.perf_counter()
cpu = time.process_time()
run = rv.run([path], engine=engine, jobs=jobs, scheduler=scheduler, progress=False)
for _ in run:
    pass
s = run.summary
print(json.dumps({"episodes": s.episodes, "bytes": s.document_bytes,
                  "seconds": time.perf_counter() - t, "import_seconds": imported,
                  "parent_cpu_seconds": time.process_time() - cpu,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "backend": canonkit.backend().get("astp"), "counts": s.counts}))
"""

# Verification against parsing, in one process: CPU seconds of orjson.loads over every
# document (lines held in memory), then of a whole in-process run of the same file
# (reading, verifying, report lines), minimum of a few rounds each, interleaved.
CHILD_PARSE_RATIO = r"""
import json, sys, time
import orjson
import canonkit.reverify as rv
path, rounds = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as f:
    lines = f.readlines()
def parse():
    loads = orjson.loads
    for line in lines:
        loads(line)
def verify():
    for _ in rv.run([path], jobs=1, progress=False):
        pass
best = {"parse": [], "verify": []}
for _ in range(rounds):
    for name, fn in (("parse", parse), ("verify", verify)):
        t = time.process_time(); fn(); best[name].append(time.process_time() - t)
p, v = min(best["parse"]), min(best["verify"])
print(json.dumps({"episodes": len(lines), "bytes": sum(map(len, lines)), "parse": p,
                  "verify": v, "ratio": v / p}))
"""

# Where the time of verifying goes, over the first documents: reading lines; the scanner
# kernel's scan alone; its verdict on top of the scan (the seal checks, the roots and the
# tie searches of the Episodes it decides, in C); the general path of the Episodes it
# declines (the Episode reader and reproduce, from the same scan); and the rest of a
# verify_one (the worker and the report line). Minimum of rounds, interleaved.
CHILD_BREAKDOWN = r"""
import json, sys, time
import orjson
import canonkit
from canonkit.astp._live import scanner
from canonkit.astp.documents import Segment, Signal, episode_from_scan, read_episode
from canonkit.astp.reproduce import reproduce
from canonkit.reverify import sources, worker
path, sample, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def first_items():
    out = []
    for item in sources.iter_items([sources.Input(path, "jsonl")]):
        out.append(item)
        if len(out) >= sample:
            break
    return out

def read():  # each document let go once read (a run holds one unit's batch at a time)
    for n, _ in enumerate(sources.iter_items([sources.Input(path, "jsonl")]), 1):
        if n >= sample:
            break

def safe(fn, *args):
    try:
        return fn(*args)
    except Exception:
        return None

items = first_items()
payloads = [i.payload for i in items if i.kind == "json"]
declined = [p for p in payloads if safe(scanner.scan_verdict, p, Segment, Signal)
            and scanner.scan_verdict(p, Segment, Signal)[0] is None]

def parse():
    for p in payloads:
        orjson.loads(p)

def scan():
    for p in payloads:
        scanner.scan_episode(p, Segment, Signal)

def kernel():
    for p in payloads:
        safe(scanner.scan_verdict, p, Segment, Signal)

def kernel_declined():
    for p in declined:
        safe(scanner.scan_verdict, p, Segment, Signal)

def general():  # the declined documents, from the kernel's scan on
    for p in declined:
        found = safe(scanner.scan_verdict, p, Segment, Signal)
        episode = found and safe(episode_from_scan, found[1])
        if episode is not None:
            safe(reproduce, episode)

def general_reader():
    for p in payloads:
        safe(read_episode, orjson.loads(p))

def verify():
    for i in items:
        worker.verify_one(i.kind, i.payload, i.source, 40320)

fns = {"read": read, "parse_orjson": parse, "scan": scan, "kernel": kernel,
       "kernel_declined": kernel_declined, "general": general, "verify": verify,
       "episode_general": general_reader}
t = {k: float("inf") for k in fns}
for _ in range(rounds):
    for name, fn in fns.items():
        c = time.process_time(); fn(); t[name] = min(t[name], time.process_time() - c)
t["verdict"] = max(0.0, t["kernel"] - t["scan"])
t["general"] = max(0.0, t["general"] - t["kernel_declined"])
t["rest"] = max(0.0, t["verify"] - t["kernel"] - t["general"])
t["total"] = t["read"] + t["verify"]
print(json.dumps({"backend": canonkit.backend().get("astp"), "episodes": len(items),
                  "declined": len(declined), "bytes": sum(len(i.payload) for i in items), **t}))
"""


def _children_cpu() -> float:
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def child(code: str, args: list[str], *, twin: bool = False,
          also: list[int] | None = None) -> dict:
    """Run ``code`` in a fresh interpreter; its JSON result, plus ``total_cpu_seconds``:
    the CPU of that process and of every process it started (reaped descendants count in
    RUSAGE_CHILDREN), and of the processes ``also`` (a separate Dask cluster)."""
    import psutil

    env = dict(os.environ)
    env.pop("CANONKIT_NO_EXTENSIONS", None)
    if twin:
        env["CANONKIT_NO_EXTENSIONS"] = "1"

    def external() -> float:
        total = 0.0
        for pid in also or ():
            for p in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
        return total

    before, outside = _children_cpu(), external()
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                         capture_output=True, text=True)
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])
    result["total_cpu_seconds"] = _children_cpu() - before + external() - outside
    return result


def ensure_corpus(directory: Path, episodes: int, median: int, seed: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"seed-table-{episodes}-m{median}-s{seed}.jsonl"
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "canonkit", "synth", "--no-progress",
                        "--episodes", str(episodes), "--mix", "seed-table", "--seed", str(seed),
                        "--median-segments", str(median), "--out", str(path) + ".tmp.jsonl",
                        "--answers", str(path) + ".answers"], check=True)
        os.replace(str(path) + ".tmp.jsonl", path)
    return path


def prefix(path: Path, lines: int) -> Path:
    out = path.with_name(path.stem + f".first{lines}.jsonl")
    if not out.exists():
        with open(path, "rb") as src, open(out, "wb") as dst:
            for i, line in enumerate(src):
                if i >= lines:
                    break
                dst.write(line)
    return out


class DaskProcesses:
    """A ``dask scheduler`` and two single-threaded ``dask worker`` processes on this
    machine (no dashboards), stopped again on exit — as a user with a cluster would run
    ``canonkit reverify --engine dask --scheduler ADDRESS``."""

    def __init__(self, workers: int = 2, env: dict[str, str] | None = None) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="canonkit-dask-")
        self.file = os.path.join(self._dir.name, "scheduler.json")
        self.workers = workers
        self.env = None if env is None else {**os.environ, **env}
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def __enter__(self) -> str:
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
                 "start_new_session": True, "env": self.env}
        self.procs.append(subprocess.Popen(
            ["dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", self.file], **quiet))  # type: ignore[call-overload]
        for _ in range(self.workers):
            self.procs.append(subprocess.Popen(
                ["dask", "worker", "--scheduler-file", self.file, "--nthreads", "1",
                 "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1"],
                **quiet))  # type: ignore[call-overload]
        deadline = time.monotonic() + 120
        from dask.distributed import Client

        while not os.path.exists(self.file):
            if time.monotonic() > deadline:
                raise RuntimeError("the dask scheduler did not start")
            time.sleep(0.2)
        with Client(scheduler_file=self.file) as client:
            client.wait_for_workers(self.workers, timeout=120)
            return str(client.scheduler.address)

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self._dir.cleanup()


def _versus(r: dict, base: dict | None) -> str:
    """Wall time against the local pool's (the target), and the CPU every process of the
    run used against the pool's: the second shows the engine's own cost without the noise
    of what else runs on the cores."""
    if not base:
        return "-"
    return (f"{r['seconds'] / base['seconds']:.2f}x the local pool's time (target <= 1.3x); "
            f"{r['total_cpu_seconds'] / base['total_cpu_seconds']:.2f}x its CPU "
            f"({r['total_cpu_seconds']:.0f} s vs {base['total_cpu_seconds']:.0f} s)")


def rate(r: dict, cpu: bool = False) -> str:
    wall = f"{r['episodes'] / r['seconds']:,.0f} Episodes/s, {r['bytes'] / r['seconds'] / 1e6:.1f} MB/s"
    if not cpu:
        return f"{wall} (wall)"
    c = r["parent_cpu_seconds"]
    return (f"{wall} (wall); {r['episodes'] / c:,.0f} Episodes/s, "
            f"{r['bytes'] / c / 1e6:.1f} MB/s per CPU-second")


def corpus_arguments(ap: argparse.ArgumentParser, episodes: int) -> None:
    """The options that choose (or make) the corpus: ``corpus_of`` reads them."""
    ap.add_argument("--episodes", type=int, default=episodes)
    ap.add_argument("--median-segments", type=int, default=200)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--dir", default="/tmp/canonkit-reverify-bench")
    ap.add_argument("--corpus", help="an existing corpus to use instead of generating one")


def corpus_of(args: argparse.Namespace) -> Path:
    return (Path(args.corpus) if args.corpus else
            ensure_corpus(Path(args.dir), args.episodes, args.median_segments, args.seed))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    corpus_arguments(ap, 10_000)
    ap.add_argument("--sample", type=int, default=500, help="documents in the breakdown")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the parse ratio")
    ap.add_argument("--skip", default="",
                    help="comma list of: parse,single,twin,workers,dask,scheduler,rss,breakdown")
    ap.add_argument("--json", help="write the raw numbers here")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    corpus = corpus_of(args)
    results: dict[str, dict] = {}
    rows: list[tuple[str, str, str]] = []

    if "parse" not in skip:
        results["parse_ratio"] = pr = child(CHILD_PARSE_RATIO, [str(corpus), str(args.rounds)])
        rows.append(("verification CPU / orjson.loads CPU (in-process run, every document)",
                     f"{pr['verify']:.2f} s / {pr['parse']:.2f} s",
                     f"**{pr['ratio']:.2f}x** (target <= 1.5x)"))
    c1 = None
    if "single" not in skip:
        results["c_1"] = c1 = child(CHILD_RUN, [str(corpus), "local", "1", ""])
        rows.append(("compiled, 1 worker (in-process)", rate(c1, cpu=True), "1.00x"))
    if "twin" not in skip and c1:
        results["py_1"] = p1 = child(CHILD_RUN, [str(corpus), "local", "1", ""], twin=True)
        rows.append(("twin (CANONKIT_NO_EXTENSIONS=1), 1 worker", rate(p1, cpu=True),
                     f"compiled is {p1['seconds'] / c1['seconds']:.2f}x faster (wall), "
                     f"{p1['parent_cpu_seconds'] / c1['parent_cpu_seconds']:.2f}x (CPU)"))
    base = None
    if "workers" not in skip:
        results["c_2"] = base = child(CHILD_RUN, [str(corpus), "local", "2", ""])
        rows.append(("compiled, local pool, 2 workers", rate(base),
                     f"{c1['seconds'] / base['seconds']:.2f}x of 1 worker" if c1 else "1.00x"))
    if "dask" not in skip:
        results["dask_2"] = d2 = child(CHILD_RUN, [str(corpus), "dask", "2", ""])
        rows.append(("compiled, Dask LocalCluster, 2 workers", rate(d2),
                     _versus(d2, base)))
    if "scheduler" not in skip:
        cluster = DaskProcesses(2)
        with cluster as address:
            results["dask_sched"] = ds = child(CHILD_RUN, [str(corpus), "dask", "2", address],
                                               also=cluster.pids)
        rows.append(("compiled, dask scheduler + 2 dask workers (--scheduler)", rate(ds),
                     _versus(ds, base)))
    if "rss" not in skip and c1:
        small = prefix(corpus, max(1, args.episodes // 10))
        results["rss_small"] = rs = child(CHILD_RUN, [str(small), "local", "1", ""])
        rows.append((f"peak RSS, {rs['episodes']:,} Episodes (1 worker)",
                     f"{rs['maxrss_kb'] / 1024:.0f} MiB", ""))
        rows.append((f"peak RSS, {c1['episodes']:,} Episodes (1 worker)",
                     f"{c1['maxrss_kb'] / 1024:.0f} MiB",
                     f"{c1['maxrss_kb'] / rs['maxrss_kb']:.2f}x"))

    size = corpus.stat().st_size
    episodes = next((r["episodes"] for r in results.values() if "episodes" in r), None)
    count = "?" if episodes is None else f"{episodes:,}"  # (only the breakdown was asked for)
    print(f"\ncorpus: {corpus} ({count} Episodes, {size / 1e6:,.0f} MB, "
          f"median {args.median_segments} segments, seed-table mix) on {os.cpu_count()} CPUs\n")
    print("| configuration | throughput | ratio |\n|---|---|---|")
    for name, value, ratio in rows:
        print(f"| {name} | {value} | {ratio} |")
    if "breakdown" not in skip:
        sample_args = [str(corpus), str(args.sample), str(args.rounds)]
        breakdown = {"compiled": child(CHILD_BREAKDOWN, sample_args)}
        if "twin" not in skip:
            breakdown["twin"] = child(CHILD_BREAKDOWN, sample_args, twin=True)
        results["breakdown"] = breakdown
        print(f"\nbreakdown over the first {args.sample} documents (CPU seconds, minimum of "
              f"{args.rounds} interleaved rounds; scan + verdict: the scanner kernel, general: "
              f"the documents it leaves to the Episode reader and reproduce):\n")
        parts = ("read", "scan", "verdict", "general", "rest")
        print("| backend | " + " | ".join(parts) + " | total | orjson.loads | declined | "
              "general reader |")
        print("|---|" + "---|" * (len(parts) + 4))
        for name, b in breakdown.items():
            cells = [f"{b[p]:.3f} ({100 * b[p] / b['total']:.0f}%)" for p in parts]
            print(f"| {name} | " + " | ".join(cells)
                  + f" | {b['total']:.3f} | {b['parse_orjson']:.3f} | {b['declined']} |"
                  f" {b['episode_general']:.3f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
