"""Synthetic corpora with a known answer for every Episode (REVERIFY.md §5).

Every Episode is built from random stored nodes and sealed with the real constructions of
``canonkit.astp`` (so the corpus is only as right as those constructions, and the
re-verifier must agree with the answer file). A recipe per outcome decides how the seal
relates to the stored nodes:

- ``reproduced``: sealed under the identifiers it records (sav 0, 1 or 2; ov 1 or 2);
- ``reproduced_under_other_construction``: records sav 1 but was folded with the sav 0 tree
  ("an earlier tree function replaced in place");
- ``reproduced_by_search``: ov 1 with tied signal groups (sizes 2–8, search space within the
  cap) folded in an order other than the stored one;
- ``reproduced_with_annotation``: the same, with the fold order recorded as
  ``resolved_signal_order``;
- ``not_reproducible``: tied groups beyond the search cap (one variant also took content
  after closure), a tampered segment, or an unknown identifier;
- ``no_seal_record``: status SEALED and ``sealed_at`` set, but no seal;
- ``unsealed``: an ACTIVE Episode; ``invalid_record``: truncated, non-JSON or non-Episode
  documents.

With ``layer3`` (a fraction), that share of the readable Episodes also carries a Layer 3
export in its ``layer3`` member: a clean one, or — for the ``layer3_violating`` share of
them — one that breaks a single rule, taking every class of
``canonkit.astp.layer3.synthetic_exports.VIOLATIONS`` in turn. The answer then says ``layer3`` (``ok``,
``failed`` or ``absent``) and ``layer3_vectors`` (the vector ids the findings must name).
Layer 3 draws from its own random stream, so the rest of the corpus is the same bytes
with or without it.

Deterministic: the same ``seed``, mix, size and options give the same bytes.
"""
from __future__ import annotations

import gzip
import math
import os
import random
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from .._files import AtomicWriter, validate_output_path, write_exclusive
from .._optional import require
from ..errors import CorpusExistsError, OutputPathError
from .runner import DEFAULT_SEARCH_CAP

# outcome recipes per mix, with integer weights (seed-table: the reproducibility study's 62-Episode table)
MIXES: dict[str, list[tuple[str, int]]] = {
    "seed-table": [
        ("reproduced", 45),
        ("reproduced_under_other_construction", 8),
        ("reproduced_by_search", 4),
        ("not_reproducible", 2),
        ("no_seal_record", 3),
    ],
    "all-outcomes": [
        ("reproduced", 6),
        ("reproduced_with_annotation", 2),
        ("reproduced_by_search", 2),
        ("reproduced_under_other_construction", 2),
        ("not_reproducible", 4),
        ("no_seal_record", 1),
        ("unsealed", 1),
        ("invalid_record", 3),
    ],
    "reproduced": [("reproduced", 1)],
}
FORMATS = ("canonkit-episode/1", "astp-proof-of-record/1")
EPOCH = datetime(2026, 1, 5, tzinfo=timezone.utc)


def allocate(mix: str, episodes: int) -> list[str]:
    """The outcome of each Episode before shuffling: the mix's weights scaled to
    ``episodes`` by largest remainder (exact for the weights' own total)."""
    try:
        weights = MIXES[mix]
    except KeyError:
        raise ValueError(f"unknown mix {mix!r} (expected one of {', '.join(MIXES)})") from None
    total = sum(w for _, w in weights)
    quotas = [episodes * w / total for _, w in weights]
    counts = [math.floor(q) for q in quotas]
    # hand the remaining Episodes to the largest remainders (ties: the mix's order)
    by_remainder = sorted(range(len(weights)), key=lambda i: (counts[i] - quotas[i], i))
    for i in by_remainder[: episodes - sum(counts)]:
        counts[i] += 1
    return [name for (name, _), n in zip(weights, counts) for _ in range(n)]


@dataclass
class SynthEpisode:
    """One generated document (``doc`` a dict, or ``raw`` bytes for deliberately broken
    ones) and its answer."""

    answer: dict[str, Any]
    doc: dict[str, Any] | None = None
    raw: bytes | None = None


