"""Pure-Python twin of ``canonkit.cbor._codec``: the reference oracle for deterministic CBOR.

Simple and obviously correct, not fast. Decoding is one recursive-descent pass over the
input (written as generators, so nesting uses no Python recursion); every rule of CBOR.md
and of the backend contract is checked in the order below, and the first violation
raises. The compiled backend must report the same class and offset for every input, so
the exact order matters:

For one data item starting at ``start``:

1. initial byte: additional information 28–30 → ``not_well_formed``; 31 on majors 2–5
   and 7 (indefinite length / stray break) → ``indefinite_length``, on 0/1/6 →
   ``not_well_formed``;
2. argument bytes missing → ``truncated`` (at ``start``);
3. head not in shortest form → ``non_shortest_integer`` (major 7: ``f8xx`` with
   ``xx < 32`` → ``not_well_formed``; floats are not checked here);
4. profile checks on the head: dag-cbor map key not a text string → ``unsupported_item``;
   integer range, tag numbers, simple values → ``integer_out_of_range`` /
   ``unsupported_item``; float form → ``float_outside_profile``;
5. strings: length larger than the bytes left → ``truncated`` (before anything is
   allocated), then UTF-8 (``invalid_utf8``) and, in dcbor, NFC (``non_nfc_text``);
6. arrays, maps and tags: nesting depth (``depth_exceeded`` when the container would be
   number ``max_depth + 1`` of the nest, or number ``MAX_KEY_DEPTH + 1`` inside one map
   key), then ``max_items`` (``limit_exceeded`` when the container's children take the
   count of contained items past it), then the content. A child item that is missing
   entirely (the input ends where it should start) → ``truncated`` at the head of the
   *enclosing* container. In maps, after each key: its encoded bytes compared with the
   previous key's (smaller → ``unsorted_map_keys``, equal → ``duplicate_map_key``), then
   (``decode`` only) a key equal *as a Python value* to an earlier key (``1``, ``1.0``
   and ``true``; ``0.0`` and ``-0.0``) → ``unrepresentable_map`` because a ``dict``
   cannot hold both, then the value;
7. tags, after the content is decoded: bignums (core) must hold a byte string
   (else ``unsupported_item``) with no leading zero byte and a value outside
   −2^64…2^64−1 (else ``non_shortest_integer``); dag-cbor tag 42 must hold a byte string
   ``00 <CID>`` (else ``invalid_link``). These errors point at the tag's head.

After the top-level item: bytes left → ``trailing_data`` (at the first one; not for
``decode_prefix`` and sequences); no input at all → ``empty_input``. With ``max_size``:
``decode``, ``check`` and ``load`` (the input is the one item's span) refuse an input
longer than ``max_size`` with ``limit_exceeded`` at offset 0 before reading anything, so
check and decode agree on it; ``decode_prefix`` and sequences stop reading ``max_size``
bytes after the item's start: wherever the input ending there would give ``truncated``,
the result is ``limit_exceeded`` at the same offset.

Depth counts arrays, maps and tags.
"""
from __future__ import annotations

import math
import struct
import unicodedata
from collections.abc import Callable, Generator, Iterator, Mapping
from itertools import pairwise
from typing import Any, NamedTuple

from . import _sequences as _cbor_stream
from ._options import (
    MAX_KEY_DEPTH,
    check_default,
    check_encode_max_depth,
    check_encode_offset,
    check_hook,
    check_limit,
    check_max_depth,
    check_offset,
    input_over_max_size,
)
from ._options import check_profile as _check_profile
from ._types import (
    DEFAULT_MAX_DEPTH,
    UNDEFINED,
    FrozenDict,
    Link,
    Simple,
    Tag,
    UndefinedType,
    cid_problem,
    is_simple_value,
    is_tag_number,
)
from . import _path as _cbor_path
from ..errors import (
    BufferTooSmallError,
    CanonkitError,
    ChangedDuringEncodingError,
    EncodeDepthExceededError,
    EncodeDuplicateMapKeyError,
    EncodeError,
    EncodeFloatOutsideProfileError,
    EncodeIntegerOutOfRangeError,
    EncodeNonNFCTextError,
    EncodeUnsupportedItemError,
    InputTypeError,
    InUseError,
    UnsupportedTypeError,
    decode_error,
)

__all__ = ["DEFAULT_MAX_DEPTH", "Decoder", "Encoder", "check", "check_prefix", "check_sequence",
           "decode",
           "decode_prefix", "encode", "encode_into", "encode_merged", "iter_sequence", "load"]

_U64 = 1 << 64
_I63 = 1 << 63


# --- floats ---------------------------------------------------------------------------
# Widths are compared on bit patterns so NaN payloads survive exactly (struct's
# float32/float16 conversions go through C casts, which may quiet signalling NaNs).

