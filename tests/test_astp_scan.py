"""The Episode document scanner (reader kernel ``scan_episode``) and the fast path built on
it (``astp.documents.read_episode_bytes``): wherever the fast path reads a document, the
Episode, any refusal and the reproduction equal the general reader's (the strict JSON
reader + the Episode reader), on synthetic corpora and on mutations of their text; the
compiled scanner never reads a document the twin's would not, and where both read one they
agree."""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from conftest import backend_module, backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from canonkit.astp import reproduce
from canonkit.astp.documents import Segment, Signal, read_episode, read_episode_bytes
from canonkit._files import loads_json
from canonkit.errors import CanonkitError, JSONInputError
from canonkit.reverify import synthetic_corpus as synth


def _corpus() -> list[bytes]:
    docs = []
    for mix, seed in (("all-outcomes", 3), ("seed-table", 4)):
        for e in synth.generate(60, mix=mix, seed=seed, median_segments=8, por_fraction=0.5):
            docs.append(e.raw if hasattr(e, "raw") and e.raw is not None else orjson.dumps(e.doc))
    return docs


CORPUS = _corpus()


def _general(data: bytes) -> tuple[str, Any]:
    try:
        doc = loads_json(data)
    except JSONInputError:
        return "not json", None
    try:
        return "episode", read_episode(doc)
    except CanonkitError as exc:
        return "refused", (type(exc).__name__, str(exc))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        return "crash", type(exc).__name__


def _fields(episode: Any) -> tuple[Any, ...]:
    return (episode.format, episode.episode_id, episode.profile, episode.status,
            episode.closed_at, episode.sealed_at, list(episode.segments),
            list(episode.signals), episode.excluded_hashes, episode.structural_member_hashes,
            episode.context_entries, episode.seal, episode.flags)


def _verdict(episode_or_doc: Any) -> Any:
    try:
        return reproduce(episode_or_doc).to_json()
    except CanonkitError as exc:
        return ("refused", str(exc))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        return ("crash", type(exc).__name__)


def check(data: bytes) -> bool:
    """The fast path agrees with the general reader on ``data``; True if it read it."""
    try:
        fast = read_episode_bytes(data)
    except CanonkitError as exc:
        kind, value = _general(data)
        assert (kind, value) == ("refused", (type(exc).__name__, str(exc)))
        return True
    if fast is None:
        return False
    kind, slow = _general(data)
    assert kind == "episode", (kind, slow)
    assert _fields(fast) == _fields(slow)
    assert _verdict(fast) == _verdict(loads_json(data))
    return True


def test_every_synthetic_document_takes_the_fast_path_and_agrees() -> None:
    for data in CORPUS:
        taken = check(data)
        assert taken or _general(data)[0] != "episode"  # only broken documents go around


# --- mutations of the text -------------------------------------------------------------

