"""ASTP.md §15 other 5.0.0 content hashes (asides, soliloquies, links, witness, anchor).

Each function takes the construction's fields by name and returns the hash as hex.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from canonkit.astp._live import hasher
from canonkit.errors import InvalidFieldError

__all__ = ["CONTENT_LAYOUTS", "content_hash_v2", "public_key_fingerprint"]

#: construction name -> (prefix, [(field, kind)])
CONTENT_LAYOUTS: dict[str, tuple[bytes, list[tuple[str, str]]]] = {
    "aside": (b"ASIDE:v2:", [
        ("aside_id", "UUID"), ("parent_episode_id", "UUID"), ("parent_segment_id", "UUID"),
        ("parent_segment_content_hash", "HASH"), ("initiated_by_human", "STRING"),
        ("target_agent_id", "STRING"), ("opened_at", "TIMESTAMP")]),
    "aside_terminus": (b"ASIDE_TERMINUS:v2:", [
        ("aside_terminus_id", "UUID"), ("aside_id", "UUID"), ("parent_episode_id", "UUID"),
        ("aside_hash", "HASH"), ("produced_content_hashes", "LIST(HASH)"), ("close_reason", "STRING"),
        ("reference_scan_passed", "BOOL"), ("external_references_found", "LIST(UUID)"),
        ("termination_status", "STRING"), ("closed_at", "TIMESTAMP")]),
    "soliloquy": (b"SOLILOQUY:v2:", [
        ("soliloquy_id", "UUID"), ("parent_episode_id", "UUID"), ("parent_segment_id", "UUID"),
        ("parent_segment_content_hash", "HASH"), ("initiated_by_agent", "STRING"),
        ("opened_at", "TIMESTAMP")]),
    "deliberation_chain": (b"DELIBERATION_CHAIN:v2:", [
        ("soliloquy_id", "UUID"), ("deliberation_content_hashes", "LIST(HASH)")]),
    "soliloquy_conclusion": (b"SOLILOQUY_CONCLUSION:v2:", [
        ("conclusion_id", "UUID"), ("soliloquy_id", "UUID"), ("parent_episode_id", "UUID"),
        ("deliberation_chain_hash", "HASH"), ("conclusion_summary", "STRING"),
        ("merged_into_segment_id", "UUID"), ("termination_status", "STRING"),
        ("concluded_at", "TIMESTAMP")]),
    "link_signal": (b"LINK_SIGNAL:v2:", [
        ("signal_type", "STRING"), ("weight", "FLOAT"), ("value", "FLOAT"), ("computed_at", "TIMESTAMP")]),
    "episode_link": (b"EPISODE_LINK:v2:", [
        ("link_id", "UUID"), ("source_episode", "UUID"), ("target_episode", "UUID"),
        ("source_episode_root", "HASH|NULL"), ("target_episode_root", "HASH|NULL"),
        ("created_at", "TIMESTAMP"), ("link_type", "STRING"), ("link_strength", "FLOAT"),
        ("is_inferred", "BOOL"), ("inference_signal_hashes", "LIST(HASH)"),
        ("inference_threshold", "FLOAT|NULL"), ("retroactive", "BOOL"),
        ("source_version", "STRING|NULL"), ("target_version", "STRING|NULL")]),
    "witness_commitment": (b"WITNESS_COMMITMENT:v2:", [
        ("witness_id", "STRING"), ("node_id", "UUID"), ("node_type", "STRING"), ("root", "HASH"),
        ("root_version", "UINT"), ("sequence_index", "UINT"), ("logical_clock", "UINT"),
        ("witnessed_at", "TIMESTAMP"), ("role", "STRING"), ("role_detail", "STRING|NULL")]),
    "anchor_commitment": (b"ANCHOR_COMMITMENT:v2:", [
        ("node_id", "UUID"), ("node_type", "STRING"), ("workspace_id", "STRING"), ("root", "HASH"),
        ("root_version", "UINT"), ("crystallization_sequence", "UINT"), ("logical_clock", "UINT"),
        ("anchored_at", "TIMESTAMP")]),
}


def content_hash_v2(construction: str, fields: Mapping[str, Any]) -> str:
    """Hash of ``construction`` (a key of ``CONTENT_LAYOUTS``) over ``fields`` (a mapping;
    extra keys ignored, a missing non-nullable field refused)."""
    if construction not in CONTENT_LAYOUTS:
        raise InvalidFieldError(f"unknown content construction {construction!r}")
    prefix, layout = CONTENT_LAYOUTS[construction]
    values = []
    for name, kind in layout:
        if name not in fields and not kind.endswith("|NULL"):
            raise InvalidFieldError(f"{construction}: missing field {name!r}", detail=name)
        values.append((kind, fields.get(name)))
    return hasher.hash_fields(prefix, values).hex()


def public_key_fingerprint(public_key: bytes) -> str:
    """``hex(H(public_key))`` of a 32-byte Ed25519 public key."""
    if not isinstance(public_key, (bytes, bytearray)) or len(public_key) != 32:
        raise InvalidFieldError("an Ed25519 public key is 32 bytes")
    return hasher.sha3_256(bytes(public_key)).hex()
