"""The HTML report of a re-verification run: outcomes, constructions, throughput over the
run, mismatches and findings, and a sortable table of the failing Episodes with their
first mismatch and source.

:class:`ReverifyPage` is fed the run's results as they stream (``add``) and keeps only
tallies and the first ``max_rows`` failing Episodes, so a run of any length makes a page
of bounded size; ``render`` then needs the run's ``Summary`` (the counts, from the same
source as the report's final line) and its ``Timeline``.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from .._version import __version__
from ..reverify.layer3_component import ABSENT, FAILED, STATES
from ..reverify.outcomes import DESCRIPTIONS, FAILING, TABLE_ORDER
from .page import Column, counts_table, document, section, sortable_table, stack
from .svg import Bar, bar_chart, line_chart, span_chart
from .text import cell, clip, escape

if TYPE_CHECKING:
    from ..reverify.runner import Result
    from ..reverify.summary import Summary
    from .timeline import Timeline

__all__ = ["MAX_KEYS", "MAX_ROWS", "FailingEpisode", "ReverifyPage"]

#: failing Episodes listed in the table; the page says how many more there are
MAX_ROWS = 1000
#: distinct values a chart tallies (constructions, flags, codes); the rest are "other"
MAX_KEYS = 40
OTHER = "other"
_ID_CHARS, _REASON_CHARS, _SOURCE_CHARS, _PATH_CHARS, _PATHS_SHOWN = 120, 400, 240, 300, 20

KINDS = {
    "reproduced": "ok", "reproduced_with_annotation": "ok2",
    "reproduced_under_other_construction": "ok3", "reproduced_by_search": "ok4",
    "not_reproducible": "bad", "no_seal_record": "warn", "unsealed": "neutral",
    "invalid_record": "bad2",
}
_LAYER3_KINDS = {"ok": "ok", FAILED: "bad", ABSENT: "neutral"}
_CODE = re.compile(r"([a-z][a-z0-9_]*):")


def _tally(counter: Counter[str], key: str) -> None:
    if key in counter or len(counter) < MAX_KEYS:
        counter[key] += 1
    else:
        counter[OTHER] += 1


def _text(value: Any) -> str:
    """A JSON value from a report line as text (a string as itself)."""
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _sequence(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def source_text(source: Any) -> str:
    """``file:line`` (JSON lines), ``file @ byte offset`` (CBOR sequences), ``file``."""
    if not isinstance(source, dict):
        return _text(source)
    name = _text(source.get("file", ""))
    if "line" in source:
        return f"{name}:{_text(source['line'])}"
    if "offset" in source:
        return f"{name} @ byte {_text(source['offset'])}"
    return name


def first_mismatch(record: dict[str, Any]) -> str:
    """The first component that did not match, in report order ("" when none did)."""
    for name, state in _mapping(record.get("components")).items():
        if state == "mismatch":
            return str(name)
    return ""


class FailingEpisode(NamedTuple):
    """A row of the table: where the Episode is in the run (1-based) and its report
    line's fields as text, each clipped to what the table shows."""

    position: int
    episode_id: str | None
    outcome: str
    first_mismatch: str
    reason: str
    source: str
    layer3: str | None

    @classmethod
    def of(cls, position: int, record: dict[str, Any]) -> FailingEpisode:
        episode = record.get("episode_id")
        layer3 = _mapping(record.get("components")).get("layer3")
        return cls(position, None if episode is None else clip(_text(episode), _ID_CHARS),
                   clip(_text(record.get("outcome")), 60), clip(first_mismatch(record), 60),
                   clip(_text(record.get("reason") or ""), _REASON_CHARS),
                   clip(source_text(record.get("source")), _SOURCE_CHARS),
                   None if layer3 is None else clip(_text(layer3), 20))


