"""Incremental runs (REVERIFY.md §7, ``--cache``): a grown corpus verifies only its new
Episodes, reports are byte-identical to uncached runs, a damaged entry is recomputed (as
info, never an error), and every result-changing option and a named Layer 3 export's
bytes are part of the key."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from canonkit import reverify
from canonkit.errors import CacheError
from canonkit.reverify import cache as cache_module
from canonkit.reverify import cache_segments as segments
from canonkit.reverify import synthetic_corpus as synth
from reverify_helpers import named_export_corpus
from services import S3Prefix, needs_obstore


def _episodes(cache: Path | str) -> int:
    """The Episode entries the cache holds (each key once)."""
    return cache_module.describe(os.fspath(cache) if isinstance(cache, Path) else cache).episodes


def _segments(cache: Path) -> list[Path]:
    return sorted((cache / cache_module.SEGMENTS).glob("*" + segments.SUFFIX))


def _records(path: Path | bytes) -> list[tuple[int, bytes, int, int, bool]]:
    """``(record number, key, offset, length, is a block entry)`` of a segment's index."""
    data = path.read_bytes() if isinstance(path, Path) else path
    index = segments.Index(data, len(data))
    out = []
    for n, (key, offset, length) in enumerate(index.records()):
        content = segments.content_of(key, data[offset:offset + length])
        out.append((n, key, offset, length, content.startswith(cache_module.BLOCK_ENTRY)))
    return out


def _report(paths: list[Path], report: Path, **options: Any) -> reverify.Run:
    run = reverify.run(paths, report=report, **options)
    list(run)
    return run


