"""Layer 3 Form B (ASTP.md §19.2): the illustrative value, each serialization rule (floats,
datetimes, string escapes, key order, nulls) including where Form B differs from canonical
JSON, the hash-inclusion vectors (WF-001/002/003, EX-001/002, SK-001/002/004), and the
compiled kernel against its twin."""
from __future__ import annotations

import dataclasses
import enum
import json
import math
import uuid
from collections import OrderedDict
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st

from canonkit.astp import canonical_json
from canonkit.astp.layer3 import (
    EXCLUDED,
    FIELD_ORDER,
    execution_node_hash,
    form_b,
    skill_invocation_hash,
    workflow_declaration_hash,
)
from canonkit.astp.layer3.schema import LAYOUTS
from canonkit.errors import CanonkitError, InvalidFieldError

EP = "550e8400-e29b-41d4-a716-446655440000"
T = datetime(2026, 1, 1, 0, 0, 0, 123000, tzinfo=timezone.utc)


def u(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012x}"


def declaration(**over: Any) -> dict[str, Any]:
    fields = {"node_id": u(0x500), "node_type": "WorkflowDeclaration", "schema_version": "3.0.0",
              "episode_id": EP, "intention_id": None, "mandate_id": None,
              "workflow_name": "underwrite_loan", "workflow_version": "1.0.0",
              "declared_by": "ignis_mcp_server@ws-1", "declared_at": T,
              "input_context": {"b": 1, "a": 2.5, "é": [True, None]}, "expected_outputs": None,
              "timeout_ms": 30000}
    fields.update(over)
    return fields


def execution(**over: Any) -> dict[str, Any]:
    fields = {"node_id": u(0x600), "node_type": "ExecutionNode", "schema_version": "3.0.0",
              "workflow_id": u(0x500), "episode_id": EP, "sequence_index": 1,
              "step_name": "score", "agent_id": "agent-a", "executed_at": T,
              "duration_ms": 12, "input_state": {"x": {"y": [1, 2.0]}}, "output_state": None,
              "status": "COMPLETED", "error_detail": None, "error_type": None}
    fields.update(over)
    return fields


def skill(**over: Any) -> dict[str, Any]:
    fields = {"node_id": u(0x700), "node_type": "SkillInvocation", "schema_version": "3.0.0",
              "execution_node_id": u(0x600), "workflow_id": u(0x500), "episode_id": EP,
              "skill_id": "credit.lookup", "skill_source": "mcp", "skill_version": "1.2.0",
              "invoked_by": "agent-a", "invoked_at": T, "duration_ms": None,
              "input_parameters": {"q": 1}, "output_result": None, "status": "COMPLETED",
              "error_detail": None}
    fields.update(over)
    return fields


def payload(node_type: str, fields: dict[str, Any]) -> Any:
    return json.loads(form_b(node_type, fields), object_pairs_hook=OrderedDict)


def state(value: Any) -> bytes:
    """The serialized ``input_state`` of an ExecutionNode holding ``value``."""
    text = form_b("ExecutionNode", execution(input_state={"v": value})).decode()
    start = text.index('"input_state":') + len('"input_state":{"v":')
    end = text.index(',"output_state":')
    return text[start:end - 1].encode()


# --- §19.2's illustrative value --------------------------------------------------------------

ILLUSTRATIVE = ('{"node_id":"00000000-0000-4000-8000-000000000500","node_type":"WorkflowDeclaration",'
                '"schema_version":"3.0.0","episode_id":"550e8400-e29b-41d4-a716-446655440000",'
                '"intention_id":null,"mandate_id":null,"workflow_name":"underwrite_loan",'
                '"workflow_version":"1.0.0","declared_by":"ignis_mcp_server@ws-1",'
                '"declared_at":"2026-01-01T00:00:00.123000+00:00","input_context":{"b":1,'
                '"a":"2.5","é":[true,null]},"expected_outputs":null,"timeout_ms":30000}')


def test_illustrative_value_of_section_19_2() -> None:
    assert form_b("WorkflowDeclaration", declaration()) == ILLUSTRATIVE.encode("utf-8")
    assert workflow_declaration_hash(declaration()) == (
        "d30e3ec459c1cbbfe9413780064d833fc74182ea6fcad981960497713199cb6f")
    # the same node as parsed from JSON text (UUIDs, instants as their §19.2 text)
    parsed = json.loads(ILLUSTRATIVE)
    parsed["input_context"]["a"] = 2.5
    assert workflow_declaration_hash(parsed) == workflow_declaration_hash(declaration())
    assert workflow_declaration_hash(declaration(node_id=uuid.UUID(u(0x500)))) == (
        workflow_declaration_hash(declaration()))


