"""Engines: run one task function over a stream of task descriptors, in-process, on a
local process pool or on a Dask cluster, and get the results back in task order.

    >>> import operator
    >>> from canonkit import engines
    >>> with engines.open_engine("local", jobs=2) as engine:
    ...     [(task, result) for task, result in engine.map(operator.neg, [1, 2, 3])]
    [(1, -1), (2, -2), (3, -3)]

``fn(task, *args)`` must be picklable (a module-level function) and so must the tasks and
results; keep tasks small (descriptors such as a file name and a byte range, not the bytes)
so that the parent is not the bottleneck. What every engine guarantees:

- **Order.** ``map`` yields ``(task, result)`` strictly in task order, whatever order the
  workers finish in, with at most ``window`` tasks in flight (memory stays bounded
  however long the stream of tasks is; tasks are drawn from the iterable lazily).
- **A lost worker loses no work.** When a pool worker dies (killed, out of memory, a
  crash in native code), the task it was running is run again on a fresh worker; a task
  that kills its worker a second time is yielded as ``Lost`` (the caller reports it) and
  the run goes on. Dask re-runs the tasks of a dead worker itself; a task it gives up on
  (``KilledWorker``) is ``Lost`` too. A Dask cluster with no worker left for
  ``CANONKIT_DASK_WORKER_WAIT`` seconds (default 60) raises ``WorkersLostError``.
- **Every process started is stopped.** Leaving the ``with`` block normally shuts the
  engine down; leaving it with an exception (``Interrupted``, a bug) kills the workers at
  once. Pool workers also die with the process that started them (Linux
  ``PR_SET_PDEATHSIG``; elsewhere a thread watching the parent), so even a SIGKILL of the
  parent leaves no orphans.
- **Signals end a run cleanly.** Inside ``interruptible()``, SIGINT, SIGTERM and SIGHUP
  raise ``Interrupted`` in the main thread, so ``finally`` blocks remove temporaries and
  the engine is shut down; ``Interrupted.exit_status`` is the conventional ``128 + n``.
"""

from __future__ import annotations

from .base import Engine, InProcessEngine, Lost, default_jobs
from .dask import DaskEngine
from .pool import LocalPoolEngine
from .signals import Interrupted, interruptible, signals_held

__all__ = [
    "ENGINES",
    "DaskEngine",
    "Engine",
    "InProcessEngine",
    "Interrupted",
    "LocalPoolEngine",
    "Lost",
    "default_jobs",
    "interruptible",
    "open_engine",
    "signals_held",
]

ENGINES = ("local", "dask")


def open_engine(engine: str = "local", *, jobs: int | None = None,
                scheduler: str | None = None, lazy: bool = False) -> Engine:
    """``local``: in-process for ``jobs=1``, otherwise a pool of ``jobs`` processes
    (default: every core). ``dask``: the cluster at ``scheduler``, or a LocalCluster of
    ``jobs`` workers. ``lazy``: start the pool's processes (or the LocalCluster) when the
    first task is submitted, not before (a run that may need none). Use it as a context
    manager."""
    if jobs is not None and jobs < 1:
        raise ValueError("jobs must be at least 1")
    if engine == "dask":
        return DaskEngine(jobs, scheduler, lazy=lazy)
    if engine != "local":
        raise ValueError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES)})")
    if scheduler is not None:
        raise ValueError("a scheduler address needs the dask engine")
    n = jobs if jobs is not None else default_jobs()
    return InProcessEngine() if n == 1 else LocalPoolEngine(n, lazy=lazy)
