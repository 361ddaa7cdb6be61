"""Layer 3's readers against the strict path on hostile input — the differential of the
``layer3`` fuzz target (fuzz/fuzz_layer3.py), driven by hypothesis: mutated exports (keys
repeated at any depth, members of another type, huge numbers, truncations, bytes that are
not UTF-8) through ``layer3.verify``, ``canonkit astp layer3 verify`` and re-verification's
Layer 3 component, against a re-read through ``canonkit._files.loads_json``; mutated
journals (lines torn, dropped, repeated, swapped, blanked) through ``Workspace.open``
against the journal rules read plainly on the strict reader. Each must give one verdict,
error code and location."""
from __future__ import annotations

import importlib
import json
import random
import sys
from typing import Any

import pytest
from conftest import REPO
from hypothesis import example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(REPO / "fuzz"))
seeds = importlib.import_module("seeds")
harness = importlib.import_module("_harness")
json_mutations = importlib.import_module("json_mutations")
fuzz_layer3 = importlib.import_module("fuzz_layer3")

EXPORTS = [s[1:] for s in seeds.layer3_seeds() if s[0] == fuzz_layer3.EXPORT]
JOURNALS = [s[1:] for s in seeds.layer3_seeds() if s[0] == fuzz_layer3.JOURNAL]


def test_the_seed_corpus_holds_exports_and_journals() -> None:
    assert len(EXPORTS) >= 4 and len(JOURNALS) >= 2
    for data in EXPORTS + JOURNALS:
        fuzz_layer3.one_input(bytes([fuzz_layer3.EXPORT if data in EXPORTS
                                     else fuzz_layer3.JOURNAL]) + data)


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(EXPORTS), st.randoms(use_true_random=False), st.integers(1, 3))
def test_mutated_exports_get_one_verdict_from_every_reader(base: bytes, rng: random.Random,
                                                           rounds: int) -> None:
    fuzz_layer3.check_export(json_mutations.mutate_document(base, rng, rounds))


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(JOURNALS), st.randoms(use_true_random=False), st.integers(1, 3))
@example(JOURNALS[0], random.Random(0), 0)          # the journal as written
def test_mutated_journals_get_one_verdict_from_the_reader_and_the_rules(
        base: bytes, rng: random.Random, rounds: int) -> None:
    fuzz_layer3.check_journal(json_mutations.mutate_lines(base, rng, rounds))


@pytest.mark.parametrize("change", [
    lambda doc: doc.replace(b'"edges":[', b'"edges":[],"edges":[', 1),         # repeated key
    lambda doc: doc.replace(b'"properties":{}', b'"properties":{"a":1,"a":2}', 1),
    lambda doc: doc.replace(b'"sequence_index":1', b'"sequence_index":' + b"9" * 4301, 1),
    lambda doc: doc.replace(b'"properties":{}', b'"properties":{"w":NaN}', 1),
    lambda doc: doc[: len(doc) // 2],
    lambda doc: doc[:100] + b"\xff" + doc[100:],
    lambda doc: doc.replace(b'"delta_type":"', b'"delta_type":{"a":null},"x":"', 1),
], ids=["repeated-top-key", "repeated-deep-key", "long-integer", "nan", "cut", "not-utf8",
        "delta-type-object"])
def test_hand_made_hostile_exports_get_one_verdict(change: Any) -> None:
    for base in EXPORTS:
        fuzz_layer3.check_export(change(base))


def test_the_target_catches_a_verifier_that_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.astp.layer3 import Layer3Report

    violating = next(e for e in EXPORTS if not fuzz_layer3.verify(json.loads(e)).ok)
    monkeypatch.setattr(fuzz_layer3, "verify", lambda *a, **k: Layer3Report(()))
    with pytest.raises(harness.Mismatch):
        fuzz_layer3.check_export(violating)


def test_the_target_catches_a_lenient_journal_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.astp.layer3 import workspace

    monkeypatch.setattr(workspace, "loads_json", lambda data, source="": json.loads(data))
    header, rest = JOURNALS[0].split(b"\n", 1)
    repeated = header[:-1] + b', "workspace_id": "ws-1"}\n' + rest
    with pytest.raises(harness.Mismatch):
        fuzz_layer3.check_journal(repeated)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(EXPORTS + JOURNALS), st.randoms(use_true_random=False))
def test_mutations_change_one_thing_and_keep_the_rest(base: bytes, rng: random.Random) -> None:
    """The mutator's own contract: parse/emit is the identity on the corpus, and a mutated
    document is the same bytes or differs (it never crashes on its own output)."""
    for line in base.split(b"\n")[:3]:
        if line:
            assert json.loads(json_mutations.emit(json_mutations.parse(line))) == json.loads(line)
    mutated = json_mutations.mutate_document(base, rng, 2)
    json_mutations.mutate_document(mutated, rng, 1)
    json_mutations.mutate_lines(base, rng, 2)