# --- the float rule ----------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "form_b_text", "canonical_text"), [
    (2.5, '"2.5"', "2.5"),
    (1.0, '"1.0"', "1"),
    (0.0001, '"0.0001"', "0.0001"),
    (1e15, '"1000000000000000.0"', "1000000000000000"),
    (1e16, '"1e+16"', "10000000000000000"),
    (1e-05, '"1e-05"', "0.00001"),
    (1.5e300, '"1.5e+300"', "1.5e+300"),
    (5e-324, '"5e-324"', "5e-324"),
    (-0.0, '"-0.0"', "0"),
    (0.1 + 0.2, '"0.30000000000000004"', "0.30000000000000004"),
])
def test_floats_are_repr_text_unlike_canonical_json(value: float, form_b_text: str,
                                                    canonical_text: str) -> None:
    assert state(value) == form_b_text.encode()
    assert canonical_json(value) == canonical_text
    assert state(value) != canonical_text.encode()


@pytest.mark.parametrize(("value", "text"), [(math.nan, '"nan"'), (math.inf, '"inf"'),
                                             (-math.inf, '"-inf"')])
def test_nan_and_infinities_are_accepted_as_text(value: float, text: str) -> None:
    assert state(value) == text.encode()
    with pytest.raises(InvalidFieldError):
        canonical_json(value)      # canonical JSON refuses them


def test_integers_are_numbers_of_any_magnitude_and_booleans_stay_booleans() -> None:
    assert state(10**30) == b"1000000000000000000000000000000"
    assert state(-7) == b"-7"
    assert state(True) == b"true" and state(False) == b"false"
    assert state(1) != state(1.0) and state(1) != state(True)


def _digits(value: int) -> str:
    """The decimal text of ``value`` computed with Python's int-to-text limit lifted."""
    import sys

    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return str(value)
    finally:
        sys.set_int_max_str_digits(old)


@pytest.mark.parametrize("value", [10**4300 - 1, 10**4300, -(10**5000) - 7, 3**30000,
                                   10**12000 + 10**6000 + 1],
                         ids=["4300-nines", "4301-digits", "negative", "3^30000", "sparse"])
def test_integers_past_pythons_int_to_text_limit_keep_every_digit(value: int) -> None:
    compiled, twin = backend_pair("astp", "former")
    layout = LAYOUTS["ExecutionNode"]
    fields = execution(input_state={"v": value, "w": [value]}, duration_ms=abs(value))
    text = _digits(value)
    for kernel in (compiled, twin):
        preimage = kernel.form_b(layout, fields).decode()
        assert f'"input_state":{{"v":{text},"w":[{text}]}}' in preimage
        assert f'"duration_ms":{_digits(abs(value))},' in preimage
    assert compiled.form_b_hash(layout, fields) == twin.form_b_hash(layout, fields)


def test_long_integers_do_not_depend_on_the_int_to_text_limit_in_force() -> None:
    import sys

    compiled, twin = backend_pair("astp", "former")
    layout = LAYOUTS["ExecutionNode"]
    fields = execution(input_state={"v": 7**2000})        # 1691 digits
    expected = twin.form_b(layout, fields)
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        assert compiled.form_b(layout, fields) == twin.form_b(layout, fields) == expected
    finally:
        sys.set_int_max_str_digits(old)


# --- the datetime rule -------------------------------------------------------------------------

def test_datetimes_are_utc_isoformat_with_microseconds_kept() -> None:
    node = execution
    assert payload("ExecutionNode", node(executed_at=T))["executed_at"] == (
        "2026-01-01T00:00:00.123000+00:00")
    whole = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert payload("ExecutionNode", node(executed_at=whole))["executed_at"] == (
        "2026-01-01T00:00:00+00:00")
    micro = T.replace(microsecond=123456)   # no millisecond truncation (unlike §2.1 TIMESTAMP)
    assert payload("ExecutionNode", node(executed_at=micro))["executed_at"].endswith(".123456+00:00")
    shifted = T.astimezone(timezone(timedelta(hours=-8)))
    assert execution_node_hash(node(executed_at=shifted)) == execution_node_hash(node())
    naive = T.replace(tzinfo=None)          # naive is taken as UTC, not refused
    assert execution_node_hash(node(executed_at=naive)) == execution_node_hash(node())
    assert state(naive) == b'"2026-01-01T00:00:00.123000+00:00"'   # nested datetimes too


