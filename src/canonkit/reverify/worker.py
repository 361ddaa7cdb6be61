"""Verification of one document, in a worker process (or in-process for ``--jobs 1``).

A worker returns, per document, the finished report line (see ``lines.py``) and the few
fields the parent counts, so the parent never parses a document or a report line and
every engine hands back byte-identical lines.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from .._files import loads_json
from ..errors import CanonkitError, JSONInputError
from .layer3_component import Layer3Result, check
from .lines import Source, Verdict, invalid, render, source_head
from .sources import plain

if TYPE_CHECKING:
    from .cache import ResultCache

# what the Episode reader may raise on a document shape it did not anticipate: still
# reported as invalid_record, never a crash of a million-Episode run
_SHAPE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)
# JSON documents are tried on the fast path first (tests switch it off to compare)
FAST_PATH = True
#: bumped whenever a change of verification can change a report line: with the package
#: version it keys the journal (journal.py) and the result cache (cache.py)
VERIFICATION_VERSION = 1
_UNREAD = object()


def _readable_episode_id(doc: Any) -> str | None:
    if isinstance(doc, dict):
        value = doc.get("episode_id")
        if isinstance(value, str):
            return value
    return None


_FLOAT_HEADS = (b"\xf9", b"\xfa", b"\xfb")  # half/single/double float heads (major type 7)


def _as_json(item: bytes, value: Any) -> bytes | None:
    """A decoded CBOR document as JSON text that parses back to the same value (the JSON
    fast path then reads it), or None. No float may be involved (JSON has no NaN or
    infinity, and orjson writes them as null): an item holding a float head byte anywhere
    stays with the general reader, as does anything JSON cannot hold (bytes, tags,
    non-text keys, integers outside 64 bits)."""
    if any(head in item for head in _FLOAT_HEADS):
        return None
    try:
        return orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return None


def _strict_json(payload: bytes) -> Any:
    """The document as the strict reader (``canonkit._files.loads_json``) reads it: by
    orjson where the scanner kernel finds the text plain (then both read it alike), else
    by the strict reader itself, which also words every refusal."""
    from ..astp._live import scanner

    if scanner.plain_json(payload):
        try:
            return orjson.loads(payload)
        except orjson.JSONDecodeError:  # NaN, a lone surrogate...: the strict reader says
            pass
    return loads_json(payload, source="document")


class Options(NamedTuple):
    """What a run asks of every document: the tie-search cap, and whether Layer 3 is
    required (then every Episode line carries the ``layer3`` component)."""

    search_cap: int
    require_layer3: bool = False


def _layer3(member: Any, episode: Any, options: Options, origin: str | None
            ) -> Layer3Result | None:
    """The Layer 3 result to write on the line, None when the line carries none: no
    ``layer3`` member and Layer 3 not required (such lines stay exactly as they were)."""
    if member is None and not options.require_layer3:
        return None
    return check(member, episode, origin)


class Parts(NamedTuple):
    """Everything a report line says about an Episode except where it came from;
    ``render_parts`` attaches the source."""

    episode_id: str | None
    outcome: str
    components: Any
    construction: Any
    order: Any
    flags: Any
    reason: Any
    layer3: Layer3Result | None = None


def _invalid(reason: str, episode_id: str | None = None) -> Parts:
    return Parts(episode_id, "invalid_record", {}, None, None, [], reason)


def render_parts(source: Source, parts: Parts, head: bytes | None = None) -> Verdict:
    """The verdict: ``parts`` at ``source`` (``head`` is ``source_head(source)`` if known)."""
    return render(source, parts.episode_id, parts.outcome, parts.components,
                  parts.construction, parts.order, parts.flags, parts.reason, head,
                  parts.layer3)


def _fast(payload: bytes, options: Options, origin: str | None) -> Parts | None:
    """JSON text on the fast path (``astp.reproduce.reproduce_bytes``: the compiled
    scanner, no Python object per segment, and for the common Episode the verdict itself);
    None sends the document the general way, which also words every refusal, so the two
    paths give the same line for every document."""
    from ..astp.reproduce import reproduce_bytes

    try:
        found = reproduce_bytes(payload, search_cap=options.search_cap)
    except (CanonkitError, *_SHAPE_ERRORS):
        return None
    if found is None:
        return None
    result, episode = found  # no Episode: the kernel's verdict, of an Episode without Layer 3
    layer3 = _layer3(None if episode is None else episode.layer3, episode, options, origin)
    return Parts(result.episode_id, result.outcome, result.components, result.construction,
                 result.order, result.flags, result.reason, layer3)


def assess(kind: str, payload: bytes, options: Options, origin: str | None) -> Parts:
    """What the report line of a document (``kind`` "json" or "cbor") says, apart from
    its source; ``origin`` is the file it was read from (a named Layer 3 export is found
    beside it)."""
    doc: Any = _UNREAD
    if kind == "cbor":  # decoded once; then as JSON text when JSON holds it exactly
        from .. import cbor

        try:
            doc = plain(cbor.decode(payload))
        except CanonkitError as exc:
            return _invalid(f"not CBOR ({exc.code}): {exc}")
        text = _as_json(payload, doc) if FAST_PATH else None
        parts = _fast(text, options, origin) if text is not None else None
    else:
        parts = _fast(payload, options, origin) if FAST_PATH else None
    if parts is not None:
        return parts
    from ..astp import reproduce

    if doc is _UNREAD:  # strict JSON, as every reader of canonkit (the input door)
        try:
            doc = _strict_json(payload)
        except JSONInputError as exc:
            return _invalid(f"{exc.code}: {exc}")
    episode_id = _readable_episode_id(doc)
    if not isinstance(doc, dict):
        return _invalid(f"document is a JSON {type(doc).__name__}, not an object")
    try:
        result = reproduce(doc, search_cap=options.search_cap)
    except CanonkitError as exc:  # InvalidRecordError and any refusal of the document
        return _invalid(f"{exc.code}: {exc}", episode_id)
    except _SHAPE_ERRORS as exc:
        return _invalid(f"unreadable document ({type(exc).__name__}: {exc})", episode_id)
    layer3 = _layer3(doc.get("layer3"), doc, options, origin)
    return Parts(result.episode_id, result.outcome, result.components, result.construction,
                 result.order, result.flags, result.reason, layer3)


def verify_one(kind: str, payload: bytes, source: Source, search_cap: int,
               head: bytes | None = None, origin: str | None = None,
               require_layer3: bool = False, cache: ResultCache | None = None) -> Verdict:
    """The verdict on one document (``kind`` "json" or "cbor"; "error" carries the reason
    a document could not be read); ``require_layer3`` writes the Layer 3 component on
    every Episode line. ``head`` is ``lines.source_head(source)`` if known;
    ``origin`` the file the document was read from as this process can open it (a Layer 3
    export named by path is found beside it; default ``source.file``); ``cache`` a result
    cache to look the document up in first (and to store its result in)."""
    if origin is None:
        origin = source.file
    if kind == "error":
        return invalid(source, payload.decode("utf-8", "replace"), None, head)
    options = Options(search_cap, require_layer3)
    if cache is None:
        return render_parts(source, assess(kind, payload, options, origin), head)
    key = cache.key(kind, payload, options, origin)
    src = head if head is not None else source_head(source)
    verdict = cache.get(key, source, src)
    if verdict is None:
        verdict = render_parts(source, assess(kind, payload, options, origin), src)
        cache.put(key, verdict, src)
    return verdict
