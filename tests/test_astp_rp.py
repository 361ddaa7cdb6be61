"""CONFORMANCE-REPRODUCIBILITY.md 1.3.0, RP-001…RP-011 (ASTP.md §18, seed 003), through the
public API. The fixture's schema_version is "1.0.0" (ASTP.md §20.1)."""
from __future__ import annotations

import copy
import itertools

import pytest
from strategies_astp import EP, FOLD_ORDER, H, tie_fixture_document, tie_fixture_segments, u

from canonkit import astp
from canonkit.astp._live import prover as K
from canonkit.errors import EmptyTreeError, InvalidFieldError, WriteGuardError

SEGS = [H(f"leaf-{i}") for i in range(7)]
SIGS = [H(f"leaf-{100 + i}") for i in range(5)]
SAV1 = "3cdbc3f20a909338a55a5b9687d72ce4b6f74ad1d3784a377c91b1bba06f2491"
SAV0 = "0654211304f104a768b81432567776c7f13f65b97e4937f114f5c65e8dbc5fed"
TIE_SAV1 = "1dda20e990cf757302e67f96173703a2a0f846feb2c6c0f34870a2e173aeed33"
TIE_SAV0 = "863ded60b9adce9cf3703b8892c5bf5263fa09153a81aa21778517789f9aa2c2"
TIE_STORED_SAV1 = "2ff4e255c1e7470aa8a30a8b1fbde6cecb690e1d4ffaefb31a0ae26b6fce44ba"


def test_rp001_spine_from_stored_nodes_only() -> None:
    assert SEGS[0] == "aa6c290f56f0f7eb3a8da563ae72efc5d10cc89b88a3112c612d8e3825e20aad"
    assert astp.sha3_256(EP.encode()).hex() == "0bdfe537564300a840a9b2279b3c4d0c8ca0e0c3b0c3d9c95c105852f991f222"
    assert astp.spine_root(SEGS, spine_algorithm_version=1, episode_id=EP) == SAV1
    assert astp.spine_root(SEGS, spine_algorithm_version=0) == SAV0
    assert astp.spine_root([s.upper() for s in SEGS], spine_algorithm_version=1, episode_id=EP) == SAV1
    assert astp.spine_root([bytes.fromhex(s) for s in SEGS], spine_algorithm_version=1, episode_id=EP) == SAV1
    swapped = SEGS[:]
    swapped[0], swapped[1] = swapped[1], swapped[0]
    assert astp.spine_root(swapped, spine_algorithm_version=1, episode_id=EP) != SAV1
    for order in itertools.permutations(SIGS):
        assert astp.spine_root(SEGS + list(order), spine_algorithm_version=1, episode_id=EP) != SAV1
    for version in (0, 1, 2, 3):
        with pytest.raises(EmptyTreeError):
            astp.spine_root([], spine_algorithm_version=version, episode_id=EP)


def test_rp002_signal_manifest_is_a_set() -> None:
    five = "0a4a4582ad36da24dcd21853b07ed97d13a8c223cf14845588861d9d5786b670"
    for order in list(itertools.permutations(SIGS))[::24]:
        assert astp.signal_manifest_hash(list(order), version=1) == five
    assert astp.signal_manifest_hash(SIGS + SIGS[:2], version=1) == five
    assert astp.signal_manifest_hash(SIGS[:4], version=1) == \
        "5b73a9aa0cf76aaa0399dce72733b48d5e441b7f236dc063d570eecdde5ff22d"
    empty_manifest = astp.signal_manifest_hash([], version=1)
    assert empty_manifest == "5188531fe69daafc79126dfa880419494179ca220d60d5dda2fee8279d4ae847"
    empty_exclusion = astp.exclusion_hash([], version=1)
    assert empty_exclusion == "45849be4da47e279538916284a2ac74cd6acd60a67b9a8982992f97afa149be6"
    root = astp.episode_root_v1(SAV1, five, empty_exclusion)
    assert root == "49c1b61c22d00c185dceca5eb39f65bd88c2666281444687c59c48b0b199d7fe"
    assert astp.episode_root_v1(SAV0, five, empty_exclusion) != root
    assert astp.episode_root_v1(SAV1, empty_manifest, empty_exclusion) != root
    assert astp.episode_root_v1(SAV1, five, astp.exclusion_hash(SIGS[:1], version=1)) != root


