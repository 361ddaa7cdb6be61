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
  (``KilledWorker``) is ``Lost`` too.
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

import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

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
]

ENGINES = ("local", "dask")
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Lost:
    """The result of a task whose worker died again when the task was re-run alone: the
    task itself is what kills it (or the machine keeps losing workers)."""

    reason: str


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived while ``interruptible()`` was active."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


_HANDLED = tuple(
    s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s
)


@contextmanager
def interruptible() -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP into ``Interrupted`` for the duration (main thread
    only; elsewhere a no-op). After the first signal the others are ignored, so a second
    Ctrl-C cannot cut the clean-up short; the previous handlers come back on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        for s in _HANDLED:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in _HANDLED}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP for a step that must not be cut in two (renaming the
    outputs of a run into place, starting a worker); one that arrives meanwhile is
    delivered when the step is done. Main thread only; elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class Engine:
    """Base: ``map(fn, tasks, *args)`` yields ``(task, fn(task, *args) or Lost)`` in task
    order. ``jobs`` is the number of workers; ``shares_files`` says whether the workers
    can open the caller's files by path."""

    name = "in-process"
    jobs = 1
    shares_files = True

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def close(self) -> None:
        """Shut down after the work is done."""

    def abort(self) -> None:
        """Stop now: running tasks are abandoned and the workers killed."""
        self.close()

    def map(self, fn: Callable[..., R], tasks: Iterable[T], *args: Any
            ) -> Iterator[tuple[T, R | Lost]]:
        raise NotImplementedError


class InProcessEngine(Engine):
    """``jobs=1``: no worker processes at all."""

    def map(self, fn: Callable[..., R], tasks: Iterable[T], *args: Any
            ) -> Iterator[tuple[T, R | Lost]]:
        for task in tasks:
            yield task, fn(task, *args)


def _ordered(submit: Callable[[T], Any], settle: Callable[[Any], Any], tasks: Iterable[T],
             window: int, poll: Callable[[], None] = lambda: None
             ) -> Iterator[tuple[T, Any]]:
    """Submit up to ``window`` tasks ahead; yield ``(task, settle(ticket))`` in submission
    order. ``poll`` lets the engine collect finished work without blocking."""
    pending: deque[tuple[T, Any]] = deque()
    for task in tasks:
        pending.append((task, submit(task)))
        poll()
        while len(pending) >= window:
            head, ticket = pending.popleft()
            yield head, settle(ticket)
    while pending:
        head, ticket = pending.popleft()
        yield head, settle(ticket)


PR_SET_PDEATHSIG = 1