def _ts(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds")


class _Maker:
    def __init__(self, seed: int, median_segments: int, por_fraction: float,
                 search_cap: int, not_reproducible_variants: int) -> None:
        self.rng = random.Random(seed)
        self.median = max(1, median_segments)
        self.por_fraction = por_fraction
        self.cap = search_cap
        self.nr_variants = not_reproducible_variants
        from .. import astp

        self.astp = astp

    # --- random material ---------------------------------------------------------
    def uuid4(self) -> str:
        v = self.rng.getrandbits(128)
        v = (v & ~(0xF000 << 64)) | (0x4000 << 64)  # version 4
        v = (v & ~(0xC000 << 48)) | (0x8000 << 48)  # RFC 4122 variant
        h = f"{v:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def digest(self) -> str:
        return self.rng.randbytes(32).hex()

    def segment_count(self) -> int:
        n = round(self.median * math.exp(self.rng.gauss(0.0, 0.9)))
        low = 2 if self.median < 20 else 10
        return max(low, min(n, max(5000, self.median * 10)))

    def tie_size(self) -> int:
        # 2..8, small groups common, 8 rare (P(k) halves per step)
        k = 2
        while k < 8 and self.rng.random() < 0.5:
            k += 1
        return k

    # --- one Episode ----------------------------------------------------------------
    def stored(self, tie_groups: list[int], *, ephemeral: bool = True,
               lateral: bool = True) -> dict[str, Any]:
        rng = self.rng
        ep = self.uuid4()
        start = EPOCH + timedelta(seconds=rng.randrange(0, 300 * 86400))
        n = self.segment_count()
        t = start
        segments = []
        for i in range(n):
            t += timedelta(milliseconds=rng.randrange(200, 5000))
            eph = ephemeral and n > 3 and rng.random() < 0.02
            segments.append({
                "node_id": self.uuid4(), "node_type": "segment", "schema_version": "1.0.0",
                "sequence_index": i, "content_hash": self.digest(), "parent_node_id": ep,
                "retention_tier": "EPHEMERAL" if eph else "STANDARD", "created_at": _ts(t),
            })
        # signals: singles with distinct instants, plus the tied groups, in arrival order
        singles = max(0, round(n / 10 * rng.uniform(0.3, 1.5)))
        slots: list[int] = [1] * singles + list(tie_groups)
        rng.shuffle(slots)
        signals = []
        st = start
        for size in slots:
            st += timedelta(milliseconds=rng.randrange(1, 4000) + 1)
            for _ in range(size):
                signals.append({"content_hash": self.digest(), "received_at": _ts(st),
                                "placement": "SPINE"})
        if lateral and rng.random() < 0.2:  # a non-SPINE signal: never a leaf, never in the manifest
            signals.append({"content_hash": self.digest(), "received_at": _ts(st),
                            "placement": "LATERAL"})
        closed = max(t, st) + timedelta(seconds=rng.randrange(1, 600))
        sealed = closed + timedelta(seconds=rng.randrange(0, 3600))
        return {"episode_id": ep, "segments": segments, "signals": signals,
                "closed_at": closed, "sealed_at": sealed, "tie_groups": tie_groups}

    @staticmethod
    def spine_signals(st: dict[str, Any]) -> list[str]:
        return [s["content_hash"] for s in st["signals"] if s["placement"] == "SPINE"]

    def fold_order(self, st: dict[str, Any]) -> list[str]:
        """A fold order that differs from the stored one only inside tied groups."""
        order: list[str] = []
        sig = [s for s in st["signals"] if s["placement"] == "SPINE"]
        i = 0
        while i < len(sig):
            j = i
            while j < len(sig) and sig[j]["received_at"] == sig[i]["received_at"]:
                j += 1
            group = [s["content_hash"] for s in sig[i:j]]
            if len(group) > 1:
                perm = group[:]
                while perm == group:
                    self.rng.shuffle(perm)
                group = perm
            order.extend(group)
            i = j
        return order

    def seal(self, st: dict[str, Any], *, built_sav: int, recorded_sav: int, ov: int,
             order: list[str] | None, members: list[str]) -> dict[str, Any]:
        a = self.astp
        ep = st["episode_id"]
        kept = [s for s in st["segments"] if s["retention_tier"] != "EPHEMERAL"]
        excluded = [s["content_hash"] for s in st["segments"] if s["retention_tier"] == "EPHEMERAL"]
        signals = self.spine_signals(st)
        if built_sav in (0, 1):
            inputs = [s["content_hash"] for s in kept]
            if ov == 1:
                inputs += order if order is not None else signals
            spine = a.spine_root(inputs, spine_algorithm_version=built_sav, episode_id=ep)
            manifest = a.signal_manifest_hash(signals, version=1)
            exclusion = a.exclusion_hash(excluded, version=1)
            structural = None
            root = a.episode_root_v1(spine, manifest, exclusion)
        else:
            leaves = [a.leaf_hash_v2(s["node_id"], s["node_type"], s["schema_version"],
                                     s["sequence_index"], s["content_hash"], s["parent_node_id"])
                      for s in kept]
            spine = a.spine_root(leaves, spine_algorithm_version=2)
            manifest = a.signal_manifest_hash(signals, version=2)
            exclusion = a.exclusion_hash(excluded, version=2)
            structural = a.structural_manifest_hash(members)
            root = a.episode_root_v2(ep, spine, manifest, structural, exclusion)
        return {
            "spine_algorithm_version": recorded_sav, "ordering_version": ov,
            "hash_version": 2 if recorded_sav >= 2 else 1,
            "sealed_at": _ts(st["sealed_at"]), "closed_at": _ts(st["closed_at"]),
            "spine_root": spine, "signal_manifest_hash": manifest, "exclusion_hash": exclusion,
            "structural_manifest_hash": structural, "episode_root_hash": root,
            "leaf_count": len(kept),
        }

    def episode_doc(self, st: dict[str, Any], seal: dict[str, Any] | None, status: str,
                    members: list[str], annotation: list[str] | None = None,
                    sealed: bool = True) -> dict[str, Any]:
        if seal is not None and annotation is not None:
            seal = {**seal, "resolved_signal_order": annotation}
        return {
            "format": "canonkit-episode/1",
            "episode_id": st["episode_id"],
            "status": status,
            "closed_at": _ts(st["closed_at"]) if status != "ACTIVE" else None,
            "sealed_at": _ts(st["sealed_at"]) if sealed else None,
            "segments": st["segments"],
            "signals": st["signals"],
            "structural_members": [{"hash": h} for h in members],
            "context_entries": st.get("context_entries", []),
            "seal": seal,
        }

    @staticmethod
    def por_doc(st: dict[str, Any], seal: dict[str, Any], members: list[str],
                annotation: list[str] | None = None) -> dict[str, Any]:
        kept = [s for s in st["segments"] if s["retention_tier"] != "EPHEMERAL"]
        if seal["spine_algorithm_version"] >= 2:
            segments = [{k: s[k] for k in ("node_id", "node_type", "schema_version",
                                            "sequence_index", "content_hash", "parent_node_id")}
                        for s in kept]
        else:
            segments = [{"leaf_index": i, "content_hash": s["content_hash"]}
                        for i, s in enumerate(kept)]
        return {
            "format": "astp-proof-of-record/1",
            "protocol_version": "5.1.0",
            "profile": "full",
            "episode_id": st["episode_id"],
            "seal": seal,
            "stored": {
                "segments": segments,
                "signal_content_hashes": _Maker.spine_signals(st),
                "excluded_content_hashes": [s["content_hash"] for s in st["segments"]
                                            if s["retention_tier"] == "EPHEMERAL"],
                "structural_member_hashes": members,
                **({"context_entries": st["context_entries"]}
                   if seal["spine_algorithm_version"] == 3 else {}),
                "resolved_signal_order": annotation,
            },
        }

    def render(self, st: dict[str, Any], seal: dict[str, Any], members: list[str],
               por_ok: bool, annotation: list[str] | None = None) -> tuple[str, dict[str, Any]]:
        if por_ok and self.rng.random() < self.por_fraction:
            return FORMATS[1], self.por_doc(st, seal, members, annotation)
        return FORMATS[0], self.episode_doc(st, seal, "SEALED", members, annotation)

    def tie_groups(self, max_space: int) -> list[int]:
        groups: list[int] = []
        space = 1
        for _ in range(self.rng.choice((1, 1, 1, 2))):
            k = self.tie_size()
            if space * math.factorial(k) <= max_space:
                groups.append(k)
                space *= math.factorial(k)
        return groups or [2]

    def members(self, sav: int) -> list[str]:
        return [self.digest() for _ in range(self.rng.randrange(0, 6))] if sav >= 2 else []

    def context_entries(self, st: dict[str, Any]) -> list[dict[str, Any]]:
        """0-4 context entries (6.0.0): captured or declared incomplete."""
        rng = self.rng
        entries = []
        n_segments = len(st["segments"])
        for k in range(rng.randrange(0, 5)):
            captured = rng.random() < 0.7
            at = st["closed_at"] - timedelta(seconds=rng.randrange(60, 3600))
            entries.append({
                "entry_id": self.uuid4(), "episode_id": st["episode_id"],
                "entry_type": rng.choice(("attachment", "retrieval", "external", "tool_output")),
                "provided_to": f"agent-{k % 3}", "provided_at": _ts(at),
                "provided_before_sequence_index": rng.randrange(0, n_segments)
                if rng.random() < 0.7 else None,
                "capture_state": "captured" if captured else "declared_incomplete",
                "content_hash": self.digest() if captured else None,
                "salted": False,
                "verifiability_at_seal": rng.choice(("verifiable", "attested"))
                if captured else None,
                "media_type": "text/plain" if captured else None,
                "source_version_hash": self.digest() if captured and rng.random() < 0.5
                else None,
                "resolves": None, "schema_version": "6.0.0",
                "erasure_state": "present", "pii_classification": None,
            })
        return entries

    def seal_v3(self, st: dict[str, Any], members: list[str]) -> dict[str, Any]:
        """A sav 3 seal (6.0.0, context manifest), computed by ``canonkit.astp``."""
        doc = self.episode_doc(st, None, "SEALED", members)
        posture = "declared_only" if st["context_entries"] else "none"
        seal: dict[str, Any] = self.astp.compute_seal(
            doc, spine_algorithm_version=3, ordering_version=2, capture_posture=posture)
        return seal

    # --- recipes ------------------------------------------------------------------------
    def make(self, outcome: str, variant: int) -> SynthEpisode:
        rng = self.rng
        answer: dict[str, Any] = {"outcome": outcome, "flags": [], "order": None}
        if outcome == "invalid_record":
            return self.invalid(variant, answer)
        if outcome in ("no_seal_record", "unsealed"):
            st = self.stored([])
            sealed = outcome == "no_seal_record"
            doc = self.episode_doc(st, None, "SEALED" if sealed else "ACTIVE", [], sealed=sealed)
            answer.update(episode_id=st["episode_id"], format=FORMATS[0], construction=None)
            return SynthEpisode(answer, doc)
        if outcome == "reproduced":
            r = rng.random()
            sav, ov = ((0, 2) if r < 0.15 else (1, 2) if r < 0.5 else (1, 1) if r < 0.75
                       else (2, 2) if r < 0.9 else (3, 2))
            ties = self.tie_groups(self.cap) if ov == 1 and rng.random() < 0.5 else []
            st = self.stored(ties)
            members = self.members(sav)
            if sav == 3:
                st["context_entries"] = self.context_entries(st)
                seal = self.seal_v3(st, members)
            else:
                seal = self.seal(st, built_sav=sav, recorded_sav=sav, ov=ov, order=None,
                                 members=members)
            fmt, doc = self.render(st, seal, members, por_ok=True)
            answer.update(construction=f"sav{sav}")
        elif outcome == "reproduced_under_other_construction":
            st = self.stored([])
            seal = self.seal(st, built_sav=0, recorded_sav=1, ov=2, order=None, members=[])
            fmt, doc = self.render(st, seal, [], por_ok=True)
            answer.update(construction="sav0")
        elif outcome in ("reproduced_by_search", "reproduced_with_annotation"):
            sav = 1 if rng.random() < 0.8 else 0
            st = self.stored(self.tie_groups(self.cap))
            order = self.fold_order(st)
            seal = self.seal(st, built_sav=sav, recorded_sav=sav, ov=1, order=order, members=[])
            if outcome == "reproduced_by_search":
                fmt, doc = FORMATS[0], self.episode_doc(st, seal, "SEALED", [])
            else:
                fmt, doc = self.render(st, seal, [], por_ok=True, annotation=order)
            answer.update(construction=f"sav{sav}", order=order)
        elif outcome == "not_reproducible":
            return self.not_reproducible(variant, answer)
        else:
            raise ValueError(f"no recipe for outcome {outcome!r}")
        answer.update(episode_id=doc["episode_id"], format=fmt)
        return SynthEpisode(answer, doc)

    def not_reproducible(self, variant: int, answer: dict[str, Any]) -> SynthEpisode:
        """Variants in rotation: (0) a tied group too large to search that also took a
        segment after closure; (1) tied groups whose search space is just over the cap
        (within reach of a longer search); (2) a tampered segment; (3) an unknown
        spine_algorithm_version."""
        kind = variant % self.nr_variants
        if kind in (0, 1):
            def space(gs: list[int]) -> int:
                return math.prod(math.factorial(g) for g in gs)

            if kind == 0:  # one group too large to search at all
                groups = [9]
                while space(groups) <= self.cap:
                    groups[0] += 1
            else:  # groups of at most 8 whose product is just over the cap
                groups = [8, 2]
                while space(groups) <= self.cap:
                    if groups[-1] < 8:
                        groups[-1] += 1
                    else:
                        groups.append(2)
            st = self.stored(groups)
            order = self.fold_order(st)
            seal = self.seal(st, built_sav=1, recorded_sav=1, ov=1, order=order, members=[])
            if kind == 0:  # G-1 violation: content committed after closure, after the seal
                late = st["closed_at"] + timedelta(seconds=self.rng.randrange(60, 86400))
                st["segments"].append({
                    "node_id": self.uuid4(), "node_type": "segment", "schema_version": "1.0.0",
                    "sequence_index": len(st["segments"]), "content_hash": self.digest(),
                    "parent_node_id": st["episode_id"], "retention_tier": "STANDARD",
                    "created_at": _ts(late),
                })
                answer["flags"] = ["post_closure_append"]
            answer["reason"] = "search_cap_exceeded"
            answer["search_space"] = math.prod(math.factorial(g) for g in groups)
            answer["order"] = order
        elif kind == 2:
            st = self.stored([])
            seal = self.seal(st, built_sav=1, recorded_sav=1, ov=2, order=None, members=[])
            victim = self.rng.choice([s for s in st["segments"]
                                      if s["retention_tier"] != "EPHEMERAL"])
            victim["content_hash"] = self.digest()
            answer["reason"] = "spine_root"
        else:
            st = self.stored([])
            seal = self.seal(st, built_sav=1, recorded_sav=1, ov=2, order=None, members=[])
            seal["spine_algorithm_version"] = 7
            answer["reason"] = "unknown_identifier"
        doc = self.episode_doc(st, seal, "SEALED", [])
        answer.update(episode_id=st["episode_id"], format=FORMATS[0], construction=None)
        return SynthEpisode(answer, doc)

    def invalid(self, variant: int, answer: dict[str, Any]) -> SynthEpisode:
        """(0) a truncated document, (1) a line that is not JSON, (2) JSON that is not an
        Episode (no segments)."""
        answer.update(construction=None, format=None, episode_id=None)
        kind = variant % 3
        if kind == 2:
            ep = self.uuid4()
            answer["episode_id"] = ep
            return SynthEpisode(answer, {"format": "canonkit-episode/1", "episode_id": ep,
                                         "status": "SEALED", "seal": None})
        if kind == 1:
            return SynthEpisode(answer, None, b"<episode id=%d> not JSON at all" % variant)
        st = self.stored([])
        seal = self.seal(st, built_sav=1, recorded_sav=1, ov=2, order=None, members=[])
        full = orjson.dumps(self.episode_doc(st, seal, "SEALED", []))
        return SynthEpisode(answer, None, full[: len(full) // 2])


class _Layer3:
    """Layer 3 exports for generated Episodes, from a random stream of their own."""

    def __init__(self, seed: int, fraction: float, violating: float) -> None:
        from ..astp.layer3 import synthetic_exports as l3synth

        self.rng = random.Random(f"layer3:{seed}")
        self.fraction, self.violating = fraction, violating
        self.make_export = l3synth.make_export
        self.classes = l3synth.VIOLATIONS
        self.turn = 0  # the next violation class

    def attach(self, item: SynthEpisode) -> None:
        """Give ``item`` an export (or none) and say in its answer what must be found."""
        doc = item.doc
        if doc is None or item.answer["outcome"] == "invalid_record":
            item.answer.update(layer3=None, layer3_vectors=[])  # no Episode to read
            return
        if self.rng.random() >= self.fraction:
            item.answer.update(layer3="absent", layer3_vectors=[])
            return
        violation = None
        if self.rng.random() < self.violating:
            violation = self.classes[self.turn % len(self.classes)]
            if violation == "L3-001" and not any(s.get("node_id") for s in doc.get("segments", ())):
                violation = None  # spine isolation needs Segments with node_id: next time
            else:
                self.turn += 1
        export, vectors = self.make_export(self.rng, violation=violation, episode=doc)
        doc["layer3"] = orjson.loads(orjson.dumps(export))  # as JSON holds it
        item.answer.update(layer3="failed" if vectors else "ok", layer3_vectors=vectors)


def generate(episodes: int, *, mix: str = "seed-table", seed: int = 0,
             median_segments: int = 200, por_fraction: float = 0.3,
             search_cap: int = DEFAULT_SEARCH_CAP, layer3: float = 0.0,
             layer3_violating: float = 0.5) -> Iterator[SynthEpisode]:
    """Yield ``episodes`` synthetic Episodes (shuffled outcome mix), each with its answer;
    ``layer3`` is the share of them carrying a Layer 3 export, ``layer3_violating`` the
    share of those exports that break a rule."""
    if episodes < 0:
        raise ValueError("episodes must be >= 0")
    if not (0.0 <= layer3 <= 1.0 and 0.0 <= layer3_violating <= 1.0):
        raise ValueError("layer3 and layer3_violating must be within [0, 1]")
    exports = _Layer3(seed, layer3, layer3_violating) if layer3 > 0 else None
    # the study's two unrebuilt Episodes are the two search-cap variants; other mixes
    # also rotate through tampering and unknown identifiers
    maker = _Maker(seed, median_segments, por_fraction, search_cap,
                   not_reproducible_variants=2 if mix == "seed-table" else 4)
    plan = allocate(mix, episodes)
    maker.rng.shuffle(plan)
    seen: dict[str, int] = {}
    for index, outcome in enumerate(plan):
        variant = seen.get(outcome, 0)
        seen[outcome] = variant + 1
        item = maker.make(outcome, variant)
        item.answer = {"index": index, **item.answer}
        if exports is not None:
            exports.attach(item)
        yield item


class _Sink:
    """Where a corpus goes, complete or not at all: a file through an atomic writer
    (compressed on the way for .gz/.zst), or a directory built under a temporary name
    beside the target and renamed into place at the end."""

    def __init__(self, out: str, replace: bool) -> None:
        self.out = out
        self.directory = out.endswith(os.sep) or os.path.isdir(out)
        self._file: Any = None
        self._stream: Any = None
        if self.directory:  # never replaced, even with force: only an empty one is taken
            target = os.path.normpath(out)
            if os.path.isdir(target) and os.listdir(target):
                raise CorpusExistsError(f"{out}: the directory exists and is not empty",
                                        detail=out)
            validate_output_path(target)
            parent, base = os.path.split(os.path.abspath(target))
            self._target = target
            self._tmp = tempfile.mkdtemp(prefix=f".{base}.", suffix=".partial", dir=parent)
            return
        name = out.lower()
        if name.endswith(".zst"):  # before the temporary exists: a missing package leaves none
            zstandard = require("zstandard", f"writing {out}")
        if not replace and os.path.lexists(out):
            raise CorpusExistsError(f"{out}: a corpus exists there (force, --force, "
                                    "replaces it)", detail=out)
        self._file = AtomicWriter(out, replace=replace)
        if name.endswith(".gz"):
            self._stream = gzip.GzipFile(fileobj=self._file, mode="wb", compresslevel=6)
        elif name.endswith(".zst"):
            self._stream = zstandard.ZstdCompressor(level=3).stream_writer(self._file,
                                                                           closefd=False)
        else:
            self._stream = self._file

    def write(self, index: int, data: bytes) -> None:
        if self.directory:  # inside a directory of its own, renamed into place at the end
            write_exclusive(os.path.join(self._tmp, f"{index:07d}.json"), data)
        else:
            self._stream.write(data)

    def commit(self) -> None:
        if self.directory:
            if os.path.isdir(self._target):
                os.rmdir(self._target)  # empty (checked): replaced by the finished one
            os.rename(self._tmp, self._target)
            return
        if self._stream is not self._file:
            self._stream.close()  # the compressor's last bytes, before the file commits
        self._file.commit()

    def abort(self) -> None:
        if self.directory:
            shutil.rmtree(self._tmp, ignore_errors=True)
            return
        try:
            # the compressor is closed first, whatever failed: left open, it would write
            # its trailer when garbage-collected, into a writer already aborted
            if self._stream is not self._file:
                self._stream.close()
        except Exception:  # noqa: BLE001 - the output is discarded; the first error wins
            pass
        finally:
            self._file.abort()


def _check_answers(out: str, answers: str, as_dir: bool, force: bool) -> None:
    """Refuse, before any work, an answer file that would destroy the corpus or that
    exists (without ``force``)."""
    target = validate_output_path(answers, input_dirs=[out] if as_dir else ())
    if os.path.realpath(out) == target:
        raise OutputPathError(f"{answers}: is the corpus ({out}) too; the corpus and its "
                              "answers need two files", detail=answers)
    if not force and os.path.lexists(answers):
        raise CorpusExistsError(f"{answers}: an answer file exists there (force, --force, "
                                "replaces it)", detail=answers)


def write_corpus(episodes: int, *, out: str, answers: str | None = None,
                 mix: str = "seed-table", seed: int = 0, median_segments: int = 200,
                 por_fraction: float = 0.3, search_cap: int = DEFAULT_SEARCH_CAP,
                 progress: bool | None = False, layer3: float = 0.0,
                 layer3_violating: float = 0.5, force: bool = False) -> dict[str, int]:
    """Write a corpus to ``out`` (``.jsonl``, ``.jsonl.gz``, ``.jsonl.zst``, a CBOR
    sequence ``.cborseq``/``.cbor``, or a directory — one ``.json`` per Episode — when
    ``out`` ends with a path separator or is an existing empty directory) and its answers
    as JSON lines. Both appear complete or not at all, through the output door
    (``canonkit._files.outputs``). An existing corpus or answer file is replaced only
    with ``force`` (CorpusExistsError otherwise; a directory must be empty, whatever
    ``force`` says); the answers must be another file than the corpus, and not inside a
    directory corpus (OutputPathError). ``progress`` None = on a terminal;
    ``layer3``/``layer3_violating`` as for :func:`generate`. Returns the count per
    outcome."""
    from .outcomes import OUTCOMES
    from .._progress import Progress

    counts = dict.fromkeys(OUTCOMES, 0)
    name = out.lower()
    as_cbor = name.endswith((".cborseq", ".cbor", ".cbors"))
    as_dir = out.endswith(os.sep) or os.path.isdir(out)
    if not as_dir and not as_cbor and not name.endswith((".jsonl", ".jsonl.gz", ".jsonl.zst")):
        raise ValueError(f"{out}: output must be .jsonl[.gz|.zst], .cborseq or a directory/")
    if as_cbor and layer3 > 0:
        # CBOR's deterministic encoding sorts map keys; Form B hashes nested objects in the
        # order they are written, so an export only travels intact in JSON
        raise ValueError(f"{out}: Layer 3 exports need a JSON corpus (.jsonl[.gz|.zst] or "
                         "a directory): a CBOR sequence sorts their keys")
    if answers is not None:
        _check_answers(out, answers, as_dir, force)
    encode = None
    if as_cbor:
        from .. import cbor

        encode = cbor.encode
    sink = _Sink(out, force)
    ans = None
    shown = Progress(episodes, progress, unit="Episodes", desc="synth")
    try:
        ans = AtomicWriter(answers, replace=force) if answers else None
        for ep in generate(episodes, mix=mix, seed=seed, median_segments=median_segments,
                           por_fraction=por_fraction, search_cap=search_cap,
                           layer3=layer3, layer3_violating=layer3_violating):
            counts[ep.answer["outcome"]] += 1
            if encode is not None:
                # a CBOR sequence cannot carry undelimitable garbage without ending the
                # file, so broken documents become non-Episode items there
                if ep.doc is not None:
                    data = encode(ep.doc)
                else:
                    data = encode(["not an Episode", ep.answer["index"]])
            elif ep.doc is not None:
                data = orjson.dumps(ep.doc)
            else:
                data = ep.raw or b""
            sink.write(ep.answer["index"], data if as_dir or encode is not None else data + b"\n")
            if ans is not None:
                ans.write(orjson.dumps(ep.answer) + b"\n")
            shown.update(1, 1)
        sink.commit()
        if ans is not None:
            ans.commit()
    except BaseException:
        sink.abort()
        if ans is not None:
            ans.abort()
        raise
    finally:
        shown.close()
    return counts
