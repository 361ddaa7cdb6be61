"""Live progress on stderr for long operations (re-verification, synthetic corpora, store
repack, gc and fsck): done/total, the rate of what is counted (Episodes) and an ETA.

A terminal of a usable width gets a tqdm bar that follows resizes; a terminal that reports
no usable width (a 0-column pty, where tqdm's ``dynamic_ncols`` would draw nothing), or no
tqdm, gets a plain self-overwriting line that fits any width; nothing at all when stderr
is not a terminal (or when disabled), so pipes and logs stay clean.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

__all__ = ["MIN_BAR_COLUMNS", "Progress", "bar"]

# below this many columns a bar has no room: the plain line is used instead
MIN_BAR_COLUMNS = 40


def _columns(stream: TextIO) -> int:
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


class Progress:
    """``total`` units of work (bytes read for re-verification, Episodes for synth, objects
    for the store); ``update(advance, counted)`` after each piece. ``counted`` names what
    the rate is given in (``"Episodes"``), or None for no rate beside the bar."""

    def __init__(self, total: int, enabled: bool | None = None, stream: TextIO | None = None,
                 *, unit: str = "B", desc: str = "reverify", counted: str | None = "Episodes",
                 min_interval: float = 0.5) -> None:
        self._stream = stream or sys.stderr
        if enabled is None:
            enabled = bool(getattr(self._stream, "isatty", lambda: False)())
        self.enabled = enabled
        self._start = time.perf_counter()
        self._episodes = 0
        self._done = 0
        self._total = total
        self._unit = unit
        self._desc = desc
        self._counted = counted
        self._bar: Any = None
        self._last_plain = -min_interval
        self._min_interval = min_interval
        if enabled and _columns(self._stream) >= MIN_BAR_COLUMNS:
            try:
                from tqdm import tqdm
            except ImportError:
                self._bar = None
            else:
                self._bar = tqdm(
                    total=total, unit=unit, unit_scale=unit == "B", unit_divisor=1000,
                    file=self._stream, desc=desc, dynamic_ncols=True, leave=False,
                    mininterval=min_interval,
                )

    def update(self, advance: int = 1, counted: int = 0) -> None:
        """``advance`` units done (of ``total``), covering ``counted`` of what is counted."""
        if not self.enabled:
            return
        self._episodes += counted
        self._done += advance
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        rate = (f"{self._episodes:,} {self._counted}, "
                f"{self._episodes / elapsed:,.0f} {self._counted}/s, " if self._counted else "")
        if self._bar is not None:
            if self._counted:
                self._bar.set_postfix_str(rate.rstrip(", "), refresh=False)
            self._bar.update(advance)
            return
        now = time.perf_counter()
        if now - self._last_plain < self._min_interval:
            return
        self._last_plain = now
        speed = self._done / elapsed
        eta = (self._total - self._done) / speed if speed > 0 else float("inf")
        share = f"{100 * self._done / self._total:.0f}%" if self._total else "-"
        volume = f", {speed / 1e6:.1f} MB/s" if self._unit == "B" else ""
        self._stream.write(f"\r{self._desc}: {share}, {rate}{volume.lstrip(', ')}"
                           f"{', ' if volume else ''}ETA {eta:,.0f} s ")
        self._stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        else:
            self._stream.write("\r\x1b[K")
            self._stream.flush()


def bar(progress: bool | None, total: int, desc: str, unit: str) -> Progress:
    """Progress over ``total`` ``unit``s for a store operation: shown when ``progress`` is
    True, or when it is None and stderr is a terminal; off for an empty total."""
    return Progress(total, enabled=False if total <= 0 else progress, unit=unit, desc=desc,
                    counted=None)
