"""Computing every root of an Episode under a chosen construction, building sealed
``canonkit-episode/1`` documents (for synthetic corpora and tests), and the G-1 write guard
(ASTP.md §13.1: no Segment or Signal commit to a fixed Episode).

``compute_roots`` is the single place where an Episode's stored nodes become seal values;
``reproduce`` and ``seal_episode`` both use it, so a document sealed here reproduces there.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from canonkit.astp._py import common
from canonkit.astp._live import hasher
from canonkit.astp.context import context_manifest_hash, context_tree_root, entry_hashes
from canonkit.astp.documents import EPISODE_FORMAT, Episode, read_episode
from canonkit.astp.encoding import hash_hex
from canonkit.astp.roots import episode_root_v1, episode_root_v2, episode_root_v3, leaf_hash_v2
from canonkit.astp.sets import exclusion_hash, signal_manifest_hash, structural_manifest_hash
from canonkit.errors import (
    InvalidFieldError,
    InvalidRecordError,
    UnknownIdentifierError,
    WriteGuardError,
)

__all__ = [
    "EPISODE_STATUSES",
    "FIXED_STATES",
    "OPEN_STATES",
    "check_identifiers",
    "check_write",
    "compute_roots",
    "compute_seal",
    "is_fixed",
    "seal_episode",
    "spine_inputs",
]


def check_identifiers(sav: Any, ov: Any) -> None:
    """Refuse unknown identifiers (``UnknownIdentifierError``) and sav 2/3 with ov != 2
    (``InvalidFieldError``)."""
    if isinstance(sav, bool) or not isinstance(sav, int) or sav not in common.SPINE_VERSIONS:
        raise UnknownIdentifierError(f"unknown spine_algorithm_version {sav!r}", detail="spine_algorithm_version")
    if isinstance(ov, bool) or not isinstance(ov, int) or ov not in (1, 2):
        raise UnknownIdentifierError(f"unknown ordering_version {ov!r}", detail="ordering_version")
    if sav in (2, 3) and ov != 2:
        raise InvalidFieldError(f"spine_algorithm_version {sav} requires ordering_version 2, got {ov}",
                                detail="ordering_version")


def spine_inputs(episode: Episode, sav: int, ov: int,
                 signal_order: Sequence[str] | None = None) -> list[str]:
    """The spine inputs (hex) of ``episode`` under (sav, ov), without the sav 1 Episode input
    (``spine_root`` adds it): segment content hashes then, under ov 1, the SPINE Signals in
    ``signal_order`` (default: stored order); sav 2/3: v2 leaf hashes from stored fields."""
    if sav in (2, 3):
        leaves = []
        for s in episode.segments:
            if not s.has_leaf_fields:
                raise InvalidFieldError(f"segment {s.sequence_index} lacks the leaf-hash fields sav {sav} needs")
            leaves.append(leaf_hash_v2(s.node_id, s.node_type, s.schema_version, s.sequence_index,
                                       s.content_hash, s.parent_node_id))
        return leaves
    inputs = [s.content_hash for s in episode.segments]
    if ov == 1:
        inputs += [hash_hex(h) for h in signal_order] if signal_order is not None else \
            [s.content_hash for s in episode.signals]
    return inputs


def compute_roots(episode: Episode, sav: int, ov: int, *, signal_order: Sequence[str] | None = None,
                  capture_posture: str | None = None, spine_root: str | None = None) -> dict[str, Any]:
    """Every seal value of ``episode`` under (sav, ov): ``spine_root``, ``signal_manifest_hash``,
    ``exclusion_hash``, ``structural_manifest_hash`` (None under sav 0/1),
    ``context_manifest_hash`` and ``context_entry_count`` (None under sav 0/1/2),
    ``episode_root_hash``, ``leaf_count``. ``spine_root`` may be passed when already known
    (e.g. found by a tie search). Raises ``ASTPError`` subclasses when the construction
    cannot be applied (missing fields, non-UUID Episode id under sav 2/3, no spine leaf)."""
    check_identifiers(sav, ov)
    if spine_root is None:
        spine_root = hasher.spine_root(spine_inputs(episode, sav, ov, signal_order),
                                  spine_algorithm_version=sav, episode_id=episode.episode_id)
    version = 1 if sav in (0, 1) else 2
    signals = [s.content_hash for s in episode.signals]
    manifest = signal_manifest_hash(signals, version=version)
    exclusion = exclusion_hash(episode.excluded_hashes, version=version)
    out: dict[str, Any] = {"spine_root": spine_root, "signal_manifest_hash": manifest,
                           "exclusion_hash": exclusion, "structural_manifest_hash": None,
                           "context_manifest_hash": None, "context_entry_count": None,
                           "leaf_count": len(episode.segments)}
    if sav in (0, 1):
        out["episode_root_hash"] = episode_root_v1(spine_root, manifest, exclusion)
        return out
    structural = structural_manifest_hash(episode.structural_member_hashes)
    out["structural_manifest_hash"] = structural
    if sav == 2:
        out["episode_root_hash"] = episode_root_v2(episode.episode_id, spine_root, manifest, structural,
                                                   exclusion)
        return out
    if capture_posture is None:
        raise InvalidFieldError("sav 3 needs a capture_posture", detail="capture_posture")
    hashes = entry_hashes(episode.context_entries)
    context = context_manifest_hash(capture_posture, len(hashes), context_tree_root(hashes))
    out["context_manifest_hash"] = context
    out["context_entry_count"] = len(hashes)
    out["episode_root_hash"] = episode_root_v3(episode.episode_id, spine_root, manifest, structural,
                                               exclusion, context)
    return out


def compute_seal(document: Mapping[str, Any], *, spine_algorithm_version: int,
                 ordering_version: int = 2, signal_order: Sequence[str] | None = None,
                 capture_posture: str | None = None, sealed_at: str | None = None,
                 closed_at: str | None = None, annotate: bool = False) -> dict[str, Any]:
    """The seal record (``canonkit-episode/1`` ``seal`` object) that ``document``'s stored
    nodes produce under the given identifiers. ``signal_order`` is the fold order of the
    SPINE Signals under ov 1 (a permutation of their content hashes; default stored order);
    with ``annotate`` it is also written as ``resolved_signal_order``. ``sealed_at`` and
    ``closed_at`` default to the document's top-level values."""
    body = dict(document)
    body["format"] = EPISODE_FORMAT
    body["seal"] = None
    episode = read_episode(body)
    if signal_order is not None:
        stored = sorted(s.content_hash for s in episode.signals)
        if sorted(hash_hex(h) for h in signal_order) != stored:
            raise InvalidRecordError("signal_order is not a permutation of the SPINE Signals' content hashes")
    roots = compute_roots(episode, spine_algorithm_version, ordering_version, signal_order=signal_order,
                          capture_posture=capture_posture)
    seal: dict[str, Any] = {
        "spine_algorithm_version": spine_algorithm_version,
        "ordering_version": ordering_version,
        "hash_version": 1 if spine_algorithm_version in (0, 1) else 2,
        "sealed_at": sealed_at if sealed_at is not None else document.get("sealed_at"),
        "closed_at": closed_at if closed_at is not None else document.get("closed_at"),
        **{k: v for k, v in roots.items() if k != "context_entry_count"},
        "capture_posture": capture_posture if spine_algorithm_version == 3 else None,
        "context_entry_count": roots["context_entry_count"],
    }
    if annotate and signal_order is not None:
        seal["resolved_signal_order"] = [hash_hex(h) for h in signal_order]
    return seal


