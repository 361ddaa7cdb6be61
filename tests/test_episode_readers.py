"""The compiled fast path and the general path of ``canonkit reverify`` and ``canonkit astp
reproduce`` give every Episode document one verdict — the same outcome and components,
or a refusal with the same error code and offset — however its text is mutated: keys
repeated at any depth, truncations, values of other types, huge numbers, lone
surrogates (``fuzz/episode_readers.py``, also run by the atheris target
``fuzz/fuzz_episode_readers.py``)."""
from __future__ import annotations

import importlib
import sys
from typing import Any

import orjson
import pytest
from conftest import REPO
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from canonkit.reverify import synthetic_corpus as synth
from canonkit.reverify import worker

sys.path.insert(0, str(REPO / "fuzz"))
readers_module = importlib.import_module("episode_readers")
harness = importlib.import_module("_harness")


def _documents() -> list[bytes]:
    docs = []
    for mix, seed in (("all-outcomes", 31), ("seed-table", 32)):
        for e in synth.generate(30, mix=mix, seed=seed, median_segments=4, por_fraction=0.5):
            if e.doc is not None:
                docs.append(orjson.dumps(e.doc))
    return docs


DOCUMENTS = _documents()
SEALED = next(d for d in DOCUMENTS if b'"seal":{' in d and b'"signals":[{' in d)
READERS = readers_module.Readers()
_PLANS = st.lists(st.tuples(st.integers(0, 255), st.integers(0, 5000)), min_size=1,
                  max_size=3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.sampled_from(DOCUMENTS), plan=_PLANS)
@example(doc=SEALED, plan=[(0, 0)])     # a member repeated before itself: a forged first
@example(doc=SEALED, plan=[(2, 1)])     # a key repeated under an escaped spelling
@example(doc=SEALED, plan=[(5, 21)])    # a number over 64 bits
def test_mutated_episodes_get_one_verdict_from_every_reader(doc: bytes,
                                                            plan: list[tuple[int, int]]) -> None:
    readers_module.check(READERS, doc)
    for how, where in plan:
        doc = readers_module.mutate(doc, how, where)
        readers_module.check(READERS, doc)


@pytest.mark.parametrize("kind", readers_module.MUTATIONS)
def test_every_mutation_applies_at_every_depth(kind: str) -> None:
    """Each mutation changes some document, and repeats land at depth 1 and deeper."""
    how = readers_module.MUTATIONS.index(kind)
    doc = SEALED
    found = readers_module.spans(doc)
    assert found is not None
    changed = {readers_module.mutate(doc, how, where) for where in range(0, 400, 7)}
    assert len(changed - {doc}) > 10
    if kind.startswith("repeat"):
        depths = set()
        for where in range(len(found.members)):
            key_start = found.members[where][0]
            depths.add(sum(1 for s, e, k in found.values
                           if k in ("object", "array") and s < key_start < e))
        assert {1, 2, 3} <= depths


def test_the_check_fails_when_a_reader_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agreement is a real check: a general path that keeps the last of two repeated
    keys (as orjson does) is caught, and so is a fast path that reads past a repeat."""
    import canonkit._files as files

    forged = readers_module.mutate(SEALED, 0, 0)  # repeat_member, the copy before the member
    readers_module.check(READERS, forged)
    monkeypatch.setattr(worker, "loads_json", lambda data, source: orjson.loads(data))
    with pytest.raises(harness.Mismatch):
        readers_module.check(READERS, forged)
    monkeypatch.undo()

    def lenient(data: Any, source: str = "<json>") -> Any:
        return orjson.loads(data)

    monkeypatch.setattr(files, "loads_json", lenient)  # astp reproduce's reader, lenient
    with pytest.raises(harness.Mismatch):
        readers_module.check(READERS, forged)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.sampled_from(DOCUMENTS), plan=_PLANS)
@example(doc=b'{"a": 12345678901234567890}', plan=[(0, 0)])
@example(doc=b'{"\\u0061": 1, "a": 2}', plan=[(3, 0)])
def test_plain_json_never_lets_orjson_read_what_the_strict_reader_reads_otherwise(
        doc: bytes, plan: list[tuple[int, int]]) -> None:
    from conftest import backend_pair

    compiled, twin = backend_pair("astp", "scanner")
    for how, where in plan:
        for text in (doc, doc[:where % max(1, len(doc))]):
            if compiled.plain_json(text):
                assert twin.plain_json(text), text[:200]
        doc = readers_module.mutate(doc, how, where)
