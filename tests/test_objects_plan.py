"""The compiled fields check of simple kinds (canonkit.objects._plans) against its twin and
against the generated predicate it replaces: the same answer for any fields."""
from __future__ import annotations

from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st

from canonkit.objects.registry import _KINDS
from canonkit.objects.schema import (REF, Array, Bool, Bytes, FieldType, Int, Nullable, Text,
                                     UInt, _compile_fast, _plan)

SIMPLE_TYPES: list[FieldType] = [REF, Bytes(), Bytes(3), Text(), Text(non_empty=True), UInt(),
                                 Int(), Bool(), Nullable(REF), Nullable(UInt()),
                                 Array(REF), Array(Text()), Nullable(Array(Int()))]

values = st.one_of(
    st.none(), st.booleans(), st.binary(max_size=40), st.text(max_size=3),
    st.sampled_from([0, 1, -1, 2**63, 2**64 - 1, 2**64, -(2**64), -(2**64) - 1, 2**70]),
    st.integers(), st.floats(), st.just(bytes(32)), st.just(bytearray(32)),
    st.lists(st.one_of(st.just(bytes(32)), st.text(max_size=2), st.integers()), max_size=3),
    st.lists(st.just(bytes(32)), max_size=3).map(tuple),
)


def test_builtin_simple_kinds_use_the_plan() -> None:
    assert _plan(_KINDS[("commit", 1)].fields, {}) is not None
    assert _plan(_KINDS[("conflict", 1)].fields, {}) is not None
    assert _plan(_KINDS[("tree", 1)].fields, {}) is None  # ordered records: generated
    assert _plan({"a": Text(forbid="/")}, {}) is None
    assert _plan({"a": UInt()}, {"b": UInt()}) is None


@settings(max_examples=400)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.sampled_from(SIMPLE_TYPES),
                       min_size=1, max_size=3),
       st.data())
def test_plan_agrees_with_the_generated_predicate(schema: dict[str, FieldType],
                                                  data: st.DataObject) -> None:
    compiled, twin = backend_pair("objects", "planner")
    plan = _plan(schema, {})
    assert plan is not None
    generated = _compile_fast("k", schema, {})
    fields = data.draw(st.one_of(
        st.fixed_dictionaries({name: values for name in schema}),
        st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), values, max_size=4),
        values))
    want = generated(fields)
    assert twin.FieldsCheck(plan).match(fields) == want
    assert compiled.FieldsCheck(plan).match(fields) == want


@pytest.mark.parametrize("kind", ["commit", "conflict"])
def test_builtin_kinds_check_alike(kind: str) -> None:
    compiled, twin = backend_pair("objects", "planner")
    spec = _KINDS[(kind, 1)]
    plan = _plan(spec.fields, {})
    generated = _compile_fast(kind, spec.fields, {})
    good: dict[str, Any] = (
        {"tree": bytes(32), "parents": [bytes(32)], "author": "a", "time": -5, "message": ""}
        if kind == "commit" else {"path": "p", "base": None, "ours": bytes(32), "theirs": None})
    for fields in (good, {**good, "x": 1}, {k: v for k, v in list(good.items())[1:]},
                   {**good, next(iter(good)): "wrong"}):
        want = generated(fields)
        assert compiled.FieldsCheck(plan).match(fields) == twin.FieldsCheck(plan).match(fields) \
            == want
