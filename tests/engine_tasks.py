"""Task functions for the engine tests. They run in worker processes, which import them
by module name, so they live in a plain module rather than in a test file."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def square(task: int, offset: int = 0) -> int:
    return task * task + offset


def slow_square(task: int, seconds: float) -> int:
    time.sleep(seconds)
    return task * task


def die_once(task: tuple[int, str]) -> int:
    """Kills its worker the first time task ``n`` runs (a marker file remembers), then
    computes normally: a worker lost once."""
    n, marker = task
    if n == 3 and not os.path.exists(marker):
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.05)
    return n * n


def die_always(task: int) -> int:
    """Task 5 kills its worker every time: it must come back as Lost, alone."""
    if task == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.02)
    return task * task


def worker_pid(task: int, seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def boom(task: int) -> int:
    raise ValueError(f"bug in task {task}")
