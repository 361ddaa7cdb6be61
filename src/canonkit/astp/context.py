"""ASTP.md §9 context commitment (6.0.0): content, entry, tree, manifest, tombstone."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from canonkit.astp._live import hasher
from canonkit.astp.encoding import uuid_text
from canonkit.errors import InvalidFieldError, UnknownIdentifierError

__all__ = [
    "CAPTURE_POSTURES",
    "CAPTURE_STATES",
    "ENTRY_TYPES",
    "context_content_hash",
    "context_manifest_hash",
    "context_tree_root",
    "entry_hash",
    "entry_hashes",
    "tombstone_hash",
]

ENTRY_TYPES = frozenset({"attachment", "retrieval", "external", "tool_output"})
CAPTURE_STATES = frozenset({"captured", "declared_incomplete"})
VERIFIABILITY = frozenset({"verifiable", "attested"})
CAPTURE_POSTURES = frozenset({"all_external", "declared_only", "none"})


def context_content_hash(content: bytes, salt: bytes | None = None) -> str:
    """Plain ``CONTEXT_CONTENT:v1:`` or, with a 32-byte salt, ``CONTEXT_CONTENT_SALTED:v1:``."""
    if salt is None:
        return hasher.hash_fields(b"CONTEXT_CONTENT:v1:", (("BYTES", content),)).hex()
    if not isinstance(salt, (bytes, bytearray, memoryview)) or len(bytes(salt)) != 32:
        raise InvalidFieldError("a context salt is exactly 32 bytes")
    return hasher.hash_fields(b"CONTEXT_CONTENT_SALTED:v1:", (("BYTES", salt), ("BYTES", content))).hex()


def entry_hash(entry: Mapping[str, Any], resolves_entry_hash: Any = None) -> str:
    """``CONTEXT_ENTRY:v1:`` of one entry's stored fields (§9.2). ``resolves_entry_hash`` is
    the hash of the entry named by ``resolves`` (``entry_hashes`` resolves it for you)."""
    def need(name: str) -> Any:
        if name not in entry:
            raise InvalidFieldError(f"context entry: missing field {name!r}", detail=name)
        return entry[name]

    entry_type = need("entry_type")
    if not isinstance(entry_type, str) or entry_type not in ENTRY_TYPES:
        raise InvalidFieldError(f"context entry: unknown entry_type {entry_type!r}", detail="entry_type")
    state = need("capture_state")
    if not isinstance(state, str) or state not in CAPTURE_STATES:
        raise InvalidFieldError(f"context entry: unknown capture_state {state!r}", detail="capture_state")
    content_hash = entry.get("content_hash")
    salted = need("salted")
    verifiability = entry.get("verifiability_at_seal")
    if verifiability is not None and (not isinstance(verifiability, str)
                                      or verifiability not in VERIFIABILITY):
        raise InvalidFieldError(f"context entry: unknown verifiability_at_seal {verifiability!r}",
                                detail="verifiability_at_seal")
    if state == "declared_incomplete":
        if content_hash is not None or salted is not False or verifiability is not None:
            raise InvalidFieldError("context entry: declared_incomplete needs null content_hash, "
                                    "salted false and null verifiability_at_seal", detail="capture_state")
    elif content_hash is None or verifiability is None:
        raise InvalidFieldError("context entry: captured needs content_hash and verifiability_at_seal",
                                detail="capture_state")
    return hasher.hash_fields(b"CONTEXT_ENTRY:v1:", (
        ("UUID", need("entry_id")), ("UUID", need("episode_id")), ("STRING", entry_type),
        ("STRING", need("provided_to")), ("TIMESTAMP", need("provided_at")),
        ("UINT|NULL", entry.get("provided_before_sequence_index")), ("STRING", state),
        ("HASH|NULL", content_hash), ("BOOL", salted), ("STRING|NULL", verifiability),
        ("STRING|NULL", entry.get("media_type")), ("HASH|NULL", entry.get("source_version_hash")),
        ("HASH|NULL", resolves_entry_hash))).hex()


def entry_hashes(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """Entry hashes of an Episode's entries (same order), binding ``resolves`` as the named
    entry's hash: it must be in the same set, ``declared_incomplete``, and resolve nothing."""
    by_id: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise InvalidFieldError(f"context entry {i} is not an object", offset=i)
        key = uuid_text(entry.get("entry_id", ""))
        if key in by_id:
            raise InvalidFieldError(f"context entry {i}: duplicate entry_id {key}", offset=i)
        by_id[key] = entry
    out = []
    for i, entry in enumerate(entries):
        target = entry.get("resolves")
        resolved = None
        if target is not None:
            named = by_id.get(uuid_text(target))
            if named is None:
                raise InvalidFieldError(f"context entry {i}: resolves {target} not in this Episode", offset=i)
            if named.get("capture_state") != "declared_incomplete" or named.get("resolves") is not None:
                raise InvalidFieldError(f"context entry {i}: resolves {target}, which is not a "
                                        "declared_incomplete entry resolving nothing", offset=i)
            resolved = entry_hash(named)
        try:
            out.append(entry_hash(entry, resolved))
        except InvalidFieldError as exc:
            raise type(exc)(f"context entry {i}: {exc}", offset=i, detail=exc.detail) from None
    return out


def context_tree_root(entry_hash_list: Iterable[Any]) -> str | None:
    """sav-2 tree over the entry hashes sorted ascending bytewise; None for no entries."""
    raws = sorted(hasher.hash_bytes(h) for h in entry_hash_list)
    if not raws:
        return None
    return hasher.spine_root(raws, spine_algorithm_version=2)


def context_manifest_hash(capture_posture: str, entry_count: int, tree_root: Any) -> str:
    """``CONTEXT_MANIFEST:v1:`` ‖ STRING posture ‖ UINT n ‖ HASH|NULL root (G-41 posture check)."""
    if not isinstance(capture_posture, str) or capture_posture not in CAPTURE_POSTURES:
        raise UnknownIdentifierError(f"unknown capture_posture {capture_posture!r}", detail=capture_posture)
    if (entry_count == 0) != (tree_root is None):
        raise InvalidFieldError("context manifest: the tree root is null exactly when there are no entries")
    return hasher.hash_fields(b"CONTEXT_MANIFEST:v1:", (
        ("STRING", capture_posture), ("UINT", entry_count), ("HASH|NULL", tree_root))).hex()


def tombstone_hash(*, tombstone_id: Any, episode_id: Any, entry_id: Any, entry_hash: Any,
                   erased_at: Any, erasure_authority: str, erasure_request_id: str, erased_by: str) -> str:
    """``ERASURE_TOMBSTONE:v1:`` (§9.4)."""
    return hasher.hash_fields(b"ERASURE_TOMBSTONE:v1:", (
        ("UUID", tombstone_id), ("UUID", episode_id), ("UUID", entry_id), ("HASH", entry_hash),
        ("TIMESTAMP", erased_at), ("STRING", erasure_authority), ("STRING", erasure_request_id),
        ("STRING", erased_by))).hex()
