"""RFC 8949 §8 diagnostic notation for any well-formed CBOR item.

``diagnose`` shows what the bytes *are*, so it is not tied to a profile: it accepts every
well-formed item, including non-deterministic ones (indefinite lengths ``[_ ...]``,
``{_ ...}``, ``(_ h'..', h'..')``; non-preferred heads and float widths marked with the
§8.1 encoding indicator ``_0``..``_3``, e.g. ``1_1``, ``1.5_3``, ``[_0 1]``). Byte strings
are ``h'..'``, tags ``n(..)``, simple values ``false``/``true``/``null``/``undefined``/
``simple(n)``, floats ``NaN``/``Infinity``/``-Infinity`` or the shortest decimal that
round-trips, always with a ``.`` or an exponent (``1.0``, ``1.0e+300``). NaN payloads are
not shown. Input that is not well-formed raises the decoder's error classes
(``truncated``, ``not_well_formed``, ``indefinite_length`` for a stray break,
``invalid_utf8``, ``trailing_data``, ``empty_input``, ``depth_exceeded`` beyond
``DEFAULT_MAX_DEPTH``).
"""
from __future__ import annotations

import json
import math
import struct
from typing import Any

from ._types import DEFAULT_MAX_DEPTH
from ..errors import decode_error

__all__ = ["diagnose"]

_BREAK = object()


def _float_text(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + ("e" + exponent if exponent else "")


def _preferred_float_width(ai: int, raw: bytes) -> int:
    """The additional information (25/26/27) of the shortest exact form of this float."""
    if ai == 25:
        return 25
    value = struct.unpack(">f" if ai == 26 else ">d", raw)[0]
    if math.isnan(value):
        bits = int.from_bytes(raw, "big")
        if ai == 26:
            return 25 if bits & 0x1FFF == 0 else 26
        if bits & ((1 << 42) - 1) == 0:
            return 25
        return 26 if bits & ((1 << 29) - 1) == 0 else 27
    for fmt, width in ((">e", 25), (">f", 26)):
        try:
            if struct.unpack(fmt, struct.pack(fmt, value))[0] == value:
                return width
        except OverflowError:
            pass
    return 27


class _Diag:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def fail(self, code: str, offset: int, what: str) -> Exception:
        return decode_error(code, self.data, offset, what)

    def item(self, depth: int, allow_break: bool = False, string_major: int = -1) -> Any:
        """The notation of the item at ``self.pos``. Containers recurse straight back into
        ``item`` (one Python frame per nesting level). ``string_major`` is set for the
        chunks of an indefinite-length string, which must be definite strings of that
        major type."""
        data, start = self.data, self.pos
        ib = data[start]
        major, ai = ib >> 5, ib & 31
        if ai in (28, 29, 30) or (ai == 31 and major in (0, 1, 6)):
            raise self.fail("not_well_formed", start,
                            f"additional information {ai} on major type {major}")
        if ai == 31 and major == 7:
            if not allow_break:
                raise self.fail("indefinite_length", start, "stray break byte")
            self.pos = start + 1
            return _BREAK
        if string_major >= 0 and (major != string_major or ai == 31):
            raise self.fail("not_well_formed", start,
                            "chunk of an indefinite-length string is not a definite string "
                            "of the same type")
        indicator = ""
        if ai == 31:
            arg = -1  # indefinite: read children up to the break
            self.pos = start + 1
        elif ai < 24:
            arg = ai
            self.pos = start + 1
        else:
            size = 1 << (ai - 24)
            if start + 1 + size > len(data):
                raise self.fail("truncated", start, "input ends inside a head")
            raw = data[start + 1:start + 1 + size]
            arg = int.from_bytes(raw, "big")
            self.pos = start + 1 + size
            if major == 7 and ai >= 25:
                text = _float_text(struct.unpack((">e", ">f", ">d")[ai - 25], raw)[0])
                if _preferred_float_width(ai, raw) != ai:
                    text += f"_{ai - 24}"
                return text
            if major == 7 and arg < 32:
                raise self.fail("not_well_formed", start,
                                f"simple value {arg} in the two-byte form")
            shortest = 24 if ai == 24 else 1 << (4 * size)
            indicator = f"_{ai - 24}" if major != 7 and arg < shortest else ""
        if major == 0:
            return f"{arg}{indicator}"
        if major == 1:
            return f"{-1 - arg}{indicator}"
        if major == 7:
            names = {20: "false", 21: "true", 22: "null", 23: "undefined"}
            return names.get(arg, f"simple({arg})")
        if major in (2, 3) and arg >= 0:
            if arg > len(data) - self.pos:
                raise self.fail("truncated", start, f"string of {arg} bytes runs past the end")
            raw = data[self.pos:self.pos + arg]
            self.pos += arg
            return self.string(major, raw, start) + indicator
        if depth >= DEFAULT_MAX_DEPTH:
            raise self.fail("depth_exceeded", start, f"nesting deeper than {DEFAULT_MAX_DEPTH}")
        # tags, arrays, maps and indefinite strings: children, counted or up to a break
        per_entry = 2 if major == 5 else 1
        wanted = 1 if major == 6 else arg * per_entry
        parts: list[str] = []
        while arg < 0 or len(parts) < wanted:
            if self.pos >= len(data):
                raise self.fail("truncated", start, "input ends inside a container")
            part = self.item(depth + 1, allow_break=arg < 0 and len(parts) % per_entry == 0,
                             string_major=major if major in (2, 3) else -1)
            if part is _BREAK:
                break
            parts.append(part)
        if major == 6:
            return f"{arg}{indicator}({parts[0]})"
        if major == 5:
            parts = [f"{k}: {v}" for k, v in zip(parts[::2], parts[1::2])]
        body = ", ".join(parts)
        if major in (2, 3):
            return f"(_ {body})" if parts else ("''_" if major == 2 else '""_')
        prefix = "_ " if arg < 0 else (indicator + " " if indicator else "")
        return f"[{prefix}{body}]" if major == 4 else f"{{{prefix}{body}}}"

    def string(self, major: int, raw: bytes, start: int) -> str:
        if major == 2:
            return f"h'{raw.hex()}'"
        try:
            return json.dumps(raw.decode("utf-8"), ensure_ascii=False)
        except UnicodeDecodeError:
            raise self.fail("invalid_utf8", start, "text string is not valid UTF-8") from None


def diagnose(data: Any, /) -> str:
    """The RFC 8949 §8 diagnostic notation of one well-formed CBOR item."""
    if isinstance(data, str):
        raise TypeError("diagnose() needs a bytes-like object, not str")
    raw = bytes(memoryview(data))
    if not raw:
        raise decode_error("empty_input", raw, 0, "empty input")
    walker = _Diag(raw)
    text = walker.item(0)
    if walker.pos != len(raw):
        raise decode_error("trailing_data", raw, walker.pos, "bytes after the top-level item")
    return str(text)
