"""Seal reproduction: a hand-made document for every outcome, flags, refusals, and
unreadable documents (``InvalidRecordError`` with the JSON path)."""
from __future__ import annotations

import copy
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_astp import EP, FOLD_ORDER, H, tie_fixture_document, u

from canonkit import astp
from canonkit.errors import InvalidFieldError, InvalidRecordError


def sealed(sav: int = 2, ov: int = 2, **options: object) -> dict:
    doc = tie_fixture_document()
    if sav == 3:
        options.setdefault("capture_posture", "none")
    return astp.seal_episode(doc, spine_algorithm_version=sav, ordering_version=ov, **options)


@pytest.mark.parametrize("sav,ov", [(0, 1), (0, 2), (1, 1), (1, 2), (2, 2), (3, 2)])
def test_reproduced_under_every_construction(sav: int, ov: int) -> None:
    r = astp.reproduce(sealed(sav, ov))
    assert (r.outcome, r.construction, r.order, r.flags, r.reason) == ("reproduced", f"sav{sav}", None, [], None)
    checked = {"spine_root", "signal_manifest", "exclusion", "episode_root"} | (
        {"structural_manifest"} if sav >= 2 else set()) | ({"context_manifest"} if sav == 3 else set())
    assert {k for k, v in r.components.items() if v == "ok"} == checked
    assert {k for k, v in r.components.items() if v != "ok"} == set(astp.COMPONENTS) - checked
    assert r.to_json()["outcome"] == "reproduced"
    assert set(r.to_json()) == {"outcome", "episode_id", "components", "construction", "order", "flags", "reason"}
    json.dumps(r.to_json())


def test_reproduced_with_annotation_and_by_search() -> None:
    r = astp.reproduce(sealed(1, 1, signal_order=FOLD_ORDER, annotate=True))
    assert (r.outcome, r.order) == ("reproduced_with_annotation", FOLD_ORDER)
    r = astp.reproduce(sealed(1, 1, signal_order=FOLD_ORDER))
    assert (r.outcome, r.order) == ("reproduced_by_search", FOLD_ORDER)


def test_search_cap() -> None:
    doc = sealed(1, 1, signal_order=FOLD_ORDER)
    r = astp.reproduce(doc, search_cap=5)
    assert r.outcome == "not_reproducible"
    assert "search cap hit (6 orders > cap 5)" in r.reason and r.components["spine_root"] == "mismatch"
    assert astp.reproduce(doc, search_cap=6).outcome == "reproduced_by_search"


def test_several_tied_groups() -> None:
    doc = tie_fixture_document()
    stamps = ["a", "a", "b", "b", "b"]
    for s, stamp in zip(doc["signals"], stamps):
        s["received_at"] = {"a": "2026-01-01T00:01:00Z", "b": "2026-01-01T00:02:00+00:00"}[stamp]
    order = [H("leaf-101"), H("leaf-100"), H("leaf-104"), H("leaf-102"), H("leaf-103")]
    r = astp.reproduce(astp.seal_episode(doc, spine_algorithm_version=0, ordering_version=1, signal_order=order))
    assert (r.outcome, r.order) == ("reproduced_by_search", order)


def test_reproduced_under_other_construction() -> None:
    doc = sealed(0, 2)
    doc["seal"]["spine_algorithm_version"] = 1
    r = astp.reproduce(doc)
    assert (r.outcome, r.construction) == ("reproduced_under_other_construction", "sav0")
    assert "seal names sav1/ov2" in r.reason
    doc = sealed(1, 1)  # folded with the Signals, recorded as ov 2
    doc["seal"]["ordering_version"] = 2
    r = astp.reproduce(doc)
    assert (r.outcome, r.construction) == ("reproduced_under_other_construction", "sav1/ov1")
    doc = sealed(2)
    doc["seal"]["spine_algorithm_version"] = 3
    doc["seal"].update(capture_posture="none", context_entry_count=0,
                       context_manifest_hash=astp.context_manifest_hash("none", 0, None))
    r = astp.reproduce(doc)
    assert (r.outcome, r.construction) == ("reproduced_under_other_construction", "sav2")


