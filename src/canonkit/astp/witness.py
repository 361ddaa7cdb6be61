"""ASTP.md §15 witnesses and anchors: the ``WITNESS_COMMITMENT:v2:`` and
``ANCHOR_COMMITMENT:v2:`` hashes, the G-12 validity of one witness record (first failing
condition reported) and the G-11 threshold, a maximum bipartite matching between distinct
witness identities and distinct keys over the valid records.

Ed25519 verification uses the ``cryptography`` package (``pip install canonkit[witness]``);
without it ``verify_witness`` and ``witness_threshold`` raise ``MissingDependencyError``.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from canonkit.astp._live import hasher
from canonkit.astp.content import content_hash_v2
from canonkit.errors import ASTPError, MissingDependencyError

__all__ = ["WITNESS_CONDITIONS", "WitnessVerdict", "anchor_commitment_v2", "verify_witness",
           "witness_commitment_v2", "witness_threshold"]

#: G-12, in the order checked; a verdict's ``reason`` is the first one that fails
WITNESS_CONDITIONS = ("commitment", "fingerprint", "signature", "author")


def witness_commitment_v2(record: Mapping[str, Any]) -> str:
    """``WITNESS_COMMITMENT:v2:`` over the record's ten committed fields, as hex."""
    return content_hash_v2("witness_commitment", record)


def anchor_commitment_v2(inputs: Mapping[str, Any]) -> str:
    """``ANCHOR_COMMITMENT:v2:`` over the anchor's eight fields, as hex."""
    return content_hash_v2("anchor_commitment", inputs)


@dataclass(frozen=True)
class WitnessVerdict:
    """G-12 validity: ``ok``, or ``reason`` naming the first failing condition
    (``WITNESS_CONDITIONS``) and ``detail`` saying why."""
    ok: bool
    reason: str | None = None
    detail: str | None = None


def _ed25519_verify(public_key: bytes, signature: bytes, message: bytes) -> bool:
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        raise MissingDependencyError(
            "Ed25519 witness signatures need the 'cryptography' package: "
            "pip install 'canonkit[witness]'", detail="cryptography") from None
    try:
        Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def _hex_bytes(value: Any, size: int) -> bytes | None:
    if not isinstance(value, str) or len(value) != 2 * size:
        return None
    try:
        return bytes.fromhex(value)
    except ValueError:
        return None


def verify_witness(record: Mapping[str, Any], *, author: str) -> WitnessVerdict:
    """G-12: the commitment recomputes, the fingerprint is ``H(public_key)``, the Ed25519
    signature over the 32 raw commitment bytes verifies, and the witness is not the node's
    ``author``; the first condition that fails is the verdict's ``reason``."""
    if not isinstance(record, Mapping):
        return WitnessVerdict(False, "commitment", "a witness record is an object")
    try:
        computed = witness_commitment_v2(record)
        stored = hasher.hash_hex(record.get("commitment_hash"))
    except ASTPError as exc:
        return WitnessVerdict(False, "commitment", f"the commitment cannot be computed: {exc}")
    if computed != stored:
        return WitnessVerdict(False, "commitment", f"commitment_hash does not recompute "
                                                   f"(computed {computed})")
    public_key = _hex_bytes(record.get("public_key"), 32)
    if public_key is None:
        return WitnessVerdict(False, "fingerprint", "public_key is not 32 bytes of hex")
    fingerprint = record.get("public_key_fingerprint")
    if not isinstance(fingerprint, str) or fingerprint.lower() != hasher.sha3_256(public_key).hex():
        return WitnessVerdict(False, "fingerprint", "public_key_fingerprint is not H(public_key)")
    signature = _hex_bytes(record.get("signature"), 64)
    if record.get("signature_scheme", "ed25519") != "ed25519" or signature is None:
        return WitnessVerdict(False, "signature", "not an Ed25519 signature (64 bytes of hex)")
    if not _ed25519_verify(public_key, signature, bytes.fromhex(stored)):
        return WitnessVerdict(False, "signature", "the Ed25519 signature does not verify")
    if record.get("witness_id") == author:
        return WitnessVerdict(False, "author", "the witness is the node's author")
    return WitnessVerdict(True)


def witness_threshold(records: Iterable[Mapping[str, Any]], *, author: str) -> int:
    """G-11: the number of independent witnesses — the size of a maximum matching between
    distinct ``witness_id`` values and distinct key fingerprints, over the records valid
    under G-12 (one identity counts once however many keys it used, and one key once
    however many identities claimed it)."""
    edges: dict[str, set[str]] = {}
    for record in records:
        if verify_witness(record, author=author).ok:
            edges.setdefault(record["witness_id"], set()).add(
                record["public_key_fingerprint"].lower())
    match: dict[str, str] = {}   # fingerprint -> witness_id
    return sum(_augment(w, edges, match) for w in sorted(edges))


def _augment(root: str, edges: Mapping[str, set[str]], match: dict[str, str]) -> bool:
    """Kuhn's augmenting path from ``root`` (iterative: no recursion limit)."""
    seen: set[str] = set()
    stack = [root]
    via: dict[str, str] = {}                         # witness -> the key it was reached by
    keys = {root: iter(sorted(edges[root]))}
    while stack:
        witness = stack[-1]
        for key in keys[witness]:
            if key in seen:
                continue
            seen.add(key)
            if key not in match:                    # free key: flip the path
                match[key] = witness
                for deeper, shallower in zip(stack[:0:-1], stack[-2::-1]):
                    match[via[deeper]] = shallower
                return True
            nxt = match[key]
            via[nxt] = key
            keys[nxt] = iter(sorted(edges[nxt]))
            stack.append(nxt)
            break
        else:
            stack.pop()
    return False
