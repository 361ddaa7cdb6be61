"""DAG-JSON (docs/links-and-dag-json.md): the JSON codec of the IPLD data model that
``cbor.decode(..., profile="dag-cbor")`` produces — ``None``, ``bool``, ``int`` in
−2^64…2^64−1, finite ``float``, ``str``, ``bytes``, ``list``, ``dict`` with text keys and
``Link`` — so ``dag_json.encode(cbor.decode(b, profile="dag-cbor"))`` and back round-trip.

``encode`` writes the one canonical form: no whitespace; object keys sorted by their UTF-8
bytes; strings with only the escapes JSON requires (``\\"``, ``\\\\``, ``\\b \\f \\n \\r
\\t``, other control characters as lowercase ``\\u00xx``); integers in decimal; floats as
the shortest decimal that reads back to the same double, laid out like JavaScript's
``Number.prototype.toString`` (plain notation from 1e-6 to below 1e21, else
``d.ddde±x``) with ``.0`` added to a float with an integral value, so it stays a float;
bytes as ``{"/":{"bytes":"<base64, no padding>"}}``; links as ``{"/":"<CID>"}`` (base32
``b...`` for CIDv1, base58btc ``Qm...`` for CIDv0).

``decode`` (``strict=True``, the default) accepts exactly the bytes ``encode`` produces and
raises the first violation with a stable ``code`` and the byte ``offset``;
``strict=False`` also accepts JSON whitespace, unsorted keys and any valid escape or number
spelling (the spec's advice for historical data). Both modes refuse what DAG-JSON itself
forbids: duplicate keys, misused ``"/"`` maps (the reserved namespace), CIDs that are not
base32 CIDv1 or base58btc CIDv0 text, base64 that is padded or has stray bits, NaN and
infinities, integers outside the range, strings that are not Unicode.
"""
from __future__ import annotations

from json import loads as _json_loads
import math
import re
from collections.abc import Iterator, Mapping
from json.decoder import JSONDecodeError, scanstring  # type: ignore[attr-defined]
from json.encoder import encode_basestring
from typing import Any, NoReturn

from ._types import DEFAULT_MAX_DEPTH, FrozenDict, Link, Simple, Tag, UndefinedType
from ._cid import b64decode_unpadded, b64encode_unpadded, cid_from_string, cid_to_string
from ..errors import (
    CODES,
    DepthExceededError,
    FloatOutsideProfileError,
    InputTypeError,
    IntegerOutOfRangeError,
    InvalidOptionError,
    UnsupportedItemError,
    UnsupportedTypeError,
)

__all__ = ["decode", "encode", "float_text"]

_U64 = 1 << 64
_WS = " \t\n\r"
_WS_RUN = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_MAX_INT_TEXT = len(str(-_U64))  # longer integer text is out of range without parsing it


# --- encoding ------------------------------------------------------------------------

def float_text(value: float) -> str:
    """The canonical DAG-JSON text of a finite float (see the module docstring);
    ``-0.0`` is written as ``0.0``, as the dag-cbor encoder writes it."""
    text = repr(value)
    if "e" not in text and "n" not in text:
        # Python writes 1e-4 <= |x| < 1e16 in plain notation with the same shortest
        # digits JavaScript uses, and keeps ".0" on integral values: already canonical
        return "0.0" if value == 0 else text
    if not math.isfinite(value):
        raise FloatOutsideProfileError(f"{value!r} has no DAG-JSON form", detail=value)
    mantissa, _, exp_text = text.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exp_text) - (len(whole + fraction) - len(digits))
    digits = digits.rstrip("0")
    k = len(digits)
    sign = "-" if value < 0 else ""
    if k <= point <= 21:
        return f"{sign}{digits}{'0' * (point - k)}.0"
    if 0 < point <= 21:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    exponent = point - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{'+' if exponent >= 0 else '-'}{abs(exponent)}"


def _reserved_use(mapping: Mapping[Any, Any]) -> str | None:
    """Why a data-model map cannot be written as DAG-JSON (it would read back as a link or
    bytes), or None. Such a map has "/" as its first key (no key sorts before it) and a
    string under it, or a map whose first key is "bytes" holding a string."""
    if min(mapping) != "/":
        return None
    inner = mapping["/"]
    if isinstance(inner, str):
        return 'a map whose first key "/" holds a string reads back as a link'
    if isinstance(inner, Mapping) and isinstance(inner.get("bytes"), str):
        try:
            first = min(inner)
        except TypeError:  # a non-text key: encoding the inner map refuses it
            return None
        if first == "bytes":
            return 'a map {"/": {"bytes": <string>, ...}} reads back as bytes'
    return None


