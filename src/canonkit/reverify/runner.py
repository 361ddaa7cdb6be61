"""``run()``: plan units of work, stream them through an engine, and collect the report,
the annotations and the summary. Nothing is held per Episode beyond the units in flight.

Failing closed: every option, input and output path is checked when the ``Run`` is made,
before any work; the report and the annotations are written to temporaries and renamed
into place together, only when every unit has come back; anything else — an error, an
interrupt, a consumer that stops iterating early — removes the temporaries and stops the
engine's workers.
"""
from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .. import engines
from ..engines import dask as dask_engine
from .._files import validate_output_path
from ..errors import OutputPathError
from .output import AtomicLines, annotation
from .._progress import Progress
from . import ranges
from .ranges import chunk_bytes_for, seekable_kind
from .sources import UNREADABLE, Input, expand_paths, iter_items, total_disk_bytes
from .summary import Summary
from . import blocks
from .blocks import Block
from .cache import CLIENT_SEGMENT_BYTES, CacheView, ResultCache, compact, open_cache, view
from .journal import Journal, unit_key
from .object_journal import ObjectJournal
from .units import (
    CHANGED,
    Documents,
    JsonFiles,
    LineRange,
    Unit,
    UnitResult,
    WholeObject,
    cached_block,
    lost,
    refused_range,
    split,
    verify_unit,
)
from .worker import Options

DEFAULT_SEARCH_CAP = 40320  # 8!: one full tied group of the largest size the spec names
DEFAULT_BATCH_SIZE = 64
DEFAULT_BATCH_BYTES = 8 * 1024 * 1024
#: the default unit on Dask: a task costs the client and the scheduler a few milliseconds
#: of CPU each (about 8 ms measured on a running cluster), so units are larger there
DASK_BATCH_BYTES = 64 * 1024 * 1024
# Workers that can open the parent's files read plain JSON lines and .json documents
# themselves from descriptors (units.py); False ships every document's bytes.
SEEKABLE_RANGES = True

PathArg = str | os.PathLike[str]
_AFTER_CHANGE = ("not read: the file is not the one the run started on (an earlier range of "
                 "it was refused)")


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


def _check_outputs(report: PathArg | None, annotations: PathArg | None,
                   inputs: Sequence[Input]) -> None:
    """Refuse, before any work, an output that could not be written completely: its
    directory is missing or read-only, it is a directory or another non-regular file, it
    is one of the inputs, or both outputs are one file."""
    names = [i.path for i in inputs]
    if report is not None:
        validate_output_path(report, inputs=names)
    if annotations is not None:
        validate_output_path(annotations, inputs=names)
        if report is not None and os.path.realpath(report) == os.path.realpath(annotations):
            raise OutputPathError(f"{os.fspath(annotations)}: is the report "
                                  f"({os.fspath(report)}) too; the report and the "
                                  "annotations need two files",
                                  detail=os.fspath(annotations))


