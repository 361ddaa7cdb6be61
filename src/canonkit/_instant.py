"""Instants written as text: canonkit's one reading of them, the same on every Python.

``datetime.fromisoformat`` is not a contract: it accepts a trailing ``Z`` only from
Python 3.11 on, fractions of any length only from 3.11 on, and at the same time far more
than an instant (``2026-01-01x00:00:00.+00:00``, week dates, basic format). Every reader
of instant text (Episode documents, the TIMESTAMP field encoder, Layer 3, inclusion-chain
anchors, CBOR tag 0) goes through :func:`instant_from_text` instead, so the same bytes
give the same verdict on every supported interpreter. The rule (docs/astp.md, Instants):

    YYYY-MM-DD "T" HH:MM:SS [ "." 1-9 digits ] [ "Z" | ("+" | "-") HH:MM ]

ASCII digits only; uppercase ``T`` and ``Z`` (RFC 3339 as refined by RFC 4287 §3.3); a
real Gregorian date in years 0001-9999; hours 00-23, minutes and seconds 00-59 (no leap
second, no ``24:00``); an offset below 24 hours. Fraction digits after the sixth (below a
microsecond) are dropped. Text without an offset reads as a naive datetime, which each
caller refuses with its own "no UTC offset" error.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

__all__ = ["INSTANT_FORM", "instant_from_text"]

INSTANT_FORM = "YYYY-MM-DDTHH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]"

_INSTANT = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:(Z)|([+-])(\d{2}):(\d{2}))?",
    re.ASCII)
_OFFSETS: dict[int, timezone] = {0: timezone.utc}  # minutes east of UTC -> tzinfo


def _offset(sign: str, hours: str, minutes: str) -> timezone:
    hh, mm = int(hours), int(minutes)
    if hh > 23 or mm > 59:
        raise ValueError(f"UTC offset {sign}{hours}:{minutes} is out of range")
    east = (hh * 60 + mm) * (-1 if sign == "-" else 1)
    tz = _OFFSETS.get(east)
    if tz is None:
        tz = _OFFSETS.setdefault(east, timezone(timedelta(minutes=east)))
    return tz


def instant_from_text(text: str) -> datetime:
    """The instant ``text`` writes (aware; naive when it has no offset), or ``ValueError``
    for text outside the rule above or naming no real date and time."""
    match = _INSTANT.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"not an instant of the form {INSTANT_FORM}")
    year, month, day, hour, minute, second, fraction, zulu, sign, oh, om = match.groups()
    tz = timezone.utc if zulu else None if sign is None else _offset(sign, oh, om)
    us = int(fraction[:6].ljust(6, "0")) if fraction else 0
    # datetime refuses what names no real date or time (month 13, Feb 30, second 60)
    return datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), us,
                    tzinfo=tz)
