"""Verification of one batch of documents; runs in the worker processes (local pool or
Dask) and in-process for ``--jobs 1``.

A worker returns, per document, the finished report line (bytes) plus the few fields the
parent needs for counting and annotations, so the parent never re-parses and every
engine hands back byte-identical lines.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import orjson

from ..errors import CanonkitError

# (kind, payload, source) — the picklable form of sources.Item that crosses processes
Task = tuple[str, bytes, dict[str, Any]]
# (report line without newline, outcome, episode_id, order or None)
Verdict = tuple[bytes, str, Optional[str], Optional[list[str]]]

_EMPTY_COMPONENTS: dict[str, str] = {}


def _record(
    episode_id: str | None,
    outcome: str,
    source: dict[str, Any],
    components: Any,
    construction: Any,
    order: Any,
    flags: Any,
    reason: Any,
) -> bytes:
    # key order is fixed here: REVERIFY.md §3 names these keys
    return orjson.dumps(
        {
            "episode_id": episode_id,
            "outcome": outcome,
            "source": source,
            "components": components,
            "construction": construction,
            "order": order,
            "flags": flags,
            "reason": reason,
        }
    )


def invalid(source: dict[str, Any], reason: str, episode_id: str | None = None) -> Verdict:
    line = _record(episode_id, "invalid_record", source, _EMPTY_COMPONENTS, None, None, [], reason)
    return line, "invalid_record", episode_id, None


def _readable_episode_id(doc: Any) -> str | None:
    if isinstance(doc, dict):
        value = doc.get("episode_id")
        if isinstance(value, str):
            return value
    return None


def _parse(kind: str, payload: bytes) -> Any:
    if kind == "json":
        return orjson.loads(payload)
    from .. import cbor

    return cbor.decode(payload)


def _plain(value: Any) -> Any:
    """CBOR maps may decode as FrozenDict; the Episode readers take plain dicts/lists."""
    if isinstance(value, dict):
        return value
    from collections.abc import Mapping

    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def verify_one(kind: str, payload: bytes, source: dict[str, Any], search_cap: int) -> Verdict:
    from ..astp import reproduce

    if kind == "error":
        return invalid(source, payload.decode("utf-8", "replace"))
    try:
        doc = _parse(kind, payload)
    except orjson.JSONDecodeError as exc:
        return invalid(source, f"not JSON: {exc}")
    except CanonkitError as exc:
        return invalid(source, f"not CBOR ({exc.code}): {exc}")
    if kind == "cbor":
        doc = _plain(doc)
    episode_id = _readable_episode_id(doc)
    if not isinstance(doc, dict):
        return invalid(source, f"document is a JSON {type(doc).__name__}, not an object")
    try:
        result = reproduce(doc, search_cap=search_cap)
    except CanonkitError as exc:  # InvalidRecordError and any refusal of the document
        return invalid(source, f"{exc.code}: {exc}", episode_id)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        # a document shape the Episode reader did not anticipate: still never a crash
        return invalid(source, f"unreadable document ({type(exc).__name__}: {exc})", episode_id)
    rec = result.to_json()
    line = _record(
        rec["episode_id"],
        rec["outcome"],
        source,
        rec["components"],
        rec["construction"],
        rec["order"],
        rec["flags"],
        rec["reason"],
    )
    order = rec["order"] if rec["outcome"] == "reproduced_by_search" else None
    return line, rec["outcome"], rec["episode_id"], order


def verify_batch(tasks: Sequence[Task], search_cap: int) -> list[Verdict]:
    """The verdicts of a batch, in input order."""
    return [verify_one(kind, payload, source, search_cap) for kind, payload, source in tasks]