def seal_episode(document: Mapping[str, Any], **options: Any) -> dict[str, Any]:
    """A deep copy of ``document`` with ``seal`` set to ``compute_seal(document, **options)``."""
    sealed = copy.deepcopy(dict(document))
    sealed["format"] = EPISODE_FORMAT
    sealed["seal"] = compute_seal(document, **options)
    return sealed


# --- §13.1 G-1 write guard --------------------------------------------------------------

FIXED_STATES = frozenset({"CLOSING_PENDING_SEAL", "CLOSED", "CRYSTALLIZATION_PENDING", "SEALING",
                          "SEALED", "ARCHIVED"})
OPEN_STATES = frozenset({"CREATED", "ACTIVE", "PENDING_HITL", "CLOSING", "CRYSTALLIZED"})
EPISODE_STATUSES = FIXED_STATES | OPEN_STATES


def is_fixed(status: str) -> bool:
    """True for the six fixed states (incl. ``CLOSED``); unknown names are refused."""
    if not isinstance(status, str) or status not in EPISODE_STATUSES:
        raise UnknownIdentifierError(f"unknown EpisodeStatus {status!r}", detail=status)
    return status in FIXED_STATES


def check_write(status: str, what: str = "content") -> None:
    """Raise ``WriteGuardError`` when committing a Segment or Signal to an Episode in
    ``status`` is forbidden. Codicils are exempt and never go through this guard."""
    if is_fixed(status):
        raise WriteGuardError(f"G-1: cannot commit {what} to an Episode in fixed state {status}",
                              detail=status)
