"""Live progress on stderr: Episodes/s, bytes/s and ETA (from input bytes on disk).
tqdm on a terminal; a plain self-overwriting line if tqdm is missing; nothing when
stderr is not a TTY (or when disabled)."""
from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Progress:
    def __init__(self, total_disk_bytes: int, enabled: bool | None = None,
                 stream: TextIO | None = None, min_interval: float = 0.5) -> None:
        self._stream = stream or sys.stderr
        if enabled is None:
            enabled = bool(getattr(self._stream, "isatty", lambda: False)())
        self.enabled = enabled
        self._start = time.perf_counter()
        self._episodes = 0
        self._doc_bytes = 0
        self._disk = 0
        self._total = total_disk_bytes
        self._bar: Any = None
        self._last_plain = -min_interval
        self._min_interval = min_interval
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                self._bar = None
            else:
                self._bar = tqdm(
                    total=total_disk_bytes, unit="B", unit_scale=True, unit_divisor=1000,
                    file=self._stream, desc="reverify", dynamic_ncols=True, leave=False,
                    mininterval=min_interval,
                )

    def update(self, episodes: int, doc_bytes: int, disk_bytes: int) -> None:
        if not self.enabled:
            return
        self._episodes += episodes
        self._doc_bytes += doc_bytes
        self._disk += disk_bytes
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        rate = f"{self._episodes} Episodes, {self._episodes / elapsed:,.0f} Episodes/s"
        if self._bar is not None:
            self._bar.set_postfix_str(rate, refresh=False)
            self._bar.update(disk_bytes)
            return
        now = time.perf_counter()
        if now - self._last_plain < self._min_interval:
            return
        self._last_plain = now
        speed = self._disk / elapsed
        eta = (self._total - self._disk) / speed if speed > 0 else float("inf")
        self._stream.write(
            f"\r{rate}, {self._doc_bytes / elapsed / 1e6:.1f} MB/s, ETA {eta:,.0f} s   "
        )
        self._stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        else:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