@pytest.mark.parametrize("text", [
    "2026-01-01T00:00:00.123Z", "2026-01-01T00:00:00.123000Z", "2026-01-01T01:00:00.123000+01:00",
    "2026-01-01T00:00:00.000000+00:00", "2026-01-01T00:00:00.123+00:00", "2026-02-30T00:00:00+00:00",
    "2026-01-01 00:00:00+00:00", "2026-01-01T00:00:00", "yesterday", "",
])
def test_datetime_text_must_already_be_in_form_b_form(text: str) -> None:
    with pytest.raises(InvalidFieldError) as caught:
        execution_node_hash(execution(executed_at=text))
    assert caught.value.detail == "executed_at"


def test_uuid_text_must_be_canonical_lowercase() -> None:
    with pytest.raises(InvalidFieldError):
        execution_node_hash(execution(node_id=EP.upper()))
    with pytest.raises(InvalidFieldError):
        execution_node_hash(execution(node_id="not-a-uuid"))
    assert execution_node_hash(execution(node_id=uuid.UUID(u(0x600)))) == execution_node_hash(execution())


# --- strings and keys ----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "encoded"), [
    ('"', b'"\\""'), ("\\", b'"\\\\"'), ("\n\r\t\b\f", b'"\\n\\r\\t\\b\\f"'),
    ("\x00\x01\x1f", b'"\\u0000\\u0001\\u001f"'), ("\x7f", b'"\x7f"'),
    ("\u2028", '"\u2028"'.encode()), ("😀", '"😀"'.encode()), ("/", b'"/"'),
])
def test_string_escapes_are_json_dumps_without_ascii_escaping(text: str, encoded: bytes) -> None:
    assert state(text) == encoded
    assert state(text) == json.dumps(text, ensure_ascii=False).encode()


def test_strings_are_not_nfc_normalized_unlike_canonical_json() -> None:
    composed, decomposed = "\u00e9", "e\u0301"
    assert state(composed) != state(decomposed)
    assert canonical_json(composed) == canonical_json(decomposed)
    assert state(decomposed) == '"e\u0301"'.encode()


def test_lone_surrogates_are_refused() -> None:
    with pytest.raises(InvalidFieldError):
        execution_node_hash(execution(input_state={"v": "\ud800"}))
    with pytest.raises(InvalidFieldError):
        execution_node_hash(execution(step_name="\udfff"))


def test_keys_keep_insertion_order_unlike_canonical_json() -> None:
    assert state({"b": 1, "a": 2}) == b'{"b":1,"a":2}'
    assert state({"b": 1, "a": 2}) != state({"a": 2, "b": 1})
    assert canonical_json({"b": 1, "a": 2}) == canonical_json({"a": 2, "b": 1})


@pytest.mark.parametrize("bad", [{1: "x"}, (1, 2), {1, 2}, b"x", bytearray(b"x"),
                                 datetime(2026, 1, 1).date(), object()])
def test_other_values_are_refused(bad: Any) -> None:
    with pytest.raises(InvalidFieldError):
        execution_node_hash(execution(input_state={"v": bad}))


def test_records_enumerations_and_uuid_values_inside_objects() -> None:
    @dataclasses.dataclass
    class Point:
        y: int
        x: float

    class Color(enum.Enum):
        RED = "red"

    assert state(Point(1, 2.0)) == b'{"y":1,"x":"2.0"}'
    assert state(Color.RED) == b'"red"'
    assert state(uuid.UUID(EP)) == f'"{EP}"'.encode()
    assert state(OrderedDict([("z", 1), ("a", 2)])) == b'{"z":1,"a":2}'


def test_nesting_is_bounded() -> None:
    deep: Any = []
    for _ in range(300):
        deep = [deep]
    with pytest.raises(InvalidFieldError):
        execution_node_hash(execution(input_state={"v": deep}))


# --- WF-001 / WF-002 / WF-003 -------------------------------------------------------------------

