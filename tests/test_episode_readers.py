"""The compiled fast path and the general path of ``canonkit reverify`` and ``canonkit astp
reproduce`` give every Episode document one verdict — the same outcome and components,
or a refusal with the same error code and offset — however its text is mutated: keys
repeated at any depth, truncations, values of other types, huge numbers, lone
surrogates (``fuzz/episode_readers.py``, also run by the atheris target
``fuzz/fuzz_episode_readers.py``)."""
from __future__ import annotations

import importlib
import sys
from typing import Any

import orjson
import pytest
from conftest import REPO
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from canonkit.reverify import synthetic_corpus as synth
from canonkit.reverify import worker

sys.path.insert(0, str(REPO / "fuzz"))
readers_module = importlib.import_module("episode_readers")
harness = importlib.import_module("_harness")


def _documents() -> list[bytes]:
    docs = []
    for mix, seed in (("all-outcomes", 31), ("seed-table", 32)):
        for e in synth.generate(30, mix=mix, seed=seed, median_segments=4, por_fraction=0.5):
            if e.doc is not None:
                docs.append(orjson.dumps(e.doc))
    return docs


DOCUMENTS = _documents()
SEALED = next(d for d in DOCUMENTS if b'"seal":{' in d and b'"signals":[{' in d)
READERS = readers_module.Readers()
_PLANS = st.lists(st.tuples(st.integers(0, 255), st.integers(0, 5000)), min_size=1,
                  max_size=3)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.sampled_from(DOCUMENTS), plan=_PLANS)
@example(doc=SEALED, plan=[(0, 0)])     # a member repeated before itself: a forged first
@example(doc=SEALED, plan=[(2, 1)])     # a key repeated under an escaped spelling
@example(doc=SEALED, plan=[(5, 21)])    # a number over 64 bits
def test_mutated_episodes_get_one_verdict_from_every_reader(doc: bytes,
                                                            plan: list[tuple[int, int]]) -> None:
    readers_module.check(READERS, doc)
    for how, where in plan:
        doc = readers_module.mutate(doc, how, where)
        readers_module.check(READERS, doc)


@pytest.mark.parametrize("kind", readers_module.MUTATIONS)
def test_every_mutation_applies_at_every_depth(kind: str) -> None:
    """Each mutation changes some document, and repeats land at depth 1 and deeper."""
    how = readers_module.MUTATIONS.index(kind)
    doc = SEALED
    found = readers_module.spans(doc)
    assert found is not None
    changed = {readers_module.mutate(doc, how, where) for where in range(0, 400, 7)}
    assert len(changed - {doc}) > 10
    if kind.startswith("repeat"):
        depths = set()
        for where in range(len(found.members)):
            key_start = found.members[where][0]
            depths.add(sum(1 for s, e, k in found.values
                           if k in ("object", "array") and s < key_start < e))
        assert {1, 2, 3} <= depths


