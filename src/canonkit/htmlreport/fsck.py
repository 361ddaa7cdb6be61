"""The HTML report of a store's fsck: what was checked (objects by form, bytes verified,
time per phase), findings by severity and by code, and a sortable table of the findings
with their path, offset, address and detail.

The table lists errors first, then warnings, then the rest, each in the report's order,
up to ``max_rows``; the page says how many more there are (``--json`` has them all).
"""
from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING

from .._version import __version__
from ..store.findings import CODES, SEVERITIES
from .page import Column, counts_table, document, section, sortable_table
from .reverify import MAX_ROWS
from .svg import Bar, bar_chart, count, split_bar
from .text import cell, escape

if TYPE_CHECKING:
    from ..store.findings import Finding, FsckReport

__all__ = ["FORM_LABELS", "render_fsck"]

SEVERITY_KINDS = {"error": "bad", "warning": "warn", "info": "info"}
#: the keys of ``FsckReport.forms``, as the page names them
FORM_LABELS = {"loose": "loose, raw", "loose_deflate": "loose, DEFLATE",
               "packed": "packed, raw", "packed_deflate": "packed, DEFLATE"}
PHASE_LABELS = {"plan": "refs, layout and pack structure", "check": "objects checked",
                "reachability": "reachability"}
_PATH_CHARS, _DETAIL_CHARS = 240, 400


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def _summary_rows(report: FsckReport) -> list[tuple[str, str, int, str]]:
    return [
        ("distinct objects with an intact form", "objects", report.objects, "ok"),
        ("loose files", "loose_files", report.loose_files, "neutral"),
        ("pack entries", "pack_entries", report.pack_entries, "neutral"),
        ("packs", "packs", report.packs, "neutral"),
        ("objects reachable from a ref", "reachable", report.reachable, "ok"),
        ("refs", "refs", report.refs, "neutral"),
        ("bytes verified (BLAKE3 of the logical bytes)", "logical_bytes",
         report.logical_bytes, "neutral"),
    ]


def render_fsck(report: FsckReport, store: str | os.PathLike[str], *,
                max_rows: int = MAX_ROWS) -> str:
    """The whole page for ``report``, the fsck of the store at ``store``."""
    if max_rows < 0:
        raise ValueError("max_rows must be at least 0")
    name = os.fspath(store)
    by_severity = Counter(f.severity for f in report.findings)
    status = report.exit_status
    verdict = "clean" if report.ok else f"{_plural(by_severity['error'], 'error')}"
    header = (f"<h1>canonkit store fsck</h1>\n"
              f'<p><span class="status {"pass" if report.ok else "fail"}" id="exit-status">'
              f"exit status {status}: {escape(verdict)}</span></p>\n"
              f'<p class="meta">Store <code>{cell(name, _PATH_CHARS)}</code>; checked in '
              f"{report.seconds:.2f} s, engine {escape(report.engine)}, "
              f"{_plural(report.jobs, 'job')}.</p>")
    checked = counts_table(_summary_rows(report), key_header="", total=None,
                           ident="checked-counts")
    severities = counts_table(
        [(s, s, by_severity.get(s, 0), SEVERITY_KINDS[s]) for s in SEVERITIES],
        key_header="severity", total=len(report.findings), ident="severity-counts",
        id_prefix="count-severity-")
    sections = [
        section("checked", "What was checked", checked + _forms(report) + _phases(report)),
        section("findings-by-code", "Findings", severities + _codes(report)),
        _table(report.findings, max_rows),
    ]
    footer = (f"<p>Written by canonkit {escape(__version__)}. <code>canonkit store fsck "
              "--json</code> gives every finding as data; this page is a view of the same "
              "check.</p>")
    return document(f"canonkit store fsck: {name}", header, sections, footer, __version__)


def _forms(report: FsckReport) -> str:
    forms = report.forms
    bars = [Bar(label, forms.get(key, {}).get("objects", 0), "ok" if "deflate" not in key
                else "ok3", f"{count(forms.get(key, {}).get('bytes', 0))} bytes")
            for key, label in FORM_LABELS.items()]
    rows = [(label, key, forms.get(key, {}).get("objects", 0), bar.kind)
            for (key, label), bar in zip(FORM_LABELS.items(), bars)]
    return ("<h3>Objects by form</h3>"
            + bar_chart(bars, title="Intact objects by form", unit="objects")
            + counts_table(rows, key_header="form", total=None, ident="form-counts",
                           id_prefix="count-form-")
            + '<p class="note">Each intact loose file and pack entry checked, by where it is '
              "stored and how (an object stored twice counts twice).</p>")


def _phases(report: FsckReport) -> str:
    phases = report.phases
    if not phases:
        return ""
    parts = [Bar(PHASE_LABELS.get(k, k), round(v, 4), kind)
             for (k, v), kind in zip(phases.items(), ("info", "ok", "warn", "neutral"))]
    return "<h3>Time per phase</h3>" + split_bar(parts, title="Seconds per phase of the check",
                                                 unit="s")


def _codes(report: FsckReport) -> str:
    found = report.counts()
    if not found:
        return "<p>No finding.</p>"
    order = sorted(found, key=lambda c: (SEVERITIES.index(CODES[c][0]), c))
    bars = [Bar(code, found[code], SEVERITY_KINDS[CODES[code][0]], CODES[code][1])
            for code in order]
    rows = [(CODES[code][1], code, found[code], SEVERITY_KINDS[CODES[code][0]])
            for code in order]
    return ("<h3>Findings by code</h3>"
            + bar_chart(bars, title="Findings by code", unit="findings")
            + counts_table(rows, key_header="code", total=None, ident="code-counts",
                           id_prefix="count-code-"))


def _table(findings: list[Finding], max_rows: int) -> str:
    if not findings:
        return section("findings", "Every finding", "<p>No finding.</p>", wide=True)
    ordered = sorted(findings, key=lambda f: SEVERITIES.index(f.severity))  # stable
    shown = ordered[:max_rows]
    if len(shown) == len(ordered):
        note = f"All {_plural(len(ordered), 'finding')}, errors first"
    else:
        note = (f"The first {len(shown):,} of {len(ordered):,} findings, errors first; "
                f'<span id="rows-left">{len(ordered) - len(shown):,}</span> more are in '
                "<code>--json</code>")
    note += '<span class="js-only">; a click on a column heading sorts by it</span>.'
    columns = [Column("#", numeric=True), Column("severity"), Column("code", cls="mono nowrap"),
               Column("path", cls="mono"), Column("offset", numeric=True),
               Column("address", cls="mono"), Column("detail")]
    rows = []
    for index, f in enumerate(shown, 1):
        rank = str(SEVERITIES.index(f.severity))
        rows.append([
            (f"{index:,}", str(index)),
            (f'<span class="swatch {SEVERITY_KINDS[f.severity]}"></span>{escape(f.severity)}',
             rank),
            (escape(f.code), None),
            (cell(f.path, _PATH_CHARS), None),
            ("" if f.offset is None else f"{f.offset:,}",
             "" if f.offset is None else str(f.offset)),
            ("" if f.address is None else cell(f.address, 80), None),
            (cell(f.detail, _DETAIL_CHARS), None),
        ])
    body = f'<p class="note" id="findings-note">{note}</p>' + sortable_table(
        "findings-table", columns, rows)
    return section("findings", "Every finding", body, wide=True)
