"""End-to-end properties of seal_episode/reproduce on random Episodes, and the whole
package run on the compiled kernels vs on the twin (same Reproduction, value for value)."""
from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_astp import EP, H, u

from canonkit import _backend, astp


def random_episode(rnd: random.Random, *, ties: bool) -> tuple[dict[str, Any], list[str]]:
    """A canonkit-episode/1 body and a fold order of its SPINE Signals (tied runs shuffled)."""
    n = rnd.randint(1, 40)
    segments = [{"node_id": u(1000 + i), "node_type": "segment", "schema_version": "1.0.0",
                 "sequence_index": i * 2 + 1, "content_hash": H(f"s{rnd.random()}"),
                 "parent_node_id": rnd.choice([EP, None])} for i in range(n)]
    rnd.shuffle(segments)  # document order is not the leaf order
    for _ in range(rnd.randint(0, 3)):
        segments.append({"sequence_index": 10_000 + len(segments), "content_hash": H(f"e{rnd.random()}"),
                         "retention_tier": "EPHEMERAL"})
    signals, fold = [], []
    minute = 0
    while len(signals) < rnd.randint(0, 9):
        run = rnd.randint(1, 4) if ties else 1
        minute += 1
        group = [H(f"g{rnd.random()}") for _ in range(run)]
        signals += [{"content_hash": h, "received_at": f"2026-01-01T01:{minute:02d}:00Z", "placement": "SPINE"}
                    for h in group]
        rnd.shuffle(group)
        fold += group
    signals.append({"content_hash": H("not on the spine"), "received_at": "2026-01-01T00:00:00Z",
                    "placement": "BRANCH"})
    body = {"format": "canonkit-episode/1", "episode_id": EP, "status": "SEALED",
            "closed_at": "2026-01-02T00:00:00Z", "sealed_at": "2026-01-02T00:00:00Z",
            "segments": segments, "signals": signals,
            "structural_members": [{"hash": H(f"m{i}")} for i in range(rnd.randint(0, 3))],
            "context_entries": [], "seal": None}
    return body, fold


CONSTRUCTIONS = [(0, 1), (0, 2), (1, 1), (1, 2), (2, 2), (3, 2)]


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(CONSTRUCTIONS))
def test_sealed_episodes_reproduce_and_tampering_is_caught(rnd: random.Random, construction: tuple) -> None:
    sav, ov = construction
    body, fold = random_episode(rnd, ties=ov == 1)
    options: dict[str, Any] = {"capture_posture": "none"} if sav == 3 else {}
    if ov == 1:
        options["signal_order"] = fold
    doc = astp.seal_episode(body, spine_algorithm_version=sav, ordering_version=ov, **options)
    r = astp.reproduce(doc)
    stored = [s["content_hash"] for s in body["signals"] if s["placement"] == "SPINE"]
    if ov == 1 and fold != stored:
        assert (r.outcome, r.order, r.construction) == ("reproduced_by_search", fold, f"sav{sav}")
    else:
        assert (r.outcome, r.construction, r.order) == ("reproduced", f"sav{sav}", None)
    # any stored content hash changed: never a reproduction under any name
    tampered = copy.deepcopy(doc)
    target = rnd.choice([s for s in tampered["segments"]] +
                        [s for s in tampered["signals"] if s["placement"] == "SPINE"])
    target["content_hash"] = H("tampered")
    assert astp.reproduce(tampered).outcome == "not_reproducible"


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(CONSTRUCTIONS))
def test_compiled_and_twin_packages_agree(rnd: random.Random, construction: tuple) -> None:
    if astp.__backend__ != "compiled":
        pytest.skip("compiled astp kernels not live")
    twin = TWIN_PACKAGE
    assert twin.__backend__ == "python"
    sav, ov = construction
    body, fold = random_episode(rnd, ties=ov == 1)
    options: dict[str, Any] = {"capture_posture": "none"} if sav == 3 else {}
    doc = astp.seal_episode(body, spine_algorithm_version=sav, ordering_version=ov,
                            signal_order=fold if ov == 1 else None, **options)
    assert twin.seal_episode(body, spine_algorithm_version=sav, ordering_version=ov,
                             signal_order=fold if ov == 1 else None, **options) == doc
    for variant in (doc, {**doc, "seal": {**doc["seal"], "spine_root": H("x")}}):
        assert astp.reproduce(variant).to_json() == twin.reproduce(variant).to_json()


TWIN_PACKAGE = _backend.import_on_twins("canonkit.astp")
