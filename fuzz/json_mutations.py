"""Structure-aware mutations of JSON documents and JSON-lines files, driven by a
``random.Random`` (atheris's custom mutator seeds one; hypothesis draws one), so that the
differential targets see the inputs that matter: a key repeated at any depth, a member of
another type, a member removed or copied from elsewhere, integers past every digit limit,
``NaN``, bytes that are not UTF-8, truncations, and for JSON lines a lost newline, blank
lines, lines dropped, repeated or swapped.

A document is parsed *keeping* what Python's ``json`` would lose — repeated keys
(``Pairs``), integers of any length and the spelling of every float (``Raw``) — so a
mutation changes one thing and re-emitting writes everything else back as it was.
"""
from __future__ import annotations

import copy
import json
import math
import random
from typing import Any


class Raw(str):
    """A JSON token written as it is (a float's spelling, a long integer, ``NaN``)."""


class Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its ``(key, value)`` members, in order, repeats kept."""


LONG_DIGITS = 4301  # one digit past the strict reader's bound (and CPython's default limit)
REPLACEMENTS: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2**64, Raw("1.5"), Raw("-0.0"), Raw("1e400"), Raw("NaN"),
    Raw("Infinity"), Raw("9" * LONG_DIGITS), "", "x", "COMPLETED", "PRECEDES",
    "00000000-0000-4000-8000-000000000000", "2026-01-01T00:00:00+00:00", [], Pairs(), [1],
    Pairs([("a", None)]), [[[[[]]]]],
)


def parse(data: bytes) -> Any:
    """The document in ``data`` with repeats, long integers and float spellings kept; raises
    ``ValueError`` for bytes that are not JSON."""
    return json.loads(data.decode("utf-8"), object_pairs_hook=Pairs, parse_float=Raw,
                      parse_int=lambda digits: Raw(digits) if len(digits) > 18 else int(digits),
                      parse_constant=Raw)


def emit(value: Any) -> str:
    """JSON text of a parsed (and mutated) document."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, Pairs):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + emit(v)
                              for k, v in value) + "}"
    if isinstance(value, dict):
        return emit(Pairs(value.items()))
    if isinstance(value, list):
        return "[" + ",".join(emit(v) for v in value) + "]"
    if isinstance(value, float):
        return Raw("NaN") if math.isnan(value) else repr(value)
    return json.dumps(value, ensure_ascii=False)


def _slots(value: Any, found: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, index) of the document, at every depth (a Pairs index is a pair's)."""
    if isinstance(value, Pairs):
        for i, (_, item) in enumerate(value):
            found.append((value, i))
            _slots(item, found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.append((value, i))
            _slots(item, found)
    return found


def _get(container: Any, i: int) -> Any:
    return container[i][1] if isinstance(container, Pairs) else container[i]


def _set(container: Any, i: int, value: Any) -> None:
    if isinstance(container, Pairs):
        container[i] = (container[i][0], value)
    else:
        container[i] = value


def mutate(document: Any, rng: random.Random) -> Any:
    """One structural change to a parsed document (in place; returned for convenience)."""
    slots = _slots(document, [])
    if not slots:
        return copy.deepcopy(rng.choice(REPLACEMENTS))
    container, i = rng.choice(slots)
    how = rng.randrange(6)
    if how == 0:       # a member of another type or value
        _set(container, i, copy.deepcopy(rng.choice(REPLACEMENTS)))
    elif how == 1:     # a key repeated in its object, with the same or another value
        objects = [c for c, _ in slots if isinstance(c, Pairs)]
        if objects:
            target = rng.choice(objects)
            key, item = rng.choice(target)
            again = copy.deepcopy(item if rng.random() < 0.5 else rng.choice(REPLACEMENTS))
            target.insert(rng.randrange(len(target) + 1), (key, again))
    elif how == 2:     # a member removed
        del container[i]
    elif how == 3:     # a value copied from elsewhere in the document (right type, wrong place)
        source, j = rng.choice(slots)
        _set(container, i, copy.deepcopy(_get(source, j)))
    elif how == 4:     # a number past every bound, or text where a number was
        _set(container, i, rng.choice([Raw("9" * LONG_DIGITS), Raw("-" + "1" * 5000),
                                       Raw("1e400"), Raw("NaN"), 2**63, -(2**63) - 1]))
    else:              # two members swapped (copies: one may hold the other)
        other, j = rng.choice(slots)
        a, b = copy.deepcopy(_get(container, i)), copy.deepcopy(_get(other, j))
        _set(container, i, b)
        _set(other, j, a)
    return document


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """A byte-level change: a truncation, a byte that is not UTF-8, a byte flipped."""
    if not data:
        return b"\xff"
    at = rng.randrange(len(data) + 1)
    how = rng.randrange(3)
    if how == 0:
        return data[:at]
    if how == 1:
        return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80"]) + data[at:]
    at = min(at, len(data) - 1)
    return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]


def mutate_document(data: bytes, rng: random.Random, rounds: int = 1) -> bytes:
    """``rounds`` structural changes to the JSON document in ``data`` (a byte-level change
    when it is not JSON, or one time in five)."""
    for _ in range(rounds):
        try:
            document = parse(data)
        except ValueError:
            document = None
        if document is None or rng.random() < 0.2:
            data = mutate_bytes(data, rng)
        else:
            data = emit(mutate(document, rng)).encode("utf-8", "surrogatepass")
    return data


def mutate_lines(data: bytes, rng: random.Random, rounds: int = 1) -> bytes:
    """``rounds`` changes to a JSON-lines file: one line's document mutated, or a line
    dropped, repeated, swapped, blanked, its newline lost, or the file cut anywhere."""
    for _ in range(rounds):
        lines = data.split(b"\n")
        torn = lines.pop()              # b"" when the file ends with its newline
        how = rng.randrange(8) if lines else 7
        if how <= 2:
            i = rng.randrange(len(lines))
            lines[i] = mutate_document(lines[i], rng)
        elif how == 3:
            del lines[rng.randrange(len(lines))]
        elif how == 4:
            i = rng.randrange(len(lines))
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
        elif how == 5:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif how == 6:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"", b" \t", b"\r"]))
        else:
            data = b"\n".join([*lines, torn])
            data = data[:rng.randrange(len(data) + 1)] if rng.random() < 0.7 else data[:-1]
            continue
        data = b"".join(line + b"\n" for line in lines) + torn
    return data