def _worker_start(parent: int) -> None:
    """The parent decides what an interrupt means (a terminal's Ctrl-C reaches the whole
    process group), and the worker must not outlive it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)  # held by the parent as it started us
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0),
                          ctypes.c_ulong(0), ctypes.c_ulong(0)) == 0:
                if os.getppid() != parent:  # it died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):  # pragma: no cover - no usable libc
            pass
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:  # pragma: no cover - only where prctl is missing
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


_READY = "ready"


def _serve(conn: Any, parent: int) -> None:
    """A pool worker: run ``(fn, task, args)`` messages until ``None`` or end of file,
    answering ``("ok", result)`` or ``("error", exception)``."""
    _worker_start(parent)
    conn.send(_READY)  # the parent tells a start-up failure from a lost task by this
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        except Exception as exc:  # noqa: BLE001 - e.g. the task function cannot be imported
            conn.send(("error", exc))
            continue
        if message is None:
            return
        fn, task, args = message
        try:
            answer: tuple[str, Any] = ("ok", fn(task, *args))
        except Exception as exc:  # noqa: BLE001 - the parent re-raises it in order
            answer = ("error", exc)
        try:
            conn.send(answer)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception
            conn.send(("error", RuntimeError(f"cannot send the result back: {exc!r}")))


class _Ticket:
    """One submitted task: where it is (queued, running, settled) and its outcome."""

    __slots__ = ("message", "attempts", "outcome")

    def __init__(self, message: tuple[Any, ...]) -> None:
        self.message = message
        self.attempts = 0
        self.outcome: tuple[str, Any] | None = None


class _Worker:
    __slots__ = ("process", "conn", "ticket", "ready")

    def __init__(self, process: Any, conn: Any) -> None:
        self.process = process
        self.conn = conn
        self.ticket: _Ticket | None = None
        self.ready = False  # it has said so: it imported and is serving


class LocalPoolEngine(Engine):
    """A pool of ``jobs`` worker processes on this machine, one task at a time each.

    The parent talks to each worker over its own pipe and watches its process, so it
    knows which task a dead worker was running: only that task is run again (once, on a
    fresh worker) and only a task that kills its worker twice is ``Lost``; the other
    workers never stop. No threads in the parent: an interrupt at any moment leaves
    nothing to deadlock on, and ``abort`` kills every worker at once.

    Workers are started with ``spawn``: children of this process (so
    ``PR_SET_PDEATHSIG`` ties them to it; a forkserver's children outlive a killed
    parent), and no thread of the parent (tqdm, Dask) is ever caught mid-fork. On Linux the
    death signal fires when the *thread* that started a worker ends: use the engine from
    the thread that will outlive the run (normally the main thread)."""

    name = "local"

    def __init__(self, jobs: int, *, window: int | None = None) -> None:
        import multiprocessing

        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.jobs = jobs
        self.window = window or 3 * jobs
        self._context = multiprocessing.get_context("spawn")
        self._queue: deque[_Ticket] = deque()
        self._workers: list[_Worker] = []
        self._stopped = False
        try:
            for _ in range(jobs):
                self._workers.append(self._start())
        except BaseException:
            self.abort()
            raise

    def _start(self) -> _Worker:
        mine, theirs = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(theirs, os.getpid()),
                                        daemon=True, name="canonkit-worker")
        try:
            with signals_held():  # an interrupt mid-start would leave it half-fed
                process.start()
        except BaseException:  # an interrupt held during the start comes out here
            if process.pid is not None:
                process.kill()
                process.join(5)
            mine.close()
            raise
        finally:
            theirs.close()
        return _Worker(process, mine)

    def pids(self) -> list[int]:
        """The worker processes' ids (they change when a worker is replaced)."""
        return [w.process.pid for w in self._workers]

    # --- scheduling -----------------------------------------------------------------

    def _dispatch(self) -> None:
        for worker in self._workers:
            if worker.ticket is None and self._queue:
                ticket = self._queue.popleft()
                worker.ticket = ticket
                try:
                    worker.conn.send(ticket.message)
                except (OSError, EOFError):  # it died idle: the task never started
                    ticket.attempts -= 1
                    self._lost_worker(worker)
                    return self._dispatch()
                ticket.attempts += 1

    def _lost_worker(self, worker: _Worker) -> None:
        """The worker is gone: run its task again (once), and start a replacement. A worker
        that dies before it could serve (its start-up failed: a script without the
        ``if __name__ == "__main__":`` guard, a broken install) would only fail again, so
        that ends the run instead."""
        ticket, worker.ticket = worker.ticket, None
        worker.process.join(1)
        worker.conn.close()
        if not worker.ready and not self._stopped:
            raise RuntimeError(f"a worker process failed to start (exit status "
                               f"{worker.process.exitcode}); under the spawn start method "
                               "the main module needs an if __name__ == '__main__': guard")
        if ticket is not None:
            if ticket.attempts >= 2:
                ticket.outcome = ("lost", Lost(
                    f"the worker process died twice running this task (exit status "
                    f"{worker.process.exitcode})"))
            else:
                self._queue.appendleft(ticket)
        if not self._stopped:
            self._workers[self._workers.index(worker)] = self._start()

    def _poll(self, timeout: float | None) -> None:
        """Collect every answer (or death) ready within ``timeout``; hand out work."""
        from multiprocessing.connection import wait

        self._dispatch()
        busy = [w for w in self._workers if w.ticket is not None]
        if not busy:
            return
        ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy],
                         timeout))
        for worker in busy:
            if worker.conn in ready:
                try:
                    answer = worker.conn.recv()
                    if answer == _READY and not worker.ready:
                        worker.ready = True
                        if not worker.conn.poll():  # True also at end of file: it died
                            continue
                        answer = worker.conn.recv()  # the task's answer came right behind
                except (OSError, EOFError):
                    self._lost_worker(worker)
                    continue
                assert worker.ticket is not None
                worker.ticket.outcome = answer
                worker.ticket = None
            elif worker.process.sentinel in ready:
                self._lost_worker(worker)
        self._dispatch()

    def submit(self, fn: Callable[..., Any], task: Any, *args: Any) -> _Ticket:
        if self._stopped:
            raise RuntimeError("the engine is shut down")
        ticket = _Ticket((fn, task, args))
        self._queue.append(ticket)
        self._dispatch()
        return ticket

    def settle(self, ticket: _Ticket) -> Any:
        """Wait for the ticket: its result, ``Lost``, or its exception raised here."""
        while ticket.outcome is None:
            if self._stopped:
                raise RuntimeError("the engine was shut down with work in flight")
            self._poll(None)
        kind, value = ticket.outcome
        if kind == "error":
            raise value
        return value

    def map(self, fn: Callable[..., R], tasks: Iterable[T], *args: Any
            ) -> Iterator[tuple[T, R | Lost]]:
        yield from _ordered(lambda task: self.submit(fn, task, *args), self.settle, tasks,
                            self.window, lambda: self._poll(0))

    # --- stopping -------------------------------------------------------------------

    def close(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        for worker in self._workers:
            try:
                worker.conn.send(None)
            except (OSError, EOFError):
                pass
        for worker in self._workers:
            worker.process.join(10)
        self.abort()

    def abort(self) -> None:
        self._stopped = True
        for worker in self._workers:
            if worker.process.is_alive():
                worker.process.kill()
        for worker in self._workers:
            worker.process.join(5)
            try:
                worker.conn.close()
            except OSError:  # closed meanwhile by the thread consuming map() (lost worker)
                pass


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

    def run_on_workers(self, fn: Callable[..., R], *args: Any) -> dict[str, R]:
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

        yield from _ordered(submit, settle, tasks, self.window)


def open_engine(engine: str = "local", *, jobs: int | None = None,
                scheduler: str | None = None) -> Engine:
    """``local``: in-process for ``jobs=1``, otherwise a pool of ``jobs`` processes
    (default: every core). ``dask``: the cluster at ``scheduler``, or a LocalCluster of
    ``jobs`` workers. Use it as a context manager."""
    if jobs is not None and jobs < 1:
        raise ValueError("jobs must be at least 1")
    if engine == "dask":
        return DaskEngine(jobs, scheduler)
    if engine != "local":
        raise ValueError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES)})")
    if scheduler is not None:
        raise ValueError("a scheduler address needs the dask engine")
    n = jobs if jobs is not None else default_jobs()
    return InProcessEngine() if n == 1 else LocalPoolEngine(n)
