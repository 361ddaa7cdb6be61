"""The result cache's segment format (``reverify/cache_segments.py``) and what the cache
does with segments: every key found and no other, damage of any byte detected or a miss,
a damaged index still ends, merging keeps what checks, concurrent writers, compaction
(locally and in object storage)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from blake3 import blake3
from hypothesis import given, settings
from hypothesis import strategies as st

from canonkit import reverify
from canonkit.reverify import cache as cache_module
from canonkit.reverify import cache_segments as seg
from canonkit.reverify import synthetic_corpus as synth
from services import S3Prefix, needs_obstore

TAG = b"t" * 32


def _key(n: int) -> bytes:
    return blake3(b"%d" % n).digest()


def _find(data: bytes, key: bytes) -> bytes | None:
    index = seg.Index(data, len(data))
    where = index.find(key)
    if where is None:
        return None
    offset, length = where
    return seg.content_of(key, data[offset:offset + length])


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.integers(0, 10**6), st.binary(max_size=40), max_size=300),
       st.lists(st.integers(0, 10**6), max_size=20))
def test_every_key_is_found_and_no_other(entries: dict[int, bytes], others: list[int]) -> None:
    data = seg.encode({_key(n): v for n, v in entries.items()}, TAG)
    assert seg.name_of(data) == seg.name_of(bytes(data))
    for n, value in entries.items():
        assert _find(data, _key(n)) == value
    for n in others:
        if n not in entries:
            assert _find(data, _key(n)) is None
    assert _find(data, b"\0" * 32) is None and _find(data, b"\xff" * 32) is None


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_damaged_byte_is_detected_or_a_miss(data: st.DataObject) -> None:
    """Flip any byte of a segment: a lookup gives the right content, None, or
    ``Damaged``; never another value, never a crash or a hang."""
    entries = {_key(n): b"value %d" % n for n in range(50)}
    good = seg.encode(entries, TAG)
    at = data.draw(st.integers(0, len(good) - 1))
    bad = bytearray(good)
    bad[at] ^= data.draw(st.integers(1, 255))
    for key, value in entries.items():
        try:
            found = _find(bytes(bad), key)
        except seg.Damaged:
            continue
        assert found in (value, None)


def test_a_damaged_index_ends() -> None:
    """An index whose records are out of order (or all one key) is searched to an end."""
    entries = {_key(n): b"%d" % n for n in range(64)}
    data = bytearray(seg.encode(entries, TAG))
    size = seg.RECORD.size
    first = seg.HEADER.size
    records = [bytes(data[first + i * size:first + (i + 1) * size]) for i in range(64)]
    data[first:first + 64 * size] = b"".join(reversed(records))
    for key in entries:
        try:
            _find(bytes(data), key)
        except seg.Damaged:
            pass
    five = next(r for r in records if r[:seg.KEY_BYTES] == _key(5))
    data[first:first + 64 * size] = five * 64
    assert _find(bytes(data), _key(5)) == b"5"
    assert _find(bytes(data), _key(6)) is None


@pytest.mark.parametrize("damage", ["empty", "short", "header", "count", "bounds"])
def test_segments_that_are_not_whole(damage: str) -> None:
    data = seg.encode({_key(n): b"x" for n in range(4)}, TAG)
    if damage == "empty":
        bad = b""
    elif damage == "short":
        bad = data[:seg.HEADER.size + seg.RECORD.size]
    elif damage == "header":
        bad = b"Z" + data[1:]
    elif damage == "count":
        bad = seg.HEADER.pack(seg.MAGIC, 10**12, TAG) + data[seg.HEADER.size:]
    else:  # a record whose value lies past the end
        bad = data[:-3]
    try:
        index = seg.Index(bad, len(bad))
    except seg.Damaged:
        return
    with pytest.raises(seg.Damaged):
        for n in range(4):
            where = index.find(_key(n))
            assert where is not None
            seg.content_of(_key(n), bad[where[0]:where[0] + where[1]])


def test_merging_keeps_what_checks() -> None:
    a = seg.encode({_key(1): b"one", _key(2): b"two"}, TAG)
    b = bytearray(seg.encode({_key(2): b"two", _key(3): b"three"}, TAG))
    where = seg.Index(bytes(b), len(b)).find(_key(3))
    assert where is not None
    b[where[0] + where[1] - 1] ^= 1  # the value of _key(3) no longer checks
    other = seg.encode({_key(4): b"four"}, b"o" * 32)  # another version's: never hit
    merged, dropped = seg.merged([a, bytes(b), other, b"not a segment"], TAG)
    assert merged is not None and dropped == 1
    assert [_find(merged, _key(n)) for n in (1, 2, 3, 4)] == [b"one", b"two", None, None]
    assert seg.merged([other], TAG) == (None, 0)


# --- the cache on disk -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("segments") / "c.jsonl"
    synth.write_corpus(150, out=str(out), mix="all-outcomes", seed=31, median_segments=8)
    return out


def _lines(report: Path) -> list[bytes]:
    return report.read_bytes().splitlines()[:-1]


def test_concurrent_writers(corpus: Path, tmp_path: Path) -> None:
    """Two runs filling one cache at once: both reports are the uncached one, and the
    cache holds every Episode once, nothing damaged, no temporary left."""
    cache = tmp_path / "cache"
    want = tmp_path / "want.jsonl"
    list(reverify.run([corpus], report=want, jobs=2))
    runs = [subprocess.Popen([sys.executable, "-m", "canonkit", "reverify", str(corpus),
                              "--jobs", "2", "--batch-size", "7", "--cache", str(cache),
                              "--report", str(tmp_path / f"r{i}.jsonl"), "--no-progress"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for i in range(2)]
    assert [r.wait(timeout=300) for r in runs] == [1, 1]
    for i in range(2):
        assert _lines(tmp_path / f"r{i}.jsonl") == _lines(want)
    stats = cache_module.describe(str(cache))
    assert (stats.episodes, stats.damaged) == (150, 0)
    assert not [p for p in (cache / cache_module.SEGMENTS).iterdir()
                if not p.name.endswith(seg.SUFFIX)]
    again = reverify.run([corpus], report=tmp_path / "again.jsonl", jobs=2, cache=cache)
    assert again.summary.from_cache == 150
    assert _lines(tmp_path / "again.jsonl") == _lines(want)


def _fill_many(corpus: Path, tmp_path: Path, cache: Path | str) -> list[bytes]:
    """Fill ``cache`` from many small runs (two segments each: the unit's Episode
    entries, the client's block; compaction held off)."""
    lines = corpus.read_bytes().splitlines(keepends=True)
    parts = tmp_path / "parts"
    parts.mkdir()
    for i in range(0, len(lines), 10):
        (parts / f"{i:04d}.jsonl").write_bytes(b"".join(lines[i:i + 10]))
    held = cache_module.MAX_SEGMENTS
    cache_module.MAX_SEGMENTS = 10**6
    try:
        for part in sorted(parts.iterdir()):
            list(reverify.run([part], jobs=1, cache=cache))
    finally:
        cache_module.MAX_SEGMENTS = held
    want = tmp_path / "want.jsonl"
    list(reverify.run([corpus], report=want, jobs=2))
    return _lines(want)


def test_compaction(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    want = _fill_many(corpus, tmp_path, cache)
    location = cache_module.open_cache(cache)
    before = cache_module.describe(location)
    assert before.segments == 30 and (before.episodes, before.blocks) == (150, 15)
    dead = cache / cache_module.SEGMENTS / ("0" * 32 + seg.SUFFIX)  # another version's
    dead.write_bytes(seg.encode({_key(1): b"x"}, b"o" * 32))
    stale = cache / cache_module.SEGMENTS / ".left-by-a-crash.tmp"
    stale.write_bytes(b"partial")
    os.utime(stale, (0, 0))
    assert cache_module.compact(location) == 31 - cache_module.KEEP_SEGMENTS + 1
    after = cache_module.describe(location)
    assert after.segments == cache_module.KEEP_SEGMENTS
    assert (after.episodes, after.blocks, after.damaged) == (150, 15, 0)
    assert not dead.exists() and not stale.exists()
    assert cache_module.compact(location) == 0  # nothing to do
    got = tmp_path / "got.jsonl"
    run = reverify.run([corpus], report=got, jobs=2, cache=cache)
    assert run.summary.from_cache == 150 and _lines(got) == want


@needs_obstore
def test_compaction_in_object_storage(s3: S3Prefix, corpus: Path, tmp_path: Path) -> None:
    location = cache_module.open_cache(s3.url + "cache")
    want = _fill_many(corpus, tmp_path, location)
    assert cache_module.describe(location).segments == 30
    assert cache_module.compact(location) == 30 - cache_module.KEEP_SEGMENTS + 1
    after = cache_module.describe(location)
    assert (after.segments, after.episodes, after.damaged) == (cache_module.KEEP_SEGMENTS,
                                                               150, 0)
    got = tmp_path / "got.jsonl"
    run = reverify.run([corpus], report=got, jobs=2, cache=location)
    assert run.summary.from_cache == 150 and _lines(got) == want
    record = orjson.loads(got.read_bytes().splitlines()[-1])
    assert record["from_cache"] == 150


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.binary(min_size=1, max_size=8),
       st.sampled_from([b"", b"l", b"layer3", b"\\u", b"ayer"]))
def test_the_word_search_agrees_with_in(data: bytes, word: bytes, seed: bytes) -> None:
    """``cache._mentions`` (memchr of the first byte, then a comparison) finds exactly
    what ``in`` finds, on hostile input too: words and their prefixes planted anywhere."""
    for haystack in (data, seed + data, data + word, word[:-1] + data, data[:5] + word[:1]):
        assert cache_module._mentions(haystack, word) == (word in haystack)
        assert cache_module._mentions(haystack, b"layer3") == (b"layer3" in haystack)


def test_held_ranges_read_as_streamed_ones(corpus: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A range looked up whole is read line by line from memory: blank and whitespace
    lines, a line over the document limit, broken JSON, CRLF and a missing last newline
    give the lines and numbers of the streamed reading, filled and from the cache."""
    from canonkit.reverify import sources, units

    for module in (sources, units):  # (in this process: --jobs 1)
        monkeypatch.setattr(module, "MAX_DOCUMENT_BYTES", 10_000)
    lines = corpus.read_bytes().splitlines(keepends=True)[:30]
    long = max(lines, key=len)
    assert len(long) > 10_000
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"".join([b"\n", lines[0], b"  \t\r\n", long, b"{not json\n",
                                lines[1].rstrip(b"\n") + b"\r\n", *lines[2:10], b"\n\n",
                                lines[10].rstrip(b"\n")]))
    want, got = tmp_path / "want.jsonl", tmp_path / "got.jsonl"
    for jobs in (1, 2):  # (a cache each: the limit differs between them)
        cache = tmp_path / f"cache{jobs}"
        list(reverify.run([mixed], report=want, jobs=jobs, batch_bytes=3000))
        for _ in range(2):  # filling the cache, then every unit from it
            run = reverify.run([mixed], report=got, jobs=jobs, batch_bytes=3000, cache=cache)
            list(run)
            assert _lines(got) == _lines(want)
        assert run.summary.from_cache == len(_lines(want))
