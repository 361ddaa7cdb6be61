"""ASTP.md §13.1 G-1 write guard: no Segment or Signal commit to a fixed Episode."""
from __future__ import annotations

from canonkit.errors import UnknownIdentifierError, WriteGuardError

__all__ = ["EPISODE_STATUSES", "FIXED_STATES", "OPEN_STATES", "check_write", "is_fixed"]

FIXED_STATES = frozenset({"CLOSING_PENDING_SEAL", "CLOSED", "CRYSTALLIZATION_PENDING", "SEALING",
                          "SEALED", "ARCHIVED"})
OPEN_STATES = frozenset({"CREATED", "ACTIVE", "PENDING_HITL", "CLOSING", "CRYSTALLIZED"})
EPISODE_STATUSES = FIXED_STATES | OPEN_STATES


def is_fixed(status: str) -> bool:
    """True for the six fixed states (incl. ``CLOSED``); unknown names are refused."""
    if not isinstance(status, str) or status not in EPISODE_STATUSES:
        raise UnknownIdentifierError(f"unknown EpisodeStatus {status!r}", detail=status)
    return status in FIXED_STATES


def check_write(status: str, what: str = "content") -> None:
    """Raise ``WriteGuardError`` when committing a Segment or Signal to an Episode in
    ``status`` is forbidden. Codicils are exempt and never go through this guard."""
    if is_fixed(status):
        raise WriteGuardError(f"G-1: cannot commit {what} to an Episode in fixed state {status}",
                              detail=status)
