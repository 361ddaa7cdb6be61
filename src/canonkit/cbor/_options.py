"""Options shared by both CBOR backends: their validation and the fixed bounds.

Pure Python on purpose: both backends call these only when an option is given (the
compiled backend checks the defaults inline), so they cost nothing per decoded item.
"""
from __future__ import annotations

from typing import Any

from ._types import MAX_ENCODE_DEPTH, PROFILES
from ..errors import InvalidOptionError, UnknownProfileError, decode_error

__all__ = ["LIMIT_MAX", "MAX_KEY_DEPTH", "check_default", "check_encode_max_depth",
           "check_encode_offset", "check_hook", "check_limit", "check_max_depth",
           "check_offset", "check_profile", "input_over_max_size"]

# Containers nested inside one map key. A key is hashed (and, on a hash collision,
# compared) when it is inserted into its dict, and CPython does both recursively: a
# 150,000-deep array key overflows the C stack in tuplehash, a deep tag or map key hits
# RecursionError. 64 levels keep both far from any limit; no real key comes close.
MAX_KEY_DEPTH = 64


def check_profile(profile: Any) -> str:
    if profile not in PROFILES:
        raise UnknownProfileError(
            f"unknown CBOR profile {profile!r}; expected one of {PROFILES}", detail=profile)
    return profile  # type: ignore[no-any-return]


def check_max_depth(max_depth: Any) -> int:
    if not isinstance(max_depth, int) or max_depth < 0:
        raise InvalidOptionError(
            f"max_depth must be a non-negative int, got {max_depth!r}", detail=max_depth)
    return max_depth


LIMIT_MAX = 2**63 - 1  # the largest max_size / max_items (a C ssize_t on both backends)


def input_over_max_size(data: Any, length: int, max_size: int) -> Exception:
    """decode, check and load: the input is the one item's span, so an input longer than
    max_size is refused at offset 0 before anything is read. (Found later in the pass,
    decode and check could disagree: decode stops at keys equal as Python values, which
    check accepts, before reaching the limit.)"""
    return decode_error("limit_exceeded", data, 0,
                        f"input of {length} bytes is longer than max_size={max_size} bytes")


def check_limit(name: str, value: Any) -> int | None:
    """``max_size`` / ``max_items``: None (no limit) or an int in 0..2**63-1."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= LIMIT_MAX:
        raise InvalidOptionError(
            f"{name} must be None or an int in 0..2**63-1, got {value!r}", detail=value)
    return value


def check_hook(name: str, hook: Any) -> Any:
    """``tag_hook`` / ``object_hook``: None or a callable."""
    if hook is not None and not callable(hook):
        raise InvalidOptionError(f"{name} must be None or callable, got {hook!r}", detail=hook)
    return hook


def check_offset(offset: Any, length: int) -> int:
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= length:
        raise InvalidOptionError(
            f"offset must be an int in 0..{length} (the input's length), got {offset!r}",
            detail=offset)
    return offset


# --- encoding -------------------------------------------------------------------------

def check_default(default: Any) -> None:
    if default is not None and not callable(default):
        raise TypeError(f"default must be callable or None, got {type(default).__name__}")


def check_encode_max_depth(max_depth: Any) -> int:
    """Encoding's max_depth: an int in 0..MAX_ENCODE_DEPTH (see _cbor_types)."""
    if not isinstance(max_depth, int) or isinstance(max_depth, bool) or not (
            0 <= max_depth <= MAX_ENCODE_DEPTH):
        raise InvalidOptionError(
            f"max_depth must be an int in 0..{MAX_ENCODE_DEPTH} for encoding, got "
            f"{max_depth!r}", detail=max_depth)
    return max_depth


def check_encode_offset(offset: Any, bytearray_length: int | None) -> int:
    """encode_into's offset: a non-negative int, at most the length of a bytearray
    (which grows from there); other buffers are checked against the encoding's size."""
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or (
            bytearray_length is not None and offset > bytearray_length):
        where = "" if bytearray_length is None else f" in 0..{bytearray_length}"
        raise InvalidOptionError(f"offset must be an int{where}, got {offset!r}",
                                 detail=offset)
    return offset
