"""``run()``: stream documents through an engine and collect reports, annotations and the
summary. Nothing is held per Episode beyond the in-flight batches."""
from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .engines import Engine, make_engine
from .output import AtomicLines, annotation
from .progress import Progress
from .sources import Item, expand_paths, iter_items, total_disk_bytes
from .summary import Summary

DEFAULT_SEARCH_CAP = 40320  # 8!: one full tied group of the largest size the spec names
DEFAULT_BATCH_SIZE = 64
DEFAULT_BATCH_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Result:
    """One Episode's verdict. ``line`` is its report line (JSON, no newline)."""

    line: bytes
    outcome: str
    episode_id: str | None
    order: list[str] | None

    @property
    def record(self) -> dict[str, Any]:
        """The report line as a dict (episode_id, outcome, source, components,
        construction, order, flags, reason)."""
        value: dict[str, Any] = orjson.loads(self.line)
        return value


class Run:
    """A re-verification run. Iterate it for the per-Episode :class:`Result` values (in
    input order, streaming); ``summary`` is complete once iteration ends (reading it
    earlier drains the run). Report and annotation files are written as it goes and
    committed at the end."""

    def __init__(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        engine: str = "local",
        jobs: int | None = None,
        scheduler: str | None = None,
        search_cap: int = DEFAULT_SEARCH_CAP,
        report: str | os.PathLike[str] | None = None,
        annotations: str | os.PathLike[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        progress: bool | None = False,
    ) -> None:
        if search_cap < 1:
            raise ValueError("search_cap must be at least 1")
        if batch_size < 1 or batch_bytes < 1:
            raise ValueError("batch_size and batch_bytes must be at least 1")
        if engine not in ("local", "dask"):
            raise ValueError(f"unknown engine {engine!r} (expected local or dask)")
        if jobs is not None and jobs < 1:
            raise ValueError("jobs must be at least 1")
        if scheduler is not None and engine != "dask":
            raise ValueError("a scheduler address needs engine='dask'")
        self.files = expand_paths(paths)  # InputError for a missing or unknown path
        self._engine_name, self._jobs, self._scheduler = engine, jobs, scheduler
        self.search_cap = search_cap
        self._report_path, self._annotations_path = report, annotations
        self._batch_size, self._batch_bytes = batch_size, batch_bytes
        self._progress_enabled = progress
        self._summary = Summary()
        self._started = False
        self._done = False

    @property
    def summary(self) -> Summary:
        if not self._done:
            for _ in self:
                pass
        return self._summary

    def __iter__(self) -> Iterator[Result]:
        if self._started:
            if self._done:
                return iter(())
            raise RuntimeError("a Run can be iterated only once")
        self._started = True
        return self._execute()

    def _batches(self, meta: deque[tuple[int, int, int]]) -> Iterator[list[Any]]:
        batch: list[Any] = []
        size = doc_bytes = disk = 0
        item: Item
        for item in iter_items(self.files):
            batch.append((item.kind, item.payload, item.source))
            size += len(item.payload)
            doc_bytes += len(item.payload) if item.kind != "error" else 0
            disk += item.disk_bytes
            if len(batch) >= self._batch_size or size >= self._batch_bytes:
                meta.append((len(batch), doc_bytes, disk))
                yield batch
                batch, size, doc_bytes, disk = [], 0, 0, 0
        if batch:
            meta.append((len(batch), doc_bytes, disk))
            yield batch

    def _execute(self) -> Iterator[Result]:
        summary = self._summary
        start = time.perf_counter()
        report = AtomicLines(self._report_path) if self._report_path is not None else None
        notes = (
            AtomicLines(self._annotations_path) if self._annotations_path is not None else None
        )
        progress = Progress(total_disk_bytes(self.files), self._progress_enabled)
        meta: deque[tuple[int, int, int]] = deque()
        engine: Engine | None = None
        ok = False
        try:
            engine = make_engine(self._engine_name, self._jobs, self._scheduler)
            for verdicts in engine.map(self._batches(meta), self.search_cap):
                count, doc_bytes, disk = meta.popleft()
                summary.document_bytes += doc_bytes
                for line, outcome, episode_id, order in verdicts:
                    summary.add(outcome)
                    if report is not None:
                        report.write_line(line)
                    if notes is not None and order is not None:
                        notes.write_json(
                            annotation(episode_id, orjson.loads(line)["source"], order)
                        )
                    yield Result(line, outcome, episode_id, order)
                progress.update(count, doc_bytes, disk)
            summary.seconds = time.perf_counter() - start
            if report is not None:
                report.write_json(summary.to_json())
                report.commit()
            if notes is not None:
                notes.commit()
            ok = True
            self._done = True
        finally:
            progress.close()
            if engine is not None:
                engine.close()
            if not ok:
                for out in (report, notes):
                    if out is not None:
                        out.abort()


def run(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    **options: Any,
) -> Run:
    """Re-verify every Episode under ``paths`` (files or directories).

    Options: ``engine`` ("local" or "dask"), ``jobs``, ``scheduler`` (a Dask address),
    ``search_cap``, ``report`` and ``annotations`` (file paths), ``batch_size``,
    ``batch_bytes``, ``progress``. Returns a :class:`Run`: iterate it for per-Episode
    results; ``.summary`` holds the counts.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return Run(paths, **options)
