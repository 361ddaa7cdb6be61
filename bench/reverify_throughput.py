"""Re-verification throughput: compiled vs twin, 1 vs 2 workers, Dask vs local pool,
a time breakdown, and peak RSS of a 10x larger corpus.

    python bench/reverify_throughput.py --episodes 100000      # the issue's corpus
    python bench/reverify_throughput.py --episodes 10000       # what fits a shared box

The corpus (seed-table mix, median 200 segments) is generated on demand under --dir
(default /tmp/canonkit-reverify-bench; never in the repository) and reused when present.
Every configuration runs in its own subprocess (the twin path with
CANONKIT_NO_EXTENSIONS=1), so backends and peak RSS never mix. Prints a Markdown table;
--json writes the raw numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD_RUN = r"""
import json, resource, sys, time
import canonkit, canonkit.reverify as rv
path, engine, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = time.perf_counter()
cpu = time.process_time()
run = rv.run([path], engine=engine, jobs=jobs, progress=False)
for _ in run:
    pass
s = run.summary
import os
print(json.dumps({"episodes": s.episodes, "bytes": s.document_bytes,
                  "seconds": time.perf_counter() - t,
                  "parent_cpu_seconds": time.process_time() - cpu,
                  "loadavg_1min": os.getloadavg()[0],
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "backend": canonkit.backend().get("astp"), "counts": s.counts}))
"""

CHILD_BREAKDOWN = r"""
import json, sys, time
import orjson
import canonkit
from canonkit import astp
from canonkit.astp.documents import read_episode
from canonkit.reverify import sources, worker
path, sample = sys.argv[1], int(sys.argv[2])

def best(fn, reps=3):
    # the machine is shared: CPU time of this process, minimum of a few runs
    times = []
    for _ in range(reps):
        t = time.process_time(); fn(); times.append(time.process_time() - t)
    return min(times)

def first_items():
    out = []
    for item in sources.iter_items([path]):
        out.append(item)
        if len(out) >= sample:
            break
    return out

def safe(fn, d):
    try:
        fn(d)
    except Exception:
        pass

items = first_items()
docs = [orjson.loads(i.payload) for i in items if i.kind == "json"]
t = {"read": best(first_items),
     "parse_orjson": best(lambda: [orjson.loads(i.payload) for i in items]),
     "parse_stdlib_json": best(lambda: [json.loads(i.payload) for i in items]),
     "episode_model": best(lambda: [safe(read_episode, d) for d in docs]),
     "reproduce": best(lambda: [safe(astp.reproduce, d) for d in docs]),
     "verify": best(lambda: [worker.verify_one(i.kind, i.payload, i.source, 40320) for i in items])}
t["roots_and_search"] = max(0.0, t["reproduce"] - t["episode_model"])
t["rest"] = max(0.0, t["verify"] - t["parse_orjson"] - t["reproduce"])
t["total"] = t["read"] + t["parse_orjson"] + t["episode_model"] + t["roots_and_search"] + t["rest"]
print(json.dumps({"backend": canonkit.backend().get("astp"), "episodes": len(items),
                  "bytes": sum(len(i.payload) for i in items), **t}))
