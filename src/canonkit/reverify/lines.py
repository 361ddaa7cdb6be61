"""Report lines, assembled from serialized fields.

A report line is ``{"episode_id", "outcome", "source", "components", "construction",
"order", "flags", "reason"}`` in that order (REVERIFY.md §3), compact JSON, then
``layer3_findings`` when the Episode's Layer 3 failed (``layer3.py``). It is built as
``head + number + tail``, where ``number`` is the line number or byte offset inside
``source`` and ``head``/``tail`` are the serialized fields on either side of it: a worker
that reads a byte range of a JSON-lines file knows a line's number only within its range,
and the parent, which knows how many lines came before the range, supplies the rest.
The bytes are exactly ``orjson.dumps`` of the whole record (each field is serialized by
orjson and joined with the same separators).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

if TYPE_CHECKING:
    from .layer3_component import Layer3Result

_dumps = orjson.dumps


class Verdict(NamedTuple):
    """One Episode's report line (``head``, ``number``, ``tail``) and what the parent
    counts: the outcome, the Episode id and, for ``reproduced_by_search``, the order to
    record as an annotation."""

    head: bytes
    number: int | None
    tail: bytes
    outcome: str
    episode_id: str | None
    order: list[str] | None
    layer3: str | None = None  # the Layer 3 state when the line carries one

    def line(self, base: int = 0) -> bytes:
        """The report line, with ``base`` added to the source's line number."""
        if self.number is None:
            return self.head
        return b"%b%d%b" % (self.head, self.number + base, self.tail)


class Source(NamedTuple):
    """Where a document came from: a file, and a line number or a byte offset in it."""

    file: str
    key: str | None = None  # "line" or "offset"
    number: int = 0

    def as_dict(self, base: int = 0) -> dict[str, Any]:
        if self.key is None:
            return {"file": self.file}
        return {"file": self.file, self.key: self.number + base}


def source_head(source: Source) -> bytes:
    """``"source":{"file":F`` and, for a located source, ``,"line":`` (or ``,"offset":``)."""
    try:
        name = _dumps(source.file)
    except orjson.JSONEncodeError:  # a file name that is not UTF-8 (surrogate escapes)
        import json

        name = json.dumps(source.file).encode()
    head = b',"source":{"file":' + name
    if source.key is not None:
        head += b',"' + source.key.encode() + b'":'
    return head


def render(source: Source, episode_id: str | None, outcome: str, components: Any,
           construction: Any, order: Any, flags: Any, reason: Any,
           head_of_source: bytes | None = None, layer3: Layer3Result | None = None
           ) -> Verdict:
    """The verdict for one Episode; ``head_of_source`` is ``source_head(source)`` when the
    caller has it already (the same file for a whole range); ``layer3`` the Layer 3 result
    when the line carries one (the last component, and the findings last on the line)."""
    src = head_of_source if head_of_source is not None else source_head(source)
    head = b'{"episode_id":%b,"outcome":%b%b' % (_dumps(episode_id), _dumps(outcome), src)
    state = None
    if layer3 is not None:
        state = layer3.state
        components = {**components, "layer3": state}
    tail = b'},"components":%b,"construction":%b,"order":%b,"flags":%b,"reason":%b' % (
        _dumps(components), _dumps(construction), _dumps(order), _dumps(flags),
        _dumps(reason))
    if layer3 is not None and layer3.findings:
        tail += b',"layer3_findings":' + _dumps(layer3.findings)
    tail += b"}"
    kept = order if outcome == "reproduced_by_search" else None
    if source.key is None:
        return Verdict(head + tail, None, b"", outcome, episode_id, kept, state)
    return Verdict(head, source.number, tail, outcome, episode_id, kept, state)


_NO_COMPONENTS: dict[str, str] = {}
_NO_FLAGS: list[str] = []


def invalid(source: Source, reason: str, episode_id: str | None = None,
            head_of_source: bytes | None = None) -> Verdict:
    """An ``invalid_record`` verdict."""
    return render(source, episode_id, "invalid_record", _NO_COMPONENTS, None, None,
                  _NO_FLAGS, reason, head_of_source)