def _bytes_text(data: Any) -> str:
    return '{"/":{"bytes":"' + b64encode_unpadded(data) + '"}}'


def _scalar(obj: Any) -> str | None:
    """The text of a scalar (or a link or bytes), None for a list or map. Exact types
    first; subclasses and other buffers after them."""
    t = type(obj)
    if t is str:
        return encode_basestring(obj)
    if t is int:
        if not -_U64 <= obj < _U64:
            raise IntegerOutOfRangeError(f"integer {obj} outside -2**64..2**64-1", detail=obj)
        return int.__repr__(obj)
    if t is float:
        return float_text(obj)
    if t is dict or t is list or t is tuple or t is FrozenDict:
        return None
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if t is Link:
        return '{"/":"' + cid_to_string(obj.cid_bytes) + '"}'
    if t is bytes:
        return _bytes_text(obj)
    if isinstance(obj, (list, tuple, Mapping)):
        return None
    if isinstance(obj, int):  # int subclasses (IntEnum), not bool: handled above
        return _scalar(int(obj))
    if isinstance(obj, float):
        return _scalar(float(obj))
    if isinstance(obj, str):
        return _scalar(str(obj))
    if isinstance(obj, Link):
        return _scalar(Link(obj.cid_bytes))
    if isinstance(obj, (Tag, Simple, UndefinedType)):
        raise UnsupportedItemError(f"{obj!r} is not in the DAG-JSON data model", detail=obj)
    try:
        view = memoryview(obj)
    except TypeError:
        raise UnsupportedTypeError(
            f"cannot encode {type(obj).__name__} as DAG-JSON", detail=obj) from None
    return _bytes_text(view.tobytes())


def _non_text_key(key: Any) -> NoReturn:
    raise UnsupportedItemError(f"DAG-JSON map keys are strings, got {type(key).__name__}",
                               detail=key)


def _sorted_keys(obj: Mapping[Any, Any]) -> list[str]:
    """The keys of a map in output order, after the checks that can refuse the map."""
    try:
        keys = sorted(obj)  # code point order of str == byte order of their UTF-8
    except TypeError:  # keys of mixed types do not sort
        _non_text_key(next(k for k in obj if not isinstance(k, str)))
    if "/" in obj and (problem := _reserved_use(obj)) is not None:
        raise UnsupportedItemError(f"cannot write this map as DAG-JSON: {problem}", detail=obj)
    return keys


def encode(value: Any, /, *, max_depth: int = DEFAULT_MAX_DEPTH) -> bytes:
    """The canonical DAG-JSON bytes of ``value`` (a dag-cbor data-model value).

    One loop over an explicit stack of open lists and maps, no recursion, so any
    ``max_depth`` is safe. A stack entry is ``[items, map or None, closing character,
    started]``: an iterator over the container's items (a map's keys in output order)
    and whether an item was written (the next one needs a comma)."""
    _check_depth(max_depth)
    parts: list[str] = []
    out = parts.append
    stack: list[list[Any]] = []
    obj = value
    handoff = False  # the fast loop left obj to the loop above
    while True:
        # obj: the value to write next (the top-level one, or an item the fast loop below
        # left to _scalar and the container checks)
        t = type(obj)
        if t is list or t is tuple or t is dict or (text := _scalar(obj)) is None:
            if len(stack) >= max_depth:
                raise DepthExceededError(f"nesting deeper than max_depth={max_depth}",
                                         detail=max_depth)
            if isinstance(obj, (list, tuple)):
                out("[")
                stack.append([iter(obj), None, "]", False])
            else:
                out("{")
                stack.append([iter(_sorted_keys(obj)), obj, "}", False])
        else:
            out(text)
        # write the innermost container's next items; common scalars, lists and dicts
        # inline; close finished containers; leave anything else to the loop above
        while stack:
            frame = stack[-1]
            items, mapping, _, started = frame
            for item in items:
                if started:
                    out(",")
                started = True
                if mapping is not None:
                    if type(item) is not str and not isinstance(item, str):
                        _non_text_key(item)
                    out(encode_basestring(item))
                    out(":")
                    item = mapping[item]
                t = type(item)
                if t is str:
                    out(encode_basestring(item))
                elif t is int and -_U64 <= item < _U64:
                    out(int.__repr__(item))
                elif t is float:
                    out(float_text(item))
                elif item is None:
                    out("null")
                elif item is True:
                    out("true")
                elif item is False:
                    out("false")
                else:
                    frame[3] = True
                    if t is list and len(stack) < max_depth:
                        out("[")
                        stack.append([iter(item), None, "]", False])
                        break  # go on inside it
                    if t is dict and len(stack) < max_depth:
                        out("{")
                        stack.append([iter(_sorted_keys(item)), item, "}", False])
                        break
                    obj = item
                    handoff = True
                    break
            else:
                stack.pop()
                out(frame[2])
                continue
            if handoff:
                handoff = False
                break
        else:
            break
    text = "".join(parts)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UnsupportedItemError(
            f"a string holds the lone surrogate {text[exc.start]!r}, which has no UTF-8 form",
            detail=text[exc.start]) from None


