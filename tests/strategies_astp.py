"""Hypothesis strategies and fixture builders for the ASTP tests (bounded sizes)."""
from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

EP = "550e8400-e29b-41d4-a716-446655440000"


def H(text: str) -> str:
    return hashlib.sha3_256(text.encode()).hexdigest()


def u(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012x}"


digests = st.binary(min_size=32, max_size=32)
hex_digests = digests.map(bytes.hex)
any_digest = st.one_of(digests, hex_digests, hex_digests.map(str.upper))
uuids = st.uuids().map(str)
aware_instants = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1),
                              timezones=st.sampled_from([timezone.utc, timezone(timedelta(hours=-8)),
                                                         timezone(timedelta(hours=5, minutes=30))])
                              ).filter(lambda d: d >= datetime(1970, 1, 1, tzinfo=timezone.utc))
texts = st.text(max_size=40)
uints = st.integers(min_value=0, max_value=2**64 - 1)
floats = st.floats(allow_nan=False, allow_infinity=False)

#: (kind, value) pairs the field encoder must accept
valid_fields = st.one_of(
    st.tuples(st.just("NULL"), st.none()),
    st.tuples(st.just("BYTES"), st.binary(max_size=64)),
    st.tuples(st.just("STRING"), texts.filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))),
    st.tuples(st.just("UINT"), uints),
    st.tuples(st.just("UUID"), uuids),
    st.tuples(st.just("TIMESTAMP"), aware_instants),
    st.tuples(st.just("HASH"), any_digest),
    st.tuples(st.just("LIST(HASH)"), st.lists(any_digest, max_size=5)),
    st.tuples(st.just("LIST(STRING)"), st.lists(st.text(alphabet="abcé\u0301", max_size=5), max_size=5)),
    st.tuples(st.just("BOOL"), st.booleans()),
    st.tuples(st.just("FLOAT"), floats),
    st.tuples(st.sampled_from(["HASH|NULL", "UUID|NULL", "STRING|NULL", "UINT|NULL"]), st.none()),
)

#: (kind, value) pairs the field encoder must refuse
invalid_fields = st.one_of(
    st.tuples(st.just("UINT"), st.one_of(st.integers(max_value=-1), st.integers(min_value=2**64),
                                         st.booleans(), floats)),
    st.tuples(st.just("FLOAT"), st.one_of(st.just(float("nan")), st.just(float("inf")),
                                          st.just(float("-inf")), st.booleans())),
    st.tuples(st.just("BOOL"), st.integers(min_value=0, max_value=1)),
    st.tuples(st.just("HASH"), st.one_of(st.binary(max_size=31), st.binary(min_size=33, max_size=40),
                                         st.text(alphabet="0123456789abcdef", max_size=63))),
    st.tuples(st.just("TIMESTAMP"), st.datetimes(min_value=datetime(1970, 1, 2))),  # naive
    st.tuples(st.just("STRING"), st.one_of(st.binary(max_size=4), st.integers(), st.just("\ud800"))),
    st.tuples(st.sampled_from(["STRING", "UINT", "HASH", "UUID", "BOOL", "FLOAT", "TIMESTAMP"]), st.none()),
    st.tuples(st.just("UUID"), st.text(max_size=10)),
    st.tuples(st.just("LIST(HASH)"), st.just([None])),
)


def tie_fixture_segments() -> list[dict[str, Any]]:
    """The seven RP fixture Segments (ASTP.md §18)."""
    return [{"node_id": u(i), "node_type": "segment", "schema_version": "1.0.0", "sequence_index": i,
             "content_hash": H(f"leaf-{i}"), "parent_node_id": EP} for i in range(7)]


def tie_fixture_document(**extra: Any) -> dict[str, Any]:
    """canonkit-episode/1 document of the RP-005…RP-008 fixture, unsealed: Signals 100…104,
    101–103 sharing one received_at."""
    stamps = ["2026-01-01T00:01:00Z"] + ["2026-01-01T00:02:00Z"] * 3 + ["2026-01-01T00:03:00Z"]
    doc = {"format": "canonkit-episode/1", "episode_id": EP, "status": "SEALED",
           "closed_at": "2026-01-02T00:00:00Z", "sealed_at": "2026-01-02T00:00:00Z",
           "segments": tie_fixture_segments(),
           "signals": [{"content_hash": H(f"leaf-{100 + i}"), "received_at": stamps[i], "placement": "SPINE"}
                       for i in range(5)],
           "seal": None}
    doc.update(extra)
    return doc


FOLD_ORDER = [H("leaf-100"), H("leaf-103"), H("leaf-101"), H("leaf-102"), H("leaf-104")]


def sav2_episode() -> dict[str, Any]:
    """The seven fixture Segments (ASTP.md §18) sealed under sav 2 (spine 4420e38a…aa01)."""
    from canonkit import astp

    segments = [{"node_id": u(i), "node_type": "segment", "schema_version": "1.0.0",
                 "sequence_index": i, "content_hash": H(f"leaf-{i}"), "parent_node_id": EP}
                for i in range(7)]
    body = {"format": "canonkit-episode/1", "episode_id": EP, "status": "SEALED",
            "closed_at": "2026-01-01T00:10:00Z", "sealed_at": "2026-01-01T00:10:01Z",
            "segments": segments, "seal": None}
    return astp.seal_episode(body, spine_algorithm_version=2)