def _double_bits(value: float) -> int:
    return int.from_bytes(struct.pack(">d", value), "big")


def _double_from_bits(bits: int) -> float:
    return struct.unpack(">d", bits.to_bytes(8, "big"))[0]  # type: ignore[no-any-return]


def _nan_from_narrow(sign: int, mantissa: int, mantissa_bits: int) -> float:
    """A NaN of a narrower width, widened bit-exactly to a double."""
    return _double_from_bits(sign << 63 | 0x7FF << 52 | mantissa << (52 - mantissa_bits))


def _fits(value: float, fmt: str) -> bool:
    """Whether non-NaN ``value`` is exactly representable in struct format ``fmt``."""
    try:
        return struct.unpack(fmt, struct.pack(fmt, value))[0] == value  # type: ignore[no-any-return]
    except OverflowError:
        return False


def _encode_float_shortest(value: float) -> bytes:
    """Core form: the shortest of binary16/32/64 that is exact, NaN payload kept."""
    bits = _double_bits(value)
    if math.isnan(value):
        sign, mantissa = bits >> 63, bits & ((1 << 52) - 1)
        if mantissa & ((1 << 42) - 1) == 0:
            return b"\xf9" + (sign << 15 | 0x7C00 | mantissa >> 42).to_bytes(2, "big")
        if mantissa & ((1 << 29) - 1) == 0:
            return b"\xfa" + (sign << 31 | 0x7F800000 | mantissa >> 29).to_bytes(4, "big")
        return b"\xfb" + bits.to_bytes(8, "big")
    if _fits(value, ">e"):
        return b"\xf9" + struct.pack(">e", value)
    if _fits(value, ">f"):
        return b"\xfa" + struct.pack(">f", value)
    return b"\xfb" + struct.pack(">d", value)


def _dcbor_reducible(value: float) -> bool:
    """dCBOR numeric reduction applies: integral and within −2^63 … 2^64−1 (−0.0 too)."""
    return value.is_integer() and -_I63 <= value < _U64


# --- decoding -------------------------------------------------------------------------

def _as_bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        raise InputTypeError("decode() needs a bytes-like object, not str")
    try:
        view = memoryview(data)
    except TypeError:
        raise InputTypeError(
            f"decode() needs a bytes-like object, not {type(data).__name__}"
        ) from None
    with view:
        if not view.c_contiguous:
            raise InputTypeError("decode() needs a C-contiguous buffer")
        return view.tobytes()


class _Options(NamedTuple):
    """The options of one decode call, validated."""

    profile: str
    max_depth: int
    max_size: int | None
    max_items: int | None
    tag_hook: TagHook | None
    object_hook: ObjectHook | None


TagHook = Callable[[Tag], Any]
ObjectHook = Callable[[dict[Any, Any]], Any]


def _options(profile: Any, max_depth: Any, max_size: Any, max_items: Any, tag_hook: Any,
             object_hook: Any) -> _Options:
    return _Options(_check_profile(profile), check_max_depth(max_depth),
                    check_limit("max_size", max_size), check_limit("max_items", max_items),
                    check_hook("tag_hook", tag_hook), check_hook("object_hook", object_hook))


# An item's generator yields (depth, key_level, is_map_key) for each child and is sent
# the child's value back; ``_Reader.run`` drives the generators with an explicit stack.
_Item = Generator[tuple[int, int, bool], Any, Any]