def test_rp003_identifiers_stay_out_of_preimages() -> None:
    base = {"format": "canonkit-episode/1", "episode_id": EP, "status": "SEALED",
            "segments": tie_fixture_segments(), "seal": None}
    sealed = astp.seal_episode(base, spine_algorithm_version=1, ordering_version=2)
    a = copy.deepcopy(sealed)
    b = copy.deepcopy(sealed)
    for key in ("spine_algorithm_version", "ordering_version"):
        del b["seal"][key]
    ea, eb = astp.read_episode(a), astp.read_episode(b)
    assert (ea.seal.get("spine_algorithm_version"), ea.seal.get("ordering_version")) == (1, 2)
    assert (eb.seal.get("spine_algorithm_version"), eb.seal.get("ordering_version")) == (None, None)
    assert a["seal"]["spine_root"] == b["seal"]["spine_root"] == SAV1
    ra, rb = astp.reproduce(a), astp.reproduce(b)
    assert ra.outcome == rb.outcome == "reproduced"
    assert ra.reason is None
    assert "defaulted" in rb.reason and rb.construction == "sav1"  # read as legacy, said so
    # hash_version is no leaf-hash input: a node marked 1 and one marked 7 hash alike
    seg = tie_fixture_segments()[0]
    n1 = astp.leaf_hash_v2(*(seg[k] for k in ("node_id", "node_type", "schema_version", "sequence_index",
                                              "content_hash", "parent_node_id")))
    c = copy.deepcopy(a)
    c["segments"][0]["hash_version"] = 7
    assert astp.reproduce(c).outcome == "reproduced"
    assert n1 == "25b617f0d7ac09871f88ce7e2851cc8f50b48305dee51d081b62a5f21ed84935"


@pytest.mark.parametrize("status", sorted(astp.FIXED_STATES))
def test_rp004_fixed_states_refuse(status: str) -> None:
    with pytest.raises(WriteGuardError):
        astp.check_write(status)
    assert astp.is_fixed(status)


@pytest.mark.parametrize("status", sorted(astp.OPEN_STATES))
def test_rp004_open_states_admit(status: str) -> None:
    astp.check_write(status)
    assert not astp.is_fixed(status)


def test_rp004_closed_is_fixed_and_sets_are_the_eleven() -> None:
    assert "CLOSED" in astp.FIXED_STATES
    assert len(astp.FIXED_STATES | astp.OPEN_STATES) == 11 and not astp.FIXED_STATES & astp.OPEN_STATES


def test_tie_fixture_roots() -> None:
    assert astp.spine_root(SEGS + FOLD_ORDER, spine_algorithm_version=1, episode_id=EP) == TIE_SAV1
    assert astp.spine_root(SEGS + FOLD_ORDER, spine_algorithm_version=0) == TIE_SAV0
    assert astp.spine_root(SEGS + SIGS, spine_algorithm_version=1, episode_id=EP) == TIE_STORED_SAV1


def _tie(sav: int, **seal_options: object) -> dict:
    return astp.seal_episode(tie_fixture_document(), spine_algorithm_version=sav, ordering_version=1,
                             signal_order=FOLD_ORDER, **seal_options)


