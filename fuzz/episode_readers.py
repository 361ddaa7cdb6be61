"""The three readers of an Episode document's bytes, held to one verdict on hostile input
(shared by ``fuzz/fuzz_episode_readers.py`` and ``tests/test_episode_readers.py``):

- the compiled fast path of ``canonkit reverify`` (the scanner kernel's ``scan_verdict``,
  which decides the common Episode itself, else its scan, the Episode reader and
  ``reproduce``);
- the general path of ``canonkit reverify`` (the strict JSON reader, then the same);
- ``canonkit astp reproduce`` (the strict JSON reader and ``astp.reproduce``).

For every input, the two reverify paths give byte-identical report lines, and the report
line says what ``astp.reproduce`` says: the same outcome, components, construction, order,
flags and reason, or a refusal with the same error code and, for a JSON refusal, the same
byte offset. Where the compiled scanner reads a document, the twin's scanner reads it too,
to the same members and segments.

:func:`mutate` makes the hostile input from a valid document: a key repeated at any depth
(with the same or another value, or spelled with an escape), a truncation, a value of
another type, a huge or non-64-bit number, a lone surrogate, bytes that are no UTF-8, a
character of a string spelled as an escape, a string in upper case or swapped for another
of the document (digests between seal fields, instants between members), another small
number, a float or a bool where a number was.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from _harness import Mismatch

SEARCH_CAP = 24  # tie searches stay small: an input is not a benchmark
_CODE_PREFIX = re.compile(r"([a-z_0-9]+): ")
_OFFSET = re.compile(r"at offset (\d+)")


# --- where things are in a document's text ------------------------------------------------

class Spans:
    """Positions in a JSON text: every object member (key start, key end, value start,
    value end), every value (start, end, kind) and every string value."""

    def __init__(self) -> None:
        self.members: list[tuple[int, int, int, int]] = []
        self.values: list[tuple[int, int, str]] = []


_WS = re.compile(rb"[ \t\n\r]*")
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def spans(text: bytes, limit: int = 64) -> Spans | None:
    """The spans of ``text`` if it is one JSON value nested at most ``limit`` deep, else
    None (an input the structured mutations leave alone)."""
    found = Spans()

    def value(i: int, depth: int) -> int:
        i = _WS.match(text, i).end()  # type: ignore[union-attr]
        if depth > limit or i >= len(text):
            raise ValueError
        c = text[i:i + 1]
        if c == b"{":
            j = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            if text[j:j + 1] == b"}":
                found.values.append((i, j + 1, "object"))
                return j + 1
            while True:
                key = _STRING.match(text, j)
                if key is None:
                    raise ValueError
                colon = _WS.match(text, key.end()).end()  # type: ignore[union-attr]
                if text[colon:colon + 1] != b":":
                    raise ValueError
                start = _WS.match(text, colon + 1).end()  # type: ignore[union-attr]
                end = value(start, depth + 1)
                found.members.append((key.start(), key.end(), start, end))
                j = _WS.match(text, end).end()  # type: ignore[union-attr]
                if text[j:j + 1] == b"}":
                    found.values.append((i, j + 1, "object"))
                    return j + 1
                if text[j:j + 1] != b",":
                    raise ValueError
                j = _WS.match(text, j + 1).end()  # type: ignore[union-attr]
        if c == b"[":
            j = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
            if text[j:j + 1] == b"]":
                found.values.append((i, j + 1, "array"))
                return j + 1
            while True:
                j = _WS.match(text, value(j, depth + 1)).end()  # type: ignore[union-attr]
                if text[j:j + 1] == b"]":
                    found.values.append((i, j + 1, "array"))
                    return j + 1
                if text[j:j + 1] != b",":
                    raise ValueError
                j += 1
        if c == b'"':
            match = _STRING.match(text, i)
            kind = "string"
        elif c in (b"t", b"f", b"n"):
            match = re.compile(rb"true|false|null").match(text, i)
            kind = "literal"
        else:
            match = _NUMBER.match(text, i)
            kind = "number"
        if match is None:
            raise ValueError
        found.values.append((i, match.end(), kind))
        return match.end()

    try:
        end = value(0, 0)
    except (ValueError, RecursionError):
        return None
    return found if _WS.match(text, end).end() == len(text) else None  # type: ignore[union-attr]


# --- mutations -----------------------------------------------------------------------------

_OTHER_VALUES = (b"null", b"0", b'"x"', b"{}", b"[]", b"true", b"-1", b'{"a":1}', b"[[]]")
_NUMBERS = (b"18446744073709551616", b"18446744073709551615", b"-9223372036854775809",
            b"9223372036854775808", b"1e400", b"-1E+400", b"1e-400", b"9" * 5000,
            b"123456789012345678901234567890", b"1.5", b"-0", b"1E2", b"0.0", b"-0.0")
_STRINGS = (b'"\\ud800"', b'"\\udc00x"', b'"\\ud83d\\ude00"', b'"\\u0000"', b'"\xc3\xa9"',
            b'""', b'"\\"quoted\\""', b'"\xff"', b'"\xc0\xaf"', b'"\xed\xa0\x80"',
            b'"\xe2\x82"', b'"\x80abc"')
_NUDGES = (b"1", b"-1", b"0", b"2", b"3", b"1.0", b"true", b"false")
MUTATIONS = ("repeat_member", "repeat_key_other_value", "repeat_key_escaped", "truncate",
             "change_type", "huge_number", "odd_string", "drop_member", "escape_char",
             "upper_case", "swap_strings", "nudge_number", "bad_utf8")


def _escaped(key: bytes) -> bytes:
    """The same key spelled with a ``\\u`` escape for its first character."""
    if len(key) < 3 or key[1:2] in (b"\\", b'"'):
        return key
    return b'"\\u%04x' % key[1] + key[2:]


def mutate(text: bytes, how: int, where: int) -> bytes:
    """``text`` changed by mutation ``MUTATIONS[how % len]`` at the ``where``-th place it
    applies to (``text`` itself when it is not JSON or nothing applies)."""
    found = spans(text)
    if found is None:
        return text
    kind = MUTATIONS[how % len(MUTATIONS)]
    members = found.members
    if kind == "truncate":
        return text[:where % max(1, len(text))]
    if kind.startswith("repeat") or kind == "drop_member":
        if not members:
            return text
        key_start, key_end, value_start, value_end = members[where % len(members)]
        key = text[key_start:key_end]
        if kind == "drop_member":
            return text[:key_start] + b'"dropped_%d":0' % where + text[value_end:]
        if kind == "repeat_member":
            copy = key + b":" + text[value_start:value_end]
        elif kind == "repeat_key_other_value":
            copy = key + b":" + _OTHER_VALUES[where % len(_OTHER_VALUES)]
        else:
            copy = _escaped(key) + b":" + _OTHER_VALUES[where % len(_OTHER_VALUES)]
        before = where % 2 == 0  # the repeat before (a forged first) or after the member
        if before:
            return text[:key_start] + copy + b"," + text[key_start:]
        return text[:value_end] + b"," + copy + text[value_end:]
    if kind == "change_type":
        values = found.values
        start, end, _ = values[where % len(values)]
        return text[:start] + _OTHER_VALUES[where % len(_OTHER_VALUES)] + text[end:]
    strings = [(s, e) for s, e, k in found.values if k == "string" and e - s > 2]
    if kind in ("escape_char", "upper_case", "bad_utf8", "swap_strings"):
        if not strings:
            return text
        start, end = strings[where % len(strings)]
        if kind == "escape_char":  # the same value, one character spelled as \uXXXX
            at = start + 1 + (where // 7) % (end - start - 2)
            if text[at:at + 1] == b"\\" or text[at - 1:at] == b"\\" or text[at] >= 0x80:
                return text
            return text[:at] + b"\\u%04x" % text[at] + text[at + 1:]
        if kind == "upper_case":  # digests and UUIDs in the other case, text changed
            return text[:start] + text[start:end].upper() + text[end:]
        if kind == "bad_utf8":  # a byte that is no UTF-8 inside a string
            at = start + 1 + (where // 7) % (end - start - 2)
            bad = (b"\xff", b"\xc0", b"\xed\xa0\x80", b"\x80", b"\xe2\x82")[where % 5]
            return text[:at] + bad + text[at + 1:]
        other_start, other_end = strings[(where // 5) % len(strings)]
        return text[:start] + text[other_start:other_end] + text[end:]
    if kind == "nudge_number":  # another small number, or a float or a bool in its place
        numbers = [(s, e) for s, e, k in found.values if k == "number"]
        if not numbers:
            return text
        start, end = numbers[where % len(numbers)]
        return text[:start] + _NUDGES[(where // 3) % len(_NUDGES)] + text[end:]
    pool = [(s, e) for s, e, k in found.values if k == ("number" if kind == "huge_number"
                                                          else "string")]
    if not pool:
        return text
    start, end = pool[where % len(pool)]
    choices = _NUMBERS if kind == "huge_number" else _STRINGS
    return text[:start] + choices[(where // 3) % len(choices)] + text[end:]


# --- the verdicts -------------------------------------------------------------------------

class Readers:
    """The readers under test, bound once (the twin import is made once per process)."""

    def __init__(self) -> None:
        from canonkit import _backend
        from canonkit.astp import _live
        from canonkit.astp._py import scan

        self.twin_astp = _backend.import_on_twins("canonkit.astp")
        self.compiled_scanner = _live.scanner
        self.twin_scanner = scan


def _reverify_line(data: bytes, fast: bool) -> bytes:
    from canonkit.reverify import worker
    from canonkit.reverify.lines import Source

    saved = worker.FAST_PATH
    worker.FAST_PATH = fast
    try:
        return worker.verify_one("json", data, Source("episode.json"), SEARCH_CAP).line()
    finally:
        worker.FAST_PATH = saved


def _reproduce_verdict(data: bytes) -> tuple[Any, ...]:
    """What ``canonkit astp reproduce`` says: the report keys, or the refusal's code and
    (for a JSON refusal) offset. Any other exception is a finding."""
    from canonkit._files import loads_json
    from canonkit.astp import reproduce
    from canonkit.errors import CanonkitError, JSONInputError

    try:
        doc = loads_json(data, source="episode.json")
        result = reproduce(doc, search_cap=SEARCH_CAP).to_json()
    except JSONInputError as exc:
        return ("refused", exc.code, exc.offset)
    except CanonkitError as exc:
        return ("refused", exc.code, None)
    return ("verdict", _comparable(result))


def _comparable(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("outcome", "episode_id", "components", "construction", "order", "flags", "reason")
    out = {k: record[k] for k in keys}
    out["components"] = {k: v for k, v in out["components"].items() if k != "layer3"}
    return out


def _line_verdict(line: bytes) -> tuple[Any, ...]:
    """The report line as the same kind of verdict: a refusal's code is the prefix of its
    reason (a document that is not an object says so without one: invalid_record)."""
    from canonkit.errors import CODES

    record = json.loads(line)
    if record["outcome"] != "invalid_record":
        return ("verdict", _comparable(record))
    reason = record["reason"] or ""
    code = _CODE_PREFIX.match(reason)
    offset = _OFFSET.search(reason)
    return ("refused", code.group(1) if code and code.group(1) in CODES else "invalid_record",
            int(offset.group(1)) if offset else None)


def _scanners_agree(readers: Readers, data: bytes) -> None:
    from canonkit.astp.documents import Segment, Signal

    compiled = readers.compiled_scanner.scan_episode(data, Segment, Signal)
    verdict, scanned = readers.compiled_scanner.scan_verdict(data, Segment, Signal)
    if verdict is not None and compiled is None:
        raise Mismatch("the scanner kernel gave a verdict on a document it does not read")
    if verdict is None and (scanned is None) != (compiled is None):
        raise Mismatch("scan_verdict handed on another scan than scan_episode's")
    if verdict is not None and (scanned is None) != (compiled[0].get("layer3") is None):
        raise Mismatch("scan_verdict handed on a scan with its verdict, other than for the "
                       "Episode of a Layer 3 member (or none for one)")
    if compiled is None or compiled is readers.twin_scanner:
        return
    twin = readers.twin_scanner.scan_episode(data, Segment, Signal)
    if twin is None:
        raise Mismatch("the compiled scanner read a document the twin's refuses")
    if compiled[0] != twin[0] or list(compiled[1]) != list(twin[1]) or compiled[2:] != twin[2:]:
        raise Mismatch("the compiled and twin scanners read different members or segments")


def check(readers: Readers, data: bytes) -> None:
    """Raise Mismatch unless every reader gives ``data`` the same verdict."""
    _scanners_agree(readers, data)
    fast, general = _reverify_line(data, True), _reverify_line(data, False)
    if fast != general:
        raise Mismatch(f"reverify fast path {fast[:300]!r} != general path {general[:300]!r}")
    line, cli = _line_verdict(fast), _reproduce_verdict(data)
    if line[0] != cli[0] or line[:2] != cli[:2] or (cli[0] == "verdict" and line != cli):
        raise Mismatch(f"reverify says {str(line)[:300]}, astp reproduce {str(cli)[:300]}")
    if cli[0] == "refused" and cli[2] is not None and line[2] != cli[2]:
        raise Mismatch(f"refused at offset {line[2]} by reverify, {cli[2]} by reproduce")


def check_mutations(readers: Readers, text: bytes, plan: bytes,
                    each: Callable[[bytes], None] | None = None) -> None:
    """``check`` the document and each mutation that the bytes of ``plan`` choose (two
    bytes a mutation: which, and where), applied one after the other."""
    check(readers, text)
    for k in range(0, len(plan) - 1, 2):
        text = mutate(text, plan[k], plan[k + 1] * 7 + k)
        if each is not None:
            each(text)
        check(readers, text)