class _Reader:
    """One data item of ``data`` starting at ``start``: the position, the profile and the
    caller's limits. ``build=False`` (``check``) accepts maps whose distinct keys are
    equal as Python values, the one thing ``decode`` refuses that is valid CBOR."""

    def __init__(self, data: bytes, start: int, options: _Options, build: bool) -> None:
        self.data = data
        self.pos = start
        self.profile = options.profile
        self.max_depth = options.max_depth
        self.max_size = options.max_size
        self.max_items = options.max_items
        self.items_left = options.max_items
        self.tag_hook = options.tag_hook
        self.object_hook = options.object_hook
        self.build = build
        # Reads stop at ``end``. When max_size cut the input short, running into it is
        # limit_exceeded instead of truncated (at the offset truncated would have had).
        self.end = len(data) if options.max_size is None else \
            min(len(data), start + options.max_size)

    def fail(self, code: str, offset: int, what: str) -> Exception:
        return decode_error(code, self.data, offset, what)

    def short(self, offset: int, what: str) -> Exception:
        """The input, or the part of it that max_size allows, ends inside an item."""
        if self.end < len(self.data):
            return self.fail("limit_exceeded", offset,
                             f"data item longer than max_size={self.max_size} bytes")
        return self.fail("truncated", offset, what)

    def run(self) -> Any:
        """Decode the item at ``self.pos``. Nesting costs no Python recursion: each item
        is a generator (``item``) that yields a request for each child and is sent the
        child's value, and this loop keeps the open items on a list."""
        stack = [self.item(0, 0, False)]
        value: Any = None
        while True:
            try:
                child = stack[-1].send(value)
            except StopIteration as done:
                stack.pop()
                value = done.value
                if not stack:
                    return value
                continue
            stack.append(self.item(*child))
            value = None

    def item(self, depth: int, key_level: int, map_key: bool) -> _Item:
        """The item at ``self.pos``; ``depth`` = number of enclosing containers,
        ``key_level`` = 0 outside map keys, else the level this item (if a container)
        has inside its outermost key (arrays decode to tuples, maps to FrozenDicts)."""
        data, start, profile, end = self.data, self.pos, self.profile, self.end
        if start >= end:  # only when max_size leaves no room for the top-level item
            raise self.short(start, "input ends before this data item")
        ib = data[start]
        major, ai = ib >> 5, ib & 31

        # (1) initial byte
        if ai >= 28:
            if ai == 31 and major in (2, 3, 4, 5, 7):
                what = "stray break byte" if major == 7 else "indefinite-length item"
                raise self.fail("indefinite_length", start, what)
            raise self.fail("not_well_formed", start,
                            f"additional information {ai} on major type {major}")
        # (2) argument
        if ai < 24:
            arg, pos = ai, start + 1
        else:
            size = 1 << (ai - 24)
            if start + 1 + size > end:
                raise self.short(start, "input ends inside a head")
            arg = int.from_bytes(data[start + 1:start + 1 + size], "big")
            pos = start + 1 + size
            # (3) shortest form
            if major != 7:
                if arg < (24 if size == 1 else 1 << (4 * size)):
                    raise self.fail("non_shortest_integer", start,
                                    f"argument {arg} not in its shortest head")
            elif size == 1 and arg < 32:
                raise self.fail("not_well_formed", start,
                                f"simple value {arg} in the two-byte form")
        self.pos = pos

        # (4) profile checks on the head, then the item itself
        if map_key and profile == "dag-cbor" and major != 3:
            raise self.fail("unsupported_item", start, "dag-cbor map key is not a text string")

        if major == 0:
            return arg
        if major == 1:
            if profile == "dcbor" and arg >= _I63:
                raise self.fail("integer_out_of_range", start,
                                "negative integer below -2^63 (dcbor)")
            return -1 - arg
        if major == 2 or major == 3:
            # (5) length checked against the input before any allocation
            if arg > end - pos:
                raise self.short(start, f"string of {arg} bytes runs past the end")
            raw = data[pos:pos + arg]
            self.pos = pos + arg
            if major == 2:
                return raw
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise self.fail("invalid_utf8", start, "text string is not valid UTF-8") from None
            if profile == "dcbor" and not text.isascii() and \
                    not unicodedata.is_normalized("NFC", text):
                raise self.fail("non_nfc_text", start, "text string is not in Unicode NFC")
            return text
        # (6) containers and tags; the children of an item inside a key are inside it too
        inner = key_level + 1 if key_level else 0
        if major == 6:
            if profile == "dag-cbor" and arg != 42:
                raise self.fail("unsupported_item", start, f"tag {arg} (dag-cbor allows only 42)")
            if profile == "dcbor" and arg in (2, 3):
                raise self.fail("unsupported_item", start, f"bignum tag {arg} (dcbor)")
            self.enter(depth, key_level, start, 1)
            self.need_child(start)
            content = yield (depth + 1, inner, False)
            return self.finish_tag(arg, content, start)
        if major == 4:
            self.enter(depth, key_level, start, arg)
            items = []
            for _ in range(arg):  # no preallocation: ``arg`` may be 2^64-1
                self.need_child(start)
                items.append((yield (depth + 1, inner, False)))
            return tuple(items) if key_level else items
        if major == 5:
            self.enter(depth, key_level, start, 2 * arg)
            result: dict[Any, Any] = {}
            previous_key = b""
            for index in range(arg):
                self.need_child(start)
                key_start = self.pos
                key = yield (depth + 1, key_level + 1, True)
                raw_key = data[key_start:self.pos]
                if index:
                    if raw_key < previous_key:
                        raise self.fail("unsorted_map_keys", key_start,
                                        "map key sorts before the previous key")
                    if raw_key == previous_key:
                        raise self.fail("duplicate_map_key", key_start,
                                        "map key equals the previous key")
                if self.build and key in result:
                    raise self.fail("unrepresentable_map", key_start,
                                    "map key equals an earlier key as a Python value")
                previous_key = raw_key
                self.need_child(start)
                result[key] = yield (depth + 1, inner, False)
            if key_level:
                return FrozenDict(result)
            if self.object_hook is None:
                return result
            return self.call_hook(self.object_hook, result, start, "object_hook refused the map")
        return self.simple_or_float(ai, arg, start)

    def enter(self, depth: int, key_level: int, start: int, children: int) -> None:
        """Open the container or tag at ``start`` holding ``children`` items."""
        if depth >= self.max_depth:
            raise self.fail("depth_exceeded", start,
                            f"nesting deeper than max_depth={self.max_depth}")
        if key_level > MAX_KEY_DEPTH:
            raise self.fail("depth_exceeded", start,
                            f"map key nesting deeper than {MAX_KEY_DEPTH}")
        if self.items_left is not None:
            self.items_left -= children
            if self.items_left < 0:
                raise self.fail("limit_exceeded", start,
                                f"more than max_items={self.max_items} data items")

    def need_child(self, container_start: int) -> None:
        if self.pos >= self.end:
            raise self.short(container_start, "input ends inside a container")

    def finish_tag(self, number: int, content: Any, start: int) -> Any:
        if number in (2, 3) and self.profile == "core":
            if type(content) is not bytes:
                raise self.fail("unsupported_item", start,
                                f"bignum tag {number} content is not a byte string")
            if content[:1] == b"\x00":
                raise self.fail("non_shortest_integer", start, "bignum with a leading zero byte")
            if len(content) <= 8:
                raise self.fail("non_shortest_integer", start,
                                "bignum whose value fits a major type 0/1 integer")
            value = int.from_bytes(content, "big")
            return value if number == 2 else -1 - value
        if number == 42 and self.profile == "dag-cbor":
            if type(content) is not bytes or content[:1] != b"\x00":
                raise self.fail("invalid_link", start,
                                "tag 42 content is not a byte string starting 0x00")
            problem = cid_problem(content[1:])
            if problem is not None:
                raise self.fail("invalid_link", start, problem)
            return Link(content[1:])
        tag = Tag(number, content)
        if self.tag_hook is None:
            return tag
        return self.call_hook(self.tag_hook, tag, start, f"tag_hook refused tag {number}")

    def call_hook(self, hook: Callable[[Any], Any], value: Any, start: int, what: str) -> Any:
        """A hook's result; its ValueError (bad content) is ``hook_refused`` here."""
        try:
            return hook(value)
        except ValueError as exc:
            if isinstance(exc, CanonkitError):
                raise
            raise self.fail("hook_refused", start, f"{what}: {exc}") from exc

    def simple_or_float(self, ai: int, arg: int, start: int) -> Any:
        profile, data = self.profile, self.data
        if ai < 25:  # simple values (ai 24: the two-byte form, arg >= 32 here)
            if arg == 20:
                return False
            if arg == 21:
                return True
            if arg == 22:
                return None
            if profile != "core":
                raise self.fail("unsupported_item", start,
                                f"simple value {arg} ({profile} allows false/true/null)")
            return UNDEFINED if arg == 23 else Simple(arg)
        if profile == "dag-cbor" and ai != 27:
            raise self.fail("float_outside_profile", start, "dag-cbor floats are always binary64")
        raw = data[start + 1:self.pos]
        if ai == 25:
            sign, exponent, mantissa = arg >> 15, (arg >> 10) & 31, arg & 0x3FF
            is_nan = exponent == 31 and mantissa != 0
            value = _nan_from_narrow(sign, mantissa, 10) if is_nan else \
                struct.unpack(">e", raw)[0]
            narrower = False
        elif ai == 26:
            sign, exponent, mantissa = arg >> 31, (arg >> 23) & 0xFF, arg & 0x7FFFFF
            is_nan = exponent == 0xFF and mantissa != 0
            if is_nan:
                value = _nan_from_narrow(sign, mantissa, 23)
                narrower = mantissa & ((1 << 13) - 1) == 0
            else:
                value = struct.unpack(">f", raw)[0]
                narrower = _fits(value, ">e")
        else:
            value = struct.unpack(">d", raw)[0]
            is_nan = math.isnan(value)
            if is_nan:
                narrower = arg & ((1 << 29) - 1) == 0
            else:
                narrower = _fits(value, ">f")
        if profile == "dag-cbor":
            if is_nan or math.isinf(value) or (value == 0.0 and arg >> 63):
                raise self.fail("float_outside_profile", start,
                                "NaN, infinity and -0.0 are invalid in dag-cbor")
            return value
        if profile == "dcbor":
            if is_nan and not (ai == 25 and arg == 0x7E00):
                raise self.fail("float_outside_profile", start, "the only dcbor NaN is f97e00")
            if not is_nan and _dcbor_reducible(value):
                raise self.fail("float_outside_profile", start,
                                "integral float must be an integer (dcbor numeric reduction)")
        if narrower:
            raise self.fail("float_outside_profile", start,
                            "float not in its shortest exact form")
        return value