_EDITS = [
    (rb'"sequence_index":(\d+)', rb'"sequence_index":\1.0'),
    (rb'"sequence_index":(\d+)', rb'"sequence_index":0\1'),
    (rb'"sequence_index":(\d+)', rb'"sequence_index":18446744073709551616'),
    (rb'"sequence_index":(\d+)', rb'"sequence_index":-\1'),
    (rb'"sequence_index":(\d+)', rb'"sequence_index":  \1 '),
    (rb'"node_type":"segment"', rb'"node_type":"s\u0065gment"'),
    (rb'"node_type":"segment"', rb'"node_type":"s\xc3\xa9gment"'),
    (rb'"node_type":"segment"', rb'"node_type":null'),
    (rb'"schema_version":"([^"]*)"', rb'"schema_version":1'),
    (rb'"content_hash":"([0-9a-f])', rb'"content_hash":"X'),
    (rb'"content_hash":"([0-9a-f]{10})', rb'"content_hash":"ABCDEF0123'),
    (rb'"content_hash":"([0-9a-f])', rb'"content_hash":"\u0030'),
    (rb'"node_id":"([0-9a-f-]{36})"', rb'"node_id":null'),
    (rb'"node_id":"([0-9a-f]{8})-', rb'"node_id":"\1_'),
    (rb'"parent_node_id":"([0-9a-f-]{36})"', rb'"parent_node_id":null'),
    (rb'"retention_tier":"STANDARD"', rb'"retention_tier":"EPHEMERAL"'),
    (rb'"retention_tier":"STANDARD"', rb'"retention_tier":7'),
    (rb'"retention_tier":"STANDARD"', rb'"retention_tier":null'),
    (rb'"created_at":"([^"]*)"', rb'"created_at":null'),
    (rb'"created_at":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d+\+00:00"', rb'"created_at":"\1Z"'),
    (rb'"created_at":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d+\+00:00"', rb'"created_at":"\1.5+00:00"'),
    (rb'"created_at":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)\+00:00"', rb'"created_at":"\1-05:30"'),
    (rb'"created_at":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)\+00:00"', rb'"created_at":"\1"'),
    (rb'"created_at":"\d{4}-(\d\d)-\d\d', rb'"created_at":"2024-02-30'),
    (rb'"created_at":"\d{4}-(\d\d)-\d\d', rb'"created_at":"2024-02-29'),
    (rb'"created_at":"\d{4}-(\d\d)-\d\d', rb'"created_at":"2099-12-31'),
    (rb'"received_at":"\d{4}-(\d\d)-\d\d', rb'"received_at":"2099-12-31'),
    (rb'"received_at":"([^"]*)"', rb'"received_at":null'),
    (rb'"placement":"SPINE"', rb'"placement":"ANNOTATION"'),
    (rb'"placement":"SPINE"', rb'"placement":null'),
    (rb'\{"content_hash":"([0-9a-f]{64})"', rb'{"content_hash":"\1","content_hash":"\1"'),
    (rb'"segments":\[\{', rb'"segments":[{"x":1,'),
    (rb'"segments":\[\{', rb'"segments":[7,{'),
    (rb'"segments":\[', rb'"segments" : [ '),
    (rb'"signals":\[', rb'"signals":{"a":['),
    (rb'^\{', rb'{"episode_id":"dup",'),
    (rb'^\{', rb'{"extra":[1,{"b":"\n"}],'),
    (rb'^\{', rb'{"extra":1e400,'),
    (rb'^\{', rb'{"extra":"\xff",'),
    (rb'^\{', rb' \r\n{'),
    (rb'\}$', rb'} x'),
    (rb'\}$', rb''),
    (rb'"format":"canonkit-episode/1"', rb'"format":"canonkit-episode/2"'),
    (rb'"profile":"full"', rb'"profile":"attested"'),
    (rb'"stored":\{', rb'"stored":{"segments":[],'),
    (rb'"leaf_index"', rb'"sequence_index"'),
    (rb'"sequence_index":(\d+)', rb'"sequence_index":\1,"hash_version":2'),
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=st.sampled_from(CORPUS), edits=st.lists(st.tuples(st.integers(0, len(_EDITS) - 1),
                                                             st.integers(0, 40)),
                                                   min_size=1, max_size=3))
def test_mutated_text_agrees_or_takes_the_general_path(doc: bytes,
                                                       edits: list[tuple[int, int]]) -> None:
    for which, nth in edits:
        pattern, replacement = _EDITS[which]
        matches = list(re.finditer(pattern, doc))
        if not matches:
            continue
        m = matches[nth % len(matches)]
        group = m.group(1) if m.re.groups else b""
        doc = doc[:m.start()] + replacement.replace(rb"\1", group) + doc[m.end():]
    check(doc)


_INSTANTS = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                         timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=5, minutes=30)),
                                                    timezone(timedelta(hours=-11)),
                                                    timezone(timedelta(minutes=-1))]))


def _iso(t: datetime, style: int) -> str:
    text = t.isoformat(timespec=("seconds", "milliseconds", "microseconds")[style % 3])
    return text.replace("+00:00", "Z") if style >= 3 else text


@settings(max_examples=300, deadline=None)
@given(created=st.lists(st.tuples(_INSTANTS, st.integers(0, 5)), min_size=1, max_size=6),
       closed=st.tuples(_INSTANTS, st.integers(0, 5)))
@example(created=[(datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=timezone.utc), 2)],
         closed=(datetime(2024, 3, 1, 5, 29, 59, 999999, tzinfo=timezone(timedelta(hours=5, minutes=30))), 2))
def test_post_closure_instants_compare_as_the_general_reader(
        created: list[tuple[datetime, int]], closed: tuple[datetime, int]) -> None:
    doc = orjson.loads(CORPUS[0])
    if doc["format"] != "canonkit-episode/1":
        doc = orjson.loads(next(d for d in CORPUS if b"canonkit-episode/1" in d))
    doc["closed_at"] = _iso(*closed)
    for segment, (t, style) in zip(doc["segments"], created):
        segment["created_at"] = _iso(t, style)
    assert check(orjson.dumps(doc))