class Run:
    """A re-verification run of every Episode under ``paths`` (files, directories, or
    URLs of objects and prefixes in object storage: docs/scale.md).
    Iterate it for the per-Episode :class:`Result` values (in input order, streaming);
    ``summary`` is complete once iteration ends (reading it earlier drains the run).
    Report and annotation files are written as it goes and committed at the end.

    ``engine`` "local" (``jobs`` processes; 1 = in-process; default every core) or "dask"
    (``scheduler`` address, or a LocalCluster of ``jobs`` workers); ``search_cap`` bounds
    the tie search per Episode; ``report``/``annotations`` are output paths;
    ``batch_size``/``batch_bytes`` size the units of work (they never change the report;
    ``batch_bytes`` defaults to 8 MiB on the local pool and 64 MiB on Dask);
    ``progress`` None = on a terminal; ``require_layer3`` writes the Layer 3 component on
    every Episode line and fails the run's exit status for an Episode whose Layer 3 failed
    or is absent; ``on_progress(elapsed seconds, Episodes, bytes read)`` is called as each
    unit of work comes back (an HTML report's throughput samples); ``journal`` a local
    file or an object-storage prefix that makes the run resumable (each finished unit is
    added to it; a run started on an existing journal takes the units it holds from it)
    and ``cache`` a local directory (or an object-storage prefix) of results keyed by each
    document's bytes (REVERIFY.md §7: neither changes the report beyond its
    ``from_journal``/``from_cache`` counts). Raises
    ``InputError``/``OutputPathError``/``ValueError`` (``JournalError``, ``CacheError``)
    at once; the work happens while the run is iterated."""

    def __init__(
        self,
        paths: Sequence[PathArg] | PathArg,
        *,
        engine: str = "local",
        jobs: int | None = None,
        scheduler: str | None = None,
        search_cap: int = DEFAULT_SEARCH_CAP,
        report: PathArg | None = None,
        annotations: PathArg | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_bytes: int | None = None,
        progress: bool | None = False,
        require_layer3: bool = False,
        on_progress: Callable[[float, int, int], None] | None = None,
        journal: PathArg | None = None,
        cache: PathArg | None = None,
    ) -> None:
        if search_cap < 1:
            raise ValueError("search_cap must be at least 1")
        if batch_bytes is None:
            batch_bytes = DASK_BATCH_BYTES if engine == "dask" else DEFAULT_BATCH_BYTES
        if batch_size < 1 or batch_bytes < 1:
            raise ValueError("batch_size and batch_bytes must be at least 1")
        if engine not in engines.ENGINES:
            raise ValueError(f"unknown engine {engine!r} (expected local or dask)")
        if jobs is not None and jobs < 1:
            raise ValueError("jobs must be at least 1")
        if scheduler is not None and engine != "dask":
            raise ValueError("a scheduler address needs engine='dask'")
        if engine == "dask":
            dask_engine.worker_wait_setting()  # ValueError for a bad setting, before any work
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self.inputs = expand_paths(paths)  # InputError for a path that cannot be used
        _check_outputs(report, annotations, self.inputs)  # OutputPathError
        from .._files.urls import is_url

        # a journal in object storage checks its own prefix (ObjectJournal, below)
        remote_journal = isinstance(journal, str) and is_url(journal)
        if journal is not None and not remote_journal:
            validate_output_path(journal, inputs=self.files)
            for other in (report, annotations):
                if other is not None and os.path.realpath(other) == os.path.realpath(journal):
                    raise OutputPathError(f"{os.fspath(journal)}: the journal needs a file "
                                          "of its own", detail=os.fspath(journal))
        self._cache = None if cache is None else open_cache(cache)  # CacheError
        self._cache_view: CacheView | None = None  # its segments, listed when the run starts
        self._client_cache: ResultCache | None = None  # the client's look-ups and blocks
        self._named = [os.fspath(p) for p in paths]
        self._engine_name, self._jobs, self._scheduler = engine, jobs, scheduler
        self.search_cap = search_cap
        self.require_layer3 = require_layer3
        self._report_path, self._annotations_path = report, annotations
        self._batch_size, self._batch_bytes = batch_size, batch_bytes
        self._progress_enabled = progress
        self._on_progress = on_progress
        # JournalError (a usage error) now for a journal of other options or inputs;
        # OutputPathError for a journal in object storage under an input prefix
        journal_class = ObjectJournal if remote_journal else Journal
        self._journal = None if journal is None else journal_class(
            os.fspath(journal), search_cap=search_cap, require_layer3=require_layer3,
            paths=[p if is_url(p) else os.path.abspath(p) for p in self._named])
        #: what was ignored in the journal (a torn last entry, damaged entries), to tell
        self.journal_notes: list[str] = [] if self._journal is None else self._journal.notes
        self._summary = Summary(paths=self._named, files=len(self.inputs),
                                require_layer3=require_layer3)
        self._started = False
        self._done = False

    @property
    def files(self) -> list[str]:
        """The input files (and unreadable paths), in the order they are read."""
        return [i.path for i in self.inputs]

    @property
    def summary(self) -> Summary:
        """The summary; reading it before the run was iterated runs it through (without
        making a ``Result`` per Episode)."""
        if not self._done:
            lines = self._start(results=False)
            try:
                for _ in lines:
                    pass
            finally:
                lines.close()  # an interrupt stops the engine now, not when collected
        return self._summary

    def __iter__(self) -> Generator[Result, None, None]:
        return self._start(results=True)

    def _start(self, results: bool) -> Generator[Result, None, None]:
        if self._started:
            if self._done:
                return _nothing()
            raise RuntimeError("a Run can be iterated only once")
        self._started = True
        return self._execute(results)

    # --- planning ---------------------------------------------------------------------

    def _documents(self, inputs: Sequence[Input]) -> Iterator[Unit]:
        """Documents read by the parent, shipped in batches."""
        batch: list[Any] = []
        size = 0
        for item in iter_items(inputs):
            batch.append(item)
            size += len(item.payload)
            if len(batch) >= self._batch_size or size >= self._batch_bytes:
                yield Documents(tuple(batch))
                batch, size = [], 0
        if batch:
            yield Documents(tuple(batch))

    def _line_ranges(self, item: Input, workers: int) -> Iterator[Unit]:
        """A plain JSON-lines file as byte ranges the workers read themselves; read by
        the parent when it cannot plan them (the reader then reports why)."""
        path = item.path
        try:
            size = item.identity.size if item.identity is not None else os.path.getsize(path)
            plan = ranges.plan_ranges(path, chunk_bytes_for(size, workers, self._batch_bytes),
                                      item.identity)
            span = next(plan, None)
        except OSError:
            yield from self._documents([item])
            return
        # a worker's working directory may differ; a URL is the same everywhere
        opened = path if item.remote else os.path.abspath(path)
        first = True
        while span is not None:
            yield LineRange(path, opened, span[0], span[1], first, identity=item.identity)
            first = False
            span = next(plan, None)

    def _json_groups(self, inputs: Sequence[Input]) -> Iterator[Unit]:
        group: list[tuple[str, str, Any]] = []
        size = 0
        for item in inputs:
            if item.remote:
                group.append((item.path, item.path, item.identity))
                size += item.identity.size if item.identity is not None else 0
            else:
                group.append((item.path, os.path.abspath(item.path), item.identity))
                try:
                    size += os.path.getsize(item.path)
                except OSError:  # reported by the worker
                    pass
            if len(group) >= self._batch_size or size >= self._batch_bytes:
                yield JsonFiles(tuple(group))
                group, size = [], 0
        if group:
            yield JsonFiles(tuple(group))

    def _units(self, workers_read_files: bool, workers: int,
               workers_read_objects: bool = False) -> Iterator[Unit]:
        """The work, in input order: descriptors of seekable inputs when the workers can
        read the parent's files (``workers_read_files``) or the objects of object storage
        (``workers_read_objects``), documents otherwise."""
        if not (SEEKABLE_RANGES and (workers_read_files or workers_read_objects)):
            yield from self._documents(self.inputs)
            return

        def kind(item: Input) -> str | None:
            if item.kind == UNREADABLE:
                return None
            if item.remote:  # an object no range can be cut from is one unit
                if not workers_read_objects:
                    return None
                return seekable_kind(item.path) or "whole"
            return seekable_kind(item.path) if workers_read_files else None

        inputs = self.inputs
        i = 0
        while i < len(inputs):
            this = kind(inputs[i])
            j = i + 1
            if this not in ("lines", "whole"):  # a run of inputs of one kind, one stream
                while j < len(inputs) and kind(inputs[j]) == this:
                    j += 1
            if this == "lines":
                yield from self._line_ranges(inputs[i], workers)
            elif this == "whole":
                yield WholeObject(inputs[i])
            elif this == "json":
                yield from self._json_groups(inputs[i:j])
            else:
                yield from self._documents(inputs[i:j])
            i = j

    # --- execution --------------------------------------------------------------------

    def _workers_read_files(self, engine: engines.Engine) -> bool:
        """Whether the workers see the inputs the parent sees. A remote Dask cluster is
        asked: every worker must find every seekable input as the same file (device,
        inode, size, modification time) for descriptors to be sent. In-process, the
        parent's own readers serve (there is no one to send descriptors to), except with
        a result cache (a byte range is then looked up whole: ``units.py``) or a journal
        (a range is journalled under its file's identity, a batch of documents under the
        BLAKE3 of its bytes: a second pass over the corpus)."""
        if engine.in_process:
            return self._cache is not None or self._journal is not None
        if engine.shares_files:
            return True
        paths = [os.path.abspath(i.path) for i in self.inputs
                 if i.kind != UNREADABLE and not i.remote and seekable_kind(i.path)]
        if not paths:
            return False
        seen = engine.run_on_workers(_identities, paths)  # None: it cannot ask its workers
        if not seen:
            return False
        mine = _identities(paths)
        return all(theirs == mine for theirs in seen.values())

    def _recover(self, engine: engines.Engine, unit: Unit) -> UnitResult:
        """A unit whose worker died twice: run its Episodes one by one, so that only the
        Episode that kills its worker is lost (reported ``invalid_record``,
        ``worker_lost``)."""
        try:
            singles, lines = split(unit)
        except OSError as exc:  # the file changed or vanished meanwhile
            if not isinstance(unit, LineRange):  # the only kind split reads
                raise
            return refused_range(unit, f"cannot read the file: {type(exc).__name__}: {exc}")
        verdicts = []
        doc_bytes = 0
        cached = corrupt = named = 0
        for single, result in engine.map(verify_unit, singles, self.search_cap,
                                         self.require_layer3, self._cache_view):
            if isinstance(result, engines.Lost):
                verdicts.append(lost(single, f"worker_lost: {result.reason}"))
            else:
                verdicts.extend(result.verdicts)
                doc_bytes += result.doc_bytes
                cached += result.cached
                corrupt += result.cache_corrupt
                named += result.named_exports
        disk = unit.end - unit.start if isinstance(unit, LineRange) else 0
        return UnitResult(verdicts, lines, doc_bytes, disk, cached, corrupt, named)

    def _results(self, engine: engines.Engine, units: Iterator[Unit]
                 ) -> Iterator[tuple[Unit, UnitResult, str | None, bool]]:
        """``(unit, result, journal key, from the journal)`` in input order: a unit the
        journal holds, or whose block the client finds in the cache itself
        (``units.cached_block``), is not sent to the engine; the others are, as a stream,
        and their results are merged back in order (a run that finds everything never
        starts a worker). A unit whose worker died twice is recovered Episode by
        Episode (and not journalled: a lost worker is no result)."""
        journal = self._journal
        lookup = self._client_cache
        options = Options(self.search_cap, self.require_layer3)
        buffer = bytearray()  # the client's reads of ranges to hash
        planned: deque[tuple[Unit, str | None, UnitResult | None, bool]] = deque()

        def to_verify() -> Iterator[Unit]:
            for unit in units:
                key = None if journal is None else unit_key(unit)
                held = None if journal is None else journal.get(key)
                journaled = held is not None
                if held is None and lookup is not None:
                    corrupt = lookup.corrupt
                    held = cached_block(unit, lookup, options, buffer)
                    if lookup.corrupt != corrupt:  # a damaged block: the unit is verified
                        self._summary.cache_recomputed += lookup.corrupt - corrupt
                planned.append((unit, key, held, journaled))
                if held is None:
                    yield unit

        done = engine.map(verify_unit, to_verify(), self.search_cap, self.require_layer3,
                          self._cache_view)
        ahead: deque[tuple[Unit, Any]] = deque()  # results of units still behind hits
        while True:
            if not planned:  # the engine pulls more units from to_verify as it needs
                got = next(done, None)
                if got is None and not planned:
                    return
                if got is not None:
                    ahead.append(got)
                continue
            unit, key, held, journaled = planned.popleft()
            if held is not None:
                yield unit, held, key, journaled
                continue
            _, result = ahead.popleft() if ahead else next(done)
            if isinstance(result, engines.Lost):
                yield unit, self._recover(engine, unit), None, False
            else:
                yield unit, result, key, False

    def _outputs(self) -> tuple[AtomicLines | None, AtomicLines | None]:
        report = notes = None
        try:
            if self._report_path is not None:
                report = AtomicLines(self._report_path, inputs=self.files)
            if self._annotations_path is not None:
                notes = AtomicLines(self._annotations_path, inputs=self.files)
        except BaseException:
            if report is not None:
                report.abort()
            raise
        return report, notes

    def _execute(self, results: bool = True) -> Generator[Result, None, None]:
        """The run; ``results`` False when nobody iterates it (``summary``): the lines of a
        unit found whole are then written without a Python object per Episode."""
        summary = self._summary
        start = time.perf_counter()
        progress = Progress(total_disk_bytes(self.inputs), self._progress_enabled)
        report, notes = self._outputs()
        try:
            with engines.open_engine(self._engine_name, jobs=self._jobs,
                                     scheduler=self._scheduler,
                                     lazy=self._cache is not None) as engine:
                if self._cache is not None:
                    self._cache_view = view(self._cache, client_looks_up=True)
                    self._client_cache = ResultCache(self._cache_view)
                # workers read objects themselves: object storage is the same everywhere
                units = self._units(self._workers_read_files(engine), engine.jobs,
                                    workers_read_objects=not engine.in_process)
                base = 0
                changed = False  # a range of this file was refused: its file changed
                journal = self._journal
                if journal is not None:
                    journal.open()
                for unit, result, key, held in self._results(engine, units):
                    if journal is not None and not held:
                        journal.record(key, result)  # durable before the run goes on
                    if isinstance(unit, LineRange):
                        if unit.first:
                            base, changed = 0, False
                        if changed:  # line numbers are unknown from here: nothing counts
                            result, held = refused_range(unit, _AFTER_CHANGE), False
                        changed = changed or result.lines == CHANGED
                        lines_before, base = base, base + max(result.lines, 0)
                    else:
                        lines_before = 0
                    result = self._rebased(unit, result, lines_before)
                    summary.document_bytes += result.doc_bytes
                    if held:
                        summary.from_journal += result.episodes
                    summary.from_cache += result.cached
                    summary.cache_recomputed += result.cache_corrupt
                    block = result.block or self._new_block(unit, result, lines_before)
                    if block is not None:
                        summary.add_block(block.counts, block.layer3)
                        if report is not None:
                            report.write(block.report)
                        if notes is not None:
                            notes.write(block.notes)
                        if results:
                            for verdict in block.verdicts():
                                yield Result(verdict.line(lines_before), verdict.outcome,
                                             verdict.episode_id, verdict.order)
                    else:
                        lines = []
                        for n, verdict in enumerate(result.verdicts):
                            line = verdict.line(lines_before)
                            lines.append(line)
                            summary.add(verdict.outcome, verdict.layer3)
                            if notes is not None and verdict.order is not None:
                                where = _source_of(unit, n, verdict, lines_before)
                                notes.write_json(annotation(verdict.episode_id, where,
                                                            verdict.order))
                        if report is not None and lines:
                            report.write(b"\n".join(lines) + b"\n")
                        if results:
                            for line, verdict in zip(lines, result.verdicts):
                                yield Result(line, verdict.outcome, verdict.episode_id,
                                             verdict.order)
                    progress.update(result.disk_bytes, result.episodes)
                    if self._on_progress is not None:
                        self._on_progress(time.perf_counter() - start, result.episodes,
                                          result.disk_bytes)
            summary.seconds = time.perf_counter() - start
            if report is not None:
                report.write_json(summary.to_json())
            with engines.signals_held():
                if report is not None:
                    report.commit()
                if notes is not None:
                    notes.commit()
            self._done = True
            if self._cache is not None:  # after the report: it never depends on this
                if self._client_cache is not None:
                    self._client_cache.flush()
                compact(self._cache)
        finally:
            progress.close()
            if self._journal is not None:
                self._journal.close()
            for out in (report, notes):
                if out is not None:
                    out.abort()  # a no-op after commit

    def _rebased(self, unit: Unit, result: UnitResult, lines_before: int) -> UnitResult:
        """A block rendered at another line base than this run's (lines before the range
        changed, not the range) as verdicts, which are numbered as they are written; a
        block whose lines do not read is a damaged entry: the unit is verified here."""
        block = result.block
        if block is None or block.line0 == lines_before:
            return result
        try:
            return result._replace(verdicts=list(block.verdicts()), block=None)
        except ValueError:
            fresh = verify_unit(unit, self.search_cap, self.require_layer3)
            return fresh._replace(cache_corrupt=result.cache_corrupt + 1)

    def _new_block(self, unit: Unit, result: UnitResult, lines_before: int) -> Block | None:
        """When the cache may keep the unit's lines (``UnitResult.block_key``), the block
        of its verdicts at this line base, kept for the cache (and written whole); else
        None (the verdicts are written one by one)."""
        cache = self._client_cache
        if cache is None or result.block_key is None or result.lines == CHANGED:
            return None
        try:
            block = blocks.build(
                result.verdicts, lines_before,
                (orjson.dumps(annotation(v.episode_id, _source_of(unit, n, v, lines_before),
                                         v.order))
                 for n, v in enumerate(result.verdicts) if v.order is not None),
                lines=result.lines, doc_bytes=result.doc_bytes, disk_bytes=result.disk_bytes)
        except orjson.JSONEncodeError:  # an annotation of a name that is not UTF-8
            return None
        cache.put_block(result.block_key, block)
        if cache.pending_bytes >= CLIENT_SEGMENT_BYTES:
            cache.flush()
        return block


def _nothing() -> Generator[Result, None, None]:
    yield from ()


def _identities(paths: list[str]) -> list[tuple[int, int, int, int] | None]:
    """``(device, inode, size, mtime)`` of each path (None if it cannot be stat'ed)."""
    out: list[tuple[int, int, int, int] | None] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return out


def _source_of(unit: Unit, n: int, verdict: Any, lines_before: int) -> dict[str, Any]:
    """The ``source`` of the ``n``-th verdict of ``unit`` (for an annotation)."""
    if isinstance(unit, LineRange):
        return {"file": unit.source, "line": verdict.number + lines_before}
    if isinstance(unit, JsonFiles):
        return {"file": unit.files[n][0]}
    if isinstance(unit, WholeObject):  # line numbers in JSON lines, offsets in CBOR
        key = "offset" if unit.input.kind == "cbor" else "line"
        return {"file": unit.input.path, key: verdict.number}
    return unit.items[n].source.as_dict()


#: ``run(paths, **options)``: make a :class:`Run` (the documented entry point)
run = Run