"""


def child(code: str, args: list[str], *, twin: bool = False) -> dict:
    env = dict(os.environ)
    env.pop("CANONKIT_NO_EXTENSIONS", None)
    if twin:
        env["CANONKIT_NO_EXTENSIONS"] = "1"
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ensure_corpus(directory: Path, episodes: int, median: int, seed: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"seed-table-{episodes}-m{median}-s{seed}.jsonl"
    if not path.exists():
        print(f"generating {path} ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "canonkit", "reverify", "synth",
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


def rate(r: dict, cpu: bool = False) -> str:
    wall = f"{r['episodes'] / r['seconds']:,.0f} Episodes/s, {r['bytes'] / r['seconds'] / 1e6:.1f} MB/s"
    if not cpu:
        return f"{wall} (wall)"
    c = r["parent_cpu_seconds"]
    return (f"{wall} (wall); {r['episodes'] / c:,.0f} Episodes/s, "
            f"{r['bytes'] / c / 1e6:.1f} MB/s per CPU-second")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=100_000)
    ap.add_argument("--median-segments", type=int, default=200)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--dir", default="/tmp/canonkit-reverify-bench")
    ap.add_argument("--sample", type=int, default=500, help="documents in the breakdown")
    ap.add_argument("--skip", default="", help="comma list of: twin,workers,dask,rss")
    ap.add_argument("--json", help="write the raw numbers here")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    corpus = ensure_corpus(Path(args.dir), args.episodes, args.median_segments, args.seed)
    results: dict[str, dict] = {}
    rows: list[tuple[str, str, str]] = []

    results["c_1"] = c1 = child(CHILD_RUN, [str(corpus), "local", "1"])
    rows.append(("compiled, 1 worker (in-process)", rate(c1, cpu=True), "1.00x"))
    if "twin" not in skip:
        results["py_1"] = p1 = child(CHILD_RUN, [str(corpus), "local", "1"], twin=True)
        rows.append(("twin (CANONKIT_NO_EXTENSIONS=1), 1 worker", rate(p1, cpu=True),
                     f"compiled is {p1['seconds'] / c1['seconds']:.2f}x faster (wall), "
                     f"{p1['parent_cpu_seconds'] / c1['parent_cpu_seconds']:.2f}x (CPU)"))
    if "workers" not in skip:
        results["c_2"] = c2 = child(CHILD_RUN, [str(corpus), "local", "2"])
        rows.append(("compiled, local pool, 2 workers", rate(c2),
                     f"{c1['seconds'] / c2['seconds']:.2f}x of 1 worker"))
    if "dask" not in skip:
        results["dask_2"] = d2 = child(CHILD_RUN, [str(corpus), "dask", "2"])
        base = results.get("c_2")
        rows.append(("compiled, Dask LocalCluster, 2 workers", rate(d2),
                     f"{d2['seconds'] / base['seconds']:.2f}x the local pool's time"
                     if base else "-"))
    if "rss" not in skip:
        small = prefix(corpus, max(1, args.episodes // 10))
        results["rss_small"] = rs = child(CHILD_RUN, [str(small), "local", "1"])
        rl = c1
        rows.append((f"peak RSS, {rs['episodes']:,} Episodes (1 worker)",
                     f"{rs['maxrss_kb'] / 1024:.0f} MiB", ""))
        rows.append((f"peak RSS, {rl['episodes']:,} Episodes (1 worker)",
                     f"{rl['maxrss_kb'] / 1024:.0f} MiB",
                     f"{rl['maxrss_kb'] / rs['maxrss_kb']:.2f}x"))

    breakdown = {"compiled": child(CHILD_BREAKDOWN, [str(corpus), str(args.sample)])}
    if "twin" not in skip:
        breakdown["twin"] = child(CHILD_BREAKDOWN, [str(corpus), str(args.sample)], twin=True)
    results["breakdown"] = breakdown

    size = corpus.stat().st_size
    loads = [r["loadavg_1min"] for r in results.values() if "loadavg_1min" in r]
    print(f"\ncorpus: {corpus} ({c1['episodes']:,} Episodes, {size / 1e6:,.0f} MB, "
          f"median {args.median_segments} segments, seed-table mix; 1-minute load average "
          f"during the runs {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} CPUs)\n")
    print("| configuration | throughput | ratio |\n|---|---|---|")
    for name, value, ratio in rows:
        print(f"| {name} | {value} | {ratio} |")
    print(f"\nbreakdown over the first {args.sample} documents (CPU seconds, best of 3; "
          "share of the total):\n")
    parts = ("read", "parse_orjson", "episode_model", "roots_and_search", "rest")
    print("| backend | " + " | ".join(parts) + " | total | stdlib json parse |")
    print("|---|" + "---|" * (len(parts) + 2))
    for name, b in breakdown.items():
        cells = [f"{b[p]:.2f} ({100 * b[p] / b['total']:.0f}%)" for p in parts]
        print(f"| {name} | " + " | ".join(cells) + f" | {b['total']:.2f} | {b['parse_stdlib_json']:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
