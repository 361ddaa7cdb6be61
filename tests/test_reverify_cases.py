"""Hand-made Episodes for every outcome class of REVERIFY.md §2, run through the whole
re-verifier (reader, worker, report), built on the ASTP.md §18 reproducibility fixture so
every sealed root is a published value, never one computed by the code under test."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from canonkit import reverify

VECTORS = Path(__file__).parent / "vectors" / "astp"
EP = "550e8400-e29b-41d4-a716-446655440000"
EMPTY_EXCLUSION_V1 = "45849be4da47e279538916284a2ac74cd6acd60a67b9a8982992f97afa149be6"
MANIFEST_V1_FIVE = "0a4a4582ad36da24dcd21853b07ed97d13a8c223cf14845588861d9d5786b670"
SPINE_SAV1_OV2 = "3cdbc3f20a909338a55a5b9687d72ce4b6f74ad1d3784a377c91b1bba06f2491"
SPINE_SAV0_OV2 = "0654211304f104a768b81432567776c7f13f65b97e4937f114f5c65e8dbc5fed"
ROOT_RP002 = "49c1b61c22d00c185dceca5eb39f65bd88c2666281444687c59c48b0b199d7fe"
TIE_SAV1 = "1dda20e990cf757302e67f96173703a2a0f846feb2c6c0f34870a2e173aeed33"
TIE_SAV0 = "863ded60b9adce9cf3703b8892c5bf5263fa09153a81aa21778517789f9aa2c2"


def H(text: str) -> str:
    return hashlib.sha3_256(text.encode()).hexdigest()


def u(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012x}"


SIGNALS = [H(f"leaf-{i}") for i in range(100, 105)]
FOLD = [SIGNALS[0], SIGNALS[3], SIGNALS[1], SIGNALS[2], SIGNALS[4]]  # the fixture's seal order


def episode(*, sav: int = 1, ov: int = 2, spine_root: str = SPINE_SAV1_OV2,
            episode_root: str | None = ROOT_RP002, annotation: list[str] | None = None,
            status: str = "SEALED", sealed: bool = True, seal: bool = True,
            segment_hashes: list[str] | None = None) -> dict[str, Any]:
    """The §18 fixture as a canonkit-episode/1 document: seven Segments, five SPINE
    Signals of which the middle three share one received_at."""
    hashes = segment_hashes or [H(f"leaf-{i}") for i in range(7)]
    instants = ["2026-01-01T00:01:00.000+00:00"] + ["2026-01-01T00:02:00.000+00:00"] * 3 + [
        "2026-01-01T00:03:00.000+00:00"]
    record = {
        "spine_algorithm_version": sav, "ordering_version": ov, "hash_version": 1,
        "sealed_at": "2026-01-01T01:00:00.000+00:00",
        "closed_at": "2026-01-01T00:30:00.000+00:00",
        "spine_root": spine_root, "signal_manifest_hash": MANIFEST_V1_FIVE,
        "exclusion_hash": EMPTY_EXCLUSION_V1, "structural_manifest_hash": None,
        "episode_root_hash": episode_root, "leaf_count": 7,
    }
    if annotation is not None:
        record["resolved_signal_order"] = annotation
    return {
        "format": "canonkit-episode/1",
        "episode_id": EP,
        "status": status,
        "closed_at": "2026-01-01T00:30:00.000+00:00",
        "sealed_at": "2026-01-01T01:00:00.000+00:00" if sealed else None,
        "segments": [
            {"node_id": u(i), "node_type": "segment", "schema_version": "1.0.0",
             "sequence_index": i, "content_hash": h, "parent_node_id": EP,
             "retention_tier": "STANDARD", "created_at": f"2026-01-01T00:00:0{i}.000+00:00"}
            for i, h in enumerate(hashes)
        ],
        "signals": [{"content_hash": h, "received_at": t, "placement": "SPINE"}
                    for h, t in zip(SIGNALS, instants)],
        "structural_members": [],
        "context_entries": [],
        "seal": record if seal else None,
    }


def tied(**kw: Any) -> dict[str, Any]:
    """The ov 1 tie fixture (RP-005…RP-008): Episode root left unrecorded (a seal that
    names only its spine root), so only the spine decides."""
    kw.setdefault("sav", 1)
    kw.setdefault("spine_root", TIE_SAV1 if kw["sav"] == 1 else TIE_SAV0)
    return episode(ov=1, episode_root=None, **kw)


def verify(tmp_path: Path, *docs: Any, **options: Any) -> list[dict[str, Any]]:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"".join((d if isinstance(d, bytes) else orjson.dumps(d)) + b"\n"
                              for d in docs))
    options.setdefault("jobs", 1)
    return [r.record for r in reverify.run([path], **options)]


def one(tmp_path: Path, doc: Any, **options: Any) -> dict[str, Any]:
    (record,) = verify(tmp_path, doc, **options)
    return record


def test_proof_of_record_vector_is_reproduced(tmp_path: Path) -> None:
    path = VECTORS / "proof-of-record-5.0.0.json"
    assert hashlib.sha3_256(path.read_bytes()).hexdigest() == (
        "ab623f8620e8463b8d7bdb19f070ef8f813d27d659e5b76dcd45b48cf2848dc3")
    (result,) = reverify.run([path], jobs=1)
    record = result.record
    assert record["outcome"] == "reproduced"
    assert record["episode_id"] == "ce3f569c-9cdc-4a3d-913a-b9d8573d9a28"
    assert record["source"] == {"file": str(path)}
    assert record["components"]["spine_root"] == "ok"
    assert record["components"]["episode_root"] == "ok"


def test_proof_of_record_tampered_is_not_reproducible(tmp_path: Path) -> None:
    doc = json.loads((VECTORS / "proof-of-record-5.0.0.json").read_text())
    doc["stored"]["segments"][3]["content_hash"] = H("tampered")
    record = one(tmp_path, doc)
    assert record["outcome"] == "not_reproducible"
    assert record["components"]["spine_root"] == "mismatch"
    assert "spine" in record["reason"]


def test_reproduced_under_its_own_identifiers(tmp_path: Path) -> None:
    record = one(tmp_path, episode())
    assert record["outcome"] == "reproduced"
    assert record["order"] is None and record["reason"] is None


def test_stray_annotation_ignored_under_ordering_version_2(tmp_path: Path) -> None:
    # RP-007: an ov 2 seal carrying an annotation verifies exactly as without it
    record = one(tmp_path, episode(annotation=list(reversed(SIGNALS))))
    assert record["outcome"] == "reproduced"


def test_admissible_annotation(tmp_path: Path) -> None:
    record = one(tmp_path, tied(annotation=FOLD))  # RP-005
    assert record["outcome"] == "reproduced_with_annotation"
    assert record["order"] == FOLD


def test_annotation_admissible_under_sav0(tmp_path: Path) -> None:
    record = one(tmp_path, tied(sav=0, annotation=FOLD))
    assert record["outcome"] == "reproduced_with_annotation"


def test_search_without_annotation(tmp_path: Path) -> None:
    record = one(tmp_path, tied())  # RP-008
    assert record["outcome"] == "reproduced_by_search"
    assert record["order"] == FOLD


@pytest.mark.parametrize("annotation", [
    [SIGNALS[0], SIGNALS[1], SIGNALS[3], SIGNALS[2], SIGNALS[4]],  # RP-006 (a) wrong order
    FOLD[:-1] + [H("x")],  # RP-006 (b) foreign hash
    FOLD[:-1],  # a missing member
    FOLD + [FOLD[0]],  # an extra member
], ids=["wrong-order", "foreign-hash", "missing", "extra"])
def test_inadmissible_annotation_is_ignored_then_search(tmp_path: Path,
                                                        annotation: list[str]) -> None:
    record = one(tmp_path, tied(annotation=annotation))
    assert record["outcome"] == "reproduced_by_search"
    assert record["order"] == FOLD


def test_tampered_segment_no_order_rescues(tmp_path: Path) -> None:
    # RP-006 (c): the correct annotation cannot rescue a tampered record
    hashes = [H("t")] + [H(f"leaf-{i}") for i in range(1, 7)]
    record = one(tmp_path, tied(annotation=FOLD, segment_hashes=hashes))
    assert record["outcome"] == "not_reproducible"
    assert record["components"]["spine_root"] == "mismatch"
    assert "spine" in record["reason"]


def test_sealed_root_no_order_reproduces(tmp_path: Path) -> None:
    record = one(tmp_path, tied(spine_root=H("no such root")))  # RP-008 second half
    assert record["outcome"] == "not_reproducible"


def test_search_cap_reported(tmp_path: Path) -> None:
    record = one(tmp_path, tied(), search_cap=5)  # 3! = 6 orders > 5
    assert record["outcome"] == "not_reproducible"
    assert "cap" in record["reason"]
    assert one(tmp_path, tied(), search_cap=6)["outcome"] == "reproduced_by_search"


def test_seal_claiming_version_1_rebuilt_only_under_version_0(tmp_path: Path) -> None:
    from canonkit.astp import episode_root_v1

    root = episode_root_v1(SPINE_SAV0_OV2, MANIFEST_V1_FIVE, EMPTY_EXCLUSION_V1)
    record = one(tmp_path, episode(sav=1, spine_root=SPINE_SAV0_OV2, episode_root=root))
    assert record["outcome"] == "reproduced_under_other_construction"
    assert record["construction"] is not None and "0" in record["construction"]
    # the same values honestly labelled sav 0 are simply reproduced
    honest = one(tmp_path, episode(sav=0, spine_root=SPINE_SAV0_OV2, episode_root=root))
    assert honest["outcome"] == "reproduced"


def test_sealed_status_without_seal_record(tmp_path: Path) -> None:
    record = one(tmp_path, episode(seal=False))
    assert record["outcome"] == "no_seal_record"
    only_sealed_at = one(tmp_path, episode(seal=False, status="CLOSED"))
    assert only_sealed_at["outcome"] == "no_seal_record"


def test_unsealed(tmp_path: Path) -> None:
    record = one(tmp_path, episode(seal=False, sealed=False, status="ACTIVE"))
    assert record["outcome"] == "unsealed"


@pytest.mark.parametrize("field,value", [("spine_algorithm_version", 7),
                                         ("ordering_version", 3)])
def test_unknown_identifier(tmp_path: Path, field: str, value: int) -> None:
    doc = episode()
    doc["seal"][field] = value
    record = one(tmp_path, doc)
    assert record["outcome"] == "not_reproducible"
    assert "unknown_identifier" in record["reason"]


def test_post_closure_append_is_a_flag(tmp_path: Path) -> None:
    doc = episode()
    doc["segments"].append({
        "node_id": u(7), "node_type": "segment", "schema_version": "1.0.0",
        "sequence_index": 7, "content_hash": H("leaf-7"), "parent_node_id": EP,
        "retention_tier": "STANDARD", "created_at": "2026-01-02T00:00:00.000+00:00"})
    record = one(tmp_path, doc)
    assert "post_closure_append" in record["flags"]
    assert record["outcome"] == "not_reproducible"  # the late leaf is not in the sealed spine


def test_invalid_records_keep_the_run_going(tmp_path: Path) -> None:
    good = orjson.dumps(episode())
    records = verify(
        tmp_path,
        good,
        good[: len(good) // 2],  # truncated
        b"this is not JSON",
        b"[1, 2, 3]",  # JSON, but not an object
        {"format": "canonkit-episode/1", "episode_id": EP},  # no segments
        {"format": "something-else/9", "episode_id": EP},
        good,
    )
    outcomes = [r["outcome"] for r in records]
    assert outcomes == ["reproduced"] + ["invalid_record"] * 5 + ["reproduced"]
    for line, record in enumerate(records, start=1):
        assert record["source"] == {"file": str(tmp_path / "corpus.jsonl"), "line": line}
    for record in records[1:6]:
        assert record["reason"]
    assert records[1]["episode_id"] is None and records[2]["episode_id"] is None
    assert records[4]["episode_id"] == EP  # readable identifier is kept


def test_blank_lines_are_not_documents(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\n" + orjson.dumps(episode()) + b"\n  \n")
    (result,) = reverify.run([path], jobs=1)
    assert result.record["source"]["line"] == 2


def test_exit_status_follows_outcomes(tmp_path: Path) -> None:
    good = reverify.run([_write(tmp_path / "a.jsonl", [episode(), tied()])], jobs=1)
    assert good.summary.exit_status == 0
    bad = reverify.run([_write(tmp_path / "b.jsonl", [episode(), episode(seal=False)])], jobs=1)
    assert bad.summary.exit_status == 1
    unsealed = reverify.run(
        [_write(tmp_path / "c.jsonl", [episode(seal=False, sealed=False, status="ACTIVE")])],
        jobs=1)
    assert unsealed.summary.exit_status == 0


def _write(path: Path, docs: list[Any]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in docs))
    return path
