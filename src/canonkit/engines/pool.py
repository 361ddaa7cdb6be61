"""The local engine: a pool of worker processes on this machine, one task at a time each;
a task whose worker dies is run again once on a fresh worker, and workers die with their
parent."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from .base import Engine, Lost, ordered
from .signals import HANDLED, signals_held

__all__ = ["LocalPoolEngine"]

T = TypeVar("T")
R = TypeVar("R")


PR_SET_PDEATHSIG = 1


def _worker_start(parent: int) -> None:
    """The parent decides what an interrupt means (a terminal's Ctrl-C reaches the whole
    process group), and the worker must not outlive it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)  # held by the parent as it started us
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

    def __init__(self, jobs: int, *, window: int | None = None, lazy: bool = False) -> None:
        import multiprocessing

        if jobs < 1:
            raise ValueError("jobs must be at least 1")
        self.jobs = jobs
        self.window = window or 3 * jobs
        self._context = multiprocessing.get_context("spawn")
        self._queue: deque[_Ticket] = deque()
        self._workers: list[_Worker] = []
        self._stopped = False
        self._started = False
        if not lazy:
            self._start_workers()

    def _start_workers(self) -> None:
        """Start the pool's processes (at once, or with the first task when ``lazy``)."""
        self._started = True
        try:
            for _ in range(self.jobs):
                self._start(self._workers.append)
        except BaseException:
            self.abort()
            raise

    def _start(self, place: Callable[[_Worker], None]) -> None:
        """Start a worker and ``place`` it among the pool's workers, with no interrupt
        possible between its process starting and the pool knowing it (a worker the pool
        does not know would be left, half-fed, to print its start-up failure)."""
        if sys.platform != "win32":
            # CPython's resource tracker, started by the first Process.start, unblocks
            # SIGINT and SIGTERM as it starts: have it running before signals are held.
            from multiprocessing import resource_tracker

            resource_tracker.ensure_running()
        mine, theirs = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(theirs, os.getpid()),
                                        daemon=True, name="canonkit-worker")
        try:
            with signals_held():  # an interrupt mid-start would leave it half-fed
                process.start()
                place(_Worker(process, mine))
        except BaseException:  # an interrupt held during the start comes out here
            if process.pid is not None:
                process.kill()
                process.join(5)
            mine.close()
            raise
        finally:
            theirs.close()

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
            slot = self._workers.index(worker)
            self._start(lambda fresh: self._workers.__setitem__(slot, fresh))

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
        if not self._started:
            self._start_workers()
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
        yield from ordered(lambda task: self.submit(fn, task, *args), self.settle, tasks,
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
