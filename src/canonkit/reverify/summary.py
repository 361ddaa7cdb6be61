"""Counts by outcome, the final report line and the terminal table."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .outcomes import DESCRIPTIONS, OUTCOMES, TABLE_ORDER, exit_status

#: the report's format: the keys of an Episode line (REVERIFY.md §3) and of the final line.
#: Stated in the final line, with the canonkit version and the inputs, so that the Episode
#: lines stay exactly as they were (byte-identical across versions and engines).
REPORT_FORMAT = "canonkit-reverify-report/1"


@dataclass
class Summary:
    """Outcome counts of a run, plus volume and wall time (these two are not in the
    report: reports must be byte-identical across engines)."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    episodes: int = 0
    document_bytes: int = 0
    seconds: float = 0.0
    paths: list[str] = field(default_factory=list)  # the inputs as named
    files: int = 0  # input files (and unreadable paths) found under them

    def add(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        self.episodes += 1

    @property
    def exit_status(self) -> int:
        return exit_status(self.counts)

    def to_json(self) -> dict[str, Any]:
        """The report's final line: counts of every outcome (zeros included) and total,
        then what produced the report: its format, the canonkit version and the inputs."""
        from .. import __version__

        counts: dict[str, Any] = {name: self.counts.get(name, 0) for name in OUTCOMES}
        counts["total"] = self.episodes
        return {"summary": counts, "format": REPORT_FORMAT, "canonkit_version": __version__,
                "inputs": {"paths": list(self.paths), "files": self.files}}

    def table(self) -> str:
        """The seed's table: one row per outcome that occurred, then the total."""
        rows = [(DESCRIPTIONS[n], n, c) for n in TABLE_ORDER if (c := self.counts.get(n, 0))]
        rows.append(("Total", "", self.episodes))
        wd = max(len(r[0]) for r in rows)
        wn = max(len(r[1]) for r in rows)
        wc = max(len(str(r[2])) for r in rows)
        lines = [f"{'Outcome':<{wd}}  {'':<{wn}}  {'Episodes':>{max(wc, 8)}}"]
        lines.append("-" * len(lines[0]))
        for text, name, count in rows:
            if text == "Total":
                lines.append("-" * len(lines[0]))
            lines.append(f"{text:<{wd}}  {name:<{wn}}  {count:>{max(wc, 8)}}")
        return "\n".join(lines)

    def rate_line(self) -> str:
        if self.seconds <= 0:
            return f"{self.episodes} Episodes"
        eps = self.episodes / self.seconds
        mbs = self.document_bytes / self.seconds / 1e6
        return (
            f"{self.episodes} Episodes, {self.document_bytes / 1e6:.1f} MB in "
            f"{self.seconds:.2f} s ({eps:,.0f} Episodes/s, {mbs:.1f} MB/s)"
        )
