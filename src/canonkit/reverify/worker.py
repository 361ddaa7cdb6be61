"""Verification of one document, in a worker process (or in-process for ``--jobs 1``).

A worker returns, per document, the finished report line (see ``lines.py``) and the few
fields the parent counts, so the parent never parses a document or a report line and
every engine hands back byte-identical lines.
"""
from __future__ import annotations

from typing import Any

import orjson

from ..errors import CanonkitError
from .lines import Source, Verdict, invalid, render
from .sources import plain

# what the Episode reader may raise on a document shape it did not anticipate: still
# reported as invalid_record, never a crash of a million-Episode run
_SHAPE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)
# JSON documents are tried on the fast path first (tests switch it off to compare)
FAST_PATH = True


def _readable_episode_id(doc: Any) -> str | None:
    if isinstance(doc, dict):
        value = doc.get("episode_id")
        if isinstance(value, str):
            return value
    return None


def _parse(kind: str, payload: bytes, source: Source, head: bytes | None
           ) -> tuple[Any, Verdict | None]:
    if kind == "json":
        try:
            return orjson.loads(payload), None
        except orjson.JSONDecodeError as exc:
            return None, invalid(source, f"not JSON: {exc}", None, head)
    from .. import cbor

    try:
        return plain(cbor.decode(payload)), None
    except CanonkitError as exc:
        return None, invalid(source, f"not CBOR ({exc.code}): {exc}", None, head)


def _fast(payload: bytes, source: Source, search_cap: int, head: bytes | None
          ) -> Verdict | None:
    """JSON text on the fast path (``astp.documents.read_episode_bytes``: the compiled
    scanner, no Python object per segment); None sends the document the general way, which
    also words every refusal, so the two paths give the same line for every document."""
    from ..astp import reproduce
    from ..astp.documents import read_episode_bytes

    try:
        episode = read_episode_bytes(payload)
        if episode is None:
            return None
        result = reproduce(episode, search_cap=search_cap)
    except (CanonkitError, *_SHAPE_ERRORS):
        return None
    return render(source, result.episode_id, result.outcome, result.components,
                  result.construction, result.order, result.flags, result.reason, head)


def verify_one(kind: str, payload: bytes, source: Source, search_cap: int,
               head: bytes | None = None) -> Verdict:
    """The verdict on one document (``kind`` "json" or "cbor"; "error" carries the reason
    a document could not be read). ``head`` is ``lines.source_head(source)`` if known."""
    from ..astp import reproduce

    if kind == "json" and FAST_PATH:
        verdict = _fast(payload, source, search_cap, head)
        if verdict is not None:
            return verdict
    if kind == "error":
        return invalid(source, payload.decode("utf-8", "replace"), None, head)
    doc, refused = _parse(kind, payload, source, head)
    if refused is not None:
        return refused
    episode_id = _readable_episode_id(doc)
    if not isinstance(doc, dict):
        return invalid(source, f"document is a JSON {type(doc).__name__}, not an object",
                       None, head)
    try:
        result = reproduce(doc, search_cap=search_cap)
    except CanonkitError as exc:  # InvalidRecordError and any refusal of the document
        return invalid(source, f"{exc.code}: {exc}", episode_id, head)
    except _SHAPE_ERRORS as exc:
        return invalid(source, f"unreadable document ({type(exc).__name__}: {exc})",
                       episode_id, head)
    return render(source, result.episode_id, result.outcome, result.components,
                  result.construction, result.order, result.flags, result.reason, head)
