"""Signals end a run cleanly: inside ``interruptible()``, SIGINT, SIGTERM and SIGHUP raise
``Interrupted`` in the main thread, so ``finally`` blocks remove temporaries and the engine
is shut down; ``signals_held()`` keeps a step that must not be cut in two (renaming outputs
into place, starting a worker) whole."""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["HANDLED", "Interrupted", "interruptible", "signals_held"]


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived while ``interruptible()`` was active."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


HANDLED = tuple(
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
        for s in HANDLED:
            signal.signal(s, signal.SIG_IGN)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in HANDLED}
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
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