def test_compiled_scanner_reads_nothing_the_twin_refuses() -> None:
    compiled, twin = backend_pair("astp", "scanner")
    for data in CORPUS:
        for variant in (data, data.replace(b'"STANDARD"', b'"EPHEMERAL"', 3),
                        data.replace(b'"segments":[', b'"segments":[{"q":1},')):
            c = compiled.scan_episode(variant, Segment, Signal)
            t = twin.scan_episode(variant, Segment, Signal)
            if c is None:
                continue
            assert t is not None
            assert c[0] == t[0] and list(c[1]) == list(t[1]) and c[2:] == t[2:]
            assert c[1].content_raw() == b"".join(bytes.fromhex(s.content_hash) for s in t[1])


@pytest.mark.parametrize("sav", [2, 3])
def test_v2_leaves_of_the_table_equal_the_leaf_kernel(sav: int) -> None:
    compiled, twin = backend_pair("astp", "scanner")
    leaves = backend_module("astp", "py", "reader")
    for data in CORPUS:
        scanned = compiled.scan_episode(data, Segment, Signal)
        if scanned is None or not len(scanned[1]):
            continue
        table = scanned[1]
        if not all(s.has_leaf_fields for s in table):
            with pytest.raises(CanonkitError, match=f"sav {sav} needs"):
                table.leaves_v2_raw(sav)
            continue
        expected = b"".join(bytes.fromhex(leaves.leaf_hash_v2(s.node_id, s.node_type, s.schema_version,
                                                              s.sequence_index, s.content_hash,
                                                              s.parent_node_id)) for s in table)
        assert table.leaves_v2_raw(sav) == expected


_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters='"\\'),
                max_size=256)


@settings(max_examples=150, deadline=None)
@given(segments=st.lists(st.tuples(st.one_of(st.none(), _TEXT), _TEXT, st.booleans(),
                                   st.integers(0, 2**64 - 1)), min_size=1, max_size=20),
       width=st.sampled_from([1, 2, 4, 8]), sav=st.sampled_from([2, 3]))
def test_v2_leaves_of_any_length_equal_the_leaf_kernel(
        segments: list[tuple[str | None, str, bool, int]], width: int, sav: int) -> None:
    """Leaf preimages shorter and longer than one SHA3-256 block (node_type and
    schema_version of 0 to 256 characters), with and without a parent, in batches of every
    fill, at every Keccak width: the table's leaves are the leaf kernel's."""
    compiled = backend_module("astp", "c")
    scanner = backend_module("astp", "c", "scanner")
    leaves = backend_module("astp", "py", "reader")
    rows, expected = [], []
    index = 0
    for k, (node_type, schema, parent, step) in enumerate(segments):
        index = min(index + 1 + step % 1000, 2**64 - 1) if k else step % 2**40
        row = {"node_id": f"00000000-0000-4000-8000-{k:012x}", "schema_version": schema,
               "sequence_index": index, "content_hash": f"{k:064x}"}
        if node_type is not None:
            row["node_type"] = node_type
        if parent:
            row["parent_node_id"] = f"11111111-0000-4000-8000-{k:012x}"
        rows.append(row)
        expected.append(bytes.fromhex(leaves.leaf_hash_v2(
            row["node_id"], "segment" if node_type is None else node_type, schema, index,
            row["content_hash"], row.get("parent_node_id"))))
    if len({r["sequence_index"] for r in rows}) < len(rows):
        return
    doc = orjson.dumps({"format": "canonkit-episode/1", "episode_id": "e", "segments": rows,
                        "seal": None})
    scanned = scanner.scan_episode(doc, Segment, Signal)
    assert scanned is not None
    widest = compiled._keccak_lanes()[1]
    compiled._set_keccak_lanes(min(width, widest))
    try:
        assert scanned[1].leaves_v2_raw(sav) == b"".join(expected)
    finally:
        compiled._set_keccak_lanes(0)