# --- decoding ------------------------------------------------------------------------

class _Fail(Exception):
    """Internal: code and character index of the first violation."""

    def __init__(self, code: str, index: int, what: str) -> None:
        super().__init__(what)
        self.code, self.index, self.what = code, index, what


def _fail(code: str, index: int, what: str) -> NoReturn:
    raise _Fail(code, index, what)


class _Frame:
    __slots__ = ("container", "key", "start")

    def __init__(self, container: Any, start: int, key: str | None) -> None:
        self.container = container
        self.start = start
        self.key = key  # the key whose value is being read (maps); the previous key after


class _Reader:
    def __init__(self, text: str, strict: bool, max_depth: int) -> None:
        self.text = text
        self.strict = strict
        self.max_depth = max_depth

    def skip(self, pos: int) -> int:
        """``pos`` past any whitespace (strict: whitespace is a violation)."""
        text = self.text
        if pos < len(text) and text[pos] in _WS:
            if self.strict:
                _fail("non_canonical_json", pos, "whitespace")
            pos = _WS_RUN.match(text, pos).end()  # type: ignore[union-attr]
        return pos

    def expect(self, pos: int, chars: str, within: int, what: str) -> str:
        """The character at ``pos`` (after whitespace), which must be one of ``chars``."""
        text = self.text
        if pos >= len(text):
            _fail("truncated", within, f"input ends where {what} should follow")
        ch = text[pos]
        if ch not in chars:
            _fail("invalid_json", pos, f"expected {what}, found {ch!r}")
        return ch

    def string(self, pos: int) -> tuple[str, int]:
        """The string token whose opening quote is at ``pos``: (value, end)."""
        try:
            value, end = scanstring(self.text, pos + 1, True)
        except JSONDecodeError as exc:
            if exc.msg.startswith("Unterminated string"):
                _fail("truncated", pos, "unterminated string")
            _fail("invalid_json", exc.pos, exc.msg.lower())
        if "\\" in self.text[pos:end]:
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    _fail("invalid_utf8", pos, "a \\u escape makes a lone surrogate")
            if self.strict and encode_basestring(value) != self.text[pos:end]:
                _fail("non_canonical_json", pos,
                      "string escapes other than the ones JSON requires")
        return value, end

    def number(self, pos: int) -> tuple[int | float, int]:
        match = _NUMBER.match(self.text, pos)
        if match is None:
            _fail("invalid_json", pos, f"unexpected character {self.text[pos]!r}")
        token = match.group()
        end = match.end()
        if match.group(1) is None and match.group(2) is None:
            if len(token) > _MAX_INT_TEXT or not -_U64 <= (value := int(token)) < _U64:
                _fail("integer_out_of_range", pos, "integer outside -2**64..2**64-1")
            if self.strict and token == "-0":
                _fail("non_canonical_json", pos, "-0 is written 0")
            return value, end
        number = float(token)
        if not math.isfinite(number):
            _fail("float_outside_profile", pos, "number too large for a binary64 float")
        if self.strict and float_text(number) != token:
            _fail("non_canonical_json", pos,
                  f"float {token} is written {float_text(number)}")
        return (0.0 if number == 0 else number), end

    def literal(self, pos: int, within: int) -> tuple[Any, int]:
        text = self.text
        for word, value in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, pos):
                return value, pos + len(word)
            if len(text) - pos < len(word) and word.startswith(text[pos:]):
                _fail("truncated", within, f"input ends inside {word}")
        if text.startswith(("NaN", "Infinity", "-Infinity"), pos):
            _fail("float_outside_profile", pos, "NaN and infinities are not DAG-JSON")
        return self.number(pos)

    def key(self, pos: int, frame: _Frame) -> int:
        """Read the key at ``pos`` and the ':' after it into ``frame``; return the
        value's position. Checks order (strict) and duplicates against the map so far."""
        self.expect(pos, '"', frame.start, "a string key")
        key, end = self.string(pos)
        previous = frame.key
        if previous is not None:
            if key == previous or key in frame.container:
                _fail("duplicate_map_key", pos, f"map key {key!r} repeats")
            if self.strict and key < previous:
                _fail("unsorted_map_keys", pos, f"map key {key!r} sorts before {previous!r}")
        frame.key = key
        end = self.skip(end)
        self.expect(end, ":", frame.start, "':'")
        return self.skip(end + 1)

    def close_map(self, frame: _Frame) -> Any:
        """A map just closed: a link, bytes or the map itself (reserved-namespace rules).

        The rules speak of a map's *first* key. Strict input is sorted, so that is the
        smallest key; unsorted (lenient) input must also pass them with its first key as
        written, as a streaming decoder reads it, and with its smallest key, as it would
        be written back, so a lenient decode never returns a map ``encode`` refuses."""
        mapping = frame.container
        if "/" not in mapping or not self.first_key("/", mapping):
            return mapping
        inner = mapping["/"]
        if isinstance(inner, str):
            if len(mapping) != 1:
                _fail("reserved_namespace", frame.start,
                      'a map whose first key "/" holds a string must be a link alone')
            return self.link(inner, frame.start)
        if (isinstance(inner, dict) and isinstance(inner.get("bytes"), str)
                and self.first_key("bytes", inner)):
            if len(inner) != 1 or len(mapping) != 1:
                _fail("reserved_namespace", frame.start,
                      'bytes are {"/":{"bytes":"..."}} with no other keys')
            return self.bytes(inner["bytes"], frame.start)
        return mapping

    def first_key(self, key: str, mapping: dict[str, Any]) -> bool:
        """Whether ``key`` is the first key of ``mapping``: the smallest, and in lenient
        mode also the first one written."""
        return min(mapping) == key or (not self.strict and next(iter(mapping)) == key)

    def link(self, text: str, start: int) -> Link:
        try:
            link = Link(cid_from_string(text))
        except (ValueError, CODES["invalid_link"]) as exc:
            _fail("invalid_link", start, f"not a CID: {exc}")
        if str(link) != text:
            _fail("invalid_link", start, "a CID is written base32 'b...' (CIDv1) or "
                  "base58btc 'Qm...' (CIDv0)")
        return link

    def bytes(self, text: str, start: int) -> bytes:
        try:
            return b64decode_unpadded(text)
        except ValueError as exc:
            _fail("reserved_namespace", start, f"bytes: {exc}")

    def run(self) -> Any:
        text = self.text
        stack: list[_Frame] = []
        pos = self.skip(0)
        while True:
            # a value starts at pos
            within = stack[-1].start if stack else 0
            if pos >= len(text):
                _fail("truncated", within, "input ends where a value should start")
            ch = text[pos]
            if ch == "[" or ch == "{":
                if len(stack) >= self.max_depth:
                    _fail("depth_exceeded", pos, f"nesting deeper than max_depth="
                          f"{self.max_depth}")
                start = pos
                pos = self.skip(pos + 1)
                close = "]" if ch == "[" else "}"
                if pos < len(text) and text[pos] == close:
                    value: Any = [] if ch == "[" else {}
                    pos += 1
                elif ch == "[":
                    stack.append(_Frame([], start, None))
                    continue
                else:
                    frame = _Frame({}, start, None)
                    stack.append(frame)
                    pos = self.key(pos, frame)
                    continue
            elif ch == '"':
                value, pos = self.string(pos)
            else:
                value, pos = self.literal(pos, within)
            # value is complete: hand it to the enclosing containers
            while True:
                if not stack:
                    pos = self.skip(pos)
                    if pos != len(text):
                        _fail("trailing_data", pos, "data after the value")
                    return value
                frame = stack[-1]
                container = frame.container
                pos = self.skip(pos)
                if type(container) is list:
                    container.append(value)
                    ch = self.expect(pos, ",]", frame.start, "',' or ']'")
                else:
                    container[frame.key] = value
                    ch = self.expect(pos, ",}", frame.start, "',' or '}'")
                if ch == ",":
                    pos = self.skip(pos + 1)
                    if type(container) is not list:
                        pos = self.key(pos, frame)
                    break
                pos += 1
                stack.pop()
                value = container if ch == "]" else self.close_map(frame)