def _read_one(raw: bytes, start: int, options: _Options, build: bool) -> tuple[Any, int]:
    """The item at ``start`` and the offset after it (no trailing-data check)."""
    if start == len(raw):
        raise decode_error("empty_input", raw, start, "empty input")
    reader = _Reader(raw, start, options, build)
    return reader.run(), reader.pos


def _read_all(raw: bytes, options: _Options, build: bool) -> Any:
    """Exactly one item filling ``raw``."""
    if options.max_size is not None and len(raw) > options.max_size:
        raise input_over_max_size(raw, len(raw), options.max_size)
    value, end = _read_one(raw, 0, options, build)
    if end != len(raw):
        raise decode_error("trailing_data", raw, end, "bytes after the top-level item")
    return value


def decode(data: Any, /, *, profile: str = "core", max_depth: int = DEFAULT_MAX_DEPTH,
           max_size: int | None = None, max_items: int | None = None,
           tag_hook: TagHook | None = None, object_hook: ObjectHook | None = None) -> Any:
    """Decode exactly one CBOR data item that is valid under ``profile``."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items, tag_hook=tag_hook,
                   object_hook=object_hook).decode(data)


def check(data: Any, /, *, profile: str = "core", max_depth: int = DEFAULT_MAX_DEPTH,
          max_size: int | None = None, max_items: int | None = None) -> None:
    """Validate exactly one data item without keeping a value: raises what ``decode``
    raises, except that valid maps whose keys collide as Python values pass."""
    Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
            max_items=max_items).check(data)


def decode_prefix(data: Any, offset: int = 0, /, *, profile: str = "core",
                  max_depth: int = DEFAULT_MAX_DEPTH, max_size: int | None = None,
                  max_items: int | None = None, tag_hook: TagHook | None = None,
                  object_hook: ObjectHook | None = None) -> tuple[Any, int]:
    """Decode the one data item starting at ``offset``; returns ``(value, end)``."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items, tag_hook=tag_hook,
                   object_hook=object_hook).decode_prefix(data, offset)