@pytest.mark.parametrize("sav,root", [(1, TIE_SAV1), (0, TIE_SAV0)])
def test_rp005_admissible_annotation(sav: int, root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _tie(sav, annotate=True)
    assert doc["seal"]["spine_root"] == root

    class NoSearch:
        def __init__(self, *a: object, **k: object) -> None:
            raise AssertionError("no other order may be tried")
    monkeypatch.setattr(K, "TieSearch", NoSearch)
    r = astp.reproduce(doc)
    assert (r.outcome, r.order, r.construction) == ("reproduced_with_annotation", FOLD_ORDER, f"sav{sav}")


def test_rp006_annotations_are_checked_never_trusted() -> None:
    wrong = [H("leaf-100"), H("leaf-101"), H("leaf-103"), H("leaf-102"), H("leaf-104")]
    foreign = FOLD_ORDER[:4] + [H("x")]
    for annotation in (wrong, foreign):
        doc = _tie(1)
        doc["seal"]["resolved_signal_order"] = annotation
        r = astp.reproduce(doc)
        assert r.outcome == "reproduced_by_search" and r.order == FOLD_ORDER
        assert "inadmissible" in r.reason
        # without timestamps no search is possible: the annotation must not rescue it
        no_ts = copy.deepcopy(doc)
        for s in no_ts["signals"]:
            del s["received_at"]
        assert astp.reproduce(no_ts).outcome == "not_reproducible"
    tampered = _tie(1, annotate=True)
    tampered["segments"][0]["content_hash"] = H("t")
    r = astp.reproduce(tampered)
    assert r.outcome == "not_reproducible" and r.components["spine_root"] == "mismatch"


def test_rp007_ov2_ignores_a_stray_annotation() -> None:
    doc = astp.seal_episode(tie_fixture_document(), spine_algorithm_version=1, ordering_version=2)
    doc["seal"]["resolved_signal_order"] = FOLD_ORDER
    assert doc["seal"]["spine_root"] == SAV1
    r = astp.reproduce(doc)
    assert (r.outcome, r.order) == ("reproduced", None)


def test_rp008_absence_of_annotation_carries_no_adverse_inference() -> None:
    doc = _tie(1)
    assert doc["seal"]["spine_root"] == TIE_SAV1 and "resolved_signal_order" not in doc["seal"]
    r = astp.reproduce(doc)
    assert (r.outcome, r.order, r.construction) == ("reproduced_by_search", FOLD_ORDER, "sav1")
    assert set(r.components.values()) == {"ok", "not_checked"}
    bad = copy.deepcopy(doc)
    bad["seal"]["spine_root"] = H("no order reproduces this")
    r2 = astp.reproduce(bad)
    assert r2.outcome == "not_reproducible" and "exhausted (6 orders)" in r2.reason
    assert r.outcome != r2.outcome


def _leaves(schema: str = "1.0.0") -> list[str]:
    return [astp.leaf_hash_v2(u(i), "segment", schema, i, SEGS[i], EP) for i in range(7)]


def test_rp009_v2_leaf_and_sav2_spine() -> None:
    leaves = _leaves()
    assert leaves[0] == "25b617f0d7ac09871f88ce7e2851cc8f50b48305dee51d081b62a5f21ed84935"
    assert astp.spine_root(leaves[:1], spine_algorithm_version=2) == \
        "5e06ac5629faf452aa18836dcf3f33565db0cd2d8749b482c65365b9273b576e"
    assert astp.spine_root(leaves, spine_algorithm_version=2) == \
        "4420e38a22409317822ac14e3d5bc8069e6556c0fc08928290f76d23396daa01"
    # the prose's "1.2.0" gives other, unpublished values (ASTP.md §18 discrepancy)
    wrong = _leaves("1.2.0")
    assert wrong[0] == "0787d29b5a57f2d9b426b7befb39e7620273ce23f81192afd894e1f0fc943d0e"
    assert astp.spine_root(wrong[:1], spine_algorithm_version=2) == \
        "fbcf625b2eb656becabb0279744613ffbea3ef357aa922aed6da49a403e7c62e"
    assert astp.spine_root(wrong, spine_algorithm_version=2) == \
        "f5cdf36000ce3fc4a3c1bd7e55c0c222b608098f1908f3d974f9579654fcdf81"
    # failures the vector names: hex text as tree input, a v1 leaf, an empty list
    as_text = astp.sha3_256(b"TREE_LEAF:v2:" + leaves[0].encode()).hex()
    assert astp.spine_root(leaves[:1], spine_algorithm_version=2) != as_text
    v1 = astp.leaf_hash_v1(u(0), "segment", "1.0.0", 0, SEGS[0], EP)
    assert astp.leaf_hash_v2(u(0), "segment", "1.0.0", 0, v1, EP) != leaves[0]
    with pytest.raises(EmptyTreeError):
        astp.spine_root([], spine_algorithm_version=2)


def test_rp010_v2_sets_and_episode_root() -> None:
    manifest = astp.signal_manifest_hash(SIGS, version=2)
    assert manifest == "70dbc8e8f2e87b63e49187979b14ad56ba11219b42be132015c23dcad36acb43"
    exclusion = astp.exclusion_hash([], version=2)
    assert exclusion == "ddea405cc1729ebf63d93b16d723873ad02f9f64af3cc159bf86e5f999b02ce1"
    from test_astp_vectors import structural_members
    members = list(structural_members().values())
    structural = astp.structural_manifest_hash(members)
    assert structural == "0a4b777227b87ee0d6c8efd5b2e9a5fc05c02e61d677f2460f868ab06779b537"
    spine = astp.spine_root(_leaves(), spine_algorithm_version=2)
    root = astp.episode_root_v2(EP, spine, manifest, structural, exclusion)
    assert root == "f0511b4d1be172554b9f87ec64d400d24a1409f1742ad72f628bf5ab7b7d33f0"
    for i in range(len(members)):
        fewer = astp.structural_manifest_hash(members[:i] + members[i + 1:])
        assert astp.episode_root_v2(EP, spine, manifest, fewer, exclusion) != root
    with pytest.raises(InvalidFieldError):
        astp.episode_root_v2("episode-42", spine, manifest, structural, exclusion)


def test_rp011_v2_inclusion_proofs() -> None:
    leaves = _leaves()
    p3 = astp.inclusion_proof_v2(leaves, 3)
    assert p3.siblings == ["8c5558dd9cf6dbbfb7d5c64757d4c2640fabc5b1105404a77c6fd5120fce9889",
                           "4961d0711f8ad12e0795faaa578e410477b88d08c21c0f318a7ccacfc80102fb",
                           "97af5a57298eddaca96c76e7747566a9cc353bb5243985133a0534d2dc8dda2b"]
    p6 = astp.inclusion_proof_v2(leaves, 6)
    assert p6.siblings == ["62bb7692435aef7234c85f8dec29fb8b13b140211713889b899c14eead95fbf1",
                           "64803b5de46b8dd67284bc2edafd90f71a642d80e63615347e548b62b3c5fe96"]
    for proof in (p3, p6):
        assert proof.verify()
        for other in range(-1, 9):
            if other != proof.leaf_index:
                assert not astp.verify_inclusion_proof_v2(proof.leaf_hash, other, 7, proof.siblings,
                                                          proof.spine_root)
    s = p3.siblings
    for wrong in (s[:2], s + [s[0]]):
        assert not astp.verify_inclusion_proof_v2(p3.leaf_hash, 3, 7, wrong, p3.spine_root)
    assert not astp.verify_inclusion_proof_v2(p6.leaf_hash, 6, 7, p6.siblings + [s[0]], p6.spine_root)
    assert astp.verify_inclusion_proof_v2(p3.leaf_hash, 3, 8, s, p3.spine_root)  # size is not bound
    p0 = astp.inclusion_proof_v2(leaves[:1], 0)
    assert p0.siblings == [] and p0.verify()


def test_episode_identifier_leaf_uses_the_canonical_uuid_text() -> None:
    import uuid
    upper = EP.upper()
    assert astp.spine_root(SEGS, spine_algorithm_version=1, episode_id=upper) == SAV1
    assert astp.spine_root(SEGS, spine_algorithm_version=1, episode_id=uuid.UUID(EP)) == SAV1
    historical = astp.spine_root(SEGS, spine_algorithm_version=1, episode_id="Episode-42")
    assert historical != astp.spine_root(SEGS, spine_algorithm_version=1, episode_id="episode-42")
    doc = astp.seal_episode({"format": "canonkit-episode/1", "episode_id": upper, "segments":
                             tie_fixture_segments(), "seal": None}, spine_algorithm_version=1,
                            ordering_version=2)
    assert doc["seal"]["spine_root"] == SAV1
    r = astp.reproduce(doc)
    assert (r.outcome, r.episode_id) == ("reproduced", EP)
