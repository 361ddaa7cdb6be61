"""The page every HTML report is: one self-contained file, its style sheet and its one
script inline, its charts inline SVG, nothing fetched.

- **No network, no foreign script.** A Content-Security-Policy in the page allows exactly
  its own style sheet and script (by their SHA-256) and nothing else: no request leaves
  the page, and a ``<script>`` that found its way into the data would not run (the text
  is escaped as well: ``text.escape``).
- **Readable without JavaScript.** Everything is in the markup: counts, charts, the table
  in its natural order. The script only makes the table's columns sortable (a button in
  each heading, ``aria-sort`` kept current).
"""
from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from typing import NamedTuple

from .text import escape

__all__ = ["FORMAT", "Column", "counts_table", "document", "section", "sortable_table", "stack"]

#: named in each page's ``<meta name="generator">``, with canonkit's version
FORMAT = "canonkit-html-report/1"

STYLE = """
:root{--fg:#1d2330;--muted:#5b6577;--line:#d9dee7;--card:#fff;--bg:#f3f5f8;
--ok:#2e8b57;--ok2:#4aa874;--ok3:#7cc398;--ok4:#a8d8b9;--bad:#c0392b;--warn:#d4881c;
--bad2:#8e1f16;--none:#9aa3b2;--info:#3b74c4;--accent:#3b74c4}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header,main,footer{max-width:1180px;margin:0 auto;padding:0 20px}
header{padding-top:20px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:16px;margin:0 0 10px}
h3{font-size:14px;margin:16px 0 6px}
.status{display:inline-block;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600}
.status.pass{background:var(--ok)}.status.fail{background:var(--bad)}
.meta{color:var(--muted);margin:6px 0 0}
.meta code{color:var(--fg)}
main{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:16px;
padding-top:16px;padding-bottom:16px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px;
min-width:0;overflow-x:auto}
section.wide{grid-column:1/-1}
p.note{color:var(--muted);margin:8px 0 0}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
td{overflow-wrap:anywhere}
table.sortable td.mono{min-width:18ch}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.total td{font-weight:600;border-top:2px solid var(--fg)}
td.mono,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;
overflow-wrap:anywhere}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;
background:var(--none)}
th button{all:inherit;cursor:pointer;padding:0}
th button::after{content:" \\2195";color:var(--muted)}
th[aria-sort=ascending] button::after{content:" \\2191";color:var(--fg)}
th[aria-sort=descending] button::after{content:" \\2193";color:var(--fg)}
.js-only{display:none}html.js .js-only{display:inline}
th,td.nowrap{white-space:nowrap}
.stack{display:grid;gap:16px;align-content:start;min-width:0}
svg .column{fill:var(--accent);opacity:.8}
.pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px}
svg.chart{display:block;max-width:100%;height:auto;font-size:12px}
svg .label,svg .value,svg .tick,svg .axis,svg .legend text{fill:var(--fg)}
svg .tick,svg .axis{fill:var(--muted)}
svg .grid line{stroke:var(--line)}
svg .line{fill:none;stroke:var(--accent);stroke-width:2}
svg .area{fill:var(--accent);opacity:.15}
svg .dot{fill:var(--accent)}
.bar rect,.part,.legend rect,.swatch{fill:var(--none)}
.ok rect,.part.ok,.legend.ok rect{fill:var(--ok)}.swatch.ok{background:var(--ok)}
.ok2 rect,.part.ok2,.legend.ok2 rect{fill:var(--ok2)}.swatch.ok2{background:var(--ok2)}
.ok3 rect,.part.ok3,.legend.ok3 rect{fill:var(--ok3)}.swatch.ok3{background:var(--ok3)}
.ok4 rect,.part.ok4,.legend.ok4 rect{fill:var(--ok4)}.swatch.ok4{background:var(--ok4)}
.bad rect,.part.bad,.legend.bad rect{fill:var(--bad)}.swatch.bad{background:var(--bad)}
.bad2 rect,.part.bad2,.legend.bad2 rect{fill:var(--bad2)}.swatch.bad2{background:var(--bad2)}
.warn rect,.part.warn,.legend.warn rect{fill:var(--warn)}.swatch.warn{background:var(--warn)}
.info rect,.part.info,.legend.info rect{fill:var(--info)}.swatch.info{background:var(--info)}
footer{color:var(--muted);padding-bottom:24px}
"""