@pytest.mark.parametrize("field,component", [
    ("spine_root", "spine_root"), ("signal_manifest_hash", "signal_manifest"), ("exclusion_hash", "exclusion"),
    ("structural_manifest_hash", "structural_manifest"), ("context_manifest_hash", "context_manifest"),
    ("episode_root_hash", "episode_root")])
def test_not_reproducible_names_the_component(field: str, component: str) -> None:
    doc = sealed(3)
    doc["seal"][field] = H("tampered")
    r = astp.reproduce(doc)
    assert r.outcome == "not_reproducible" and r.construction is None
    assert r.components[component] == "mismatch"
    assert component in r.reason


def test_tampered_stored_content() -> None:
    doc = sealed(2)
    doc["signals"][0]["content_hash"] = H("other")
    r = astp.reproduce(doc)
    assert r.outcome == "not_reproducible"
    assert (r.components["signal_manifest"], r.components["spine_root"]) == ("mismatch", "ok")
    doc = sealed(1, 2)
    doc["segments"].append(dict(doc["segments"][0], sequence_index=7, content_hash=H("late")))
    r = astp.reproduce(doc)
    assert r.outcome == "not_reproducible" and "spine_root" in r.reason


def test_leaf_count_and_context_count() -> None:
    doc = sealed(2)
    doc["seal"]["leaf_count"] = 8
    r = astp.reproduce(doc)
    assert r.outcome == "not_reproducible" and "leaf_count 8 != 7" in r.reason
    doc = sealed(3)
    doc["seal"]["context_entry_count"] = 1
    r = astp.reproduce(doc)
    assert r.outcome == "not_reproducible" and r.components["context_manifest"] == "mismatch"


def test_pre_4_3_seal_with_only_a_spine_root() -> None:
    doc = sealed(1, 2)
    for key in ("signal_manifest_hash", "exclusion_hash", "episode_root_hash"):
        doc["seal"][key] = None
    r = astp.reproduce(doc)
    assert r.outcome == "reproduced"
    assert r.components == {"spine_root": "ok", "signal_manifest": "absent", "exclusion": "absent",
                            "structural_manifest": "not_checked", "context_manifest": "not_checked",
                            "episode_root": "absent"}


def test_no_seal_record_and_unsealed() -> None:
    doc = tie_fixture_document()
    assert astp.reproduce(doc).outcome == "no_seal_record"
    assert astp.reproduce(dict(doc, status="ACTIVE", sealed_at=None)).outcome == "unsealed"
    assert astp.reproduce(dict(doc, status="CLOSED", sealed_at="2026-01-02T00:00:00Z")).outcome == "no_seal_record"
    r = astp.reproduce(dict(doc, status="CLOSED", sealed_at=None))
    assert (r.outcome, r.construction, set(r.components.values())) == ("unsealed", None, {"not_checked"})


@pytest.mark.parametrize("changes,reason", [
    ({"spine_algorithm_version": 4}, "unknown_identifier"),
    ({"spine_algorithm_version": "1"}, "unknown_identifier"),
    ({"spine_algorithm_version": True}, "unknown_identifier"),
    ({"ordering_version": 3}, "unknown_identifier"),
    ({"ordering_version": 1}, "refused: spine_algorithm_version 2 requires ordering_version 2"),
    ({"spine_root": "abc"}, "refused: seal.spine_root is not a 64-hex-character digest"),
    ({"episode_root_hash": 7}, "refused: seal.episode_root_hash is not a 64-hex-character digest"),
    ({"structural_manifest_hash": None}, "refused: seal.structural_manifest_hash is required"),
    ({"spine_root": None}, "refused: seal.spine_root is missing"),
    ({"leaf_count": "7"}, "refused: seal.leaf_count"),
])
def test_refused_seals(changes: dict, reason: str) -> None:
    doc = sealed(2)
    doc["seal"].update(changes)
    r = astp.reproduce(doc)
    assert r.outcome == "not_reproducible" and r.reason.startswith(reason)
    assert set(r.components.values()) == {"not_checked"}