def check_prefix(data: Any, offset: int = 0, /, *, profile: str = "core",
                 max_depth: int = DEFAULT_MAX_DEPTH, max_size: int | None = None,
                 max_items: int | None = None) -> int:
    """Validate the one data item starting at ``offset`` as ``decode_prefix`` reads it,
    without keeping a value; returns the offset after it."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items).check_prefix(data, offset)


def check_sequence(data: Any, /, *, profile: str = "core",
                   max_depth: int = DEFAULT_MAX_DEPTH, max_size: int | None = None,
                   max_items: int | None = None) -> int:
    """Validate a CBOR sequence (RFC 8742: zero or more items back to back) as ``check``
    validates one item; returns the number of items."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items).check_sequence(data)


def iter_sequence(source: Any, /, *, profile: str = "core",
                  max_depth: int = DEFAULT_MAX_DEPTH, max_size: int | None = None,
                  max_items: int | None = None, tag_hook: TagHook | None = None,
                  object_hook: ObjectHook | None = None) -> Iterator[Any]:
    """The items of a CBOR sequence from a bytes-like object or a binary file, each
    decoded once; a file is read in chunks."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items, tag_hook=tag_hook,
                   object_hook=object_hook).iter_sequence(source)


def load(fp: Any, /, *, profile: str = "core", max_depth: int = DEFAULT_MAX_DEPTH,
         max_size: int | None = None, max_items: int | None = None,
         tag_hook: TagHook | None = None, object_hook: ObjectHook | None = None) -> Any:
    """Decode the one data item that fills the rest of binary file ``fp``."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items, tag_hook=tag_hook, object_hook=object_hook).load(fp)


