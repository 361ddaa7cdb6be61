"""Seal reproduction for one Episode (ASTP.md §12, §16, §17.4; REVERIFY.md §2).

``reproduce(document)`` recomputes every stored root from stored nodes under the seal's own
identifiers, checks a ``resolved_signal_order`` annotation for admissibility, searches tied
Signal orders (ov 1, Signals with timestamps) up to a cap, then tries the other known
constructions, and returns a ``Reproduction`` with exactly one REVERIFY.md outcome.
Construction names are ``"sav<N>"`` (the seal's own ordering_version) or
``"sav<N>/ov<M>"`` (another ordering_version); see docs/astp.md.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import groupby
from typing import Any

from canonkit.astp._live import hasher, prover, scanner
from canonkit.astp.documents import (
    Episode, Segment, Signal, episode_from_scan, parse_instant, read_episode,
)
from canonkit.astp._py import common
from canonkit.astp.roots import leaf_hash_v1, leaf_hash_v2
from canonkit.astp.seal import check_identifiers, compute_roots
from canonkit.errors import ASTPError, InvalidFieldError, InvalidRecordError, UnknownIdentifierError

__all__ = ["COMPONENTS", "FLAGS", "OUTCOMES", "Reproduction", "construction_name", "reproduce",
           "reproduce_bytes", "tie_groups"]

OUTCOMES = ("reproduced", "reproduced_with_annotation", "reproduced_by_search",
            "reproduced_under_other_construction", "not_reproducible", "no_seal_record", "unsealed",
            "invalid_record")
COMPONENTS = ("spine_root", "signal_manifest", "exclusion", "structural_manifest", "context_manifest",
              "episode_root")
FLAGS = ("duplicate_signal", "post_closure_append", "stored_leaf_hash_mismatch")
#: component name -> seal key
_SEAL_KEY = {"spine_root": "spine_root", "signal_manifest": "signal_manifest_hash",
             "exclusion": "exclusion_hash", "structural_manifest": "structural_manifest_hash",
             "context_manifest": "context_manifest_hash", "episode_root": "episode_root_hash"}
_DIGEST_KEYS = tuple(_SEAL_KEY.values())
#: statuses that claim a seal (with ``sealed_at``): a missing seal record is NO_CRYSTAL
SEALED_STATUSES = frozenset({"SEALED", "ARCHIVED"})


@dataclass(frozen=True)
class Reproduction:
    """The verdict on one Episode; ``to_json()`` gives the report keys."""
    outcome: str
    episode_id: str | None
    components: dict[str, str]
    construction: str | None = None
    order: list[str] | None = None
    flags: list[str] = field(default_factory=list)
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "episode_id": self.episode_id,
                "components": dict(self.components), "construction": self.construction,
                "order": None if self.order is None else list(self.order),
                "flags": list(self.flags), "reason": self.reason}


def construction_name(sav: int, ov: int, sealed_ov: int) -> str:
    return f"sav{sav}" if ov == sealed_ov else f"sav{sav}/ov{ov}"


def _all(state: str) -> dict[str, str]:
    return {c: state for c in COMPONENTS}


@dataclass
class _Attempt:
    sav: int
    ov: int
    components: dict[str, str]
    how: str = "stored"              # stored | annotation | search
    order: list[str] | None = None
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def _admissible(annotation: Any, stored: list[str]) -> list[str] | None:
    """The annotation as lowercase hex when it is a multiset-permutation of the stored SPINE
    Signal hashes (test (a) of ASTP.md §12), else None."""
    if not isinstance(annotation, list) or not all(isinstance(h, str) for h in annotation):
        return None
    try:
        order = [hasher.hash_hex(h) for h in annotation]
    except ASTPError:
        return None
    return order if Counter(order) == Counter(stored) else None


def tie_groups(received_at: Sequence[datetime], offset: int = 0) -> list[tuple[int, int]]:
    """``(start, length)`` of each run (length >= 2) of equal consecutive instants, positions
    shifted by ``offset`` (the number of spine inputs before the Signals)."""
    groups = []
    position = offset
    for _, run in groupby(received_at):
        length = len(list(run))
        if length > 1:
            groups.append((position, length))
        position += length
    return groups


def _tie_groups(episode: Episode, offset: int) -> list[tuple[int, int]] | None:
    """Tied runs of the SPINE Signals as positions in the spine inputs; None when some Signal
    has no timestamp (no search possible)."""
    if any(s.received_at is None for s in episode.signals):
        return None
    return tie_groups([s.received_at for s in episode.signals], offset)  # type: ignore[misc]


class _Inputs:
    """The spine inputs of one Episode as buffers of 32-byte digests (the values and errors
    of ``seal.spine_inputs``, no Python object per input), each made once for all the
    constructions tried."""

    __slots__ = ("episode", "_content", "_signals", "_leaves", "_roots")

    def __init__(self, episode: Episode) -> None:
        self.episode = episode
        self._content: bytes | None = None
        self._signals: bytes | None = None
        self._leaves: bytes | None = None
        # the scanner kernel's table carries the stored-order roots its verdict folded
        known = getattr(episode.segments, "spine_roots", None)
        self._roots: dict[tuple[int, int], str] = dict(known) if known else {}

    def stored_root(self, sav: int, ov: int) -> str:
        """The spine root of the stored order under (sav, ov), folded once."""
        root = self._roots.get((sav, ov))
        if root is None:
            root = self._roots[sav, ov] = _spine_root(self.raw(sav, ov), sav,
                                                      self.episode.episode_id)
        return root

    def raw(self, sav: int, ov: int, signal_order: Sequence[str] | None = None) -> bytes:
        segments: Any = self.episode.segments
        if sav in (2, 3):
            if self._leaves is None:  # a refusal is not kept: its message names the sav
                self._leaves = segments.leaves_v2_raw(sav)
            return self._leaves
        if self._content is None:
            self._content = segments.content_raw()
        if ov != 1:
            return self._content
        if signal_order is not None:
            return self._content + b"".join(hasher.hash_bytes(h) for h in signal_order)
        if self._signals is None:
            self._signals = b"".join(hasher.hash_bytes(s.content_hash) for s in self.episode.signals)
        return self._content + self._signals


def _spine_root(raw: bytes, sav: int, episode_id: str) -> str:
    """``spine_root`` of the inputs in ``raw`` (ASTP.md §5): sav 0/1 the hex-text tree, sav 1
    with the Episode-identifier input first; sav 2/3 the raw-byte tree."""
    if not raw:  # no input: the kernel's own refusal, word for word
        return hasher.spine_root([], spine_algorithm_version=sav, episode_id=episode_id)
    if sav == 1:
        return hasher.merkle_root_v1(common.episode_leaf_input(episode_id) + raw).hex()
    if sav == 0:
        return hasher.merkle_root_v1(raw).hex()
    return hasher.merkle_root_v2(raw).hex()


def _spine(episode: Episode, seal: Mapping[str, Any], sav: int, ov: int, cap: int,
           attempt: _Attempt, inputs: _Inputs) -> tuple[str | None, str]:
    """Establish the spine under (sav, ov): the annotation (ov 1, admissible), the stored
    order, then the tie search. Returns the reproduced spine root (or None) and the root
    of the stored order."""
    sealed: str = seal["spine_root"]
    inputs.raw(sav, ov)  # a construction that cannot be applied is refused here, first
    if ov == 1 and episode.seal is not None and episode.seal.resolved_signal_order is not None:
        order = _admissible(episode.seal.resolved_signal_order,
                            [s.content_hash for s in episode.signals])
        if order is not None and _spine_root(inputs.raw(sav, ov, order), sav,
                                             episode.episode_id) == sealed:
            attempt.how, attempt.order = "annotation", order
            return sealed, sealed
        attempt.notes.append("resolved_signal_order inadmissible; ignored")
    root = inputs.stored_root(sav, ov)
    if root == sealed:
        return root, root
    if ov == 1 and sav in (0, 1) and episode.signals:
        offset = len(episode.segments)
        groups = _tie_groups(episode, offset)
        if groups is None:
            attempt.notes.append("signals carry no timestamps: no tie search possible")
        elif groups:
            space = math.prod(math.factorial(n) for _, n in groups)
            if space > cap:  # what the search says at once, without folding a tree for it
                attempt.notes.append(f"search cap hit ({space} orders > cap {cap})")
                return None, root
            segments: Any = episode.segments
            hexes: list[str] = segments.content_hex() + [s.content_hash for s in episode.signals]
            search = prover.TieSearch(hexes, groups, spine_algorithm_version=sav, episode_id=episode.episode_id)
            found, tried, _ = search.search(sealed, cap=cap)
            if found is not None:
                attempt.how = "search"
                attempt.order = [hexes[i] for i in found[offset:]]
                return sealed, root
            attempt.notes.append(f"tie search exhausted ({tried} orders)")
    return None, root


def _attempt(episode: Episode, seal: Mapping[str, Any], sav: int, ov: int, cap: int,
             inputs: _Inputs) -> _Attempt:
    attempt = _Attempt(sav, ov, _all("not_checked"))
    try:
        spine, stored_root = _spine(episode, seal, sav, ov, cap, attempt, inputs)
        posture = seal.get("capture_posture")
        # a spine not reproduced counts in stored order for the Episode root
        roots = compute_roots(episode, sav, ov, capture_posture=posture if sav == 3 else None,
                              spine_root=spine if spine is not None else stored_root)
    except ASTPError as exc:
        attempt.components = _all("not_checked")
        attempt.failures.append(f"construction not applicable: {exc}")
        return attempt
    attempt.components["spine_root"] = "ok" if spine is not None else "mismatch"
    if spine is None:
        attempt.failures.append("spine_root")
    checked = ["signal_manifest", "exclusion", "episode_root"]
    if sav in (2, 3):
        checked.append("structural_manifest")
    if sav == 3:
        checked.append("context_manifest")
    for name in COMPONENTS[1:]:
        if name not in checked:
            continue
        sealed_value = seal.get(_SEAL_KEY[name])
        if sealed_value is None:
            attempt.components[name] = "absent"  # a pre-4.3.0 seal never recorded it
            continue
        ok = roots[_SEAL_KEY[name]] == sealed_value
        if name == "context_manifest" and seal.get("context_entry_count") != roots["context_entry_count"]:
            ok = False
        attempt.components[name] = "ok" if ok else "mismatch"
        if not ok:
            attempt.failures.append(name)
    leaf_count = seal.get("leaf_count")
    if leaf_count is not None and leaf_count != roots["leaf_count"]:
        attempt.failures.append(f"leaf_count {leaf_count} != {roots['leaf_count']} segments")
    return attempt


def _refusal(seal: Mapping[str, Any], episode: Episode) -> str | None:
    """Why a seal record is refused before any hashing (ASTP.md §17.4 step 1), or None."""
    for key in _DIGEST_KEYS:
        value = seal.get(key)
        if value is not None:
            try:
                if not isinstance(value, str):
                    raise ASTPError("not text")
                hasher.hash_hex(value)
            except ASTPError:
                return f"refused: seal.{key} is not a 64-hex-character digest"
    sav = seal.get("spine_algorithm_version")
    if seal.get("spine_root") is None:
        return "refused: seal.spine_root is missing"
    if sav in (2, 3):
        for key in ("signal_manifest_hash", "exclusion_hash", "structural_manifest_hash", "episode_root_hash"):
            if seal.get(key) is None:
                return f"refused: seal.{key} is required under spine_algorithm_version {sav}"
    if sav == 3:
        for key in ("context_manifest_hash", "capture_posture", "context_entry_count"):
            if seal.get(key) is None:
                return f"refused: seal.{key} is required under spine_algorithm_version 3"
    count = seal.get("leaf_count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        return "refused: seal.leaf_count is not an integer"
    try:
        sealed_at = parse_instant(seal.get("sealed_at"), "seal.sealed_at") or episode.sealed_at
        closed_at = parse_instant(seal.get("closed_at"), "seal.closed_at") or episode.closed_at
    except InvalidRecordError as exc:
        return f"refused: {exc}"
    if sealed_at is not None and closed_at is not None and sealed_at < closed_at:
        return "refused: sealed_at is earlier than closed_at"
    return None


def _leaf_flags(episode: Episode) -> set[str]:
    if not getattr(episode.segments, "stored_leaf_hashes", True):
        return set()
    for s in episode.segments:
        if s.leaf_hash is None or not s.has_leaf_fields:
            continue
        try:
            if (s.hash_version or 1) == 1:
                computed = leaf_hash_v1(s.node_id, s.node_type, s.schema_version, s.sequence_index,
                                        s.content_hash, s.parent_node_id)
            elif s.hash_version == 2:
                computed = leaf_hash_v2(s.node_id, s.node_type, s.schema_version, s.sequence_index,
                                        s.content_hash, s.parent_node_id)
            else:
                continue
        except ASTPError:
            return {"stored_leaf_hash_mismatch"}
        if computed != s.leaf_hash:
            return {"stored_leaf_hash_mismatch"}
    return set()


def _alternatives(sav: int, ov: int) -> list[tuple[int, int]]:
    """Other constructions, nearest first: same family and ordering, then other ordering,
    then the other family."""
    pairs = [(s, o) for s in (0, 1, 2, 3) for o in (1, 2) if not (s in (2, 3) and o != 2)]
    pairs.remove((sav, ov))

    def nearness(pair: tuple[int, int]) -> tuple[bool, bool, int, int]:
        s, o = pair
        return (s // 2 != sav // 2, o != ov, abs(s - sav), s)
    return sorted(pairs, key=nearness)


def _sealed_instant(seal: Mapping[str, Any], episode: Episode) -> datetime | None:
    try:
        return parse_instant(seal.get("sealed_at"), "seal.sealed_at") or episode.sealed_at
    except InvalidRecordError:
        return episode.sealed_at  # judged (refused) later by _refusal


def _check_cap(search_cap: Any) -> None:
    if isinstance(search_cap, bool) or not isinstance(search_cap, int) or search_cap < 0:
        raise InvalidFieldError(f"search_cap must be a non-negative integer, got {search_cap!r}")


def reproduce_bytes(data: bytes, *, search_cap: int = 40320
                    ) -> tuple[Reproduction, Episode | None] | None:
    """``reproduce`` of an Episode document's JSON text on the fast path, with the Episode
    read (None when the scanner kernel gave the verdict itself and the document carries no
    Layer 3 member, the common Episode); None when the text is outside the fast path (then
    ``reproduce(canonkit._files.loads_json(data))`` decides, alike). Raises as
    ``read_episode_bytes`` and ``reproduce`` do."""
    _check_cap(search_cap)
    verdict, scanned = scanner.scan_verdict(data, Segment, Signal, search_cap)
    episode = episode_from_scan(scanned)  # with a verdict: read only for its Layer 3 member
    if verdict is not None:
        return Reproduction(*verdict), episode
    if episode is None:
        return None
    return reproduce(episode, search_cap=search_cap), episode


def reproduce(document: Any, *, search_cap: int = 40320,
              legacy_sav0_before: datetime | None = None) -> Reproduction:
    """Reproduce the seal of one Episode document (a parsed ``astp-proof-of-record/1`` or
    ``canonkit-episode/1`` dict, or an ``Episode``). Raises ``InvalidRecordError`` when the
    document cannot be read as an Episode.

    ``search_cap`` bounds the tie search (number of candidate orders). ``legacy_sav0_before``
    is ASTP.md §3's explicit history override: a seal *without* ``spine_algorithm_version``
    sealed before that instant is read as sav 0 instead of the default 1 (noted in
    ``reason``); recorded identifiers are never overridden."""
    _check_cap(search_cap)
    if legacy_sav0_before is not None and (not isinstance(legacy_sav0_before, datetime)
                                           or legacy_sav0_before.utcoffset() is None):
        raise InvalidFieldError("legacy_sav0_before must be a timezone-aware datetime")
    episode = document if isinstance(document, Episode) else read_episode(document)
    flags = sorted(set(episode.flags) | _leaf_flags(episode))
    eid = episode.episode_id
    if episode.seal is None:
        if episode.sealed_at is not None or episode.status in SEALED_STATUSES:
            return Reproduction("no_seal_record", eid, _all("not_checked"), flags=flags,
                                reason="sealed status or sealed_at but no seal record (G-40 NO_CRYSTAL)")
        return Reproduction("unsealed", eid, _all("not_checked"), flags=flags)
    seal = dict(episode.seal.values)
    notes = []
    sav, ov = seal.get("spine_algorithm_version"), seal.get("ordering_version")
    if sav is None:
        instant = _sealed_instant(seal, episode)
        if legacy_sav0_before is not None and instant is not None and instant < legacy_sav0_before:
            sav = 0
            notes.append(f"spine_algorithm_version absent: read as 0 (sealed before the legacy "
                         f"cut-off {legacy_sav0_before.isoformat()})")
        else:
            sav = 1
            notes.append("spine_algorithm_version absent: read as 1 (defaulted)")
        seal["spine_algorithm_version"] = sav
    if ov is None:
        ov, seal["ordering_version"] = 1, 1
        notes.append("ordering_version absent: read as 1 (defaulted)")
    try:
        check_identifiers(sav, ov)
    except UnknownIdentifierError as exc:
        return Reproduction("not_reproducible", eid, _all("not_checked"), flags=flags,
                            reason=f"unknown_identifier: {exc}")
    except ASTPError as exc:
        return Reproduction("not_reproducible", eid, _all("not_checked"), flags=flags, reason=f"refused: {exc}")
    refusal = _refusal(seal, episode)
    if refusal is not None:
        return Reproduction("not_reproducible", eid, _all("not_checked"), flags=flags, reason=refusal)
    seal = {k: (v.lower() if k in _DIGEST_KEYS and isinstance(v, str) else v) for k, v in seal.items()}
    if episode.profile == "attested":
        return Reproduction("not_reproducible", eid, _all("not_checked"), flags=flags,
                            reason="attested profile: stored inputs withheld, no root can be rebuilt")
    inputs = _Inputs(episode)
    claimed = _attempt(episode, seal, sav, ov, search_cap, inputs)
    if claimed.ok:
        outcome = {"stored": "reproduced", "annotation": "reproduced_with_annotation",
                   "search": "reproduced_by_search"}[claimed.how]
        note = "; ".join(notes + [n for n in claimed.notes if claimed.how != "stored" or "inadmissible" in n])
        return Reproduction(outcome, eid, claimed.components, construction_name(sav, ov, ov), claimed.order,
                            flags, note or None)
    for alt_sav, alt_ov in _alternatives(sav, ov):
        other = _attempt(episode, seal, alt_sav, alt_ov, search_cap, inputs)
        if other.ok:
            return Reproduction("reproduced_under_other_construction", eid, other.components,
                                construction_name(alt_sav, alt_ov, ov), other.order, flags,
                                "; ".join(notes + [(f"seal names sav{sav}/ov{ov}; rebuilt only under "
                                                   f"{construction_name(alt_sav, alt_ov, ov)}")]))
    reason = "mismatch: " + ", ".join(claimed.failures)
    if claimed.notes:
        reason += "; " + "; ".join(claimed.notes)
    if notes:
        reason += "; " + "; ".join(notes)
    return Reproduction("not_reproducible", eid, claimed.components, None, None, flags, reason)
