"""The audit kernel, compiled (``canonkit.astp._audit``) against its twin
(``canonkit.astp._py.audit``): §2.3 canonical JSON written and read, and the §14 audit
record v2 hash, on random and hostile values — huge integers, non-finite floats, lone
surrogates, strings that change under NFC, keys that collide after it or sort differently
in UTF-16, deep nesting, repeated keys, non-canonical text of every kind, records with
fields missing or in every other form. Both give the same value, or the same error class
with the same message (its JSON path, field or offset)."""
from __future__ import annotations

import json
import random
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import example, given, settings
from hypothesis import strategies as st

from canonkit.astp.layer3.synthetic_exports import make_export
from canonkit.errors import InvalidFieldError

EXAMPLES = settings(max_examples=300, deadline=None)
C, PY = backend_pair("astp", "auditor")

#: strings that NFC changes, that collide after it, that sort differently in UTF-16 than in
#: code points, lone surrogates, every escape
HOSTILE_TEXT = ["e\u0301", "\u00e9", "\u212b", "\u00c5", "A\u030a", "\U0001f600", "\uffff",
                "\ue000", "\ud800", "\udfff", "a\ud83dz", "\x00\x1f\x7f", '"\\/\b\f\n\r\t',
                "\u2028\u2029", "", "z" * 40]
HOSTILE_NUMBERS = [10**30, -10**30, 2**63, -2**63 - 1, float("nan"), float("inf"), float("-inf"), -0.0, 5e-324, 1e21, 1e-7,
                   123456789012345680000.0, 0.1, 1e300]

texts = st.one_of(st.text(st.characters(blacklist_categories=())), st.sampled_from(HOSTILE_TEXT))
#: integers around the int-to-text digit limit (4300), either sign
huge_integers = st.tuples(st.integers(4295, 4305), st.sampled_from([1, -1])).map(
    lambda spec: spec[1] * (10 ** spec[0] - 1))
leaves = st.one_of(st.none(), st.booleans(), st.integers(), huge_integers,
                   st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(HOSTILE_NUMBERS), texts)
keys = st.one_of(texts, st.integers(0, 3), st.just(None))
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=5),
                            st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(texts, inner, max_size=5),
                            st.dictionaries(keys, inner, max_size=3)),
    max_leaves=30)


