"""Samples of a run's progress — (elapsed seconds, items done, bytes done) — kept in
bounded memory however long the run, for the throughput chart of an HTML report.

Every sample is cumulative, so keeping fewer of them loses no total: when ``limit`` are
held, every other one is dropped and from then on only every ``stride``-th
update is kept (the stride doubles each time). The samples stay evenly spread over the
updates, and the latest update is always the last point.
"""
from __future__ import annotations

__all__ = ["DEFAULT_LIMIT", "Sample", "Timeline"]

DEFAULT_LIMIT = 512

Sample = tuple[float, int, int]  # (elapsed seconds, items done, bytes done)


class Timeline:
    """``add(elapsed, items, nbytes)`` after each piece of work (``items`` and ``nbytes``
    are what that piece did); ``points()`` the kept samples, at most ``limit``, from
    ``(0.0, 0, 0)`` to the latest."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 2:
            raise ValueError("a timeline keeps at least 2 samples")
        self._limit = limit
        self._kept: list[Sample] = [(0.0, 0, 0)]
        self._latest: Sample = (0.0, 0, 0)
        self._updates = 0
        self._stride = 1

    def add(self, elapsed: float, items: int, nbytes: int = 0) -> None:
        _, done, volume = self._latest
        self._latest = (elapsed, done + items, volume + nbytes)
        self._updates += 1
        if self._updates % self._stride:
            return
        self._kept.append(self._latest)
        if len(self._kept) >= self._limit:  # room for the latest update, not yet kept
            self._kept = self._kept[::2]
            self._stride *= 2

    @property
    def updates(self) -> int:
        """How many times ``add`` was called."""
        return self._updates

    def points(self) -> list[Sample]:
        """The kept samples in time order, the latest update last."""
        if self._kept[-1] is self._latest:
            return list(self._kept)
        return [*self._kept, self._latest]

    def rates(self, spans: int = 48) -> list[tuple[float, float, float]]:
        """Items per second in at most ``spans`` equal intervals from 0 to the latest
        sample, ``(from, to, rate)``: the items done by each interval's end read off the
        samples by linear interpolation (work between two samples is taken as even)."""
        points = self.points()
        end = points[-1][0]
        if end <= 0 or spans < 1:
            return []
        n = min(spans, len(points) - 1)
        edges = [end * i / n for i in range(n + 1)]
        done = [_done_at(points, t) for t in edges]
        return [(a, b, (d1 - d0) / (b - a))
                for a, b, d0, d1 in zip(edges, edges[1:], done, done[1:])]


def _done_at(points: list[Sample], t: float) -> float:
    """Items done at time ``t``, interpolated between the samples around it."""
    lo, hi = 0, len(points) - 1
    while lo < hi:  # the first sample at or after t
        mid = (lo + hi) // 2
        if points[mid][0] < t:
            lo = mid + 1
        else:
            hi = mid
    t1, n1, _ = points[lo]
    if lo == 0 or t1 <= t:
        return float(n1)
    t0, n0, _ = points[lo - 1]
    return n0 + (n1 - n0) * (t - t0) / (t1 - t0) if t1 > t0 else float(n1)
