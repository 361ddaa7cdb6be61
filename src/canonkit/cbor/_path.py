"""Where an encode error happened: the path of the offending value inside the encoded one.

Both CBOR backends build the same path from these helpers, while the error unwinds (so
the success path never pays for it): ``$`` is the value passed to ``encode``, ``[3]`` an
array item, ``["a"]`` a map entry with a text key (a JSON string literal) and ``[1]``,
``[b'k']``, ``[(1, 2)]`` one with any other key (its ``repr``); a failure in the key or in
the value of an entry both point at the entry. ``.value`` is a tag's content. The
finished path becomes the error's ``detail`` (``EncodeError.path``).
"""
from __future__ import annotations

import json

__all__ = ["TAG_CONTENT", "entry", "finish", "item", "located"]

TAG_CONTENT = ".value"
_PARTS = "_cbor_path_parts"


def item(index: int) -> str:
    """The component of array item ``index``."""
    return f"[{index}]"


def entry(key: object) -> str:
    """The component of the map entry whose key is ``key``."""
    if type(key) is str:
        return f"[{json.dumps(key)}]"
    try:
        return f"[{key!r}]"
    except Exception:  # a user type whose repr fails must not hide the encode error
        return f"[<{type(key).__name__}>]"


def located(exc: BaseException, component: str) -> None:
    """Record that ``exc`` happened inside ``component`` (innermost first)."""
    exc.__dict__.setdefault(_PARTS, []).append(component)


def finish(exc: BaseException) -> None:
    """Turn the recorded components into ``exc.detail``: ``$`` plus outermost first."""
    parts = exc.__dict__.pop(_PARTS, [])
    exc.detail = "$" + "".join(reversed(parts))  # type: ignore[attr-defined]
