"""The Dask engine: a ``distributed`` cluster at an address, or a ``LocalCluster`` the
engine starts and closes; Dask re-runs the tasks of a dead worker itself. A cluster left
with no worker at all would hold the tasks forever: the engine waits a bounded time for
one to join, then fails (``WorkersLostError``)."""
from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ..errors import WorkersLostError
from .base import Engine, Lost, default_jobs, ordered

__all__ = ["LOCAL_CLUSTER_CONFIG", "WORKER_WAIT", "WORKER_WAIT_VARIABLE", "DaskEngine",
           "worker_wait_setting"]

T = TypeVar("T")
R = TypeVar("R")


#: Dask settings for a LocalCluster the engine starts (a cluster of the caller's own keeps
#: its configuration)
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.tick.interval": "500ms",
}

#: seconds a run waits, its cluster having no worker, for one to join before it fails
WORKER_WAIT = 60.0
#: the environment variable that sets another wait (seconds, more than 0)
WORKER_WAIT_VARIABLE = "CANONKIT_DASK_WORKER_WAIT"
_POLL = 1.0  # seconds between looks at the cluster while a result is awaited


def worker_wait_setting() -> float:
    raw = os.environ.get(WORKER_WAIT_VARIABLE)
    if raw is None:
        return WORKER_WAIT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ValueError(f"{WORKER_WAIT_VARIABLE}={raw!r}: expected a number of seconds "
                         "greater than 0")
    return value


def _quiet_abandoned_fetches(client: Any) -> None:
    """A fetch given up on by ``result(timeout=)`` ends as ``AllExit`` when the client
    closes, which asyncio would print as a traceback nobody retrieved: drop just those."""
    from distributed.client import AllExit

    loop = client.loop.asyncio_loop
    previous = loop.get_exception_handler()
    if getattr(previous, "canonkit_quiet", False):  # a client sharing the loop set it
        return

    def handler(loop: Any, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), AllExit):
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handler.canonkit_quiet = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)


class DaskEngine(Engine):
    """Dask ``distributed``: the cluster at ``address``, or a ``LocalCluster`` of ``jobs``
    single-threaded worker processes started (and closed) by the engine."""

    name = "dask"

    def __init__(self, jobs: int | None = None, address: str | None = None, *,
                 window: int | None = None, worker_wait: float | None = None,
                 lazy: bool = False) -> None:
        self._worker_wait = worker_wait_setting() if worker_wait is None else worker_wait
        if not 0 < self._worker_wait < float("inf"):
            raise ValueError("worker_wait must be a number of seconds greater than 0")
        try:
            import distributed  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "the dask engine needs dask[distributed]: pip install 'canonkit[dask]'"
            ) from exc
        self._cluster: Any = None
        self._client: Any = None
        self._seen: dict[str, str] = {}  # every worker seen in this run: address -> name
        self._idle_since: float | None = None  # since when the cluster has had no worker
        self._window = window
        self._jobs = jobs or default_jobs()
        # a cluster of our own runs on this machine; a remote one may not see our files
        self.shares_files = address is None
        self._address = address or "a LocalCluster"
        if address is not None:
            self._connect(address)
        else:
            self.jobs = self._jobs
            self.window = window or 3 * self.jobs
            if not lazy:
                self._connect(None)

    def _connect(self, address: str | None) -> None:
        """Connect to the cluster at ``address``, or start a LocalCluster and connect."""
        from dask.distributed import Client, LocalCluster

        try:
            if address is None:
                import dask

                # a batch job needs no statistical profiler sampling every worker every
                # 10 ms, nor a system monitor twice a second: that CPU is the job's
                with dask.config.set(LOCAL_CLUSTER_CONFIG):
                    self._cluster = LocalCluster(
                        n_workers=self._jobs,
                        threads_per_worker=1,
                        processes=True,
                        # not None: the scheduler's HTTP server would still take port 8787
                        # and fail whenever anything holds it; ":0" picks a free port
                        dashboard_address=":0",
                        silence_logs=40,  # logging.ERROR: keep the terminal for the output
                    )
                self._client = Client(self._cluster)
            else:
                self._client = Client(address)
        except BaseException:
            self.abort()
            raise
        self._address = address or str(self._cluster.scheduler_address)
        _quiet_abandoned_fetches(self._client)
        if address is not None:
            workers = self._workers()
            self.jobs = max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
            self.window = self._window or 3 * self.jobs

    def _ensure_client(self) -> Any:
        if self._client is None:
            self._connect(None)
        return self._client

    def run_on_workers(self, fn: Callable[..., R], *args: Any) -> dict[str, R] | None:
        """``fn(*args)`` on every worker: ``{worker address: result}``."""
        result: dict[str, R] = self._ensure_client().run(fn, *args)
        return result

    def _workers(self) -> dict[str, Any]:
        info: dict[str, Any] = self._client.scheduler_info(n_workers=-1).get("workers", {})
        for addr, worker in info.items():
            self._seen[addr] = str(worker.get("name", addr))
        return info

    def _check_workers(self) -> None:
        """Raise ``WorkersLostError`` once the cluster has had no worker for the wait."""
        if self._workers():
            self._idle_since = None
            return
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since < self._worker_wait:
            return
        lost = ", ".join(f"{name} ({addr})" for addr, name in sorted(self._seen.items()))
        raise WorkersLostError(
            f"the dask cluster at {self._address} has no workers: lost {lost or 'none'}; "
            f"none joined within {self._worker_wait:g} s ({WORKER_WAIT_VARIABLE})",
            detail=self._address)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def abort(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - stopping is best effort once a run failed
            pass

    def map(self, fn: Callable[..., R], tasks: Iterable[T], *args: Any
            ) -> Iterator[tuple[T, R | Lost]]:
        from distributed import KilledWorker, wait

        def submit(task: T) -> Any:
            return self._ensure_client().submit(fn, task, *args, pure=False)

        def settle(future: Any) -> Any:
            try:
                # a finished result may still be lost with its worker before it is
                # fetched (dask then computes it again): both waits are bounded
                poll = min(_POLL, self._worker_wait)
                while True:
                    try:
                        wait([future], timeout=poll)
                        return future.result(timeout=poll)
                    except (TimeoutError, asyncio.TimeoutError):
                        self._check_workers()
            except KilledWorker as exc:  # dask re-ran it on other workers and gave up
                return Lost(f"dask gave up on it: {exc}")

        yield from ordered(submit, settle, tasks, self.window)
