"""Running fsck's units: in this process, on a local process pool, or on Dask."""
from __future__ import annotations

import multiprocessing
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["ENGINES", "map_units"]

ENGINES = ("local", "dask")


def _ordered(submit: Callable[[Any], Any], items: Iterable[Any], window: int) -> Iterator[Any]:
    pending: deque[Any] = deque()
    for item in items:
        pending.append(submit(item))
        if len(pending) >= window:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def map_units(fn: Callable[[Any], Any], units: Iterable[Any], *, jobs: int, engine: str,
              scheduler: str | None) -> Iterator[Any]:
    """``fn(unit)`` for every unit, results in unit order."""
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES)})")
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    if engine == "local" and scheduler is not None:
        raise ValueError("a scheduler needs engine='dask'")
    if engine == "local" and jobs == 1:
        for unit in units:
            yield fn(unit)
        return
    if engine == "local":
        from concurrent.futures import ProcessPoolExecutor

        method = "forkserver" if sys.platform.startswith("linux") else "spawn"
        with ProcessPoolExecutor(max_workers=jobs,
                                 mp_context=multiprocessing.get_context(method)) as pool:
            yield from _ordered(lambda u: pool.submit(fn, u), units, 3 * jobs)
        return
    from dask.distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=":0",
            silence_logs=40)
        client = Client(cluster)  # type: ignore[no-untyped-call]
    else:
        client = Client(scheduler)  # type: ignore[no-untyped-call]
    try:
        yield from _ordered(lambda u: client.submit(fn, u, pure=False), units, 3 * jobs)
    finally:
        client.close()  # type: ignore[no-untyped-call]
        if cluster is not None:
            cluster.close()