class Decoder:
    """A reusable decoder with a fixed profile, limits and hooks.

    ``tag_hook(tag)`` is called with every ``Tag`` decode would return (not bignums or
    dag-cbor links) and its result is used instead; ``object_hook(dict)`` likewise for
    every map decoded as a ``dict`` (maps inside map keys are ``FrozenDict``s and are
    not passed). Exceptions from a hook propagate unchanged. ``check`` ignores hooks.
    A hook may call the decoder again; ``__init__`` while one of its calls is running
    raises ``InUseError`` (as the compiled decoder must: it holds the hooks by pointer)."""


    def __init__(self, *, profile: str = "core", max_depth: int = DEFAULT_MAX_DEPTH,
                 max_size: int | None = None, max_items: int | None = None,
                 tag_hook: TagHook | None = None, object_hook: ObjectHook | None = None) -> None:
        if getattr(self, "_calls", None):
            raise InUseError("Decoder.__init__ while one of its calls is running "
                             "(a hook may use the decoder, never re-initialise it)")
        if not hasattr(self, "_calls"):
            self._calls: list[None] = []  # one item per call under way (atomic append/pop)
        self._options = _options(profile, max_depth, max_size, max_items, tag_hook,
                                 object_hook)
        self.profile = profile
        self.max_depth = max_depth
        self.max_size = max_size
        self.max_items = max_items
        self.tag_hook = tag_hook
        self.object_hook = object_hook

    def decode(self, data: Any) -> Any:
        """Decode exactly one data item filling ``data``."""
        self._calls.append(None)
        try:
            return _read_all(_as_bytes(data), self._options, True)
        finally:
            self._calls.pop()

    def check(self, data: Any) -> None:
        """Validate exactly one data item filling ``data`` (see ``check``)."""
        self._calls.append(None)
        try:
            _read_all(_as_bytes(data), self._options, False)
        finally:
            self._calls.pop()

    def decode_prefix(self, data: Any, offset: int = 0) -> tuple[Any, int]:
        """Decode the item at ``offset``: ``(value, offset after it)``."""
        self._calls.append(None)
        try:
            raw = _as_bytes(data)
            return _read_one(raw, check_offset(offset, len(raw)), self._options, True)
        finally:
            self._calls.pop()

    def check_prefix(self, data: Any, offset: int = 0) -> int:
        """Validate the item at ``offset``; returns the offset after it."""
        self._calls.append(None)
        try:
            raw = _as_bytes(data)
            return int(_read_one(raw, check_offset(offset, len(raw)), self._options, False)[1])
        finally:
            self._calls.pop()

    def check_sequence(self, data: Any) -> int:
        """Validate a CBOR sequence; returns the number of items."""
        self._calls.append(None)
        try:
            raw = _as_bytes(data)
            count = pos = 0
            while pos < len(raw):
                pos = _read_one(raw, pos, self._options, False)[1]
                count += 1
            return count
        finally:
            self._calls.pop()

    def iter_sequence(self, source: Any) -> Iterator[Any]:
        """The items of a CBOR sequence (bytes-like object or binary file)."""
        if not hasattr(source, "read"):
            source = _as_bytes(source)  # once, not per item
        return _cbor_stream.iter_sequence(self.decode_prefix, source)

    def load(self, fp: Any) -> Any:
        """Decode the one item filling the rest of binary file ``fp``."""
        self._calls.append(None)   # fp.read is Python code too
        try:
            return self.decode(_cbor_stream.read_for_load(fp, self.max_size))
        finally:
            self._calls.pop()


# --- encoding -------------------------------------------------------------------------

def _head(major: int, arg: int) -> bytes:
    if arg < 24:
        return bytes([major << 5 | arg])
    if arg < 0x100:
        return bytes([major << 5 | 24, arg])
    if arg < 0x10000:
        return bytes([major << 5 | 25]) + arg.to_bytes(2, "big")
    if arg < 0x100000000:
        return bytes([major << 5 | 26]) + arg.to_bytes(4, "big")
    return bytes([major << 5 | 27]) + arg.to_bytes(8, "big")


def _map_bytes(pairs: list[tuple[bytes, bytes]]) -> bytes:
    """A map from encoded (key, value) pairs: keys in bytewise order, no duplicates."""
    pairs.sort(key=lambda pair: pair[0])
    for (key_a, _), (key_b, _) in pairwise(pairs):
        if key_a == key_b:
            raise EncodeDuplicateMapKeyError(
                f"two map keys encode to the same bytes {key_a.hex()}")
    return _head(5, len(pairs)) + b"".join(k + v for k, v in pairs)


def _list_changed() -> ChangedDuringEncodingError:
    return ChangedDuringEncodingError("list changed size during encoding")


