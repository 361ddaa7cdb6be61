"""Counts by outcome, the final report line and the terminal table."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .layer3_component import ABSENT, FAILED, STATES
from .outcomes import DESCRIPTIONS, EXIT_FAILURES, OUTCOMES, TABLE_ORDER, exit_status

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
    #: Layer 3 results of the Episode lines that carry one (kept apart from the outcomes)
    layer3: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    require_layer3: bool = False
    #: Episodes whose lines came from a journal / from the result cache (REVERIFY.md §7):
    #: the two run-specific fields of the final line (a resumed or cached run's report
    #: equals an uninterrupted, uncached run's in everything else)
    from_journal: int = 0
    from_cache: int = 0
    #: cache entries that did not check and were recomputed (info: on stderr, not in the
    #: report; the exit status never depends on it)
    cache_recomputed: int = 0

    def add(self, outcome: str, layer3: str | None = None) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        self.episodes += 1
        if layer3 is not None:
            self.layer3[layer3] = self.layer3.get(layer3, 0) + 1

    def add_block(self, counts: dict[str, int], layer3: dict[str, int]) -> None:
        """The counts of a unit's lines at once (``blocks.Block``)."""
        for outcome, n in counts.items():
            self.counts[outcome] = self.counts.get(outcome, 0) + n
            self.episodes += n
        for state, n in layer3.items():
            self.layer3[state] = self.layer3.get(state, 0) + n

    @property
    def layer3_reported(self) -> bool:
        """Whether the run has a Layer 3 row: Layer 3 was required or some Episode had one."""
        return self.require_layer3 or any(self.layer3.values())

    @property
    def exit_status(self) -> int:
        """The outcomes' exit status; with Layer 3 required, also 1 when any Episode's
        Layer 3 failed or is absent."""
        if self.require_layer3 and (self.layer3.get(FAILED) or self.layer3.get(ABSENT)):
            return EXIT_FAILURES
        return exit_status(self.counts)

    def to_json(self) -> dict[str, Any]:
        """The report's final line: counts of every outcome (zeros included) and total,
        then what produced the report: its format, the canonkit version and the inputs,
        and how many Episodes came from a journal and from the cache."""
        from .._version import __version__

        counts: dict[str, Any] = {name: self.counts.get(name, 0) for name in OUTCOMES}
        counts["total"] = self.episodes
        out: dict[str, Any] = {"summary": counts}
        if self.layer3_reported:
            out["layer3"] = {name: self.layer3.get(name, 0) for name in STATES}
            out["layer3"]["required"] = self.require_layer3
        out.update({"format": REPORT_FORMAT, "canonkit_version": __version__,
                    "inputs": {"paths": list(self.paths), "files": self.files},
                    "from_journal": self.from_journal, "from_cache": self.from_cache})
        return out

    def table(self) -> str:
        """The summary table, modelled on the reproducibility study's 62-Episode table:
        one row per outcome that occurred, then the total."""
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
        if self.layer3_reported:
            lines.append("")
            lines.append(self.layer3_table())
        return "\n".join(lines)

    def layer3_table(self) -> str:
        """The Layer 3 row: ok / failed / absent counts, apart from the outcomes."""
        required = " (required)" if self.require_layer3 else ""
        cells = ", ".join(f"{name} {self.layer3.get(name, 0)}" for name in STATES)
        return f"Layer 3{required}: {cells}"

    def rate_line(self) -> str:
        if self.seconds <= 0:
            return f"{self.episodes} Episodes"
        eps = self.episodes / self.seconds
        mbs = self.document_bytes / self.seconds / 1e6
        return (
            f"{self.episodes} Episodes, {self.document_bytes / 1e6:.1f} MB in "
            f"{self.seconds:.2f} s ({eps:,.0f} Episodes/s, {mbs:.1f} MB/s)"
        )
