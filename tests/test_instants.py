"""Instant text: one rule (canonkit._instant), the same on every Python, for every reader of
instants — Episode documents on both backends, the TIMESTAMP field encoder, Layer 3, the
inclusion-chain anchors and CBOR tag 0."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import example, given
from hypothesis import strategies as st

from canonkit.cbor import tags as cbor_tags
from canonkit import astp
from canonkit._instant import instant_from_text
from canonkit.astp.chain import _instant as chain_instant
from canonkit.errors import InvalidFieldError, InvalidRecordError

UTC = timezone.utc


def tz(minutes: int) -> timezone:
    return timezone(timedelta(minutes=minutes))


ACCEPTED = [
    ("2026-10-01T20:49:00.256512Z", datetime(2026, 10, 1, 20, 49, 0, 256512, UTC)),
    ("2026-01-01T00:00:00.123Z", datetime(2026, 1, 1, 0, 0, 0, 123000, UTC)),
    ("2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=UTC)),
    ("2026-01-01T00:00:00+00:00", datetime(2026, 1, 1, tzinfo=UTC)),
    ("2026-01-01T00:00:00-00:00", datetime(2026, 1, 1, tzinfo=UTC)),
    ("2025-12-31T16:00:00.123-08:00", datetime(2025, 12, 31, 16, 0, 0, 123000, tz(-480))),
    ("2026-01-01T05:30:00+05:30", datetime(2026, 1, 1, 5, 30, tzinfo=tz(330))),
    ("2026-01-01T00:00:00+23:59", datetime(2026, 1, 1, tzinfo=tz(23 * 60 + 59))),
    ("2026-01-01T00:00:00.1Z", datetime(2026, 1, 1, 0, 0, 0, 100000, UTC)),
    ("2026-01-01T00:00:00.1234Z", datetime(2026, 1, 1, 0, 0, 0, 123400, UTC)),
    # past the microsecond: dropped (TIMESTAMP keeps whole milliseconds anyway)
    ("2026-01-01T00:00:00.123456789Z", datetime(2026, 1, 1, 0, 0, 0, 123456, UTC)),
    ("2024-02-29T23:59:59.999999Z", datetime(2024, 2, 29, 23, 59, 59, 999999, UTC)),
    ("0001-01-01T00:00:00Z", datetime(1, 1, 1, tzinfo=UTC)),
    ("9999-12-31T23:59:59Z", datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
    # no offset: a naive datetime, which every ASTP reader then refuses as naive
    ("2026-01-01T00:00:00", datetime(2026, 1, 1)),
    ("2026-01-01T00:00:00.5", datetime(2026, 1, 1, 0, 0, 0, 500000)),
]

REFUSED = [
    "2026-01-01T00:00:00z",             # lowercase z
    "2026-01-01t00:00:00Z",             # lowercase t
    "2026-01-01 00:00:00+00:00",        # space for T
    "2026-01-01x00:00:00+00:00",        # any other separator
    "2026-01-01T00:00:00.+00:00",       # a point without digits
    "2026-01-01T00:00:00.1234567891Z",  # ten fraction digits
    "2026-01-01T00:00:00,123Z",         # comma fraction
    "2026-01-01T00:00:00+0000",         # offset without colon
    "2026-01-01T00:00:00+05",           # offset hours only
    "2026-01-01T00:00:00+05:30:00",     # offset seconds
    "2026-01-01T00:00:00 +05:30",       # space before the offset
    "2026-01-01T00:00:00+24:00",        # offset out of range
    "2026-01-01T00:00:00+05:60",
    "2026-01-01T00:00Z",                # seconds missing
    "2026-01-01T00Z",
    "2026-01-01",                       # a date alone
    "20260101T000000Z",                 # basic format
    "2026-W01-1T00:00:00Z",             # week date
    "2026-001T00:00:00Z",               # ordinal date
    "2026-01-01T24:00:00Z",             # 24:00
    "2026-01-01T23:59:60Z",             # leap second
    "2023-02-29T00:00:00Z",             # not a leap year
    "2026-13-01T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "0000-01-01T00:00:00Z",             # year 0
    "+2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00Z\n",           # trailing newline
    " 2026-01-01T00:00:00Z",
    "２０２６-01-01T00:00:00Z",          # non-ASCII digits
    "2026-01-01T00:00:0٠Z",
    "",
]


@pytest.mark.parametrize("text,expected", ACCEPTED, ids=[t for t, _ in ACCEPTED])
def test_accepted_instants(text: str, expected: datetime) -> None:
    got = instant_from_text(text)
    assert got == expected or (got.tzinfo is None and got.replace(tzinfo=UTC) == expected.replace(tzinfo=UTC))
    assert got.utcoffset() == expected.utcoffset()
    assert (got.tzinfo is None) == (expected.tzinfo is None)


@pytest.mark.parametrize("text", REFUSED)
def test_refused_instants(text: str) -> None:
    with pytest.raises(ValueError):
        instant_from_text(text)


def test_not_text_is_refused() -> None:
    for value in (None, 20260101, b"2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=UTC)):
        with pytest.raises(ValueError):
            instant_from_text(value)  # type: ignore[arg-type]


aware = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                     timezones=st.integers(-23 * 60 - 59, 23 * 60 + 59).map(tz))


@given(aware, st.sampled_from(["seconds", "milliseconds", "microseconds", "auto"]))
@example(datetime(2026, 10, 1, 20, 49, 0, 256512, UTC), "auto")
def test_every_isoformat_text_reads_back(when: datetime, timespec: str) -> None:
    """What ``datetime.isoformat`` writes (and with ``Z`` for UTC) reads back as the same
    instant and offset, truncated to the precision written."""
    text = when.isoformat(timespec=timespec)
    got = instant_from_text(text)
    assert got.utcoffset() == when.utcoffset()
    assert got.isoformat(timespec=timespec) == text
    if when.utcoffset() == timedelta(0):
        assert instant_from_text(text.replace("+00:00", "Z")) == got


@given(st.text(alphabet="0123456789-:T.Z+ z", max_size=40))
@example("2026-01-01T00:00:00.123+00:00")
def test_where_fromisoformat_also_reads_a_text_it_gives_the_same_instant(text: str) -> None:
    """``datetime.fromisoformat`` accepts more than the rule (and on 3.10 less: no ``Z``),
    but on text both read the value is the same: the rule changes what is accepted, never
    what an accepted text means."""
    try:
        ours = instant_from_text(text)
    except ValueError:
        return
    try:
        theirs = datetime.fromisoformat(text)
    except ValueError:
        return
    assert (ours, ours.utcoffset()) == (theirs, theirs.utcoffset())


# --- every reader uses the rule ------------------------------------------------------

T = "2026-01-01T00:00:00.123Z"


def test_timestamp_field_reads_z_and_refuses_other_shapes() -> None:
    assert astp.timestamp_ms(T) == astp.timestamp_ms("2025-12-31T16:00:00.123-08:00") \
        == 1767225600123
    for text in ("2026-01-01 00:00:00.123+00:00", "2026-01-01T00:00:00.123z"):
        with pytest.raises(InvalidFieldError, match="not an ISO 8601 instant"):
            astp.timestamp_ms(text)
    with pytest.raises(InvalidFieldError, match="naive"):
        astp.timestamp_ms("2026-01-01T00:00:00.123")


@pytest.mark.parametrize("which", ["c", "py"])
def test_field_encoders_read_z_on_both_backends(which: str) -> None:
    c, py = backend_pair("astp")
    impl = c if which == "c" else py
    assert impl.encode_field("TIMESTAMP", T).hex() == "050000019b76daa87b"
    with pytest.raises(InvalidFieldError):
        impl.encode_field("TIMESTAMP", "2026-01-01 00:00:00.123+00:00")


def test_layer3_datetime_fields_take_only_the_canonical_utc_text() -> None:
    from canonkit.astp._py.common import L3_DATETIME, l3_field

    assert l3_field("at", L3_DATETIME, False, None, "2026-01-01T00:00:00.123000+00:00") \
        == "2026-01-01T00:00:00.123000+00:00"
    for text in (T, "2026-01-01T00:00:00.123+00:00", "2026-01-01 00:00:00+00:00"):
        with pytest.raises(InvalidFieldError):
            l3_field("at", L3_DATETIME, False, None, text)


def test_chain_anchor_and_cbor_tag_0_read_z() -> None:
    assert chain_instant(T) == datetime(2026, 1, 1, 0, 0, 0, 123000, UTC)
    with pytest.raises(ValueError):
        chain_instant("2026-01-01T00:00:00.123")
    assert cbor_tags.decode_datetime_text(T) == datetime(2026, 1, 1, 0, 0, 0, 123000, UTC)
    with pytest.raises(ValueError):
        cbor_tags.decode_datetime_text("2026-01-01 00:00:00Z")


def _episode(created_at: Any) -> dict[str, Any]:
    return {"format": "canonkit-episode/1", "episode_id": "ep", "status": "OPEN",
            "seal": None, "segments": [{"sequence_index": 0, "content_hash": "0" * 64,
                                        "created_at": created_at}]}


@pytest.mark.parametrize("text", [t for t, _ in ACCEPTED] + REFUSED[:12])
def test_episode_documents_read_instants_by_the_rule(text: str) -> None:
    """The document reader (the compiled scanner, the kernel's fast path and the twin's
    reader) accepts exactly the rule's aware instants in ``created_at``."""
    import orjson

    from canonkit.astp import documents

    doc = _episode(text)
    try:
        expected: Any = instant_from_text(text)
    except ValueError:
        expected = None
    for read in (documents.read_episode, lambda d: documents.read_episode_bytes(orjson.dumps(d))):
        if expected is not None and expected.tzinfo is not None:
            episode = read(doc)
            if episode is not None:  # None: outside the scanner's fast path
                assert episode.segments[0].created_at == expected
        else:
            with pytest.raises(InvalidRecordError, match="created_at"):
                if read(doc) is None:
                    documents.read_episode(doc)
