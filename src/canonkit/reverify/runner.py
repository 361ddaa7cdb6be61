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

from . import ranges
from .engines import Engine, make_engine
from .output import AtomicLines, annotation
from .progress import Progress
from .sources import Item, expand_paths, iter_items, total_disk_bytes
from .summary import Summary

DEFAULT_SEARCH_CAP = 40320  # 8!: one full tied group of the largest size the spec names
DEFAULT_BATCH_SIZE = 64
DEFAULT_BATCH_BYTES = 8 * 1024 * 1024
# Workers that can open the parent's files read plain JSON lines and .json documents
# themselves from descriptors (ranges.py); False ships every document's bytes.
SEEKABLE_RANGES = True
Unit = tuple[Any, ...]


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

    def _item_batches(self, files: Sequence[str], meta: deque[Any]) -> Iterator[Unit]:
        """Documents read by the parent, shipped in batches."""
        batch: list[Any] = []
        size = doc_bytes = disk = 0
        item: Item
        for item in iter_items(files):
            batch.append((item.kind, item.payload, item.source))
            size += len(item.payload)
            doc_bytes += len(item.payload) if item.kind != "error" else 0
            disk += item.disk_bytes
            if len(batch) >= self._batch_size or size >= self._batch_bytes:
                meta.append(("items", len(batch), doc_bytes, disk))
                yield ("items", batch)
                batch, size, doc_bytes, disk = [], 0, 0, 0
        if batch:
            meta.append(("items", len(batch), doc_bytes, disk))
            yield ("items", batch)

    def _line_ranges(self, path: str, workers: int, meta: deque[Any]) -> Iterator[Unit]:
        """A plain JSON lines file as byte ranges the workers read themselves; shipped as
        bytes when the parent cannot open it (the reader then reports why)."""
        try:
            size = os.path.getsize(path)
            plan = ranges.plan_ranges(path, ranges.chunk_bytes_for(size, workers,
                                                                   self._batch_bytes))
            first = next(plan, None)
        except OSError:
            yield from self._item_batches([path], meta)
            return
        open_path = os.path.abspath(path)  # a worker's working directory may differ
        is_first = True
        span = first
        while span is not None:
            meta.append(("lines", is_first))
            yield ("lines", path, open_path, span[0], span[1])
            is_first = False
            span = next(plan, None)

    def _json_groups(self, files: Sequence[str], meta: deque[Any]) -> Iterator[Unit]:
        group: list[tuple[str, str]] = []
        size = 0
        for path in files:
            group.append((path, os.path.abspath(path)))
            try:
                size += os.path.getsize(path)
            except OSError:  # reported by the worker
                pass
            if len(group) >= self._batch_size or size >= self._batch_bytes:
                meta.append(("json",))
                yield ("json", group)
                group, size = [], 0
        if group:
            meta.append(("json",))
            yield ("json", group)

    def _units(self, engine: Engine, meta: deque[Any]) -> Iterator[Unit]:
        """The work, in input order: descriptors of seekable inputs when the engine's
        workers can read the parent's files, documents otherwise."""
        if not (SEEKABLE_RANGES and engine.reads_files):
            yield from self._item_batches(self.files, meta)
            return
        i = 0
        files = self.files
        while i < len(files):
            kind = ranges.seekable_kind(files[i])
            j = i + 1
            if kind != "lines":  # a run of files of the same kind, one stream of units
                while j < len(files) and ranges.seekable_kind(files[j]) == kind:
                    j += 1
            if kind == "lines":
                yield from self._line_ranges(files[i], engine.jobs, meta)
            elif kind == "json":
                yield from self._json_groups(files[i:j], meta)
            else:
                yield from self._item_batches(files[i:j], meta)
            i = j

    def _execute(self) -> Iterator[Result]:
        summary = self._summary
        start = time.perf_counter()
        report = AtomicLines(self._report_path) if self._report_path is not None else None
        notes = (
            AtomicLines(self._annotations_path) if self._annotations_path is not None else None
        )
        progress = Progress(total_disk_bytes(self.files), self._progress_enabled)
        meta: deque[Any] = deque()
        engine: Engine | None = None
        ok = False
        try:
            engine = make_engine(self._engine_name, self._jobs, self._scheduler)
            line_base = 0
            for result in engine.map(self._units(engine, meta), self.search_cap):
                kind, *info = meta.popleft()
                if kind == "items":
                    verdicts = result
                    count, doc_bytes, disk = info
                else:
                    verdicts, fixups, lines, doc_bytes, disk = result
                    count = len(verdicts)
                    if kind == "lines":
                        if info[0]:
                            line_base = 0
                        verdicts = ranges.renumber(verdicts, fixups, line_base)
                        line_base += lines
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