def test_sealed_before_closed_is_refused() -> None:
    doc = sealed(2, sealed_at="2026-01-01T23:00:00Z", closed_at="2026-01-02T00:00:00+01:00")
    assert astp.reproduce(doc).outcome == "reproduced"  # same instant written two ways: not earlier
    doc = sealed(2, sealed_at="2026-01-01T22:59:59Z", closed_at="2026-01-02T00:00:00+01:00")
    r = astp.reproduce(doc)
    assert r.outcome == "not_reproducible" and "sealed_at is earlier than closed_at" in r.reason


def test_sav3_needs_uuid_and_fields() -> None:
    doc = sealed(2)
    doc["episode_id"] = "episode-42"
    r = astp.reproduce(doc)
    assert r.outcome == "not_reproducible" and "construction not applicable" in r.reason
    doc = sealed(1, 2)
    doc["episode_id"] = "episode-42"  # a historical non-UUID id is a valid sav 1 Episode...
    doc = astp.seal_episode(doc, spine_algorithm_version=1, ordering_version=2)
    assert astp.reproduce(doc).outcome == "reproduced"


def test_flags() -> None:
    doc = sealed(2)
    doc["signals"].append({"content_hash": H("leaf-100"), "received_at": "2026-01-03T00:00:00Z",
                           "placement": "SPINE"})
    doc = astp.seal_episode(doc, spine_algorithm_version=2, ordering_version=2)
    r = astp.reproduce(doc)
    assert r.outcome == "reproduced" and r.flags == ["duplicate_signal", "post_closure_append"]
    doc = sealed(2)
    doc["segments"][2]["created_at"] = "2026-01-02T00:00:01Z"
    doc["segments"][3]["leaf_hash"] = H("wrong")
    doc["segments"][4].update(hash_version=2, leaf_hash=astp.leaf_hash_v2(u(4), "segment", "1.0.0", 4,
                                                                            H("leaf-4"), EP))
    r = astp.reproduce(doc)
    assert r.outcome == "reproduced" and r.flags == ["post_closure_append", "stored_leaf_hash_mismatch"]
    doc["segments"][3]["leaf_hash"] = astp.leaf_hash_v1(u(3), "segment", "1.0.0", 3, H("leaf-3"), EP)
    assert astp.reproduce(doc).flags == ["post_closure_append"]
    doc["signals"].append({"content_hash": H("x"), "received_at": "2026-01-05T00:00:00Z", "placement": "BRANCH"})
    assert astp.reproduce(doc).outcome == "reproduced"  # non-SPINE Signals are no members


def test_ephemeral_segments_go_to_the_exclusion_set() -> None:
    doc = tie_fixture_document()
    doc["segments"].append({"sequence_index": 9, "content_hash": H("gone"), "retention_tier": "EPHEMERAL"})
    sealed_doc = astp.seal_episode(doc, spine_algorithm_version=2, ordering_version=2)
    assert sealed_doc["seal"]["exclusion_hash"] == astp.exclusion_hash([H("gone")], version=2)
    assert sealed_doc["seal"]["leaf_count"] == 7
    assert astp.reproduce(sealed_doc).outcome == "reproduced"


def test_structural_members_by_hash_and_by_fields() -> None:
    from test_astp_vectors import SC, structural_members
    members = structural_members()
    doc = tie_fixture_document(structural_members=[{"hash": h} for h in members.values()])
    s = astp.seal_episode(doc, spine_algorithm_version=2, ordering_version=2)
    assert s["seal"]["structural_manifest_hash"] == SC["structural_manifest_v1"]["seven_members_any_order"]
    assert s["seal"]["episode_root_hash"] == SC["episode_root_v2"]["hash"]
    by_fields = tie_fixture_document(structural_members=[
        {"type": "BranchTerminus", "terminus_id": u(0x102), "branch_id": u(0x101), "terminus_type": "ABANDONED",
         "branch_point_hash": members["bp"], "created_at": "2026-01-01T00:00:00.123Z"},
        {"type": "HITLEvent", "state": "INVOKED", "hitl_request_id": "r", "episode_id": EP}])
    s = astp.seal_episode(by_fields, spine_algorithm_version=2, ordering_version=2)
    assert s["seal"]["structural_manifest_hash"] == astp.structural_manifest_hash([members["bt"]])


