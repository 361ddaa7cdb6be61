"""The charts of an HTML report, as inline SVG: horizontal bars, a line over time, one bar
split into parts. Pure string building, no dependency, no script: a chart reads the same
with JavaScript off. Colours come from CSS classes (the page's style sheet), every label
is escaped (``text.escape``), and each chart carries a ``<title>`` and an ``aria-label``
so it is announced as what it shows. A chart's size depends on its number of bars or
points, never on the data's magnitude: the callers aggregate (``timeline``) first.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from .text import escape

__all__ = ["Bar", "bar_chart", "count", "line_chart", "nice_ticks", "span_chart", "split_bar"]

WIDTH = 640
_CHAR = 7.2     # generous advance of a 12px sans-serif character, for label columns
_ROW = 22       # height of one bar's row
_FONT = 12


class Bar(NamedTuple):
    """One bar: its label, its value, a CSS class for its colour and an optional detail
    for its tooltip."""

    label: str
    value: float
    kind: str = "neutral"
    detail: str = ""


def count(value: float) -> str:
    """An integer with thousands separators; other numbers with three significant
    digits."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _short(value: float) -> str:
    """An axis label: 950, 1.2k, 3.4M."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def nice_ticks(top: float, wanted: int = 5, *, cover: bool = True) -> list[float]:
    """Tick values from 0, a step of 1, 2, 2.5 or 5 times a power of ten: up to the first
    at or above ``top`` (``cover``), or the last at or below it."""
    if not top > 0 or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / wanted
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = math.ceil(top / step - 1e-9) if cover else math.floor(top / step + 1e-9)
    return [i * step for i in range(n + 1)]


def _svg(title: str, width: float, height: float, body: list[str]) -> str:
    t = escape(title)
    return (f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img" '
            f'aria-label="{t}" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}"><title>{t}</title>'
            + "".join(body) + "</svg>")


def bar_chart(bars: Sequence[Bar], *, title: str, unit: str = "", width: int = WIDTH) -> str:
    """Horizontal bars, one row each, the label left, the value right of its bar; the
    longest bar is the largest value (zero is an empty row, still labelled)."""
    label_w = min(max((len(b.label) for b in bars), default=4) * _CHAR + 16, width * 0.5)
    value_w = max((len(count(b.value)) for b in bars), default=1) * _CHAR + 16
    span = max(width - label_w - value_w, 40)
    top = max((b.value for b in bars), default=0) or 1
    body = []
    for i, b in enumerate(bars):
        y = 6 + i * _ROW
        w = span * b.value / top
        tip = escape(f"{b.label}: {count(b.value)}{' ' + unit if unit else ''}"
                     + (f" ({b.detail})" if b.detail else ""))
        body.append(
            f'<g class="bar {escape(b.kind)}"><title>{tip}</title>'
            f'<text class="label" x="{label_w - 8:.1f}" y="{y + 14}" '
            f'text-anchor="end">{escape(b.label)}</text>'
            f'<rect x="{label_w:.1f}" y="{y + 2}" width="{w:.1f}" height="{_ROW - 6}" rx="2"/>'
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + 14}">'
            f'{count(b.value)}</text></g>')
    return _svg(title, width, 12 + len(bars) * _ROW, body)


class _Plot:
    """Axes from 0 to nice maxima: ``at(x, y)`` maps data to the drawing."""

    left, right, top, bottom = 56, 16, 12, 40

    def __init__(self, width: int, height: int, x_top: float, y_top: float) -> None:
        self.width, self.height = width, height
        self.w = width - self.left - self.right
        self.h = height - self.top - self.bottom
        # time runs to the last sample; the values' axis to a round number above them
        self.x_max = x_top if x_top > 0 and math.isfinite(x_top) else 1.0
        self.xs, self.ys = nice_ticks(self.x_max, cover=False), nice_ticks(y_top)

    def at(self, x: float, y: float) -> tuple[float, float]:
        return (self.left + self.w * x / self.x_max,
                self.top + self.h * (1 - y / (self.ys[-1] or 1)))

    def axes(self, x_label: str, y_label: str) -> list[str]:
        body = ['<g class="grid">']
        for y in self.ys:
            _, py = self.at(0, y)
            body.append(f'<line x1="{self.left}" x2="{self.left + self.w}" y1="{py:.1f}" '
                        f'y2="{py:.1f}"/><text class="tick" x="{self.left - 6}" '
                        f'y="{py + 4:.1f}" text-anchor="end">{_short(y)}</text>')
        for x in self.xs:
            px, _ = self.at(x, 0)
            body.append(f'<text class="tick" x="{px:.1f}" y="{self.top + self.h + 16}" '
                        f'text-anchor="middle">{_short(x)}</text>')
        body.append("</g>")
        body.append(f'<text class="axis" x="{self.left + self.w / 2:.1f}" '
                    f'y="{self.height - 6}" text-anchor="middle">{escape(x_label)}</text>'
                    f'<text class="axis" transform="translate(14 {self.top + self.h / 2:.1f}) '
                    f'rotate(-90)" text-anchor="middle">{escape(y_label)}</text>')
        return body


def line_chart(points: Sequence[tuple[float, float]], *, title: str, x_label: str,
               y_label: str, width: int = WIDTH, height: int = 220) -> str:
    """A line through ``points`` (x ascending) over axes from 0, with ticks and labels;
    the area under it is shaded, each point a dot with its values as a tooltip."""
    plot = _Plot(width, height, max((x for x, _ in points), default=0),
                 max((y for _, y in points), default=0))
    body = plot.axes(x_label, y_label)
    if points:
        coords = [plot.at(x, y) for x, y in points]
        line = " ".join(f"{px:.1f},{py:.1f}" for px, py in coords)
        x0, base = plot.at(points[0][0], 0)
        x1, _ = plot.at(points[-1][0], 0)
        body.append(f'<polygon class="area" points="{x0:.1f},{base:.1f} {line} '
                    f'{x1:.1f},{base:.1f}"/><polyline class="line" points="{line}"/>')
        for (x, y), (px, py) in zip(points, coords):
            body.append(f'<circle class="dot" cx="{px:.1f}" cy="{py:.1f}" r="2.5">'
                        f'<title>{escape(f"{x:.2f} {x_label}: {count(y)} {y_label}")}'
                        "</title></circle>")
    return _svg(title, width, height, body)


def span_chart(spans: Sequence[tuple[float, float, float]], *, title: str, x_label: str,
               y_label: str, width: int = WIDTH, height: int = 220) -> str:
    """One column per ``(x from, x to, value)`` span over axes from 0: a rate over time."""
    plot = _Plot(width, height, max((b for _, b, _ in spans), default=0),
                 max((v for _, _, v in spans), default=0))
    body = plot.axes(x_label, y_label)
    for a, b, value in spans:
        x0, y0 = plot.at(a, value)
        x1, base = plot.at(b, 0)
        tip = escape(f"{a:.2f}-{b:.2f} {x_label}: {count(value)} {y_label}")
        body.append(f'<rect class="column" x="{x0:.1f}" y="{y0:.1f}" '
                    f'width="{max(x1 - x0, 0.5):.1f}" height="{base - y0:.1f}">'
                    f"<title>{tip}</title></rect>")
    return _svg(title, width, height, body)


def split_bar(parts: Sequence[Bar], *, title: str, unit: str, width: int = WIDTH) -> str:
    """One bar split into ``parts`` in proportion to their values, with a legend row per
    part (its value and share)."""
    total = sum(p.value for p in parts)
    body = []
    x = 0.0
    for p in parts:
        w = (width - 2) * p.value / total if total > 0 else 0
        body.append(f'<rect class="part {escape(p.kind)}" x="{x + 1:.1f}" y="4" '
                    f'width="{w:.1f}" height="24"><title>{escape(p.label)}: '
                    f'{count(p.value)} {escape(unit)}</title></rect>')
        x += w
    for i, p in enumerate(parts):
        y = 48 + i * _ROW
        share = f"{100 * p.value / total:.0f}%" if total > 0 else "-"
        body.append(f'<g class="legend {escape(p.kind)}"><rect x="1" y="{y - 11}" width="12" '
                    f'height="12"/><text x="20" y="{y}">{escape(p.label)}: '
                    f'{count(p.value)} {escape(unit)} ({share})</text></g>')
    return _svg(title, width, 40 + len(parts) * _ROW, body)
