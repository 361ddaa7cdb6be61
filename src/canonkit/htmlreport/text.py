"""Text from the input, made safe to show: every value a report takes from a corpus or a
store (an Episode id, a file name, a reason quoting a document) goes through
:func:`cell` or :func:`escape` before it reaches the page.

- HTML's special characters become entities (``<script>`` renders as text, in element
  content and in attribute values alike).
- Characters that would not show what the input holds are written as visible escapes
  (``\\u202e``): C0 and C1 controls other than tab and line feed, DEL, lone surrogates (a
  file name that is not UTF-8 decodes to them), and the bidirectional overrides and
  isolates that could make a name read as another (U+202A-U+202E, U+2066-U+2069).
- :func:`cell` also bounds the length, so one huge value cannot make a huge page.
"""
from __future__ import annotations

import html
import re

__all__ = ["ELLIPSIS", "cell", "clip", "escape", "visible"]

ELLIPSIS = "\u2026"
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff]")


def visible(text: str) -> str:
    """``text`` with each character that would not show itself as ``\\uXXXX``."""
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def escape(text: str) -> str:
    """``text`` for element content or a quoted attribute value."""
    return html.escape(visible(text), quote=True)


def cell(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters (an ellipsis marks a cut; the cut
    never splits a visible escape), then escaped. Costs ``limit``, not ``len(text)``."""
    shown = visible(text[:limit + 1])  # the escapes only lengthen it
    if len(shown) > limit:
        shown = shown[:max(limit - 1, 0)]
        cut = shown.rfind("\\u", max(len(shown) - 5, 0))
        if cut >= 0 and len(shown) - cut < 6:
            shown = shown[:cut]
        shown += ELLIPSIS
    return html.escape(shown, quote=True)


def clip(text: str, limit: int) -> str:
    """At most ``limit + 1`` characters of ``text``: enough for ``cell(text, limit)`` to
    show the same, so a collector need not keep a huge value whole."""
    return text[:limit + 1]
