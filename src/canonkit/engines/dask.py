"""The Dask engine: a ``distributed`` cluster at an address, or a ``LocalCluster`` the
engine starts and closes; Dask re-runs the tasks of a dead worker itself."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from .base import Engine, Lost, default_jobs, ordered

__all__ = ["LOCAL_CLUSTER_CONFIG", "DaskEngine"]

T = TypeVar("T")
R = TypeVar("R")


#: Dask settings for a LocalCluster the engine starts (a cluster of the caller's own keeps
#: its configuration)
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.tick.interval": "500ms",
}


class DaskEngine(Engine):
    """Dask ``distributed``: the cluster at ``address``, or a ``LocalCluster`` of ``jobs``
    single-threaded worker processes started (and closed) by the engine."""

    name = "dask"

    def __init__(self, jobs: int | None = None, address: str | None = None, *,
                 window: int | None = None) -> None:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "the dask engine needs dask[distributed]: pip install 'canonkit[dask]'"
            ) from exc
        self._cluster: Any = None
        self._client: Any = None
        try:
            if address is None:
                import dask

                # a batch job needs no statistical profiler sampling every worker every
                # 10 ms, nor a system monitor twice a second: that CPU is the job's
                with dask.config.set(LOCAL_CLUSTER_CONFIG):
                    self._cluster = LocalCluster(
                        n_workers=jobs or default_jobs(),
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
        workers = self._client.scheduler_info().get("workers", {})
        self.jobs = max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
        self.window = window or 3 * self.jobs
        # a cluster of our own runs on this machine; a remote one may not see our files
        self.shares_files = self._cluster is not None

    def run_on_workers(self, fn: Callable[..., R], *args: Any) -> dict[str, R] | None:
        """``fn(*args)`` on every worker: ``{worker address: result}``."""
        result: dict[str, R] = self._client.run(fn, *args)
        return result

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
        from distributed import KilledWorker

        def submit(task: T) -> Any:
            return self._client.submit(fn, task, *args, pure=False)

        def settle(future: Any) -> Any:
            try:
                return future.result()
            except KilledWorker as exc:  # dask re-ran it on other workers and gave up
                return Lost(f"dask gave up on it: {exc}")

        yield from ordered(submit, settle, tasks, self.window)
