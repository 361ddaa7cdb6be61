"""Bulk corpus re-verification (REVERIFY.md): rebuild every sealed root of a corpus and
report exactly what reproduced.

    >>> import canonkit.reverify as rv
    >>> result = rv.run(["corpus.jsonl.zst"], jobs=4, report="report.jsonl")
    >>> for r in result:               # streaming, input order
    ...     ...
    >>> result.summary.counts["reproduced"]
"""
from __future__ import annotations

from ..errors import InputError, OutputPathError
from .outcomes import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, OUTCOMES, exit_status
from .runner import DEFAULT_SEARCH_CAP, Result, Run, run
from .summary import Summary

__all__ = [
    "DEFAULT_SEARCH_CAP",
    "EXIT_FAILURES",
    "EXIT_OK",
    "EXIT_USAGE",
    "OUTCOMES",
    "InputError",
    "OutputPathError",
    "Result",
    "Run",
    "Summary",
    "exit_status",
    "run",
]
