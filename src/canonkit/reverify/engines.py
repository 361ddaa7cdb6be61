"""Execution engines: in-process, a local process pool, or Dask.

Each engine maps ``ranges.verify_unit`` over a stream of units (batches of documents, or
descriptors of seekable inputs that the workers read themselves) and yields the results
in input order. At most ``window`` batches are in flight, so memory stays bounded however
large the corpus; completion order never shows in the output.
"""
from __future__ import annotations

import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from .ranges import verify_unit

ENGINES = ("local", "dask")
Batch = tuple[Any, ...]  # a ranges.Unit


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class Engine:
    """Base: ``map(batches)`` yields each batch's verdicts in input order."""

    jobs = 1
    # whether the workers can open the parent's files (then they read seekable inputs
    # themselves from descriptors, see ranges.py)
    reads_files = False

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pass

    def map(self, batches: Iterable[Batch], search_cap: int) -> Iterator[Any]:
        raise NotImplementedError


class InProcessEngine(Engine):
    """``--jobs 1``: no pool at all (also the engine the benchmarks time on one worker)."""

    def map(self, batches: Iterable[Batch], search_cap: int) -> Iterator[Any]:
        for batch in batches:
            yield verify_unit(batch, search_cap)


def _ordered(submit: Any, batches: Iterable[Batch], window: int) -> Iterator[Any]:
    """Submit ahead up to ``window`` batches; yield results strictly in submission order."""
    pending: deque[Any] = deque()
    for batch in batches:
        pending.append(submit(batch))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


class LocalPoolEngine(Engine):
    """A process pool over batches (forkserver start: safe with the threads that tqdm or
    Dask may have started in the parent)."""

    def __init__(self, jobs: int) -> None:
        from concurrent.futures import ProcessPoolExecutor

        self.jobs = jobs
        self.reads_files = True
        method = "forkserver" if sys.platform.startswith("linux") else "spawn"
        self._pool = ProcessPoolExecutor(
            max_workers=jobs, mp_context=multiprocessing.get_context(method)
        )

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def map(self, batches: Iterable[Batch], search_cap: int) -> Iterator[Any]:
        def submit(batch: Batch) -> Any:
            return self._pool.submit(verify_unit, batch, search_cap)

        yield from _ordered(submit, batches, window=3 * self.jobs)


class DaskEngine(Engine):
    """Dask ``distributed``: an existing scheduler (``address``) or a LocalCluster with
    ``jobs`` single-threaded worker processes."""

    def __init__(self, jobs: int | None, address: str | None) -> None:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "the dask engine needs dask[distributed]: pip install 'canonkit[dask]'"
            ) from exc
        self._cluster = None
        if address is None:
            self._cluster = LocalCluster(
                n_workers=jobs or default_jobs(),
                threads_per_worker=1,
                processes=True,
                # not None: the scheduler's HTTP server then still takes the default port
                # 8787 and fails if anything holds it; ":0" picks a free port
                dashboard_address=":0",
                silence_logs=40,  # logging.ERROR: keep the terminal for the summary
            )
            self._client = Client(self._cluster)
        else:
            self._client = Client(address)
        workers = self._client.scheduler_info().get("workers", {})
        self.jobs = max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
        # a cluster of our own runs on this machine; a remote one may not see our files
        self.reads_files = self._cluster is not None

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def map(self, batches: Iterable[Batch], search_cap: int) -> Iterator[Any]:
        def submit(batch: Batch) -> Any:
            return self._client.submit(verify_unit, batch, search_cap, pure=False)

        yield from _ordered(submit, batches, window=3 * self.jobs)


def make_engine(engine: str, jobs: int | None, scheduler: str | None) -> Engine:
    if engine == "dask":
        return DaskEngine(jobs, scheduler)
    if engine != "local":
        raise ValueError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES)})")
    if scheduler is not None:
        raise ValueError("--scheduler needs --engine dask")
    n = jobs if jobs is not None else default_jobs()
    if n < 1:
        raise ValueError("--jobs must be at least 1")
    return InProcessEngine() if n == 1 else LocalPoolEngine(n)
