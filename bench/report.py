"""One table per capability, the peers side by side, from a pytest-benchmark JSON file.

    python -m pytest bench --benchmark-json=bench.json
    python bench/report.py bench.json                       # plain-text tables
    python bench/report.py bench.json --markdown            # the same tables as Markdown
    python bench/report.py bench.json --plot docs/img       # plus one bar chart per capability

Benchmarks are grouped "<capability>:<dataset>" (bench/conftest.py), e.g. "cbor:decode:
twitter" is capability "cbor:decode", dataset "twitter". Each table has a row per dataset
and a column per contender; a cell is the contender's time over the baseline's
(``--baseline``, default canonkit-c) measured in the same run: for a peer, how many times
faster the baseline is (above 1.00: the baseline is faster). The first number is the
ratio of medians, the one in brackets the ratio of minimum times (the better estimate of
CPU cost when timings are noisy). The baseline column gives its own median. A row without
the baseline gives each contender's median instead.

``--plot DIR`` draws the same tables as grouped bar charts, one SVG per capability
(``DIR/<capability>.svg``, ``:`` as ``-``; ``--format png`` for PNG), needs matplotlib (the ``bench`` extra), and
prints the Markdown that embeds them.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASELINE = "canonkit-c"


@dataclass
class Table:
    """One capability: ``times[dataset][contender] = (median, min)`` in seconds."""

    capability: str
    times: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)

    def contenders(self, baseline: str) -> list[str]:
        """The baseline first, then canonkit's other backends, then the peers by name."""
        names = {c for row in self.times.values() for c in row}
        return sorted(names, key=lambda c: (c != baseline, not c.startswith("canonkit"), c))


def split_group(group: str) -> tuple[str, str]:
    """``"cbor:decode:twitter"`` -> ``("cbor:decode", "twitter")``."""
    capability, sep, dataset = group.rpartition(":")
    return (capability, dataset) if sep else (group, "-")


def load(benchmarks: Iterable[dict[str, Any]]) -> list[Table]:
    tables: dict[str, Table] = {}
    for b in benchmarks:
        contender = b.get("extra_info", {}).get("contender") or b["name"]
        capability, dataset = split_group(b.get("group") or b["name"])
        table = tables.setdefault(capability, Table(capability))
        table.times.setdefault(dataset, {})[contender] = (b["stats"]["median"],
                                                          b["stats"]["min"])
    return [tables[name] for name in sorted(tables)]


def duration(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def rows(table: Table, baseline: str) -> tuple[list[str], list[list[str]]]:
    contenders = table.contenders(baseline)
    header = ["dataset", f"{baseline} median", *contenders]
    out = []
    for dataset in sorted(table.times):
        row = table.times[dataset]
        base = row.get(baseline)
        cells = [dataset, duration(base[0]) if base else "-"]
        for contender in contenders:
            if contender not in row:
                cells.append("-")
            elif base is None:
                cells.append(duration(row[contender][0]))
            else:
                median, minimum = row[contender]
                cells.append(f"{median / base[0]:.2f} ({minimum / base[1]:.2f})")
        out.append(cells)
    return header, out


def text_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths))).rstrip()
            for r in [header, *body]]


def markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    align = ["---", *["---:"] * (len(header) - 1)]
    return ["| " + " | ".join(r) + " |" for r in [header, align, *body]]


def plot(table: Table, baseline: str, directory: Path, stat: str,
         fmt: str = "svg") -> Path | None:
    """A grouped bar chart of time relative to the baseline (log scale), one group of
    bars per dataset; None when no row has the baseline."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "canonkit"  # stable element ids
    import matplotlib.pyplot as plt

    index = 0 if stat == "median" else 1
    datasets = [d for d in sorted(table.times) if baseline in table.times[d]]
    if not datasets:
        return None
    contenders = table.contenders(baseline)
    palette = plt.get_cmap("tab10" if len(contenders) <= 10 else "tab20").colors
    colors = dict(zip(contenders, palette * 2))
    slots = sum(len(table.times[d]) for d in datasets)
    fig, ax = plt.subplots(figsize=(min(13.0, max(6.0, 1.5 + 0.3 * slots)), 3.8))
    labelled: set[str] = set()
    for x, dataset in enumerate(datasets):  # each dataset's bars share its slot
        row = table.times[dataset]
        present = [c for c in contenders if c in row]
        width = 0.8 / len(present)
        for i, contender in enumerate(present):
            y = row[contender][index] / row[baseline][index]
            bars = ax.bar(x - 0.4 + width * (i + 0.5), y, width, color=colors[contender],
                          label=None if contender in labelled else contender)
            labelled.add(contender)
            ax.bar_label(bars, labels=[f"{y:.2g}"], fontsize=6, padding=1)
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.6)
    # 8-point labels are about 0.075 in a character: slant them when they would overlap
    crowded = max(map(len, datasets)) * 0.075 > 0.9 * fig.get_figwidth() / len(datasets)
    ax.set_xticks(range(len(datasets)), datasets, fontsize=8,
                  rotation=20 if crowded else 0, ha="right" if crowded else "center",
                  rotation_mode="anchor")
    ax.set_ylabel(f"time / {baseline} ({stat}, log)", fontsize=8)
    top = max(r[c][index] / r[baseline][index]
              for r in (table.times[d] for d in datasets) for c in r)
    ax.set_ylim(top=10 ** math.ceil(math.log10(max(top, 1.0)) + 0.3))
    ax.set_title(f"{table.capability}: time relative to {baseline} "
                 "(above 1: slower than it)", fontsize=9)
    ax.legend(fontsize=7, ncols=min(len(contenders), 6), loc="upper left")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (table.capability.replace(":", "-") + "." + fmt)
    # no timestamp: the same run gives the same file
    fig.savefig(path, metadata={"Date": None} if fmt == "svg" else {}, dpi=150)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="One table per capability, the peers side by side.")
    parser.add_argument("json_file", type=Path, help="pytest-benchmark --benchmark-json output")
    parser.add_argument("--baseline", default=BASELINE,
                        help=f"the contender the others are divided by (default {BASELINE})")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--plot", type=Path, metavar="DIR",
                        help="also write one SVG bar chart per capability into DIR")
    parser.add_argument("--stat", choices=("median", "min"), default="median",
                        help="what the charts compare (default: median)")
    parser.add_argument("--format", choices=("svg", "png"), default="svg",
                        help="chart file format (default: svg)")
    parser.add_argument("--only", metavar="PREFIX", action="append", default=[],
                        help="only capabilities starting with PREFIX (repeatable)")
    args = parser.parse_args(argv)
    with args.json_file.open(encoding="utf-8") as fh:
        tables = load(json.load(fh)["benchmarks"])
    if args.only:
        tables = [t for t in tables if t.capability.startswith(tuple(args.only))]
    for table in tables:
        header, body = rows(table, args.baseline)
        if args.markdown:
            print(f"\n**{table.capability}** (time / {args.baseline}: median (min))\n")
            print("\n".join(markdown_table(header, body)))
        else:
            print(f"\n{table.capability}  (time / {args.baseline}: median (min))")
            print("\n".join("  " + line for line in text_table(header, body)))
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("report.py: --plot needs matplotlib: pip install 'canonkit[bench]'",
                  file=sys.stderr)
            return 2
        print()
        for table in tables:
            path = plot(table, args.baseline, args.plot, args.stat, args.format)
            if path is not None:
                print(f"![{table.capability}]({path.as_posix()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