def _check_depth(max_depth: int) -> None:
    if not isinstance(max_depth, int) or isinstance(max_depth, bool) or max_depth < 0:
        raise InvalidOptionError(f"max_depth must be a non-negative int, got {max_depth!r}",
                                 detail="max_depth")


def _input_bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if not isinstance(data, str):
        try:
            view = memoryview(data)
        except TypeError:
            pass
        else:
            if view.c_contiguous:
                return view.tobytes()
    raise InputTypeError(f"DAG-JSON input is a C-contiguous bytes-like object (UTF-8), not "
                         f"{type(data).__name__}", detail=type(data).__name__)


def _error(code: str, data: bytes, offset: int, what: str) -> Exception:
    context = data[max(0, offset - 12):offset + 12]
    return CODES[code](f"{what} at offset {offset} (near {context!r})", offset=offset,
                       detail=what)


class _NotFast(Exception):
    """Internal: the fast path declines; the reader decides."""


def _fast_object(mapping: dict[str, Any]) -> Any:
    """``json.loads`` object hook for canonical input: a link, bytes or the map."""
    if "/" not in mapping:
        return mapping
    inner = mapping["/"]
    if len(mapping) == 1 and type(inner) is str:
        try:
            return Link(cid_from_string(inner))  # a non-canonical spelling fails the compare
        except Exception:
            raise _NotFast from None
    if (len(mapping) == 1 and type(inner) is dict and len(inner) == 1
            and type(inner.get("bytes")) is str):
        text = inner["bytes"]
        try:
            return b64decode_unpadded(text)
        except ValueError:
            raise _NotFast from None
    if _reserved_use(mapping) is not None:
        raise _NotFast
    return mapping


