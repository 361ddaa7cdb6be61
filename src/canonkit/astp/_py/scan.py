"""ASTP Episode document scanner, pure-Python twin (the reference oracle of
``canonkit.astp._scan``): ``scan_episode``, an Episode document's JSON text as its members,
its stored segments and its SPINE signals when all are in the canonical shape,
``scan_verdict``, the same with the verdict of the common Episode, ``plain_json``, whether
orjson may read a text for the strict reader, and ``read_instant``, the instants of Episode
documents.
See docs/astp-kernel-api.md; the differential tests hold the two to it.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from canonkit._files.strict_json import loads_json
from canonkit._instant import instant_from_text
from canonkit.astp._py.segments import NOT_CANONICAL as _NO
from canonkit.astp._py.segments import read_segments, segment_hex, segment_instant
from canonkit.errors import InvalidFieldError, JSONInputError

__all__ = ["plain_json", "read_instant", "scan_episode", "scan_verdict"]

# --- Episode documents: the scanner ------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def _latest_created(items: list[Any]) -> int | None:
    """The latest ``created_at`` of the items, in UTC microseconds since 1970."""
    instants = [segment_instant(item.get("created_at")) for item in items]
    found = [(i - _EPOCH) // _MICROSECOND for i in instants if i is not None and i is not _NO]
    return max(found) if found else None


def _signals(items: list[Any], signal_type: Any) -> Any:
    """(SPINE signals in stored order, latest received_at in UTC microseconds or None,
    whether a SPINE content hash repeats) when every item is a canonical signal, else
    None."""
    spine = []
    latest = None
    for position, item in enumerate(items):
        if type(item) is not dict or not set(item) <= {"content_hash", "placement", "received_at"}:
            return None
        content = segment_hex(item.get("content_hash"))
        placement = item.get("placement")
        received = segment_instant(item.get("received_at"))
        if content is _NO or type(placement) is not str or received is _NO:
            return None
        if received is not None:
            us = (received - _EPOCH) // _MICROSECOND
            latest = us if latest is None else max(latest, us)
        if placement == "SPINE":
            spine.append((position, signal_type(content, received)))
    if spine and all(sig.received_at is not None for _, sig in spine):
        spine.sort(key=lambda pair: (pair[1].received_at, pair[0]))
    signals = [sig for _, sig in spine]
    return signals, latest, len({sig.content_hash for sig in signals}) < len(signals)


def scan_episode(data: Any, segment_type: Any, signal_type: Any) -> Any:
    """``(members, segments, excluded, latest_created_us, signals)`` for an Episode
    document's JSON text whose stored segments are all in the canonical shape
    (``read_segments``) with strictly ascending indexes, else None; ``members`` are the
    top-level members without ``segments`` (and ``stored`` without its ``segments``), and
    for ``canonkit-episode/1`` without ``signals`` when every signal is canonical: then
    ``signals`` is ``(SPINE signals in stored order, latest_received_us, repeated)``,
    else None. The text is read by the strict reader (``canonkit._files.loads_json``); the
    compiled scanner reads it itself and may also return None where this one reads the
    document (docs/astp-kernel-api.md)."""
    if type(data) is not bytes:
        return None
    try:  # the strict reader: what it refuses, the general reader refuses too
        doc = loads_json(data)
    except JSONInputError:
        return None
    if type(doc) is not dict:
        return None
    fmt = doc.get("format")
    stored = doc.get("stored")
    if fmt == "canonkit-episode/1":
        items, por = doc.get("segments"), False
    elif fmt == "astp-proof-of-record/1" and doc.get("profile") == "full" and type(stored) is dict:
        items, por = stored.get("segments"), True
    else:
        return None
    if type(items) is not list:
        return None
    segments: list[Any] = []
    excluded: list[str] = []
    stop, _ = read_segments(items, 0, segment_type, segments, excluded, proof_of_record=por)
    indexes = [seg.sequence_index for seg in segments]
    if stop != len(items) or any(a >= b for a, b in zip(indexes, indexes[1:])):
        return None
    members = {k: v for k, v in doc.items() if k != "segments"}
    if type(stored) is dict:
        members["stored"] = {k: v for k, v in stored.items() if k != "segments"}
    signals = None
    if not por and type(doc.get("signals")) is list:
        signals = _signals(doc["signals"], signal_type)
        if signals is not None:
            del members["signals"]
    return members, segments, excluded, None if por else _latest_created(items), signals


def scan_verdict(data: Any, segment_type: Any, signal_type: Any,
                 search_cap: int = 40320) -> tuple[Any, Any]:
    """``(verdict, scanned)``: the compiled kernel gives the verdict of a common Episode
    (``(outcome, episode_id, components, construction, order, flags, reason)``) straight
    from the text where ``reproduce(..., search_cap=search_cap)`` is certain to agree; its
    reference is ``reproduce`` itself, so this twin gives none and hands every document on
    as ``scan_episode`` reads it: ``(None, scan_episode(data, ...))``
    (docs/astp-kernel-api.md)."""
    scanned = scan_episode(data, segment_type, signal_type)
    if scanned is not None and (isinstance(search_cap, bool) or not isinstance(search_cap, int)
                                or search_cap < 0):
        raise InvalidFieldError(f"search_cap must be a non-negative integer, got {search_cap!r}")
    return None, scanned


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types at every depth (``1 == 1.0 == True`` is not enough)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b) or (a != a and b != b)


def plain_json(data: Any) -> bool:
    """Whether orjson may read ``data`` (``bytes``) for the strict reader
    (``canonkit._files.loads_json``): ``orjson.loads`` either refuses it (the strict
    reader then decides and words the refusal) or gives exactly the strict reader's value,
    types included. The compiled kernel decides from one pass over the text and may say
    False where this says True, never the other way (docs/astp-kernel-api.md)."""
    import orjson

    if type(data) is not bytes:
        return False
    try:
        fast = orjson.loads(data)
    except orjson.JSONDecodeError:
        return True
    try:
        strict = loads_json(data)
    except (JSONInputError, RecursionError):
        return False
    return _same(strict, fast)


def read_instant(text: Any) -> datetime:
    """``canonkit._instant.instant_from_text(text)`` (the compiled kernel reads the shapes
    of canonical documents itself, with the same result)."""
    return instant_from_text(text)