def test_the_check_fails_when_a_reader_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agreement is a real check: a general path that keeps the last of two repeated
    keys (as orjson does) is caught, and so is a fast path that reads past a repeat."""
    import canonkit._files as files

    forged = readers_module.mutate(SEALED, 0, 0)  # repeat_member, the copy before the member
    readers_module.check(READERS, forged)
    monkeypatch.setattr(worker, "loads_json", lambda data, source: orjson.loads(data))
    with pytest.raises(harness.Mismatch):
        readers_module.check(READERS, forged)
    monkeypatch.undo()

    def lenient(data: Any, source: str = "<json>") -> Any:
        return orjson.loads(data)

    monkeypatch.setattr(files, "loads_json", lenient)  # astp reproduce's reader, lenient
    with pytest.raises(harness.Mismatch):
        readers_module.check(READERS, forged)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.sampled_from(DOCUMENTS), plan=_PLANS)
@example(doc=b'{"a": 12345678901234567890}', plan=[(0, 0)])
@example(doc=b'{"\\u0061": 1, "a": 2}', plan=[(3, 0)])
def test_plain_json_never_lets_orjson_read_what_the_strict_reader_reads_otherwise(
        doc: bytes, plan: list[tuple[int, int]]) -> None:
    from conftest import backend_pair

    compiled, twin = backend_pair("astp", "scanner")
    for how, where in plan:
        for text in (doc, doc[:where % max(1, len(doc))]):
            if compiled.plain_json(text):
                assert twin.plain_json(text), text[:200]
        doc = readers_module.mutate(doc, how, where)


# --- the scanner kernel's own verdict (scan_verdict) ----------------------------------------

def _verdict_documents() -> list[bytes]:
    """Documents the kernel gives a verdict for: every construction, both formats, with and
    without context entries, structural members, excluded segments and signals."""
    docs = []
    for mix, seed in (("reproduced", 41), ("seed-table", 42), ("all-outcomes", 43)):
        for e in synth.generate(40, mix=mix, seed=seed, median_segments=5, por_fraction=0.4):
            if e.doc is not None:
                docs.append(orjson.dumps(e.doc))
    return docs


VERDICT_DOCUMENTS = _verdict_documents()
_DIGEST = "ab" * 32


def _edits(doc: dict[str, Any], rnd: Any) -> None:
    """One value-level change that keeps the document readable JSON: what the kernel must
    either decide exactly as the general path or decline."""
    seal = doc.get("seal") if isinstance(doc.get("seal"), dict) else {}
    stored = doc.get("stored") if isinstance(doc.get("stored"), dict) else doc
    keys = ["spine_root", "signal_manifest_hash", "exclusion_hash", "structural_manifest_hash",
            "context_manifest_hash", "episode_root_hash"]
    choice = rnd.randrange(22)
    if choice == 0:    # identifiers: other, absent, of another type
        seal[rnd.choice(["spine_algorithm_version", "ordering_version"])] = rnd.choice(
            [0, 1, 2, 3, 4, None, True, 1.0, "1"])
    elif choice == 1:  # a digest swapped, absent, upper case, not hex, not text
        key = rnd.choice(keys)
        seal[key] = rnd.choice([seal.get(rnd.choice(keys)), None, str(seal.get(key)).upper(),
                                "zz" * 32, _DIGEST, 7])
    elif choice == 2:
        seal.pop(rnd.choice(keys + ["capture_posture", "context_entry_count", "leaf_count"]), None)
    elif choice == 3:  # counts: off by one, a bool, a float
        key = rnd.choice(["leaf_count", "context_entry_count"])
        value = seal.get(key) if isinstance(seal.get(key), int) else 0
        seal[key] = rnd.choice([value + 1, True, 1.0, float(value), -1, "2"])
    elif choice == 4:  # instants: swapped, sealed before closed, naive, another shape
        key = rnd.choice(["sealed_at", "closed_at"])
        target = rnd.choice([seal, doc])
        target[key] = rnd.choice(["2001-01-01T00:00:00Z", "2999-01-01T00:00:00+05:30",
                                  "2024-01-01T00:00:00", "2024-01-01T00:00:00.5Z", None,
                                  "2024-02-30T00:00:00Z", 5])
    elif choice == 5:  # an annotation, admissible or not
        target = stored if doc.get("format") == "astp-proof-of-record/1" else seal
        hashes = [s.get("content_hash") for s in doc.get("signals") or [] if isinstance(s, dict)]
        target["resolved_signal_order"] = rnd.choice([hashes[::-1], [_DIGEST], [], None, "x"])
    elif choice == 6:  # the Episode id: not a UUID, upper case, empty, not text
        doc["episode_id"] = rnd.choice(["episode-7", str(doc.get("episode_id")).upper(), "", 7])
    elif choice == 7:  # structural members as nodes, with a bad hash, not a list
        doc["structural_members"] = rnd.choice([[{"type": "x"}], [{"hash": "zz"}], {}, [7],
                                                [{"hash": _DIGEST}, {"hash": _DIGEST}]])
        if "stored" in doc and isinstance(doc["stored"], dict):
            doc["stored"]["structural_member_hashes"] = rnd.choice([[_DIGEST], ["zz"], 3, None])
    elif choice == 8:  # Layer 3 present, null, a name
        doc["layer3"] = rnd.choice([None, "export.json", {}, 1])
    elif choice == 9:  # the status
        doc["status"] = rnd.choice([None, "SEALED", 5, "ACTIVE"])
    elif choice == 10:  # the seal itself
        doc["seal"] = rnd.choice([None, [], "seal", {}])
    elif choice == 11:  # the capture posture
        seal["capture_posture"] = rnd.choice(["none", "all_external", "declared_only", "other",
                                              None, 3])
    elif choice == 12:  # context entries: none, another count, not objects
        target = stored if doc.get("format") == "astp-proof-of-record/1" else doc
        entries = target.get("context_entries") or []
        target["context_entries"] = rnd.choice([[], entries[:1], entries + entries[:1], [1],
                                                None, {}])
    elif choice == 13:  # signals: untimed, tied, another placement, repeated
        for s in doc.get("signals") or []:
            if isinstance(s, dict) and rnd.random() < 0.5:
                s[rnd.choice(["received_at", "placement", "content_hash"])] = rnd.choice(
                    [None, "SPINE", "ANNOTATION", "2024-01-01T00:00:00Z", _DIGEST])
    elif choice == 14 and doc.get("format") == "astp-proof-of-record/1":
        key = rnd.choice(["signal_content_hashes", "excluded_content_hashes",
                          "structural_member_hashes"])
        stored[key] = rnd.choice([[_DIGEST, _DIGEST], [_DIGEST.upper()], None, ["zz"], 5, []])
    elif choice == 15:  # a segment committed after closure, or one without leaf fields
        segments = stored.get("segments") or []
        if segments and isinstance(segments[0], dict):
            segment = rnd.choice(segments)
            if rnd.random() < 0.5:
                segment["created_at"] = "2999-12-31T23:59:59.999999Z"
            else:
                segment.pop(rnd.choice(["node_id", "schema_version"]), None)
    elif choice == 16:  # all segments EPHEMERAL, or none at all
        segments = stored.get("segments") or []
        for segment in segments:
            if isinstance(segment, dict) and rnd.random() < 0.8:
                segment["retention_tier"] = "EPHEMERAL"
    elif choice == 17:
        seal["hash_version"] = rnd.choice([1, 2, None, "x"])
    elif choice == 18:  # a seal that also records the other ordering
        seal["ordering_version"] = 1 if seal.get("ordering_version") == 2 else 2
    elif choice == 19:  # another construction named
        seal["spine_algorithm_version"] = rnd.choice([0, 1, 2, 3])
    elif choice == 20:  # the profile (proof of record)
        doc["profile"] = rnd.choice(["full", "attested", None])
    else:               # the closure instant only on the seal
        doc.pop("closed_at", None)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.sampled_from(VERDICT_DOCUMENTS), edits=st.integers(1, 3),
       rnd=st.randoms(use_true_random=False))
def test_the_kernels_verdict_is_the_general_paths(doc: bytes, edits: int, rnd: Any) -> None:
    """Value-level changes to documents the kernel decides (identifiers, digests, counts,
    instants, annotations, ids, structural members, Layer 3, seals, postures, context
    entries, signals, segments): the fast path's line, the general path's and ``astp
    reproduce``'s verdict agree, and where the kernel gives a verdict it is reproduce's."""
    from conftest import backend_pair

    from canonkit.astp import reproduce
    from canonkit.astp.documents import Segment, Signal, read_episode_bytes

    compiled, _ = backend_pair("astp", "scanner")
    value = orjson.loads(doc)
    for _ in range(edits):
        _edits(value, rnd)
    data = orjson.dumps(value)
    readers_module.check(READERS, data)
    verdict, scanned = compiled.scan_verdict(data, Segment, Signal)
    if verdict is not None:
        result = reproduce(read_episode_bytes(data))
        assert verdict == (result.outcome, result.episode_id, result.components,
                           result.construction, result.order, result.flags, result.reason)
    if verdict is not None and value.get("layer3") is None:
        assert scanned is None
    else:  # no verdict, or a Layer 3 member to verify: the scan to read the Episode from
        again = compiled.scan_episode(data, Segment, Signal)
        assert (scanned is None) == (again is None)
        if scanned is not None:
            assert scanned[0] == again[0] and list(scanned[1]) == list(again[1])
            assert scanned[2:] == again[2:]


def test_the_kernel_decides_the_common_documents_as_reproduce_does() -> None:
    """The kernel's verdict is given for most unchanged documents — every construction,
    both formats, reproduced from the stored order or by searching tied signals, and
    rebuilt under another construction — and equals ``reproduce``'s (the order found
    included); where it declines, the general path is left a scan it can use."""
    from collections import Counter

    from conftest import backend_pair

    from canonkit.astp import reproduce
    from canonkit.astp.documents import Segment, Signal, read_episode_bytes

    compiled, twin = backend_pair("astp", "scanner")
    decided: Counter[tuple[str, str, str]] = Counter()
    for data in VERDICT_DOCUMENTS:
        verdict, scanned = compiled.scan_verdict(data, Segment, Signal)
        assert twin.scan_verdict(data, Segment, Signal)[0] is None  # the twin leaves it
        episode = read_episode_bytes(data)
        if verdict is None:
            continue
        result = reproduce(episode)
        assert verdict == (result.outcome, result.episode_id, result.components,
                           result.construction, result.order, result.flags, result.reason)
        decided[result.outcome, str(result.construction), episode.format] += 1
    outcomes = {outcome for outcome, _, _ in decided}
    assert outcomes == {"reproduced", "reproduced_by_search",
                        "reproduced_under_other_construction"}
    assert {c for _, c, _ in decided} >= {"sav0", "sav1", "sav2", "sav3"}
    assert {f for _, _, f in decided} == {"canonkit-episode/1", "astp-proof-of-record/1"}
    assert sum(decided.values()) > len(VERDICT_DOCUMENTS) // 2


@pytest.mark.parametrize("width", [1, 2, 8])
def test_the_kernels_tie_search_finds_what_reproduce_finds(width: int) -> None:
    """Episodes rebuilt by searching their tied signals: the kernel searches at two or more
    Keccak lanes (with one it leaves the search to the general path), under caps below, at
    and above the space, and its verdict — the order found included — is reproduce's."""
    import math

    from conftest import backend_module, backend_pair

    from canonkit.astp import reproduce
    from canonkit.astp.documents import Segment, Signal, read_episode_bytes

    kernels = backend_module("astp", "c")
    compiled, _ = backend_pair("astp", "scanner")
    if width > kernels._keccak_lanes()[1]:
        pytest.skip(f"{width}-lane Keccak not available on this CPU")
    searched = [d for d in VERDICT_DOCUMENTS if read_episode_bytes(d) is not None
                and reproduce(read_episode_bytes(d)).outcome == "reproduced_by_search"]
    assert searched
    kernels._set_keccak_lanes(width)
    try:
        decided = 0
        for data in searched:
            episode = read_episode_bytes(data)
            times = [s.received_at for s in episode.signals]
            space = math.prod(math.factorial(len([t for t in times if t == u]))
                              for u in set(times))
            for cap in (0, space - 1, space, 40320):
                verdict, _ = compiled.scan_verdict(data, Segment, Signal, cap)
                result = reproduce(episode, search_cap=cap)
                if verdict is None:
                    assert width == 1 or result.outcome != "reproduced_by_search"
                    continue
                decided += 1
                assert verdict == (result.outcome, result.episode_id, result.components,
                                   result.construction, result.order, result.flags,
                                   result.reason)
        assert (decided == 0) == (width == 1)
    finally:
        kernels._set_keccak_lanes(0)