def test_wf_001_field_set_and_order() -> None:
    assert list(payload("WorkflowDeclaration", declaration())) == list(FIELD_ORDER["WorkflowDeclaration"])
    assert FIELD_ORDER["WorkflowDeclaration"] == (
        "node_id", "node_type", "schema_version", "episode_id", "intention_id", "mandate_id",
        "workflow_name", "workflow_version", "declared_by", "declared_at", "input_context",
        "expected_outputs", "timeout_ms")
    reordered = dict(reversed(list(declaration().items())))      # input order is irrelevant
    assert workflow_declaration_hash(reordered) == workflow_declaration_hash(declaration())
    extra = declaration(status="COMPLETED", status_updated_at=T, error_detail={"e": 1},
                        content_hash="0" * 64, something_else=1)
    assert workflow_declaration_hash(extra) == workflow_declaration_hash(declaration())


def test_wf_001_rejects_missing_fields_and_any_listed_change() -> None:
    base = workflow_declaration_hash(declaration())
    for name in FIELD_ORDER["WorkflowDeclaration"]:
        without = declaration()
        del without[name]
        with pytest.raises(InvalidFieldError) as caught:
            workflow_declaration_hash(without)
        assert caught.value.detail == name
    assert workflow_declaration_hash(declaration(workflow_name="x")) != base
    assert workflow_declaration_hash(declaration(timeout_ms=30001)) != base
    assert workflow_declaration_hash(declaration(declared_at=T + timedelta(microseconds=1))) != base
    with pytest.raises(InvalidFieldError):
        workflow_declaration_hash(declaration(node_type="ExecutionNode"))


def test_wf_002_nullable_provenance_fields_take_part() -> None:
    null = workflow_declaration_hash(declaration())
    for name in ("mandate_id", "intention_id"):
        assert workflow_declaration_hash(declaration(**{name: u(9)})) != null
        assert workflow_declaration_hash(declaration(**{name: u(10)})) != (
            workflow_declaration_hash(declaration(**{name: u(9)})))
        assert f'"{name}":null'.encode() in form_b("WorkflowDeclaration", declaration())


def test_wf_002_rejects_an_absent_nullable_field() -> None:
    absent = declaration()
    del absent["mandate_id"]
    with pytest.raises(InvalidFieldError):   # never hashed as if it were null
        workflow_declaration_hash(absent)


def test_wf_003_the_mutation_surface_is_hash_stable() -> None:
    base = workflow_declaration_hash(declaration())
    for trio in ({"status": "DECLARED"}, {"status": "COMPLETED", "status_updated_at": T},
                 {"status": "FAILED", "error_detail": {"why": "x"}}):
        assert workflow_declaration_hash(declaration(**trio)) == base
    assert EXCLUDED["WorkflowDeclaration"] == ("status", "status_updated_at", "error_detail",
                                               "content_hash")


def test_wf_003_rejects_a_change_outside_the_surface() -> None:
    base = workflow_declaration_hash(declaration())
    assert workflow_declaration_hash(declaration(input_context={})) != base


# --- EX-001 / EX-002 ---------------------------------------------------------------------------

def test_ex_001_field_set_and_order() -> None:
    assert list(payload("ExecutionNode", execution())) == list(FIELD_ORDER["ExecutionNode"])
    assert FIELD_ORDER["ExecutionNode"] == (
        "node_id", "node_type", "schema_version", "workflow_id", "episode_id", "sequence_index",
        "step_name", "agent_id", "executed_at", "duration_ms", "input_state", "output_state",
        "status", "error_detail", "error_type")
    assert EXCLUDED["ExecutionNode"] == ("content_hash",)
    assert execution_node_hash(execution(content_hash="f" * 64)) == execution_node_hash(execution())


def test_ex_001_rejects_a_change_to_any_listed_field() -> None:
    base = execution_node_hash(execution())
    changed = {"step_name": "other", "sequence_index": 2, "duration_ms": None,
               "input_state": {"x": {"y": [1, 2]}}, "output_state": {}, "agent_id": "b"}
    for name, value in changed.items():
        assert execution_node_hash(execution(**{name: value})) != base, name


def test_ex_002_status_takes_part() -> None:
    failed = execution(status="FAILED", error_type="TIMEOUT")
    interrupted = execution(status="INTERRUPTED", error_type="TIMEOUT")
    assert execution_node_hash(failed) != execution_node_hash(interrupted)