@pytest.mark.parametrize("mutate,path", [
    (lambda d: d.pop("format"), "format"),
    (lambda d: d.update(format="x"), "format"),
    (lambda d: d.pop("episode_id"), "episode_id"),
    (lambda d: d.pop("segments"), "segments"),
    (lambda d: d.update(segments={}), "segments"),
    (lambda d: d.pop("seal"), "seal"),
    (lambda d: d.update(seal=[]), "seal"),
    (lambda d: d["segments"][3].update(content_hash="zz"), "segments[3].content_hash"),
    (lambda d: d["segments"][3].pop("sequence_index"), "segments[3].sequence_index"),
    (lambda d: d["segments"][3].update(sequence_index=-1), "segments[3].sequence_index"),
    (lambda d: d["segments"][3].update(sequence_index=2), "segments"),
    (lambda d: d["segments"][1].update(node_id="not-a-uuid"), "segments[1].node_id"),
    (lambda d: d["segments"][1].update(created_at="2026-01-01T00:00:00"), "segments[1].created_at"),
    (lambda d: d["signals"][4].pop("placement"), "signals[4].placement"),
    (lambda d: d["signals"][2].update(received_at="yesterday"), "signals[2].received_at"),
    (lambda d: d.update(closed_at=5), "closed_at"),
    (lambda d: d.update(structural_members=[{"type": "Nope"}]), "structural_members[0]"),
    (lambda d: d.update(structural_members=[{"hash": "00"}]), "structural_members[0].hash"),
    (lambda d: d.update(context_entries=[1]), "context_entries[0]"),
])
def test_invalid_records(mutate: object, path: str) -> None:
    doc = copy.deepcopy(sealed(2))
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(InvalidRecordError) as info:
        astp.reproduce(doc)
    assert str(info.value).startswith(path + ":")
    assert info.value.code == "invalid_record"


def test_not_a_document() -> None:
    for doc in (None, [], "text", 5):
        with pytest.raises(InvalidRecordError, match=r"^\$:"):
            astp.reproduce(doc)


def test_proof_of_record_sav2_document() -> None:
    from test_astp_vectors import SC, structural_members
    doc = {"format": "astp-proof-of-record/1", "profile": "full", "episode_id": EP,
           "seal": {"spine_algorithm_version": 2, "ordering_version": 2, "hash_version": 2,
                    "sealed_at": None, "closed_at": None, "spine_root": SC["spine_root_sav2"]["7"],
                    "signal_manifest_hash": SC["signal_manifest_v2"]["five_members_any_order"],
                    "exclusion_hash": SC["exclusion_v2"]["empty"],
                    "structural_manifest_hash": SC["structural_manifest_v1"]["seven_members_any_order"],
                    "episode_root_hash": SC["episode_root_v2"]["hash"], "leaf_count": 7},
           "stored": {"segments": [{k: v for k, v in s.items() if k != "leaf_hash_v2"} for s in SC["segments"]][::-1],
                      "signal_content_hashes": SC["signals"], "excluded_content_hashes": [],
                      "structural_member_hashes": list(structural_members().values()),
                      "resolved_signal_order": None}}
    r = astp.reproduce(doc)
    assert (r.outcome, r.construction) == ("reproduced", "sav2")
    with pytest.raises(InvalidRecordError, match=r"^stored.segments\[0\].content_hash:"):
        bad = copy.deepcopy(doc)
        bad["stored"]["segments"][0]["content_hash"] = None
        astp.reproduce(bad)


def test_seal_episode_refuses_a_foreign_signal_order() -> None:
    with pytest.raises(InvalidRecordError, match="permutation"):
        astp.seal_episode(tie_fixture_document(), spine_algorithm_version=1, ordering_version=1,
                          signal_order=FOLD_ORDER[:4] + [H("x")])
    doc = tie_fixture_document()
    sealed_doc = astp.seal_episode(doc, spine_algorithm_version=1, ordering_version=1)
    assert doc["seal"] is None and sealed_doc is not doc  # input untouched