def shape(value: Any) -> Any:
    """A value with its types and key order spelled out (``1``, ``1.0`` and ``True`` differ;
    integers as hex, whatever their size)."""
    if isinstance(value, dict):
        return ("dict", [(shape(k), shape(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [shape(v) for v in value])
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", hex(value))
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


def outcome(fn: Any, *args: Any) -> tuple[Any, ...]:
    """What a call gives: ("ok", its value's shape) or ("error", the class, the message, the
    offset)."""
    try:
        return "ok", shape(fn(*args))
    except Exception as exc:  # noqa: BLE001 — the class is what is compared
        return "error", type(exc), str(exc), getattr(exc, "offset", None)


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@EXAMPLES
@given(values)
@example({"e\u0301": 1, "\u00e9": 2})                     # keys collide after NFC
@example({"\U0001f600": 1, "\uffff": 2, "\ue000": 3})     # UTF-16 order is not code point order
@example({"a": [float("nan")]})
@example({"b": "\ud800", "a": "\udfff"})                  # the first refusal in key order
@example({1: "x", "a": "\ud800"})
def test_canonical_json_matches_the_twin(value: Any) -> None:
    assert outcome(C.canonical_json, value) == outcome(PY.canonical_json, value)
    assert outcome(C.canonical_json_bytes, value) == outcome(PY.canonical_json_bytes, value)


@pytest.mark.parametrize("depth", [1, 200, 511, 512, 513, 600])
def test_deep_nesting_is_refused_alike_with_its_path(depth: int) -> None:
    """Past ``CANONICAL_MAX_DEPTH`` containers both refuse, naming the path (never a
    RecursionError or a crash)."""
    for leaf in (1, float("nan"), "\ud800"):
        value = nested(depth, leaf)
        assert outcome(C.canonical_json, value) == outcome(PY.canonical_json, value)
    text = PY.canonical_json(nested(min(depth, 512)))
    assert outcome(C.parse_canonical, text) == outcome(PY.parse_canonical, text)


def test_nesting_past_the_bound_names_the_bound_and_the_path() -> None:
    with pytest.raises(InvalidFieldError, match=r"nested deeper than 512 containers at \$"):
        C.canonical_json(nested(513))


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_es_number_matches_the_twin(x: float) -> None:
    assert C.es_number(x) == PY.es_number(x)


def _canonical_or_none(value: Any) -> str | None:
    try:
        return str(PY.canonical_json(value))
    except ValueError:
        return None


#: edits that take canonical text out of canonical form, or out of JSON
EDITS = [" ", "\n", ",", ":", "{", "}", "[", "]", '"', "\\", "\\u0041", "\\u000A", "\\u000a",
         "\\n", "\\/", "\\ud800", "\\ud83d\\ude00", "-0", "0", "01", "1.0", "1E5", "1e+5",
         "NaN", "Infinity", "9" * 4301, "\ufeff", "\u00e9", "e\u0301", "\x00", "true", "null"]


@EXAMPLES
@given(values, st.randoms(use_true_random=False), st.integers(0, 3))
@example({"a": 1, "b": [2.5, "x"]}, random.Random(0), 0)
def test_parse_canonical_matches_the_twin(value: Any, rng: random.Random, edits: int) -> None:
    text = _canonical_or_none(value)
    if text is None:      # refused: its plain JSON, when there is one, is hostile text too
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = '{"a":[1,"x"]}'
    for _ in range(edits):
        at = rng.randrange(len(text) + 1)
        cut = rng.randrange(3)
        text = text[:at] + rng.choice(EDITS) + text[at + cut:]
    assert outcome(C.parse_canonical, text) == outcome(PY.parse_canonical, text)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "surrogatepass")       # not UTF-8: refused alike
    assert outcome(C.parse_canonical, data) == outcome(PY.parse_canonical, data)


@pytest.mark.parametrize("text", [
    '{"a":1,"a":2}', '{"b":1,"a":2}', '{"a":1, "b":2}', '{"a":"\\u00e9"}', '{"a":"\\u001F"}',
    '{"a":"\\u001f"}', '{"\\n":1,"a":2}', '{"a":1,"\\n":2}', '"\\ud800"', '-0', '0', '1.0',
    '1e21', '1e+21', '100000000000000000000', '1E+21', '5e-324', '0.000001', '1e-7', "[]",
    "{}", '[1,2,]', '"\u00e9"', '"e\u0301"', '{"\U0001f600":1,"\uffff":2}',
    '{"\uffff":1,"\U0001f600":2}', "9" * 4300, "9" * 4301, "-" + "9" * 4300, "[" * 600,
    "[" * 512 + "]" * 512, "[" * 513 + "]" * 513, "nul", "true ", "\ufefftrue", ""])
def test_parse_canonical_edge_cases_match_the_twin(text: str) -> None:
    assert outcome(C.parse_canonical, text) == outcome(PY.parse_canonical, text)


@pytest.mark.parametrize("digits", [4299, 4300, 4301, 5000])
def test_integers_of_any_magnitude_are_written_and_read_alike(digits: int) -> None:
    for value in (10**digits - 1, -(10**digits - 1), {"n": [10**digits]}):
        assert outcome(C.canonical_json, value) == outcome(PY.canonical_json, value)
        text = PY.canonical_json(value)
        assert outcome(C.parse_canonical, text) == outcome(PY.parse_canonical, text)


# --- the audit record ------------------------------------------------------------------------

RECORDS = [r for seed in range(4) for r in make_export(random.Random(seed))[0]["audit"]]
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
FIELD_VALUES: list[Any] = [
    None, True, False, 0, -1, 2**63, 2**64, 1.5, "", "x", "\u00e9", "e\u0301", "\ud800",
    [], ["a", None], ["a", "e\u0301"], ("a",), {}, {"b": 1, "a": [2.5]}, b"\x00" * 32,
    str(uuid.UUID(int=7)), str(uuid.UUID(int=7)).upper(), uuid.UUID(int=7),
    "2026-01-01T00:00:00.123Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456+05:30",
    "2026-01-01T00:00:00.123456789Z", "2026-02-30T00:00:00Z", "1969-12-31T23:59:59.999Z",
    "1970-01-01T00:00:00-00:01", "2026-01-01T00:00:00", "0001-01-01T00:00:00Z",
    datetime(2026, 1, 1, tzinfo=timezone.utc), _EPOCH - timedelta(milliseconds=1),
    "ab" * 32, "AB" * 32, "g" * 64, '{"a":1}', '{"a": 1}', '{"a":1,"a":1}', "[1.0]", "nan",
]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(RECORDS), st.randoms(use_true_random=False), st.integers(0, 3))
def test_audit_record_hash_matches_the_twin(record: dict[str, Any], rng: random.Random,
                                            changes: int) -> None:
    record = dict(record)
    for _ in range(changes):
        name = rng.choice(sorted(record))
        if rng.random() < 0.15:
            del record[name]
        else:
            record[name] = rng.choice(FIELD_VALUES)
    assert outcome(C.audit_record_hash, record) == outcome(PY.audit_record_hash, record)
    assert outcome(C.audit_record_digest, record) == outcome(PY.audit_record_digest, record)


def test_every_record_of_the_synthetic_exports_hashes_alike() -> None:
    for record in RECORDS:
        assert C.audit_record_digest(record) == PY.audit_record_digest(record)
        assert C.audit_record_hash(record) == record["record_hash"]
    mapping_like = type("Record", (dict,), {})(RECORDS[0])
    assert C.audit_record_hash(mapping_like) == PY.audit_record_hash(mapping_like)


# --- Form B values, as a write stores them ---------------------------------------------------

FORMER_C, FORMER_PY = backend_pair("astp", "former")


@EXAMPLES
@given(values)
@example({"a": {1: 2}})
@example(nested(300))
@example([uuid.UUID(int=1), datetime(2026, 1, 1, tzinfo=timezone.utc), ("x",)])
def test_json_value_matches_the_twin(value: Any) -> None:
    got = outcome(FORMER_C.json_value, value)
    assert got == outcome(FORMER_PY.json_value, value)
    if got[0] == "ok" and isinstance(value, (dict, list)) and value:
        assert FORMER_C.json_value(value) is not value        # a copy, never the input


# --- verify reads each audit record once --------------------------------------------------------

def test_verify_reads_each_forward_delta_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The forward delta read while the record hash is checked is the one the event checks
    use: a clean export is verified without parsing any delta a second time."""
    import importlib

    verify_module = importlib.import_module("canonkit.astp.layer3.verify")
    doc = make_export(random.Random(3))[0]
    reads: list[str] = []
    original = verify_module.parse_canonical
    monkeypatch.setattr(verify_module, "parse_canonical",
                        lambda text: reads.append(text) or original(text))
    assert verify_module.verify(doc).ok
    assert reads == []
    doc["audit"][0]["record_hash"] = "0" * 64       # the chain breaks: later records are read
    report = verify_module.verify(doc)
    assert report.vectors == ["CIA-003"] and len(reads) == len(doc["audit"]) - 1


# --- a record sealed as a writer seals it ------------------------------------------------------

def _with_values(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "forward_delta": PY.parse_canonical(record["forward_delta"]),
            "reverse_delta": PY.parse_canonical(record["reverse_delta"])}


def test_a_sealed_record_is_its_stored_texts_and_hash() -> None:
    for record in RECORDS:
        sealed = (record["forward_delta"], record["reverse_delta"], record["record_hash"])
        assert C.sealed_record(_with_values(record)) == sealed
        assert PY.sealed_record(_with_values(record)) == sealed
        assert C.sealed_record(record) == sealed          # deltas stored as text: as they are


@EXAMPLES
@given(st.sampled_from(RECORDS), values, values, st.sampled_from(["forward_delta", "reverse_delta",
                                                                  "chain_key", "delta_sequence"]))
def test_sealed_record_matches_the_twin(record: dict[str, Any], forward: Any, reverse: Any,
                                        junk_field: str) -> None:
    """The texts and hash of hostile deltas, or the same refusal with the same message."""
    hostile = {**_with_values(record), "forward_delta": forward, "reverse_delta": reverse}
    assert outcome(C.sealed_record, hostile) == outcome(PY.sealed_record, hostile)
    hostile[junk_field] = forward
    assert outcome(C.sealed_record, hostile) == outcome(PY.sealed_record, hostile)


def test_keys_past_the_key_cache_read_alike() -> None:
    """Object keys come from a bounded cache of interned text: thousands of distinct keys,
    keys sharing a slot, keys as long as the cache takes and longer, read as the twin reads
    them, and read again."""
    rng = random.Random(11)
    keys = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz_0123456789")
                           for _ in range(rng.choice([1, 2, 8, 63, 64, 65, 200])))
                   for _ in range(5000)})
    text = PY.canonical_json({key: i for i, key in enumerate(keys)})
    for _ in range(2):
        read = C.parse_canonical(text)
        assert shape(read) == shape(PY.parse_canonical(text)) and list(read) == keys