def _body(path: Path) -> list[bytes]:
    """The Episode lines, and the final line without its run-specific counts."""
    lines = path.read_bytes().splitlines()
    final = orjson.loads(lines[-1])
    del final["from_journal"], final["from_cache"]
    return [*lines[:-1], orjson.dumps(final)]


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A corpus of 120 Episodes, and the same corpus grown by 80 new ones."""
    d = tmp_path_factory.mktemp("cache-corpus")
    old, new = d / "old.jsonl", d / "new.jsonl"
    synth.write_corpus(120, out=str(old), mix="all-outcomes", seed=21, median_segments=8)
    synth.write_corpus(80, out=str(new), mix="seed-table", seed=22, median_segments=8)
    grown = d / "grown.jsonl"
    grown.write_bytes(old.read_bytes() + new.read_bytes())
    return old, grown


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_grown_corpus_verifies_only_its_new_episodes(grown: tuple[Path, Path],
                                                       tmp_path: Path, jobs: int) -> None:
    old, bigger = grown
    cache = tmp_path / "cache"
    first = _report([old], tmp_path / "first.jsonl", jobs=jobs, cache=cache)
    assert first.summary.from_cache == 0
    assert _episodes(cache) == 120
    want = tmp_path / "want.jsonl"
    plain = _report([bigger], want, jobs=jobs)
    got = tmp_path / "got.jsonl"
    run = _report([bigger], got, jobs=jobs, cache=cache)
    assert run.summary.from_cache == 120
    assert _body(got) == _body(want)
    assert run.summary.exit_status == plain.summary.exit_status
    assert orjson.loads(got.read_bytes().splitlines()[-1])["from_cache"] == 120
    assert _episodes(cache) == 200
    again = _report([bigger], tmp_path / "again.jsonl", jobs=jobs, cache=cache)
    assert again.summary.from_cache == 200


def test_the_source_is_attached_on_read(grown: tuple[Path, Path], tmp_path: Path) -> None:
    """An entry holds no position: the same Episodes elsewhere (another file, another
    container) are found, and reported where they are now."""
    old, _ = grown
    cache = tmp_path / "cache"
    _report([old], tmp_path / "first.jsonl", jobs=2, cache=cache)
    moved = tmp_path / "moved"
    moved.mkdir()
    for i, line in enumerate(old.read_bytes().splitlines(keepends=True)):
        (moved / f"{i:04d}.json").write_bytes(line)  # the exact bytes: with the newline
    want, got = tmp_path / "want.jsonl", tmp_path / "got.jsonl"
    _report([moved], want, jobs=2)
    run = _report([moved], got, jobs=2, cache=cache)
    assert _body(got) == _body(want)
    assert str(moved) in got.read_bytes().splitlines()[0].decode()
    assert run.summary.from_cache == 120
    (moved / "0000.json").write_bytes(old.read_bytes().splitlines()[0])  # one byte less
    assert _report([moved], got, jobs=2, cache=cache).summary.from_cache == 119


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_damaged_entry_is_recomputed(grown: tuple[Path, Path], tmp_path: Path) -> None:
    """Every value of every segment flipped: each entry is counted and recomputed (the
    block entries too), the report is the uncached one, and the next run finds them
    whole."""
    old, _ = grown
    cache = tmp_path / "cache"
    want = tmp_path / "want.jsonl"
    _report([old], want, jobs=2, cache=cache)
    held_blocks = 0
    for path in _segments(cache):
        for _, _, offset, length, is_block in _records(path):
            held_blocks += is_block
            _flip(path, offset + length - 2)  # inside the content: it no longer checks
    assert held_blocks >= 1
    got = tmp_path / "got.jsonl"
    run = _report([old], got, jobs=2, cache=cache)
    assert run.summary.from_cache == 0
    assert run.summary.cache_recomputed == 120 + held_blocks
    assert _body(got) == _body(want)
    again = _report([old], tmp_path / "again.jsonl", jobs=2, cache=cache)
    assert again.summary.from_cache == 120 and again.summary.cache_recomputed == 0
    assert _body(tmp_path / "again.jsonl") == _body(want)


def _block_records(cache: Path) -> list[tuple[Path, tuple[int, bytes, int, int, bool]]]:
    return [(path, record) for path in _segments(cache) for record in _records(path)
            if record[4]]


def test_foreign_and_torn_segments(grown: tuple[Path, Path], tmp_path: Path) -> None:
    """An index record pointing at another key's value is damaged; a segment cut short
    (or not a segment at all) is ignored: its Episodes are verified and stored again."""
    old, _ = grown
    cache = tmp_path / "cache"
    want = tmp_path / "want.jsonl"
    _report([old], want, jobs=1, batch_bytes=100_000, cache=cache)
    [(path, first), (_, second), *_] = _block_records(cache)  # the client's segment
    data = bytearray(path.read_bytes())
    at = segments.HEADER.size + first[0] * segments.RECORD.size + segments.KEY_BYTES
    data[at:at + 12] = segments.RECORD.pack(b"\0" * 32, second[2], second[3])[32:44]
    path.write_bytes(bytes(data))  # a block's key now files another block's value
    got = tmp_path / "got.jsonl"
    run = _report([old], got, jobs=1, batch_bytes=100_000, cache=cache)
    assert (run.summary.from_cache, run.summary.cache_recomputed) == (120, 1)
    assert _body(got) == _body(want)
    for name, content in (("cut", path.read_bytes()[:100]), ("other", b"not a segment")):
        for other in _segments(cache):
            other.unlink()
        (cache / cache_module.SEGMENTS / (name + segments.SUFFIX)).write_bytes(content)
        run = _report([old], got, jobs=2, cache=cache)
        assert (run.summary.from_cache, run.summary.cache_recomputed) == (0, 0)
        assert _body(got) == _body(want)
        assert _report([old], got, jobs=2, cache=cache).summary.from_cache == 120


def test_the_cli_says_a_damaged_entry_is_recomputed(grown: tuple[Path, Path],
                                                    tmp_path: Path) -> None:
    old, _ = grown
    cache = tmp_path / "cache"
    _report([old], tmp_path / "first.jsonl", jobs=2, cache=cache)
    path, block = _block_records(cache)[0]
    _flip(path, block[2] + block[3] - 2)  # a block: its Episodes are found one by one
    plain = subprocess.run([sys.executable, "-m", "canonkit", "reverify", str(old),
                            "--no-progress", "--jobs", "2"],
                           capture_output=True, text=True, timeout=300)
    cached = subprocess.run([sys.executable, "-m", "canonkit", "reverify", str(old),
                             "--cache", str(cache), "--no-progress", "--jobs", "2"],
                            capture_output=True, text=True, timeout=300)
    assert cached.returncode == plain.returncode == 1
    assert "1 damaged entries recomputed" in cached.stderr
    assert cached.stdout == plain.stdout


def test_options_that_change_a_result_miss(grown: tuple[Path, Path], tmp_path: Path) -> None:
    old, _ = grown
    cache = tmp_path / "cache"
    _report([old], tmp_path / "first.jsonl", jobs=2, cache=cache)
    for options in ({"search_cap": 2}, {"require_layer3": True}):
        want, got = tmp_path / "want.jsonl", tmp_path / "got.jsonl"
        _report([old], want, jobs=2, **options)
        run = _report([old], got, jobs=2, cache=cache, **options)
        assert run.summary.from_cache == 0, options
        assert _body(got) == _body(want)
        assert _report([old], got, jobs=2, cache=cache, **options).summary.from_cache == 120
    # the batch size is no such option
    run = _report([old], tmp_path / "b.jsonl", jobs=1, batch_size=3, cache=cache)
    assert run.summary.from_cache == 120


def test_a_named_layer3_export_is_part_of_the_key(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    jsonl = named_export_corpus(corpus, "all.jsonl", 12, seed=23)
    cache = tmp_path / "cache"
    first = _report([jsonl], tmp_path / "first.jsonl", jobs=2, cache=cache)
    records = [orjson.loads(x) for x in (tmp_path / "first.jsonl").read_bytes().splitlines()]
    assert [r["components"]["layer3"] for r in records[:-1]] == ["ok"] * 12
    assert first.summary.from_cache == 0
    (corpus / "l3" / "5.export").write_bytes(b'{"format": ')  # the export changed
    want, got = tmp_path / "want.jsonl", tmp_path / "got.jsonl"
    _report([jsonl], want, jobs=2)
    run = _report([jsonl], got, jobs=2, cache=cache)
    assert run.summary.from_cache == 11
    assert _body(got) == _body(want)
    assert orjson.loads(got.read_bytes().splitlines()[5])["components"]["layer3"] == "failed"
    # an export that cannot be read is never keyed: verified each time, never stored
    (corpus / "l3" / "7.export").unlink()  # (and the changed 5 is stored by now)
    for _ in range(2):
        run = _report([jsonl], got, jobs=2, cache=cache)
        assert run.summary.from_cache == 11
        assert run.summary.layer3 == {"ok": 10, "failed": 2, "absent": 0}


def test_a_cache_that_cannot_be_used_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    synth.write_corpus(5, out=str(out), mix="all-outcomes", seed=24, median_segments=6)
    a_file = tmp_path / "file"
    a_file.write_bytes(b"")
    with pytest.raises(CacheError):
        reverify.run([out], cache=a_file)
    for url in ("https://example.com/cache/", "file:///tmp/cache/"):
        with pytest.raises(CacheError, match="object storage"):
            reverify.run([out], cache=url)
    done = subprocess.run([sys.executable, "-m", "canonkit", "reverify", str(out), "--cache",
                           str(a_file), "--no-progress"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2 and str(a_file) in done.stderr
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        try:
            with pytest.raises(CacheError, match="writable"):
                reverify.run([out], cache=ro)
        finally:
            ro.chmod(0o700)
    shutil.rmtree(tmp_path / "ro", ignore_errors=True)


def test_journal_and_cache_together(grown: tuple[Path, Path], tmp_path: Path) -> None:
    old, bigger = grown
    cache, journal = tmp_path / "cache", tmp_path / "j"
    _report([old], tmp_path / "first.jsonl", jobs=2, cache=cache)
    want, got = tmp_path / "want.jsonl", tmp_path / "got.jsonl"
    _report([bigger], want, jobs=2)
    run = _report([bigger], got, jobs=2, cache=cache, journal=journal)
    assert (run.summary.from_cache, run.summary.from_journal) == (120, 0)
    run = _report([bigger], got, jobs=2, cache=cache, journal=journal)
    assert (run.summary.from_cache, run.summary.from_journal) == (0, 200)
    assert _body(got) == _body(want)


@needs_obstore
def test_a_cache_in_object_storage(s3: S3Prefix, grown: tuple[Path, Path],
                                   tmp_path: Path) -> None:
    from canonkit._files import remote

    old, bigger = grown
    cache = s3.url + "cache"  # a prefix; the slash is added
    first = _report([old], tmp_path / "first.jsonl", jobs=2, cache=cache)
    assert first.summary.from_cache == 0
    assert _episodes(cache + "/") == 120
    # a segment with an Episode entry: a worker's (the client's holds block entries only,
    # and the listing's order of the two is its names', which are random)
    held = [(ref, data) for ref in remote.list_prefix(s3.url + "cache/segments/")
            for data in [bytearray(remote.read_object(ref))]
            if any(not r[4] for r in _records(bytes(data)))]
    assert held, "no cache segment holds an Episode entry"
    segment, data = held[0]
    want, got = tmp_path / "want.jsonl", tmp_path / "got.jsonl"
    _report([bigger], want, jobs=2)
    _, _, offset, length, _ = next(r for r in _records(bytes(data)) if not r[4])
    data[offset + length - 2] ^= 0x01  # an Episode's value no longer checks
    remote.put(segment.url, bytes(data))
    run = _report([bigger], got, jobs=2, cache=cache)
    assert (run.summary.from_cache, run.summary.cache_recomputed) == (119, 1)
    assert _body(got) == _body(want)
    run = _report([bigger], got, jobs=1, cache=cache)
    assert (run.summary.from_cache, run.summary.cache_recomputed) == (200, 0)
    assert _body(got) == _body(want)
