"""ASTP.md §12 tie search: groups of same-timestamp Signals and the order search (kernel)."""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from itertools import groupby

from canonkit.astp._kernel import K

__all__ = ["TieSearch", "search_orders", "tie_groups"]

TieSearch = K.TieSearch
search_orders = K.search_orders


def tie_groups(received_at: Sequence[datetime], offset: int = 0) -> list[tuple[int, int]]:
    """``(start, length)`` of each run (length >= 2) of equal consecutive instants, positions
    shifted by ``offset`` (the number of spine inputs before the Signals)."""
    groups = []
    position = offset
    for _, run in groupby(received_at):
        length = len(list(run))
        if length > 1:
            groups.append((position, length))
        position += length
    return groups