class _Writer:
    """One encode call under one profile."""

    def __init__(self, profile: str, default: Callable[[Any], Any] | None,
                 max_depth: int) -> None:
        self.profile = profile
        self.default = default
        self.max_depth = max_depth

    def int_(self, value: int) -> bytes:
        if 0 <= value < _U64:
            return _head(0, value)
        profile = self.profile
        if profile == "dcbor" and not -_I63 <= value:
            raise EncodeIntegerOutOfRangeError(f"{value} is below -2^63 (dcbor)")
        if -_U64 <= value < 0:
            return _head(1, -1 - value)
        if profile != "core":
            raise EncodeIntegerOutOfRangeError(f"{value} is outside the {profile} integer range")
        number, magnitude = (2, value) if value > 0 else (3, -1 - value)
        content = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "big")
        return _head(6, number) + _head(2, len(content)) + content

    def float_(self, value: float) -> bytes:
        profile = self.profile
        if profile == "dag-cbor":
            if math.isnan(value) or math.isinf(value):
                raise EncodeFloatOutsideProfileError(f"{value} is not allowed in dag-cbor")
            return b"\xfb" + struct.pack(">d", value + 0.0)  # -0.0 + 0.0 == 0.0
        if profile == "dcbor":
            if math.isnan(value):
                return b"\xf9\x7e\x00"
            if _dcbor_reducible(value):
                return self.int_(int(value))
        return _encode_float_shortest(value)

    def text(self, value: str) -> bytes:
        try:
            raw = value.encode("utf-8")
        except UnicodeEncodeError:
            raise EncodeUnsupportedItemError(
                "text with lone surrogates has no UTF-8 encoding") from None
        if self.profile == "dcbor" and not value.isascii() and \
                not unicodedata.is_normalized("NFC", value):
            raise EncodeNonNFCTextError("text string is not in Unicode NFC (dcbor)")
        return _head(3, len(raw)) + raw

    def item(self, obj: Any, depth: int, hooked: bool = False) -> bytes:
        """``depth`` = number of enclosing containers (arrays, maps, tags);
        ``hooked`` = ``obj`` is what ``default`` returned (not handed to it again)."""
        profile = self.profile
        if obj is None:
            return b"\xf6"
        if obj is True:
            return b"\xf5"
        if obj is False:
            return b"\xf4"
        if isinstance(obj, int):
            return self.int_(int(obj))
        if isinstance(obj, float):
            return self.float_(float(obj))
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, (bytes, bytearray, memoryview)):
            raw = bytes(obj)
            return _head(2, len(raw)) + raw
        # containers recurse straight into ``item`` (one Python frame per nesting level)
        if isinstance(obj, (list, tuple)):
            self.enter(depth)
            # a list is read in place (as the compiled side does) and a change of its
            # length refused; anything else is read from a snapshot
            seq = obj if type(obj) is list else tuple(obj)
            n = len(seq)
            parts = [_head(4, n)]
            for index in range(n):
                if len(seq) != n:
                    raise _list_changed()
                try:
                    parts.append(self.item(seq[index], depth + 1))
                except EncodeError as exc:
                    _cbor_path.located(exc, _cbor_path.item(index))
                    raise
            if len(seq) != n:
                raise _list_changed()
            return b"".join(parts)
        if isinstance(obj, Mapping):
            if isinstance(obj, FrozenDict) and type(obj._d) is not dict:
                raise EncodeUnsupportedItemError("FrozenDict does not hold a dict")
            self.enter(depth)
            pairs = []
            for key, value in list(obj.items()):  # a snapshot of the entries
                try:
                    if profile == "dag-cbor" and not isinstance(key, str):
                        raise EncodeUnsupportedItemError(
                            f"dag-cbor map keys are text strings, got {type(key).__name__}")
                    pairs.append((self.item(key, depth + 1), self.item(value, depth + 1)))
                except EncodeError as exc:
                    _cbor_path.located(exc, _cbor_path.entry(key))
                    raise
            return _map_bytes(pairs)
        if isinstance(obj, Link):
            if profile != "dag-cbor":
                raise EncodeUnsupportedItemError(
                    f"Link is a dag-cbor value; use Tag(42, ...) in {profile}")
            self.enter(depth)
            return b"\xd8\x2a" + _head(2, len(obj.cid_bytes) + 1) + b"\x00" + obj.cid_bytes
        if isinstance(obj, Tag):
            number = obj.number
            if not is_tag_number(number):
                raise EncodeUnsupportedItemError(f"tag number {number!r} is not in 0..2**64-1")
            if profile == "dag-cbor":
                raise EncodeUnsupportedItemError(f"tag {number} (dag-cbor allows only links)")
            if number in (2, 3):
                raise EncodeUnsupportedItemError(
                    "bignum tags are written from int values, not Tag(2|3, ...)")
            self.enter(depth)
            try:
                content = self.item(obj.value, depth + 1)
            except EncodeError as exc:
                _cbor_path.located(exc, _cbor_path.TAG_CONTENT)
                raise
            return _head(6, number) + content
        if isinstance(obj, (Simple, UndefinedType)):
            if profile != "core":
                raise EncodeUnsupportedItemError(f"{obj!r} ({profile} allows false/true/null)")
            if obj is UNDEFINED:
                return b"\xf7"
            value = obj.value  # type: ignore[union-attr]
            if not is_simple_value(value):
                raise EncodeUnsupportedItemError(
                    f"simple value {value!r} is not in 0..19 or 32..255")
            return _head(7, value)
        try:
            view = memoryview(obj)
        except TypeError:
            if self.default is None or hooked:
                raise UnsupportedTypeError(
                    f"cannot encode {type(obj).__name__} as CBOR") from None
            return self.item(self.default(obj), depth, True)
        with view:
            raw = view.tobytes()
        return _head(2, len(raw)) + raw

    def child(self, obj: Any, depth: int, index: int) -> bytes:
        """Array item ``index``: its encoding, or its error located at ``[index]``."""
        try:
            return self.item(obj, depth + 1)
        except EncodeError as exc:
            _cbor_path.located(exc, _cbor_path.item(index))
            raise

    def enter(self, depth: int) -> None:
        if depth >= self.max_depth:
            raise EncodeDepthExceededError(
                f"nesting deeper than {self.max_depth} (or a self-referencing container)")