def test_post_closure_append_ephemeral_and_seal_closed_at() -> None:
    doc = tie_fixture_document()
    doc["segments"].append({"sequence_index": 9, "content_hash": H("late"), "retention_tier": "EPHEMERAL",
                            "created_at": "2026-01-02T00:00:01Z"})
    r = astp.reproduce(astp.seal_episode(doc, spine_algorithm_version=2, ordering_version=2))
    assert (r.outcome, r.flags) == ("reproduced", ["post_closure_append"])
    doc = tie_fixture_document()
    doc["signals"][4]["received_at"] = "2026-01-03T00:00:00Z"
    sealed_doc = astp.seal_episode(doc, spine_algorithm_version=2, ordering_version=2)
    del sealed_doc["closed_at"]  # the seal's own closed_at is used instead
    assert astp.reproduce(sealed_doc).flags == ["post_closure_append"]
    sealed_doc["seal"]["closed_at"] = None
    assert astp.reproduce(sealed_doc).flags == []


def _paths(node: object, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


_JUNK = [None, 0, -1, 1.5, True, "", "x", "ab" * 32, [], {}, [1], {"a": 1}, 2**70, float("nan"),
         "2026-01-01T00:00:00", "2026-01-01T00:00:00Z", u(1), ["ab" * 32], "SPINE", "EPHEMERAL"]


def _robustness_bases() -> list[dict]:
    from test_astp_vectors import CC, POR, structural_members
    doc = tie_fixture_document(
        structural_members=[{"hash": h} for h in structural_members().values()],
        context_entries=[{k: v for k, v in e.items() if k != "entry_hash"} for e in CC["entries"]])
    bases = [POR]
    for sav, ov in ((0, 1), (1, 1), (1, 2), (2, 2), (3, 2)):
        bases.append(astp.seal_episode(doc, spine_algorithm_version=sav, ordering_version=ov,
                                       signal_order=FOLD_ORDER if ov == 1 else None, annotate=sav == 1,
                                       capture_posture="declared_only" if sav == 3 else None))
    return bases


ROBUSTNESS_BASES = _robustness_bases()


@settings(max_examples=150, deadline=None)
@given(st.randoms(use_true_random=False))
def test_mutated_documents_never_crash(rnd: random.Random) -> None:
    """Any value replaced or key removed anywhere: a Reproduction or InvalidRecordError."""
    doc = copy.deepcopy(rnd.choice(ROBUSTNESS_BASES))
    for _ in range(rnd.randint(1, 3)):
        path = rnd.choice(_paths(doc)[1:])
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and rnd.random() < 0.15:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(rnd.choice(_JUNK))
    try:
        result = astp.reproduce(doc, search_cap=120)
    except InvalidRecordError as exc:
        assert str(exc).split(":")[0]  # names a location
        return
    assert result.outcome in astp.OUTCOMES
    json.dumps(result.to_json())


def test_legacy_cut_off_is_explicit() -> None:
    from datetime import datetime, timezone
    doc = sealed(0, 2, sealed_at="2026-03-01T00:00:00Z", closed_at="2026-03-01T00:00:00Z")
    del doc["seal"]["spine_algorithm_version"]
    r = astp.reproduce(doc)  # default reading is sav 1: only the other construction works
    assert (r.outcome, r.construction) == ("reproduced_under_other_construction", "sav0")
    cut = datetime(2026, 4, 1, tzinfo=timezone.utc)
    r = astp.reproduce(doc, legacy_sav0_before=cut)
    assert (r.outcome, r.construction) == ("reproduced", "sav0") and "legacy cut-off" in r.reason
    later = sealed(1, 2, sealed_at="2026-05-01T00:00:00Z", closed_at="2026-05-01T00:00:00Z")
    del later["seal"]["spine_algorithm_version"]
    assert astp.reproduce(later, legacy_sav0_before=cut).construction == "sav1"
    tagged = sealed(1, 2, sealed_at="2026-03-01T00:00:00Z", closed_at="2026-03-01T00:00:00Z")
    assert astp.reproduce(tagged, legacy_sav0_before=cut).construction == "sav1"  # never overrides a tag
    with pytest.raises(InvalidFieldError):
        astp.reproduce(doc, legacy_sav0_before=datetime(2026, 4, 1))
    for cap in (-1, True, 1.5):
        with pytest.raises(InvalidFieldError):
            astp.reproduce(doc, search_cap=cap)