def test_ex_002_rejects_an_unknown_status() -> None:
    with pytest.raises(InvalidFieldError):
        execution_node_hash(execution(status="DONE"))


# --- SK-001 / SK-002 / SK-004 ------------------------------------------------------------------

def test_sk_001_field_set_and_order() -> None:
    assert list(payload("SkillInvocation", skill())) == list(FIELD_ORDER["SkillInvocation"])
    assert EXCLUDED["SkillInvocation"] == ("registry_id", "content_hash")


def test_sk_001_rejects_a_change_to_any_listed_field() -> None:
    base = skill_invocation_hash(skill())
    for name, value in {"skill_version": "2", "invoked_by": "x", "input_parameters": {}}.items():
        assert skill_invocation_hash(skill(**{name: value})) != base


def test_sk_002_registry_id_backfill_is_hash_stable() -> None:
    assert skill_invocation_hash(skill(registry_id="registry:credit.lookup@1")) == (
        skill_invocation_hash(skill(registry_id=None)))


def test_sk_002_rejects_nothing_else_excluded() -> None:
    assert skill_invocation_hash(skill(status="FAILED")) != skill_invocation_hash(skill())


def test_sk_004_skill_taxonomy_is_recorded_not_validated() -> None:
    odd = skill(skill_id="🙂 any/skill id", skill_source="some-new-source")
    assert skill_invocation_hash(odd) != skill_invocation_hash(skill())
    assert b'"skill_source":"some-new-source"' in form_b("SkillInvocation", odd)


def test_sk_004_rejects_dropping_skill_source() -> None:
    without = skill()
    del without["skill_source"]
    with pytest.raises(InvalidFieldError):
        skill_invocation_hash(without)


# --- compiled kernel against its twin ------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=25)
exotic = st.sampled_from([uuid.UUID(EP), T, T.replace(tzinfo=None), (1, 2), b"x", {1: 2},
                          OrderedDict(a=1), "\ud800", 10**5000, float("nan"), set()])
top_values = st.one_of(json_values, exotic, st.just(EP.upper()), st.just("2026-01-01T00:00:00Z"))


def outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except CanonkitError as exc:
        return ("error", type(exc))


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=4290, max_value=9000), st.integers(min_value=0, max_value=9),
       st.booleans())
def test_compiled_form_b_equals_the_twin_on_integers_of_thousands_of_digits(
        digits: int, low: int, negative: bool) -> None:
    compiled, twin = backend_pair("astp", "former")
    value = (10 ** (digits - 1) + low) * (-1 if negative else 1)
    layout = LAYOUTS["WorkflowDeclaration"]
    fields = declaration(input_context={"n": value, "l": [low, value]}, timeout_ms=abs(value))
    preimage = twin.form_b(layout, fields)
    assert compiled.form_b(layout, fields) == preimage
    assert f'"n":{_digits(value)},'.encode() in preimage


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(LAYOUTS)), st.data())
def test_compiled_form_b_equals_the_twin(node_type: str, data: st.DataObject) -> None:
    compiled, twin = backend_pair("astp", "former")
    base = {"WorkflowDeclaration": declaration, "ExecutionNode": execution,
            "SkillInvocation": skill}[node_type]()
    for name in data.draw(st.lists(st.sampled_from(FIELD_ORDER[node_type]), max_size=3)):
        base[name] = data.draw(top_values)
    if data.draw(st.booleans()):
        object_field = {"WorkflowDeclaration": "input_context", "ExecutionNode": "input_state",
                        "SkillInvocation": "input_parameters"}[node_type]
        base[object_field] = data.draw(st.dictionaries(st.text(max_size=6), json_values, max_size=5))
    layout = LAYOUTS[node_type]
    assert outcome(lambda: compiled.form_b(layout, base)) == outcome(lambda: twin.form_b(layout, base))
    assert outcome(lambda: compiled.form_b_hash(layout, base)) == (
        outcome(lambda: twin.form_b_hash(layout, base)))


# --- a node as a writer stores it ----------------------------------------------------------------

class Instant(datetime):
    """A datetime of a subclass: the general path."""


class Id(uuid.UUID):
    """A UUID of a subclass."""


#: integers about the strict reader's bound, by their digits (hypothesis cannot print them)
huge = st.tuples(st.sampled_from([4299, 4300, 4301]), st.sampled_from([1, -1])).map(
    lambda spec: spec[1] * 10 ** spec[0])