def test_spine_keys_of_the_table_equal_the_general_readers() -> None:
    """The segment ids and hashes Layer 3 nodes must not reuse (L3-001), read from the
    compiled table, are the ones the general reader's ``Segment`` values hold."""
    compared = 0
    for data in CORPUS:
        fast = read_episode_bytes(data)
        if fast is None:
            continue
        general = read_episode(loads_json(data))
        assert fast.segments.spine_keys() == general.segments.spine_keys()
        compared += 1
    assert compared > len(CORPUS) // 2


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_spine_hits_of_the_table_equal_the_general_readers(seed: int) -> None:
    """L3-001 asks which Layer 3 ids and hashes a spine holds: the compiled table answers
    without a text per segment what the general reader's ``spine_keys`` answers, for the
    spine's own keys, their upper-case and non-canonical spellings, other texts and junk."""
    import random

    rng = random.Random(seed)
    data = rng.choice(CORPUS)
    fast = read_episode_bytes(data)
    if fast is None:
        return
    general = read_episode(loads_json(data)).segments
    ids, hashes = general.spine_keys()
    known = [x for x in ids | hashes if isinstance(x, str)]
    pool = known + [x.upper() for x in known] + [x.replace("-", "") for x in known] + [
        x[:-1] + "g" for x in known] + ["", "x", "0" * 64, "0" * 36, None, 7, b"0" * 32]
    asked_ids = rng.sample(pool, min(len(pool), rng.randrange(0, 40)))
    asked_hashes = rng.sample(pool, min(len(pool), rng.randrange(0, 40)))
    strs = [x for x in asked_hashes if isinstance(x, str)]
    assert fast.segments.spine_hits(asked_ids, strs) == general.spine_hits(asked_ids, strs)


def _instant_or_error(read: Any, text: Any) -> Any:
    try:
        value = read(text)
    except ValueError as exc:
        return ("ValueError", str(exc))
    return (value, value.tzinfo, value.utcoffset())


_INSTANT_PIECES = st.lists(st.sampled_from(
    ["2024", "0001", "9999", "-", "02", "29", "30", "13", "00", "T", "t", ":", "23", "24",
     "59", "60", ".", "5", "123", "123456", "1234567", "Z", "z", "+", "-", "05:30", "23:59",
     "24:00", " ", "\u0661", "\x00"]), max_size=16).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(_INSTANT_PIECES, _INSTANTS.map(lambda t: _iso(t, 2)),
                      st.tuples(_INSTANTS, st.integers(0, 5)).map(lambda p: _iso(*p)),
                      st.text(max_size=40)))
@example(text="2024-02-29T23:59:59.999999+23:59")
@example(text="2023-02-29T00:00:00Z")
@example(text="2024-01-01T00:00:00.123-00:00")
@example(text="2024-01-01T00:00:00")
def test_read_instant_reads_as_instant_from_text(text: str) -> None:
    """The compiled instant reader gives ``instant_from_text``'s datetime (offset
    included) or its ValueError, for canonical shapes and everything around them."""
    compiled, twin = backend_pair("astp", "scanner")
    from canonkit._instant import instant_from_text

    want = _instant_or_error(instant_from_text, text)
    assert _instant_or_error(compiled.read_instant, text) == want
    assert _instant_or_error(twin.read_instant, text) == want


def test_the_verdicts_tie_search_stops_on_ctrl_c() -> None:
    """The scanner kernel's own tie search (``scan_verdict``) stays interruptible: an
    Episode whose 12 SPINE signals share one instant, under a cap above its 12! orders and a
    seal no order rebuilds, is searched until SIGINT raises KeyboardInterrupt."""
    import signal
    import threading

    compiled = backend_module("astp", "c")
    scanner = backend_module("astp", "c", "scanner")
    if compiled._keccak_lanes()[1] < 2:
        pytest.skip("the kernel searches over two or more Keccak lanes")
    doc = orjson.loads(next(d for d in CORPUS if b'"canonkit-episode/1"' in d
                            and b'"seal":{' in d))
    doc["signals"] = [{"content_hash": f"{k:064x}", "placement": "SPINE",
                       "received_at": "2020-01-01T00:00:00Z"} for k in range(12)]
    doc["closed_at"] = doc["seal"]["closed_at"] = "2021-01-01T00:00:00Z"
    doc["sealed_at"] = doc["seal"]["sealed_at"] = "2021-01-02T00:00:00Z"
    doc["seal"].update({"spine_algorithm_version": 1, "ordering_version": 1,
                        "spine_root": "00" * 32})
    doc["seal"].pop("resolved_signal_order", None)  # no annotation: a search
    data = orjson.dumps(doc)
    timer = threading.Timer(0.3, signal.raise_signal, (signal.SIGINT,))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            scanner.scan_verdict(data, Segment, Signal, 10**12)
    finally:
        timer.cancel()
    assert scanner.scan_verdict(data, Segment, Signal, 100)[0] is None  # cap hit: no verdict
