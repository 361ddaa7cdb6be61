"""The ``read_segments`` kernel (docs/astp-kernel-api.md): compiled vs twin on valid and
mutated segment lists, and the Episode reader with the kernel against the reader alone
(a kernel that declines every item), which must give the same Episode or the same
``InvalidRecordError`` message."""
from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import backend_module, backend_pair
from hypothesis import example, given, settings
from hypothesis import strategies as st

from canonkit.astp import documents
from canonkit.errors import InvalidRecordError

EXAMPLES = settings(max_examples=150, deadline=None)

HEX = "0123456789abcdefABCDEF"
hex64 = st.text(HEX, min_size=64, max_size=64)
uuid_text = st.builds(lambda s: f"{s[:8]}-{s[8:12]}-{s[12:16]}-{s[16:20]}-{s[20:]}",
                      st.text(HEX, min_size=32, max_size=32))
instants = st.builds(lambda s, ms, tz: (datetime(2026, 10, 1, tzinfo=timezone.utc) + timedelta(
    seconds=s, milliseconds=ms)).astimezone(timezone(timedelta(hours=tz))).isoformat(timespec="milliseconds"),
    st.integers(0, 7200), st.integers(0, 999), st.integers(-5, 5))
#: values that break some field's canonical shape (or the reader's rules)
junk = st.sampled_from([None, True, False, -1, 0, 7, 2**70, 1.5, "", "x", "EPHEMERAL", "segment",
                        "0" * 63, "0" * 65, "g" * 64, "\uff10" * 64, "0" * 32,
                        "2026-10-01T00:00:00", "2026-10-01T00:00:00Z", "not a date",
                        "6462af29-f6d3-48b7-b658-c978521b526", "6462af29_f6d3_48b7_b658_c978521b526b",
                        "6462AF29-F6D3-48B7-B658-C978521B526B", [], {}, ["0" * 64]])
KEYS = ("node_id", "node_type", "schema_version", "sequence_index", "leaf_index", "content_hash",
        "parent_node_id", "retention_tier", "created_at", "hash_version", "leaf_hash")


@st.composite
def segment_item(draw: Any, index: int) -> dict[str, Any]:
    item: dict[str, Any] = {"content_hash": draw(hex64)}
    if draw(st.booleans()):
        item["sequence_index"] = index
    else:
        item["leaf_index"] = index
    if draw(st.booleans()):
        item.update(node_id=draw(uuid_text), node_type=draw(st.sampled_from(["segment", "tool_call"])),
                    schema_version="1.0.0", parent_node_id=draw(st.none() | uuid_text))
    if draw(st.booleans()):
        item["retention_tier"] = draw(st.sampled_from(["STANDARD", "EPHEMERAL", None]))
    if draw(st.booleans()):
        item["created_at"] = draw(st.none() | instants)
    if draw(st.integers(0, 3)) == 0:
        item["hash_version"] = draw(st.sampled_from([None, 1, 2]))
    if draw(st.integers(0, 3)) == 0:
        item["leaf_hash"] = draw(hex64)
    return item


@st.composite
def segment_lists(draw: Any) -> list[Any]:
    n = draw(st.integers(0, 8))
    items: list[Any] = [draw(segment_item(i)) for i in range(n)]
    for _ in range(draw(st.integers(0, 3))):  # mutations
        if not items:
            break
        i = draw(st.integers(0, len(items) - 1))
        how = draw(st.integers(0, 9))
        if how == 0:
            items[i] = copy.deepcopy(draw(junk))       # not an object (or an empty one)
        elif not isinstance(items[i], dict):
            continue
        elif how == 1:
            items[i].pop(draw(st.sampled_from(KEYS)), None)
        else:
            items[i][draw(st.sampled_from(KEYS))] = copy.deepcopy(draw(junk))
    return items


closed = st.none() | st.builds(lambda s: datetime(2026, 10, 1, tzinfo=timezone.utc) + timedelta(seconds=s),
                               st.integers(0, 7200))


def run(impl: Any, items: Any, start: int, closed_at: Any, proof_of_record: bool) -> Any:
    segments: list[Any] = []
    excluded: list[str] = []
    stop, late = impl.read_segments(items, start, lambda *a: a, segments, excluded, closed_at=closed_at,
                                    proof_of_record=proof_of_record)
    return stop, late, segments, excluded


@EXAMPLES
@given(segment_lists(), closed, st.booleans(), st.integers(0, 3))
@example([{"content_hash": "A" * 64, "sequence_index": 0}], None, False, 0)
@example([{"content_hash": "0" * 64, "sequence_index": True}], None, False, 0)
@example([{"content_hash": "0" * 64, "leaf_index": 0, "sequence_index": None}], None, True, 0)
def test_read_segments_differential(items: list[Any], closed_at: Any, por: bool, start: int) -> None:
    c, py = backend_pair("astp")
    start = min(start, len(items))
    assert run(c, items, start, closed_at, por) == run(py, items, start, closed_at, por)


