"""What every engine is: ``map(fn, tasks, *args)`` yields ``(task, result or Lost)`` in task
order, with at most ``window`` tasks in flight; the in-process engine; the ordering loop the
pool and Dask share."""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["Engine", "InProcessEngine", "Lost", "default_jobs", "ordered"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Lost:
    """The result of a task whose worker died again when the task was re-run alone: the
    task itself is what kills it (or the machine keeps losing workers)."""

    reason: str


def default_jobs() -> int:
    """Every core this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class Engine:
    """Base: ``map(fn, tasks, *args)`` yields ``(task, fn(task, *args) or Lost)`` in task
    order. ``jobs`` is the number of workers; ``shares_files`` says whether the workers
    can open the caller's files by path; ``in_process`` whether the tasks run in the
    caller's own process. Callers ask these (and ``run_on_workers``), never the class."""

    name = "in-process"
    jobs = 1
    shares_files = True
    in_process = False

    def run_on_workers(self, fn: Callable[..., R], *args: Any) -> dict[str, R] | None:
        """``fn(*args)`` on every worker, ``{worker: result}``; None when the engine has no
        way to ask its workers (its workers then see what the caller sees)."""
        return None

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

    in_process = True

    def map(self, fn: Callable[..., R], tasks: Iterable[T], *args: Any
            ) -> Iterator[tuple[T, R | Lost]]:
        for task in tasks:
            yield task, fn(task, *args)


def ordered(submit: Callable[[T], Any], settle: Callable[[Any], Any], tasks: Iterable[T],
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