SCRIPT = """
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var collator = new Intl.Collator(undefined, {numeric: true, sensitivity: "base"});
  function key(cell, numeric) {
    var value = cell.getAttribute("data-sort");
    if (value === null) { value = cell.textContent; }
    if (!numeric) { return value; }
    var number = parseFloat(value);
    return isNaN(number) ? -Infinity : number;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead.rows[0].cells, body = table.tBodies[0];
    Array.prototype.forEach.call(heads, function (th, column) {
      var button = document.createElement("button");
      button.type = "button";
      while (th.firstChild) { button.appendChild(th.firstChild); }
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () {
        var numeric = th.getAttribute("data-type") === "number";
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[column], numeric), y = key(b.cells[column], numeric);
          var order = numeric ? (x < y ? -1 : x > y ? 1 : 0) : collator.compare(x, y);
          return (ascending ? order : -order) ||
            (a.getAttribute("data-index") - b.getAttribute("data-index"));
        });
        var fragment = document.createDocumentFragment();
        rows.forEach(function (row) { fragment.appendChild(row); });
        body.appendChild(fragment);
        Array.prototype.forEach.call(heads, function (other) {
          other.setAttribute("aria-sort", "none");
        });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      });
    });
  });
}());
"""


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


POLICY = (f"default-src 'none'; style-src {_digest(STYLE)}; script-src {_digest(SCRIPT)}; "
          "img-src data:; base-uri 'none'; form-action 'none'")


def document(title: str, header: str, sections: Sequence[str], footer: str,
             version: str) -> str:
    """The whole page. ``header``, ``sections`` and ``footer`` are markup already
    escaped; ``title`` and ``version`` are text."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="canonkit {escape(version)} ({FORMAT})">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"<header>\n{header}\n</header>\n<main>\n" + "\n".join(sections)
        + f"\n</main>\n<footer>\n{footer}\n</footer>\n<script>{SCRIPT}</script>\n"
        "</body>\n</html>\n")


def section(ident: str, heading: str, body: str, *, wide: bool = False) -> str:
    """A card: ``<section id=ident>`` with its heading (text) and body (markup)."""
    cls = ' class="wide"' if wide else ""
    return (f'<section id="{escape(ident)}"{cls}>\n<h2>{escape(heading)}</h2>\n{body}\n'
            "</section>")


def stack(*sections: str) -> str:
    """Cards in one column of the grid, one under the other."""
    return '<div class="stack">\n' + "\n".join(sections) + "\n</div>"


def counts_table(rows: Sequence[tuple[str, str, int, str]], *, key_header: str,
                 total: int | None, ident: str, id_prefix: str = "count-") -> str:
    """A table of ``(description, key, count, kind)`` rows, zeros included, and a total
    row. Each count's cell has the id ``<id_prefix><key>`` (``count-total`` for the
    total), so a program reading the page finds every number of the summary."""
    out = [(f'<table id="{escape(ident)}"><thead><tr><th></th><th>{escape(key_header)}</th>'
            '<th class="num">count</th></tr></thead><tbody>')]
    for description, key, value, kind in rows:
        out.append(f'<tr><td><span class="swatch {escape(kind)}"></span>'
                   f'{escape(description)}</td><td class="mono nowrap">{escape(key)}</td>'
                   f'<td class="num" id="{escape(id_prefix + key)}">{value:,}</td></tr>')
    if total is not None:
        out.append(f'<tr class="total"><td>Total</td><td></td>'
                   f'<td class="num" id="{escape(id_prefix)}total">{total:,}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


class Column(NamedTuple):
    """A column of a sortable table: its heading (text), whether it sorts as a number,
    and the CSS class of its cells."""

    heading: str
    numeric: bool = False
    cls: str = ""


def sortable_table(ident: str, columns: Sequence[Column],
                   rows: Sequence[Sequence[tuple[str, str | None]]]) -> str:
    """A table whose columns the page's script sorts; each cell is ``(markup, sort key
    or None for its text)``. Rows keep their given order (``data-index``) as the tie
    break and as the order without JavaScript."""
    numeric = ' data-type="number" class="num"'
    head = "".join(f'<th scope="col"{numeric if c.numeric else ""}>{escape(c.heading)}</th>'
                   for c in columns)
    out = [f'<table class="sortable" id="{escape(ident)}"><thead><tr>{head}</tr></thead><tbody>']
    for index, row in enumerate(rows):
        cells = []
        for column, (markup, sort) in zip(columns, row):
            cls = " ".join(x for x in (column.cls, "num" if column.numeric else "") if x)
            attrs = (f' class="{cls}"' if cls else "") + (
                f' data-sort="{escape(sort)}"' if sort is not None else "")
            cells.append(f"<td{attrs}>{markup}</td>")
        out.append(f'<tr data-index="{index}">' + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)
