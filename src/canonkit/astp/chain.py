"""ASTP.md §11 proof chains (G-13): verifying a chain of links and its chain root.

A link is a mapping with ``node_id`` (UUID text), ``parent_node_id`` (UUID text or null),
``spine_root`` (digest), optionally ``proof`` (an inclusion proof of the link's node: the
4.x form ``{leaf_hash, merkle_path, path_directions, spine_root}`` under sav 0/1 trees or the
version 2 form ``{leaf_hash, leaf_index, leaf_count, siblings, spine_root}`` under sav 2/3)
and optionally ``anchor`` (``{"log_timestamp": ISO 8601}``).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from canonkit._instant import instant_from_text
from canonkit.astp._live import hasher, prover
from canonkit.astp.audit import ChainVerdict
from canonkit.astp.encoding import uuid_text
from canonkit.astp.roots import chain_root
from canonkit.errors import ASTPError

__all__ = ["verify_proof_chain"]


def _proof_ok(proof: Mapping[str, Any]) -> bool:
    """The proof verifies against the root it states (as the reference does: a 4.x proof's
    tree is not the 4.x spine, so its root need not be the link's spine root)."""
    if "siblings" in proof:
        return prover.verify_inclusion_proof_v2(proof["leaf_hash"], proof["leaf_index"], proof["leaf_count"],
                                           proof["siblings"], proof["spine_root"])
    return prover.verify_inclusion_proof_v1(proof["leaf_hash"], proof["merkle_path"], proof["path_directions"],
                                       proof["spine_root"])


def _instant(value: Any) -> datetime:
    instant = instant_from_text(value) if isinstance(value, str) else value
    if not isinstance(instant, datetime) or instant.utcoffset() is None:
        raise ValueError("log_timestamp must be an ISO 8601 instant with a UTC offset")
    return instant


def verify_proof_chain(links: Sequence[Mapping[str, Any]], expected_chain_root: Any) -> ChainVerdict:
    """Check, in this order, reporting the first failure with its link index: (1) at least
    one link; (2) every present inclusion proof verifies (against the root it states);
    (3) causal order — each link's ``parent_node_id`` is the previous link's ``node_id``, or
    the previous node is an ancestor through ``parent_node_id`` among the earlier links;
    (4) anchor ``log_timestamp`` values never decrease; (5) the chain root recomputes
    (index None). A malformed link fails at its index."""
    if not links:
        return ChainVerdict(False, None, "an empty chain is invalid")
    roots: list[str] = []
    parents: dict[str, str | None] = {}
    ids: list[str] = []
    for i, link in enumerate(links):
        try:
            roots.append(hasher.hash_hex(link["spine_root"]))
            ids.append(uuid_text(link["node_id"]))
            parent = link.get("parent_node_id")
            parents[ids[-1]] = None if parent is None else uuid_text(parent)
            proof = link.get("proof")
            if proof is not None and not _proof_ok(proof):
                return ChainVerdict(False, i, "inclusion proof does not verify")
        except (ASTPError, KeyError, TypeError) as exc:
            return ChainVerdict(False, i, f"malformed link: {exc!r}")
    for i in range(1, len(links)):
        previous, current = ids[i - 1], parents[ids[i]]
        seen: set[str] = set()
        while current is not None and current != previous and current not in seen:
            seen.add(current)
            current = parents.get(current) if current in ids[:i] else None
        if current != previous:
            return ChainVerdict(False, i, "causal order: the previous link is not an ancestor")
    last: datetime | None = None
    for i, link in enumerate(links):
        anchor = link.get("anchor")
        if anchor is None:
            continue
        try:
            stamp = _instant(anchor["log_timestamp"])
        except (KeyError, TypeError, ValueError) as exc:
            return ChainVerdict(False, i, f"malformed anchor receipt: {exc!r}")
        if last is not None and stamp < last:
            return ChainVerdict(False, i, "anchor log_timestamp decreases")
        last = stamp
    try:
        expected = hasher.hash_hex(expected_chain_root)
    except ASTPError as exc:
        return ChainVerdict(False, None, f"malformed chain_root: {exc}")
    if chain_root(roots) != expected:
        return ChainVerdict(False, None, "chain_root does not recompute")
    return ChainVerdict(True)