stored_exotic = st.one_of(st.sampled_from([
    uuid.UUID(EP), Id(EP), T, Instant(2026, 1, 1, tzinfo=timezone.utc), T.replace(microsecond=0),
    T.replace(tzinfo=None), T.astimezone(timezone(timedelta(hours=5))),
    datetime(5, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc), datetime(9999, 12, 31, 23, 59, 59, 999999,
                                                                   tzinfo=timezone.utc),
    float("nan"), 1.5, (1,)]), huge, huge.map(lambda n: {"n": [1, n]}))


def full_outcome(fn: Any) -> Any:
    """("ok", value) or ("error", class, message, detail)."""
    try:
        return ("ok", fn())
    except CanonkitError as exc:
        return ("error", type(exc), str(exc), getattr(exc, "detail", None))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(LAYOUTS)), st.data())
def test_compiled_stored_node_equals_the_twin(node_type: str, data: st.DataObject) -> None:
    """A stored node and its content hash, or the same refusal (message and field), on
    fields of every kind set to JSON values, datetimes and UUIDs of every sort, integers
    past the strict reader's bound at any depth, and junk."""
    compiled, twin = backend_pair("astp", "former")
    base = {"WorkflowDeclaration": declaration, "ExecutionNode": execution,
            "SkillInvocation": skill}[node_type]()
    for name in data.draw(st.lists(st.sampled_from(FIELD_ORDER[node_type]), max_size=3)):
        base[name] = data.draw(st.one_of(top_values, stored_exotic))
    if data.draw(st.booleans()):
        object_field = {"WorkflowDeclaration": "input_context", "ExecutionNode": "input_state",
                        "SkillInvocation": "input_parameters"}[node_type]
        base[object_field] = data.draw(st.dictionaries(
            st.text(max_size=6), st.one_of(json_values, stored_exotic), max_size=5))
    layout = LAYOUTS[node_type]
    got = full_outcome(lambda: compiled.stored_node(layout, base))
    assert spelled(got) == spelled(full_outcome(lambda: twin.stored_node(layout, base)))
    if got[0] == "ok":
        node, digest = got[1]
        assert digest == twin.form_b_hash(layout, base) and list(node) == list(FIELD_ORDER[node_type])


@settings(max_examples=300, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
       st.uuids(), st.booleans())
def test_utc_datetimes_and_uuids_are_written_as_the_twin_writes_them(
        instant: datetime, value: uuid.UUID, whole_seconds: bool) -> None:
    compiled, twin = backend_pair("astp", "former")
    instant = instant.replace(tzinfo=timezone.utc, microsecond=0 if whole_seconds else instant.microsecond)
    assert compiled.json_value(instant) == twin.json_value(instant) == instant.isoformat()
    assert compiled.json_value(value) == twin.json_value(value) == str(value)
    fields = execution(executed_at=instant, node_id=value)
    layout = LAYOUTS["ExecutionNode"]
    assert compiled.form_b(layout, fields) == twin.form_b(layout, fields)


def spelled(value: Any) -> Any:
    """A value with its types and every digit spelled out (integers past Python's
    int-to-text limit included, floats by their bits, key order kept)."""
    if isinstance(value, dict):
        return ("dict", [(spelled(k), spelled(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [spelled(v) for v in value])
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", hex(value))
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, repr(value))


stored_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
    | huge | st.just(-0.0),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children,
                                                                      max_size=4),
    max_leaves=30)


def _nest(depth: int) -> Any:
    value: Any = 1.5
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@settings(max_examples=300, deadline=None)
@given(st.one_of(stored_values, st.sampled_from([_nest(255), _nest(256), _nest(400), (1, [2]),
                                                 {"s": {1, 2}}, OrderedDict(a=[1])])))
def test_copy_stored_is_a_deep_copy_as_the_twin_makes_it(value: Any) -> None:
    compiled, twin = backend_pair("astp", "former")
    copied = compiled.copy_stored(value)
    assert spelled(copied) == spelled(twin.copy_stored(value)) == spelled(value)
    assert type(copied) is type(value)
    if isinstance(value, (dict, list)) and value:     # a new container at every depth
        original: Any = value
        while isinstance(original, (dict, list)) and original:
            assert copied is not original
            if isinstance(original, dict):
                key = next(iter(original))
                original, copied = original[key], copied[key]
            else:
                original, copied = original[0], copied[0]
