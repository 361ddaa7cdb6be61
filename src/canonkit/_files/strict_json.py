"""Strict JSON, the input door's only JSON parser (``canonkit._files.inputs`` re-exports
it): UTF-8 only; no ``NaN``/``Infinity``; no repeated object key at any depth; no integer
longer than ``MAX_INTEGER_DIGITS`` digits (bounded before conversion) and no number too
large for a float. Every refusal is a :class:`JSONInputError` — its subclass
:class:`DuplicateJSONKeyError` for a repeated key — with the offset of the offending token
(in bytes for bytes input). Numbers written as decimal strings are bounded the same way
(:func:`decimal_uint64`).

The fast parse is ``json.loads`` with hooks that stop at the first problem; the problem is
then located by :func:`_scan`, an iterative walk of the text (any depth).
"""
from __future__ import annotations

import json
import math
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # untyped, but public since 2.x
from json.scanner import NUMBER_RE
from typing import Any

from ..errors import DuplicateJSONKeyError, JSONInputError

__all__ = ["MAX_INTEGER_DIGITS", "UINT64_LIMIT", "LongInteger", "decimal_uint64", "loads_json",
           "loads_json_noting_duplicates"]

# CPython's default int-string limit: every integer Python reads by default still reads,
# and a longer one is refused before int() (whatever sys.set_int_max_str_digits says).
MAX_INTEGER_DIGITS = 4300

_WS = re.compile(r"[ \t\n\r]*")


UINT64_LIMIT = 1 << 64
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def decimal_uint64(text: str) -> int | None:
    """The value of ``text`` if it is a canonical decimal string (digits only, no leading
    zero) below 2**64, else None. The length is checked before ``int()``, so a
    5000-digit string costs nothing and raises nothing."""
    if len(text) > 20 or not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if value < UINT64_LIMIT else None


