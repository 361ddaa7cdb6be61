"""ASTP.md §15 witnesses and anchors: the SC#witness_and_anchor_v2 vectors, G-12 validity
with the first failing condition, and the G-11 threshold as a maximum matching (where a
greedy pass counts wrong)."""
from __future__ import annotations

import copy
import json
import sys
from typing import Any

import pytest
from conftest import VECTORS

from canonkit import astp
from canonkit.astp import (
    WITNESS_CONDITIONS,
    anchor_commitment_v2,
    verify_witness,
    witness_commitment_v2,
    witness_threshold,
)
from canonkit.errors import MissingDependencyError

SC = json.loads((VECTORS / "astp" / "seal-constructions-5.0.0.json").read_text())["witness_and_anchor_v2"]
RECORDS: list[dict[str, Any]] = SC["witness_records"]
AUTHOR = "agent-alpha"


def test_witness_and_anchor_commitments_reproduce_the_vectors() -> None:
    for record in RECORDS:
        assert witness_commitment_v2(record) == record["commitment_hash"]
    assert anchor_commitment_v2(SC["anchor_inputs"]) == SC["anchor_commitment_v2"]
    assert astp.public_key_fingerprint(bytes.fromhex(RECORDS[0]["public_key"])) == (
        RECORDS[0]["public_key_fingerprint"])


def test_vector_records_are_valid() -> None:
    for record in RECORDS:
        assert verify_witness(record, author=AUTHOR).ok


@pytest.mark.parametrize(("change", "reason"), [
    ({"root_version": 3}, "commitment"),
    ({"role_detail": "other"}, "commitment"),
    ({"commitment_hash": "0" * 64}, "commitment"),
    ({"commitment_hash": "xyz"}, "commitment"),
    ({"public_key_fingerprint": "0" * 64}, "fingerprint"),
    ({"public_key": "00" * 31}, "fingerprint"),
    ({"signature": "00" * 64}, "signature"),
    ({"signature": "ab"}, "signature"),
    ({"signature_scheme": "rsa"}, "signature"),
    ({"witness_id": AUTHOR}, "commitment"),   # the id is committed: changing it breaks that first
])
def test_g12_reports_the_first_failing_condition(change: dict[str, Any], reason: str) -> None:
    record = {**RECORDS[0], **change}
    verdict = verify_witness(record, author=AUTHOR)
    assert (verdict.ok, verdict.reason) == (False, reason)
    assert verdict.reason in WITNESS_CONDITIONS and verdict.detail


def test_g12_a_witness_may_not_be_the_author() -> None:
    verdict = verify_witness(RECORDS[0], author=RECORDS[0]["witness_id"])
    assert (verdict.ok, verdict.reason) == (False, "author")


def test_g12_the_other_keys_signature_fails_on_signature() -> None:
    swapped = {**RECORDS[0], "signature": RECORDS[1]["signature"]}
    assert verify_witness(swapped, author=AUTHOR).reason == "signature"
    stolen = {**RECORDS[0], "public_key": RECORDS[1]["public_key"],
              "public_key_fingerprint": RECORDS[1]["public_key_fingerprint"]}
    assert verify_witness(stolen, author=AUTHOR).reason == "signature"


# --- G-11: maximum bipartite matching ----------------------------------------------------------

def _signed(witness_id: str, seed: int) -> dict[str, Any]:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    record = {**copy.deepcopy(RECORDS[0]), "witness_id": witness_id, "public_key": public.hex(),
              "public_key_fingerprint": astp.sha3_256(public).hex()}
    record["commitment_hash"] = witness_commitment_v2(record)
    record["signature"] = key.sign(bytes.fromhex(record["commitment_hash"])).hex()
    return record


def _greedy(records: list[dict[str, Any]]) -> int:
    """What a greedy pass counts: take each valid record whose identity and key are unused."""
    ids: set[str] = set()
    keys: set[str] = set()
    for r in records:
        if verify_witness(r, author=AUTHOR).ok and r["witness_id"] not in ids and (
                r["public_key_fingerprint"] not in keys):
            ids.add(r["witness_id"])
            keys.add(r["public_key_fingerprint"])
    return len(ids)


def test_g11_threshold_is_a_maximum_matching_where_greedy_undercounts() -> None:
    # A signed with keys 1 and 2; B only with key 1. Greedy takes (A, 1) and leaves B out;
    # the maximum matching is (A, 2), (B, 1).
    records = [_signed("A", 1), _signed("A", 2), _signed("B", 1)]
    assert all(verify_witness(r, author=AUTHOR).ok for r in records)
    assert _greedy(records) == 1
    assert witness_threshold(records, author=AUTHOR) == 2


def test_g11_counts_identities_and_keys_once_and_only_valid_records() -> None:
    one_key_many_ids = [_signed(name, 7) for name in "ABC"]
    assert witness_threshold(one_key_many_ids, author=AUTHOR) == 1
    one_id_many_keys = [_signed("A", seed) for seed in (3, 4, 5)]
    assert witness_threshold(one_id_many_keys, author=AUTHOR) == 1
    invalid = {**_signed("C", 9), "signature": "00" * 64}
    assert witness_threshold([*RECORDS, invalid, _signed(AUTHOR, 10)], author=AUTHOR) == 2
    chain = [_signed(f"w{i}", i + 1) for i in range(40)] + [_signed(f"w{i}", i + 2) for i in range(40)]
    assert witness_threshold(chain, author=AUTHOR) == 40
    assert witness_threshold([], author=AUTHOR) == 0


def test_missing_cryptography_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.asymmetric.ed25519", None)
    with pytest.raises(MissingDependencyError, match=r"canonkit\[witness\]"):
        verify_witness(RECORDS[0], author=AUTHOR)