def encode(obj: Any, /, *, profile: str = "core", default: Callable[[Any], Any] | None = None,
           max_depth: int = DEFAULT_MAX_DEPTH) -> bytes:
    """Encode ``obj`` to its one deterministic encoding under ``profile``.

    ``default(value)`` is called for a value with no CBOR mapping and returns one that has
    (its items may again go through ``default``); ``max_depth`` bounds the nesting."""
    profile = _check_profile(profile)
    check_default(default)
    writer = _Writer(profile, default, check_encode_max_depth(max_depth))
    try:
        return writer.item(obj, 0)
    except EncodeError as exc:
        _cbor_path.finish(exc)
        raise


def encode_merged(first: Mapping[Any, Any], second: Mapping[Any, Any], /, *,
                  profile: str = "core", default: Callable[[Any], Any] | None = None,
                  max_depth: int = DEFAULT_MAX_DEPTH) -> bytes:
    """Encode the one map holding the entries of both mappings; a key in both raises
    ``EncodeDuplicateMapKeyError``."""
    for key in first:
        if key in second:
            raise EncodeDuplicateMapKeyError(f"map key {key!r} is in both mappings", detail="$")
    merged = dict(first.items())
    merged.update(second.items())
    return encode(merged, profile=profile, default=default, max_depth=max_depth)


def encode_into(obj: Any, buffer: Any, offset: int = 0, /, *, profile: str = "core",
                default: Callable[[Any], Any] | None = None,
                max_depth: int = DEFAULT_MAX_DEPTH) -> int:
    """Write the encoding of ``obj`` into ``buffer`` at ``offset``; return its length.

    A ``bytearray`` grows to fit; any other writable buffer must have room
    (``BufferTooSmallError`` otherwise). Nothing is written when encoding fails."""
    data = encode(obj, profile=profile, default=default, max_depth=max_depth)
    _write_at(buffer, offset, data)
    return len(data)


def _write_at(buffer: Any, offset: int, data: bytes) -> None:
    check_encode_offset(offset, len(buffer) if type(buffer) is bytearray else None)
    end = offset + len(data)
    if type(buffer) is bytearray:
        if end > len(buffer):
            buffer.extend(bytes(end - len(buffer)))
        buffer[offset:end] = data
        return
    try:
        view = memoryview(buffer)
    except TypeError:
        raise TypeError(f"encode_into() needs a writable buffer, not {type(buffer).__name__}"
                        ) from None
    with view:
        if view.readonly:
            raise TypeError("encode_into() needs a writable buffer")
        with view.cast("B") as raw:
            if end > len(raw):
                raise BufferTooSmallError(
                    f"{len(data)} bytes do not fit at offset {offset} of a "
                    f"{len(raw)}-byte buffer", detail="$")
            raw[offset:end] = data


class Encoder:
    """A reusable encoder with a fixed profile, ``default`` hook and depth limit.
    ``__init__`` while one of its calls is running raises ``InUseError``."""


    def __init__(self, *, profile: str = "core", default: Callable[[Any], Any] | None = None,
                 max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        if getattr(self, "_calls", None):
            raise InUseError("Encoder.__init__ while one of its calls is running "
                             "(default may use the encoder, never re-initialise it)")
        if not hasattr(self, "_calls"):
            self._calls: list[None] = []  # one item per call under way (atomic append/pop)
        checked = _check_profile(profile)
        check_default(default)
        self.max_depth = check_encode_max_depth(max_depth)
        self.profile = checked
        self.default = default

    def encode(self, obj: Any) -> bytes:
        self._calls.append(None)
        try:
            return encode(obj, profile=self.profile, default=self.default,
                          max_depth=self.max_depth)
        finally:
            self._calls.pop()

    def encode_into(self, obj: Any, buffer: Any, offset: int = 0, /) -> int:
        self._calls.append(None)
        try:
            return encode_into(obj, buffer, offset, profile=self.profile,
                               default=self.default, max_depth=self.max_depth)
        finally:
            self._calls.pop()

    def encode_merged(self, first: Mapping[Any, Any], second: Mapping[Any, Any], /) -> bytes:
        self._calls.append(None)
        try:
            return encode_merged(first, second, profile=self.profile, default=self.default,
                                 max_depth=self.max_depth)
        finally:
            self._calls.pop()
