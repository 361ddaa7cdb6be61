"""Re-verification throughput from an HTTP server against the same corpus as a local file
(docs/scale.md).

    python bench/reverify_remote.py [--episodes 3000] [--median-segments 200] [--jobs 2]
                                    [--repeat 3]

One synthetic corpus (``canonkit synth``) is written once as a local ``.jsonl`` and
served by nginx (started here on 127.0.0.1 with range requests, stopped at the end; the
suite's own ``tests/services.py``). ``canonkit.reverify.run`` verifies it on the local
pool from the file and from ``http://127.0.0.1:PORT/corpus.jsonl`` — the workers read
their byte ranges themselves, by ranged GETs — in interleaved rounds; each cell is the
best of ``--repeat``. Both runs must give the same report lines (but for the name in
``source``), or the script fails. Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from services import start_nginx  # noqa: E402  (the suite's own services)


def verify(name: str, jobs: int) -> tuple[float, list[dict[str, Any]]]:
    from canonkit import reverify

    start = time.perf_counter()
    records = [r.record for r in reverify.run([name], jobs=jobs)]
    return time.perf_counter() - start, records


def without_file(record: dict[str, Any]) -> dict[str, Any]:
    return dict(record, source={k: v for k, v in record["source"].items() if k != "file"})


def main() -> None:
    from canonkit.reverify import synthetic_corpus as synth

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--median-segments", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="canonkit-bench-") as tmp:
        work = Path(tmp)
        www = work / "www"
        www.mkdir()
        corpus = www / "corpus.jsonl"
        synth.write_corpus(args.episodes, out=str(corpus), mix="seed-table", seed=1,
                           median_segments=args.median_segments)
        size = corpus.stat().st_size
        nginx = start_nginx(www, work / "nginx")
        try:
            url = nginx.url + "corpus.jsonl"
            best = {"local file": float("inf"), "nginx (http)": float("inf")}
            reports: dict[str, list[dict[str, Any]]] = {}
            for _ in range(args.repeat):
                for label, name in (("local file", str(corpus)), ("nginx (http)", url)):
                    seconds, records = verify(name, args.jobs)
                    best[label] = min(best[label], seconds)
                    reports[label] = [without_file(r) for r in records]
        finally:
            nginx.service.stop()
    if reports["local file"] != reports["nginx (http)"]:
        raise SystemExit("the reports over the file and over HTTP differ")
    print(f"{args.episodes} Episodes (median {args.median_segments} segments, "
          f"{size / 1e6:.1f} MB), --jobs {args.jobs}, best of {args.repeat}")
    print()
    print("| input | time (s) | Episodes/s | vs local file |")
    print("|---|---:|---:|---:|")
    local = best["local file"]
    for label, seconds in best.items():
        print(f"| {label} | {seconds:.2f} | {args.episodes / seconds:,.0f} | "
              f"{local / seconds:.2f}x |")


if __name__ == "__main__":
    main()