def _decode_fast(raw: bytes, text: str, max_depth: int) -> Any:
    """Strict decoding by ``json.loads`` (C) plus one re-encoding: the input is accepted
    exactly when it is the canonical encoding of what was read. Anything else — an error,
    a different spelling, a recursion limit — leaves the verdict (and the error's code and
    offset) to ``_Reader``, which accepts every canonical input itself."""
    try:
        value = _json_loads(text, object_hook=_fast_object, parse_constant=_decline)
        if encode(value, max_depth=max_depth) == raw:
            return value
    except (ValueError, TypeError, RecursionError, _NotFast):  # CanonkitErrors are ValueErrors
        pass
    raise _NotFast


def _decline(_: str) -> NoReturn:
    raise _NotFast


def decode(data: Any, /, *, strict: bool = True, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """The data-model value of DAG-JSON ``data`` (any C-contiguous buffer of UTF-8).
    ``strict`` (default) accepts only the canonical bytes ``encode`` writes."""
    _check_depth(max_depth)
    raw = _input_bytes(data)
    if not raw:
        raise _error("empty_input", raw, 0, "no input")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _error("invalid_utf8", raw, exc.start, "input is not UTF-8") from None
    if strict:
        try:
            return _decode_fast(raw, text, max_depth)
        except _NotFast:
            pass
    return _decode_reader(raw, text, strict, max_depth)


def _decode_reader(raw: bytes, text: str, strict: bool, max_depth: int) -> Any:
    """Decoding by ``_Reader``: the reference, and the source of every error."""
    try:
        return _Reader(text, strict, max_depth).run()
    except _Fail as fail:
        offset = fail.index if text.isascii() else len(text[:fail.index].encode("utf-8"))
        raise _error(fail.code, raw, offset, fail.what) from None
