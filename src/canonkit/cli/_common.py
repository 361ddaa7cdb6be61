"""Output helpers shared by the command modules."""
from __future__ import annotations

from collections.abc import Sequence


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The header line, then one line per row: every column but the last padded to its
    widest cell (header included), two spaces apart; the last column is free text."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header[:-1])]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)) + "  " + cells[-1]

    return [line(header), *(line(row) for row in rows)]
