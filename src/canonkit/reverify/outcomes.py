"""Outcome names (REVERIFY.md §2), their order in tables and summaries, and exit status."""
from __future__ import annotations

from collections.abc import Mapping

# Stable names, in the order the summary table and the summary line list them.
OUTCOMES = (
    "reproduced",
    "reproduced_with_annotation",
    "reproduced_by_search",
    "reproduced_under_other_construction",
    "not_reproducible",
    "no_seal_record",
    "unsealed",
    "invalid_record",
)
REPRODUCED = frozenset(OUTCOMES[:4])
FAILING = frozenset({"not_reproducible", "no_seal_record", "invalid_record"})

# Row order of the summary table: the reproducibility study's 62-Episode table
# (45 / 8 / 4 / 2 / 3) reads top down.
TABLE_ORDER = (
    "reproduced",
    "reproduced_with_annotation",
    "reproduced_under_other_construction",
    "reproduced_by_search",
    "not_reproducible",
    "no_seal_record",
    "unsealed",
    "invalid_record",
)

# Wording of the summary table (the reproducibility study's table is the model).
DESCRIPTIONS = {
    "reproduced": "Root rebuilt from stored nodes",
    "reproduced_with_annotation": "Rebuilt with an admissible annotation",
    "reproduced_under_other_construction": "Rebuilt only under another construction",
    "reproduced_by_search": "Rebuilt only by searching tied signal orders",
    "not_reproducible": "Not rebuilt under any construction",
    "no_seal_record": "Sealed status, no seal record",
    "unsealed": "Unsealed: nothing to verify",
    "invalid_record": "Not readable as an Episode",
}

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_USAGE = 2


def exit_status(counts: Mapping[str, int]) -> int:
    """0 when every sealed Episode reproduced; 1 when any is not_reproducible,
    no_seal_record or invalid_record (REVERIFY.md §3)."""
    return EXIT_FAILURES if any(counts.get(name, 0) for name in FAILING) else EXIT_OK