class LongInteger:
    """A JSON integer of more than ``MAX_INTEGER_DIGITS`` digits, never converted: what
    :func:`loads_json_noting_duplicates` leaves in its place for a caller that reports
    such a value per field instead of refusing the whole document."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits

    def __len__(self) -> int:
        return len(self.digits) - self.digits.startswith("-")

    def __repr__(self) -> str:
        return f"<integer of {len(self)} digits>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LongInteger) and other.digits == self.digits

    def __hash__(self) -> int:
        return hash(self.digits)


class _Found(Exception):
    """Raised inside json.loads hooks to stop at the first problem; located afterwards."""

    def __init__(self, what: str, token: str) -> None:
        super().__init__(what)
        self.what = what
        self.token = token


def _bounded_int(digits: str) -> int:
    if len(digits) - digits.startswith("-") > MAX_INTEGER_DIGITS:
        raise _Found("number", digits)
    return int(digits)


def _int_or_long(digits: str) -> int | LongInteger:
    if len(digits) - digits.startswith("-") > MAX_INTEGER_DIGITS:
        return LongInteger(digits)
    return int(digits)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e400: a number no float holds, never read as infinity
        raise _Found("float", text)
    return value


def _refuse_constant(name: str) -> Any:
    raise _Found("constant", name)


def _key_at(text: str, i: int, seen: set[str], keep: list[tuple[str, int]] | None
            ) -> tuple[int, tuple[str, int] | None]:
    """Read the key at ``i`` and the colon after it; (position of the value, the repeated
    key and its offset or None). With ``keep`` repeats are recorded, not returned."""
    key, j = scanstring(text, i + 1)
    if key in seen:
        if keep is None:
            return j, (key, i)
        keep.append((key, i))
    seen.add(key)
    j = _WS.match(text, j).end()  # type: ignore[union-attr]
    if text[j] != ":":
        raise ValueError("expected ':'")
    return _WS.match(text, j + 1).end(), None  # type: ignore[union-attr]


def _scan(text: str, keep: list[tuple[str, int]] | None = None
          ) -> tuple[str, str, int] | None:
    """Walk JSON ``text`` (iteratively: any depth) for what the fast parse refused or
    noted: (what, token, offset) of the first repeated key, over-long integer, number too
    large for a float or NaN/Infinity, or None. With ``keep`` (a caller noting problems
    per value), repeated keys are appended there and over-long integers pass."""
    stack: list[set[str] | None] = []  # per open container: keys seen, or None (array)
    i = _WS.match(text, 0).end()  # type: ignore[union-attr]
    try:
        while True:
            ch = text[i]  # a value starts here
            if ch == "{" or ch == "[":
                i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
                if text[i] != ("}" if ch == "{" else "]"):
                    seen: set[str] | None = set() if ch == "{" else None
                    stack.append(seen)
                    if seen is not None:
                        i, dup = _key_at(text, i, seen, keep)
                        if dup is not None:
                            return ("duplicate", *dup)
                    continue
                i += 1
            elif ch == '"':
                i = scanstring(text, i + 1)[1]
            else:
                match = NUMBER_RE.match(text, i)
                if match is not None:
                    integer, frac, exp = match.groups()
                    if frac is None and exp is None:
                        if len(integer) - integer.startswith("-") > MAX_INTEGER_DIGITS \
                                and keep is None:
                            return ("number", integer, i)
                    elif math.isinf(float(match.group())):
                        return ("float", match.group(), i)
                    i = match.end()
                else:
                    for word in ("true", "false", "null"):
                        if text.startswith(word, i):
                            i += len(word)
                            break
                    else:
                        for word in ("NaN", "Infinity", "-Infinity"):
                            if text.startswith(word, i):
                                return ("constant", word, i)
                        return None
            while True:  # after a value: close containers, or go on to the next value
                i = _WS.match(text, i).end()  # type: ignore[union-attr]
                if not stack:
                    return None
                top = stack[-1]
                ch = text[i]
                if ch == ",":
                    i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
                    if top is not None:
                        i, dup = _key_at(text, i, top, keep)
                        if dup is not None:
                            return ("duplicate", *dup)
                    break
                if ch != ("]" if top is None else "}"):
                    return None
                stack.pop()
                i += 1
    except (IndexError, ValueError):
        return None


_SURROGATE_HINT = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.S)


def _lone_surrogate(text: str) -> tuple[str, int] | None:
    """The first ``\\uD800``-``\\uDFFF`` escape of ``text`` that is not half of a pair
    (no Unicode character: UTF-8 cannot hold it), with its position, or None."""
    if _SURROGATE_HINT.search(text) is None:
        return None
    high: tuple[str, int, int] | None = None  # an escaped high half, waiting for its low
    for match in _ESCAPE.finditer(text):  # escapes occur only inside strings
        code = match.group(1)
        value = int(code, 16) if code is not None else -1
        if high is not None:
            if 0xDC00 <= value <= 0xDFFF and match.start() == high[2]:
                high = None
                continue
            return high[0], high[1]
        if 0xD800 <= value <= 0xDBFF:
            high = (match.group(), match.start(), match.end())
        elif 0xDC00 <= value <= 0xDFFF:
            return match.group(), match.start()
    return None if high is None else (high[0], high[1])


def _byte_offset(text: str, pos: int | None, was_bytes: bool) -> int | None:
    if pos is None or not was_bytes:
        return pos
    return len(text[:pos].encode("utf-8", "surrogatepass"))


def _loads(data: bytes | bytearray | memoryview | str, source: str,
           pairs: Any, parse_int: Any = _bounded_int, noting: bool = False
           ) -> tuple[str, bool, Any]:
    was_bytes = not isinstance(data, str)
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONInputError(f"{source}: not UTF-8 at offset {exc.start}",
                                   offset=exc.start, detail="utf-8") from None
    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=_refuse_constant,
                           parse_int=parse_int, parse_float=_finite_float)
    except _Found as found:
        # the first problem in document order (the hooks run at a container's end, so the
        # one that stopped the parse may come later in the text)
        where = _scan(text, [] if noting else None)
        what, token, pos = where if where is not None else (found.what, found.token, None)
        offset = _byte_offset(text, pos, was_bytes)
        at = f" at offset {offset}" if offset is not None else ""
        if what == "duplicate":
            raise DuplicateJSONKeyError(f"{source}: duplicate object key {token!r}{at}",
                                        offset=offset, detail=token) from None
        if what == "constant":
            raise JSONInputError(f"{source}: JSON has no {token}{at}",
                                 offset=offset, detail=token) from None
        if what == "float":
            raise JSONInputError(f"{source}: a number too large for a float{at}",
                                 offset=offset, detail="number") from None
        raise JSONInputError(f"{source}: an integer of more than {MAX_INTEGER_DIGITS} "
                             f"digits{at}", offset=offset, detail="number") from None
    except json.JSONDecodeError as exc:
        offset = _byte_offset(text, exc.pos, was_bytes)
        msg = exc.msg.removesuffix(" at")  # "Invalid control character at": the offset follows
        raise JSONInputError(f"{source}: not JSON: {msg} at offset {offset} "
                             f"(line {exc.lineno} column {exc.colno})",
                             offset=offset, detail=msg) from None
    except RecursionError:
        raise JSONInputError(f"{source}: JSON nested too deeply",
                               detail="depth") from None
    except ValueError as exc:  # e.g. an integer over a lowered sys int-string limit
        raise JSONInputError(f"{source}: {exc}", detail=str(exc)) from None
    lone = _lone_surrogate(text)
    if lone is not None:
        offset = _byte_offset(text, lone[1], was_bytes)
        raise JSONInputError(f"{source}: a lone surrogate {lone[0]} (no Unicode character) "
                             f"at offset {offset}", offset=offset, detail="surrogate")
    return text, was_bytes, value


def _no_repeats(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(items)
    if len(out) != len(items):
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise _Found("duplicate", key)
            seen.add(key)
    return out


def loads_json(data: bytes | bytearray | memoryview | str, *, source: str = "<json>") -> Any:
    """Parse strict JSON (UTF-8 when given bytes). JSONInputError — its subclass
    DuplicateJSONKeyError for a repeated key — names ``source`` and carries the offset
    (in bytes for bytes input, in characters for text)."""
    return _loads(data, source, _no_repeats)[2]


def loads_json_noting_duplicates(data: bytes | bytearray | memoryview | str, *,
                                 source: str = "<json>"
                                 ) -> tuple[Any, list[tuple[str, int | None]]]:
    """Like :func:`loads_json`, for a caller that reports problems per value and goes on:
    a repeated key is not an error (the value keeps the last one, as JSON parsers do; the
    repeats come back as ``(key, offset)`` pairs in document order), and an integer of
    more than ``MAX_INTEGER_DIGITS`` digits is left unconverted as a
    :class:`LongInteger`."""
    repeated: list[str] = []

    def note_repeats(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            repeated.append("")
        return out

    text, was_bytes, value = _loads(data, source, note_repeats, _int_or_long, noting=True)
    if not repeated:
        return value, []
    keep: list[tuple[str, int]] = []
    _scan(text, keep)
    return value, [(key, _byte_offset(text, pos, was_bytes)) for key, pos in keep]