@pytest.mark.parametrize("impl", ["c", "py"])
def test_read_segments_stops_at_first_other_item(impl: str) -> None:
    k = backend_module("astp", impl)
    good = {"content_hash": "AB" * 32, "sequence_index": 0, "node_id": "6462AF29-F6D3-48B7-B658-C978521B526B",
            "created_at": "2026-10-01T13:27:47.749+00:00", "retention_tier": "STANDARD"}
    eph = dict(good, retention_tier="EPHEMERAL", created_at="2026-10-02T00:00:00Z")
    closed_at = datetime(2026, 10, 1, 14, tzinfo=timezone.utc)
    stop, late, segments, excluded = run(k, [good, eph, dict(good, sequence_index=-1), good], 0, closed_at, False)
    assert (stop, late, excluded) == (2, True, ["ab" * 32])
    assert segments == [(0, "ab" * 32, "6462af29-f6d3-48b7-b658-c978521b526b", "segment", None, None,
                         "STANDARD", datetime(2026, 10, 1, 13, 27, 47, 749000, tzinfo=timezone.utc), None, None)]
    assert run(k, (good,), 0, None, False)[0] == 0           # not a list: nothing read
    assert run(k, [good, good], 2, None, False)[:2] == (2, False)


# --- the reader with the kernel == the reader alone -----------------------------------------

DECLINE = SimpleNamespace(read_segments=lambda items, start, *a, **k: (start, False))


def read(kernel: Any, doc: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        m.setattr(documents, "reader", kernel)
        try:
            return documents.read_episode(doc)
        except InvalidRecordError as exc:
            return type(exc), str(exc), exc.detail


@EXAMPLES
@given(segment_lists(), st.booleans(), st.none() | instants)
def test_reader_with_kernel_equals_reader_alone(items: list[Any], por: bool, closed_at: Any) -> None:
    c, py = backend_pair("astp")
    eid = "134c8396-7d97-428e-b874-a4e0237805b6"
    if por:
        doc: dict[str, Any] = {"format": documents.PROOF_OF_RECORD, "profile": "full", "episode_id": eid,
                               "stored": {"segments": items}, "seal": {"spine_root": "0" * 64}}
    else:
        doc = {"format": documents.EPISODE_FORMAT, "episode_id": eid, "closed_at": closed_at,
               "segments": items, "seal": None}
    mp = pytest.MonkeyPatch()
    try:
        alone = read(DECLINE, doc, mp)
        assert read(c, doc, mp) == alone
        assert read(py, doc, mp) == alone
    finally:
        mp.undo()


# --- leaf_hash_v2: the compiled C preimage for canonical inputs == the twin ------------------

texts = st.sampled_from(["segment", "tool_call", "", "1.0.0", "caf\u00e9", "cafe\u0301", "\U0001f600", "x" * 600,
                         "x" * 1100]) | st.text(max_size=12)


@EXAMPLES
@given(st.one_of(uuid_text, junk), texts | junk, texts | junk,
       st.sampled_from([0, 1, 2**63, 2**64 - 1, 2**64, -1, True, 3.0]) | st.integers(0, 10**6),
       st.one_of(hex64, junk), st.one_of(st.none(), uuid_text, junk))
def test_leaf_hash_v2_differential(node_id: Any, node_type: Any, schema: Any, index: Any, content: Any,
                                   parent: Any) -> None:
    c, py = backend_pair("astp")
    args = (node_id, node_type, schema, index, content, parent)
    outcomes = []
    for impl in (c, py):
        try:
            outcomes.append(impl.leaf_hash_v2(*args))
        except Exception as exc:  # the same class is the contract
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]


# --- created_at: the compiled parse of the common shape == the rule (canonkit._instant) ------------

instant_texts = st.builds(
    lambda y, mo, d, h, mi, s, frac, tz: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{frac}{tz}",
    st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25), st.integers(0, 60),
    st.integers(0, 61), st.sampled_from(["", ".1", ".12", ".123", ".1234", ".123456", ".1234567", "."]),
    st.sampled_from(["Z", "z", "", "+00:00", "-00:00", "+05:30", "-11:59", "+23:59", "+24:00", "+05:60",
                     "+0530", "+05", "+05:30:00", " +05:30"]))


@EXAMPLES
@given(st.lists(instant_texts | instants, min_size=1, max_size=6))
@example(["2026-10-01T13:27:47.749+00:00", "2024-02-29T00:00:00Z", "2023-02-29T00:00:00Z"])
def test_created_at_parse_differential(texts: list[str]) -> None:
    c, py = backend_pair("astp")
    items = [{"content_hash": "0" * 64, "sequence_index": i, "created_at": t} for i, t in enumerate(texts)]
    got = []
    for impl in (c, py):
        stop, _, segments, _ = run(impl, items, 0, None, False)
        got.append((stop, [(s[7], s[7].utcoffset(), s[7].tzinfo) for s in segments]))
    assert got[0] == got[1]
