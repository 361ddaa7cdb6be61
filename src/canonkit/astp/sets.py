"""ASTP.md §6–§7 set commitments: signal manifest, exclusion set (versions 1 and 2) and the
structural manifest. Inputs are digests (hex or 32 bytes); outputs lowercase hex."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from canonkit.astp._live import hasher
from canonkit.errors import UnknownIdentifierError

__all__ = ["exclusion_hash", "set_version_for", "signal_manifest_hash", "structural_manifest_hash"]

_PREFIXES = {
    "signal": {1: b"SIGNAL_MANIFEST:v1:", 2: b"SIGNAL_MANIFEST:v2:"},
    "exclusion": {1: b"EXCLUSION:v1:", 2: b"EXCLUSION:v2:"},
}


def _set(kind: str, hashes: Iterable[Any], version: Any) -> str:
    if isinstance(version, bool) or version not in (1, 2):
        raise UnknownIdentifierError(f"unknown {kind} set version {version!r}", detail=version)
    prefix = _PREFIXES[kind][version]
    return hasher.hash_set_v1(prefix, hashes) if version == 1 else hasher.hash_set_v2(prefix, hashes)


def set_version_for(spine_algorithm_version: int) -> int:
    """Set version used by a seal construction: 1 for sav 0/1, 2 for sav 2/3."""
    return 1 if spine_algorithm_version in (0, 1) else 2


def signal_manifest_hash(hashes: Iterable[Any], *, version: int) -> str:
    """Signal manifest over the SPINE-placed Signals' content hashes (a set)."""
    return _set("signal", hashes, version)


def exclusion_hash(hashes: Iterable[Any], *, version: int) -> str:
    """Exclusion set over the EPHEMERAL Segments' content hashes (a set)."""
    return _set("exclusion", hashes, version)


def structural_manifest_hash(member_hashes: Iterable[Any]) -> str:
    """``set("STRUCTURAL_MANIFEST:v1:", member hashes)`` (sav 2/3 only)."""
    return hasher.hash_set_v2(b"STRUCTURAL_MANIFEST:v1:", member_hashes)