class ReverifyPage:
    """Tallies of a run's results and its first ``max_rows`` failing Episodes (those
    that fail the exit status: ``not_reproducible``, ``no_seal_record``,
    ``invalid_record``, and with ``require_layer3`` a Layer 3 ``failed`` or ``absent``)."""

    def __init__(self, *, require_layer3: bool = False, max_rows: int = MAX_ROWS) -> None:
        if max_rows < 0:
            raise ValueError("max_rows must be at least 0")
        self.require_layer3 = require_layer3
        self.max_rows = max_rows
        self.constructions: Counter[str] = Counter()
        self.mismatches: Counter[str] = Counter()
        self.flags: Counter[str] = Counter()
        self.invalid_codes: Counter[str] = Counter()
        self.layer3_vectors: Counter[str] = Counter()
        self.failing = 0
        self.seen = 0
        self.rows: list[FailingEpisode] = []

    def add(self, result: Result) -> None:
        """One result of the run, in run order."""
        self.add_line(result.line)

    def add_line(self, line: bytes) -> None:
        """One Episode line of a report (JSON, as ``Result.line``); ValueError for a line
        that is not one (the final line, say)."""
        record = orjson.loads(line)
        if not isinstance(record, dict) or "outcome" not in record:
            raise ValueError("not an Episode line of a reverify report (no outcome)")
        self.seen += 1
        outcome = record["outcome"]
        construction = record.get("construction")
        _tally(self.constructions, "none" if construction is None else _text(construction))
        components = _mapping(record.get("components"))
        for name, state in components.items():
            if state == "mismatch":
                _tally(self.mismatches, str(name))
        for flag in _sequence(record.get("flags")):
            _tally(self.flags, _text(flag))
        if outcome == "invalid_record":
            found = _CODE.match(_text(record.get("reason") or ""))
            _tally(self.invalid_codes, found.group(1) if found else OTHER)
        for item in _sequence(record.get("layer3_findings")):
            vector = item.get("vector") if isinstance(item, dict) else None
            _tally(self.layer3_vectors, _text(vector) if vector is not None else OTHER)
        layer3 = components.get("layer3")
        if outcome in FAILING or (self.require_layer3 and layer3 in (FAILED, ABSENT)):
            self.failing += 1
            if len(self.rows) < self.max_rows:
                self.rows.append(FailingEpisode.of(self.seen, record))

    # --- rendering ----------------------------------------------------------------------

    def render(self, summary: Summary, timeline: Timeline | None = None) -> str:
        """The whole page, for the run whose results were added."""
        sections = [self._outcomes(summary),
                    stack(self._constructions(), self._findings()),
                    self._throughput(summary, timeline), self._table()]
        footer = (f"<p>Written by canonkit {escape(__version__)}. The report lines "
                  "(<code>--report</code>) are the record; this page is a view of the same "
                  "run.</p>")
        return document(f"canonkit reverify: {summary.episodes:,} Episodes",
                        self._header(summary), sections, footer, __version__)

    def _header(self, summary: Summary) -> str:
        status = summary.exit_status
        verdict = ("every sealed Episode reproduced" if status == 0
                   else f"{self.failing:,} failing Episode{'s' * (self.failing != 1)}")
        paths = summary.paths[:_PATHS_SHOWN]
        named = ", ".join(f"<code>{cell(p, _PATH_CHARS)}</code>" for p in paths)
        if len(summary.paths) > len(paths):
            named += f" and {len(summary.paths) - len(paths):,} more"
        return (f"<h1>canonkit reverify</h1>\n"
                f'<p><span class="status {"pass" if status == 0 else "fail"}" '
                f'id="exit-status">exit status {status}: {escape(verdict)}</span></p>\n'
                f'<p class="meta">Inputs: {named} ({summary.files:,} '
                f'file{"s" * (summary.files != 1)}). <span id="rate">'
                f"{escape(summary.rate_line())}</span>.</p>")

    def _outcomes(self, summary: Summary) -> str:
        rows = [(DESCRIPTIONS[n], n, summary.counts.get(n, 0), KINDS[n]) for n in TABLE_ORDER]
        body = counts_table(rows, key_header="outcome", total=summary.episodes,
                            ident="outcome-counts")
        body += bar_chart([Bar(n, summary.counts.get(n, 0), KINDS[n], DESCRIPTIONS[n])
                           for n in TABLE_ORDER], title="Episodes by outcome", unit="Episodes")
        if summary.layer3_reported:
            required = " (required)" if summary.require_layer3 else ""
            rows3 = [(f"Layer 3 {s}", s, summary.layer3.get(s, 0), _LAYER3_KINDS[s])
                     for s in STATES]
            body += (f"<h3>Layer 3{escape(required)}</h3>"
                     + counts_table(rows3, key_header="layer3", total=None,
                                    ident="layer3-counts", id_prefix="count-layer3-"))
        return section("outcomes", "Outcomes", body)

    def _constructions(self) -> str:
        bars = [Bar(name, n, "neutral" if name == "none" else "ok")
                for name, n in sorted(self.constructions.items(),
                                      key=lambda kv: (kv[0] in ("none", OTHER), kv[0]))]
        body = bar_chart(bars, title="Episodes by the construction that rebuilt them",
                         unit="Episodes") if bars else "<p>No Episode.</p>"
        body += ('<p class="note">The construction under which each root was rebuilt; '
                 "<em>none</em>: not rebuilt (not reproducible, no seal, unsealed or not "
                 "readable).</p>")
        return section("constructions", "Constructions", body)

    def _throughput(self, summary: Summary, timeline: Timeline | None) -> str:
        rate = escape(summary.rate_line())
        points = timeline.points() if timeline is not None else []
        if timeline is None or len(points) < 2:
            return section("throughput", "Throughput over the run", f"<p>{rate}</p>",
                           wide=True)
        body = ('<div class="pair">'
                + line_chart([(t, float(n)) for t, n, _ in points],
                             title="Episodes done over the run", x_label="seconds",
                             y_label="Episodes")
                + span_chart(timeline.rates(), title="Episodes per second over the run",
                             x_label="seconds", y_label="Episodes/s")
                + "</div>")
        body += (f'<p class="note">{rate}. Sampled as each unit of work came back '
                 f"({timeline.updates:,} units; {len(points) - 1:,} samples shown).</p>")
        return section("throughput", "Throughput over the run", body, wide=True)

    def _findings(self) -> str:
        charts = []
        for counter, title, kind in (
                (self.mismatches, "Episodes by mismatched component", "bad"),
                (self.flags, "Episodes by flag", "warn"),
                (self.invalid_codes, "Unreadable records by code", "bad2"),
                (self.layer3_vectors, "Layer 3 findings by vector", "bad")):
            if counter:
                bars = [Bar(k, v, kind) for k, v in sorted(
                    counter.items(), key=lambda kv: (kv[0] == OTHER, -kv[1], kv[0]))]
                charts.append(f"<h3>{escape(title)}</h3>"
                              + bar_chart(bars, title=title, unit="Episodes"
                                          if "Episodes" in title else "findings"))
        body = "".join(charts) or ("<p>No component mismatched, no flag was raised, every "
                                   "record was readable, no Layer 3 finding.</p>")
        return section("findings", "Mismatches and findings", body)

    def _table(self) -> str:
        shown = len(self.rows)
        if not self.failing:
            return section("failing", "Failing Episodes", "<p>No Episode failed.</p>",
                           wide=True)
        if shown == self.failing:
            note = (f"All {self.failing:,} failing Episodes, in input order"
                    f'<span class="js-only">; a click on a column heading sorts by it</span>.')
        else:
            note = (f"The first {shown:,} of {self.failing:,} failing Episodes, in input "
                    f'order; <span id="rows-left">{self.failing - shown:,}</span> more are '
                    "in the report lines (<code>--report</code>)"
                    '<span class="js-only">; a click on a column heading sorts these</span>.')
        columns = [Column("#", numeric=True), Column("Episode", cls="mono"),
                   Column("outcome", cls="mono nowrap"), Column("first mismatch", cls="mono"),
                   Column("reason"), Column("source", cls="mono")]
        with_layer3 = any(row.layer3 is not None for row in self.rows)
        if with_layer3:
            columns.insert(4, Column("Layer 3", cls="mono"))
        rows = [self._row(row, with_layer3) for row in self.rows]
        body = f'<p class="note" id="failing-note">{note}</p>' + sortable_table(
            "failing-episodes", columns, rows)
        return section("failing", "Failing Episodes", body, wide=True)

    @staticmethod
    def _row(row: FailingEpisode, with_layer3: bool) -> Sequence[tuple[str, str | None]]:
        cells: list[tuple[str, str | None]] = [
            (f"{row.position:,}", str(row.position)),
            ("\u2014" if row.episode_id is None else cell(row.episode_id, _ID_CHARS), None),
            (f'<span class="swatch {KINDS.get(row.outcome, "neutral")}"></span>'
             + cell(row.outcome, 60), None),
            (cell(row.first_mismatch, 60), None),
            (cell(row.reason, _REASON_CHARS), None),
            (cell(row.source, _SOURCE_CHARS), None),
        ]
        if with_layer3:
            cells.insert(4, ("" if row.layer3 is None else cell(row.layer3, 20), None))
        return cells
