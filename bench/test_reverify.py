"""Re-verification benchmarks (pytest-benchmark; run from the bench root):

    python -m pytest bench/test_reverify.py --benchmark-json=/tmp/rv.json --benchmark-min-rounds=1
    python bench/report.py /tmp/rv.json

Each contender is a whole ``canonkit reverify`` run in a subprocess over the same
generated corpus (seed-table mix, median 200 segments; REVERIFY_BENCH_EPISODES, default
1000, written under /tmp and reused), so the compiled and twin backends never share a
process and the engines pay their real start-up. Groups:

- ``reverify:<corpus>``: canonkit-c vs canonkit-py (CANONKIT_NO_EXTENSIONS=1), 1 worker;
- ``reverify-engines:<corpus>``: local pool with 2 workers (baseline, "canonkit-c"),
  1 worker, and a Dask LocalCluster with 2 workers.

bench/reverify_throughput.py measures the same at 10k–100k Episodes, with a breakdown and
peak RSS.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EPISODES = int(os.environ.get("REVERIFY_BENCH_EPISODES", "1000"))
BENCH_DIR = Path(os.environ.get("REVERIFY_BENCH_DIR", "/tmp/canonkit-reverify-bench"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    from canonkit.reverify.synthetic_corpus import write_corpus

    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    path = BENCH_DIR / f"seed-table-{EPISODES}-m200-s100.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".tmp.jsonl")
        write_corpus(EPISODES, out=str(tmp), mix="seed-table", seed=100, median_segments=200)
        os.replace(tmp, path)
    return path


def _cli(corpus: Path, *extra: str, twin: bool = False) -> None:
    env = dict(os.environ)
    env.pop("CANONKIT_NO_EXTENSIONS", None)
    if twin:
        env["CANONKIT_NO_EXTENSIONS"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "canonkit", "reverify", str(corpus), "--no-progress", *extra],
        env=env, capture_output=True)
    assert done.returncode in (0, 1), done.stderr.decode()


@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-py"])
def test_backend_one_worker(benchmark, corpus: Path, contender: str) -> None:  # type: ignore[no-untyped-def]
    benchmark.group = f"reverify:{corpus.stem}"
    benchmark.extra_info["contender"] = contender
    benchmark.extra_info["episodes"] = EPISODES
    benchmark.extra_info["bytes"] = corpus.stat().st_size
    benchmark.pedantic(_cli, args=(corpus, "--jobs", "1"),
                       kwargs={"twin": contender == "canonkit-py"}, rounds=1, iterations=1)


@pytest.mark.parametrize("contender,extra", [
    ("canonkit-c", ("--jobs", "2")),
    ("canonkit-c-1-worker", ("--jobs", "1")),
    ("dask-localcluster-2", ("--engine", "dask", "--jobs", "2")),
])
def test_engines(benchmark, corpus: Path, contender: str, extra: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    if contender.startswith("dask"):
        pytest.importorskip("dask.distributed")
    benchmark.group = f"reverify-engines:{corpus.stem}"
    benchmark.extra_info["contender"] = contender
    benchmark.pedantic(_cli, args=(corpus, *extra), rounds=1, iterations=1)
