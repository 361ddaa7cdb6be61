"""Resumable runs (REVERIFY.md §7, ``--journal``): a run killed at any moment and started
again on its journal gives the uninterrupted run's report; a changed input is verified
again; a torn or damaged journal is read up to what checks; a journal of other options,
inputs or no journal at all is refused before any work."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from blake3 import blake3

from canonkit import reverify
from canonkit.errors import CanonkitError, JournalError
from canonkit.reverify import synthetic_corpus as synth
from reverify_helpers import named_export_corpus
from services import S3Prefix, needs_obstore

RUN_SPECIFIC = ("from_journal", "from_cache")


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _final(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads(_lines(path)[-1])
    return value


def _same_report(got: Path, want: Path) -> None:
    """Every Episode line byte for byte, and the final line but for its run-specific
    counts."""
    a, b = _lines(got), _lines(want)
    assert a[:-1] == b[:-1]
    fa, fb = orjson.loads(a[-1]), orjson.loads(b[-1])
    for name in RUN_SPECIFIC:
        assert name in fa and name in fb
        del fa[name], fb[name]
    assert fa == fb


def _cli(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "canonkit", "reverify", *map(str, argv)],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 2,400 Episodes in every kind of unit of work: two JSON-lines files (byte
    ranges), a gzip stream (documents the parent reads, in batches) and a directory of
    .json documents (groups of files)."""
    d = tmp_path_factory.mktemp("journal-corpus")
    root = d / "corpus"
    root.mkdir()
    for seed, (n, name, mix) in enumerate([(900, "a.jsonl", "all-outcomes"),
                                           (900, "b.jsonl", "seed-table"),
                                           (400, "c.jsonl.gz", "seed-table"),
                                           (200, "docs" + os.sep, "all-outcomes")], 11):
        synth.write_corpus(n, out=str(root) + os.sep + name, mix=mix, seed=seed,
                           median_segments=8)
    return root


def _entries(journal: Path) -> int:
    """Complete entry lines in ``journal`` (after its header)."""
    try:
        return max(0, journal.read_bytes().count(b"\n") - 1)
    except FileNotFoundError:
        return 0


def test_resume_after_sigkill_gives_the_uninterrupted_report(corpus: Path,
                                                             tmp_path: Path) -> None:
    want = tmp_path / "want.jsonl"
    args = ["--jobs", "2", "--batch-size", "8", "--no-progress"]
    began = time.monotonic()
    done = _cli(corpus, "--report", want, *args, cwd=tmp_path)
    whole = time.monotonic() - began
    assert done.returncode == 1, done.stderr  # the corpus holds failing outcomes
    assert _final(want)["from_journal"] == 0 and _final(want)["from_cache"] == 0

    journal, got = tmp_path / "run.journal", tmp_path / "got.jsonl"
    rng = random.Random(20261202)
    kills = 0
    for _ in range(4):
        if got.exists():  # a resumed run may finish before it is killed
            got.unlink()
        proc = subprocess.Popen(
            [sys.executable, "-m", "canonkit", "reverify", str(corpus), "--report", str(got),
             "--journal", str(journal), *args],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)  # its own group: the workers die with it
        time.sleep(rng.uniform(0.3, 0.8) * whole)
        # a random moment, but after the first finished unit: a run killed before any unit
        # finished has nothing to resume from, and the test would show nothing
        deadline = time.monotonic() + 60
        while proc.poll() is None and _entries(journal) == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
            proc.wait(60)
            if got.exists():  # killed after its report was committed, before it exited
                _same_report(got, want)  # a report that exists is whole
        proc.wait(60)
    assert kills >= 1
    done = _cli(corpus, "--report", got, "--journal", journal, *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    _same_report(got, want)
    final = _final(got)
    assert 0 < final["from_journal"] <= final["summary"]["total"]
    # once complete, the journal answers for every Episode
    again = tmp_path / "again.jsonl"
    done = _cli(corpus, "--report", again, "--journal", journal, *args, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    _same_report(again, want)
    assert _final(again)["from_journal"] == final["summary"]["total"]


def _interrupted(paths: list[Path], journal: Path | str, stop_after: int,
                 **options: Any) -> None:
    """A run that stops being consumed after ``stop_after`` Episodes (as a client that
    goes away would)."""
    run = reverify.run(paths, journal=journal, **options)
    it = iter(run)
    for n, _ in enumerate(it, 1):
        if n >= stop_after:
            break
    it.close()


def test_a_changed_input_is_verified_again(tmp_path: Path) -> None:
    d = tmp_path / "c"
    d.mkdir()
    synth.write_corpus(60, out=str(d / "a.jsonl"), mix="all-outcomes", seed=1,
                       median_segments=6)
    synth.write_corpus(40, out=str(d / "b.jsonl"), mix="all-outcomes", seed=2,
                       median_segments=6)
    journal = tmp_path / "j"
    list(reverify.run([d], jobs=2, journal=journal))
    # b.jsonl: one Episode swapped for a broken line, same size, so only the mtime says
    b = d / "b.jsonl"
    lines = _lines(b)
    lines[3] = b"x" * len(lines[3])
    b.write_bytes(b"\n".join(lines) + b"\n")
    st = os.stat(b)
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    fresh, resumed = tmp_path / "fresh.jsonl", tmp_path / "resumed.jsonl"
    list(reverify.run([d], jobs=2, report=fresh))
    run = reverify.run([d], jobs=2, report=resumed, journal=journal)
    records = [r.record for r in run]
    _same_report(resumed, fresh)
    assert run.summary.from_journal == 60  # a.jsonl only
    assert records[60 + 3]["outcome"] == "invalid_record"


def test_a_torn_tail_is_ignored_and_cut(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl.gz"
    synth.write_corpus(50, out=str(out), mix="all-outcomes", seed=3, median_segments=6)
    journal, want = tmp_path / "j", tmp_path / "want.jsonl"
    list(reverify.run([out], jobs=1, batch_size=7, report=want, journal=journal))
    data = journal.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    journal.write_bytes(data[:last + (len(data) - last) // 2])  # killed while appending
    got = tmp_path / "got.jsonl"
    run = reverify.run([out], jobs=1, batch_size=7, report=got, journal=journal)
    assert any("torn" in note for note in run.journal_notes)
    list(run)
    _same_report(got, want)
    assert run.summary.from_journal == 49  # 7 units of 7, then the torn one of 1
    assert journal.read_bytes() == data  # cut, then the unit appended again
    run = reverify.run([out], jobs=1, batch_size=7, journal=journal)
    assert run.journal_notes == []
    assert run.summary.from_journal == 50


def test_a_damaged_entry_is_verified_again(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl.gz"
    synth.write_corpus(30, out=str(out), mix="all-outcomes", seed=4, median_segments=6)
    journal, want = tmp_path / "j", tmp_path / "want.jsonl"
    list(reverify.run([out], jobs=1, batch_size=10, report=want, journal=journal))
    lines = _lines(journal)
    assert len(lines) == 4  # the header and three units
    # an outcome changed in place: the entry still parses but no longer checks
    lines[2] = lines[2].replace(b"reproduced", b"reproduceX", 1)
    assert b"reproduceX" in lines[2]
    _resume_with_one_damaged_entry(tmp_path, out, journal, lines, want)


def test_an_entry_the_strict_reader_refuses_is_damaged_even_with_its_seal(
        tmp_path: Path) -> None:
    """A journal is read through the strict JSON reader: an entry whose seal matches its
    bytes but which repeats a key (a forged result after the real one) is not trusted."""
    out = tmp_path / "c.jsonl.gz"
    synth.write_corpus(30, out=str(out), mix="all-outcomes", seed=4, median_segments=6)
    journal, want = tmp_path / "j", tmp_path / "want.jsonl"
    list(reverify.run([out], jobs=1, batch_size=10, report=want, journal=journal))
    lines = _lines(journal)
    entry = lines[2][len(b'{"entry":'):-len(b',"blake3":"') - 64 - 2]
    assert entry.startswith(b'{"unit":') and entry.endswith(b"}")
    result = entry[entry.index(b'"result":') + 9:-1]
    assert b'"reproduced"' in result
    forged = entry[:-1] + b',"result":' + result.replace(b'"reproduced"', b'"unsealed"') + b"}"
    lines[2] = b'{"entry":%b,"blake3":"%b"}' % (forged, blake3(forged).hexdigest().encode())
    _resume_with_one_damaged_entry(tmp_path, out, journal, lines, want)


def _resume_with_one_damaged_entry(tmp_path: Path, corpus: Path, journal: Path,
                                   lines: list[bytes], want: Path) -> None:
    """Write ``lines`` as the journal of a 30-Episode run in three units, one entry of
    them damaged: the resumed run ignores that entry, redoes its unit, takes the other
    two from the journal and writes the uninterrupted run's report."""
    journal.write_bytes(b"\n".join(lines) + b"\n")
    got = tmp_path / "got.jsonl"
    run = reverify.run([corpus], jobs=1, batch_size=10, report=got, journal=journal)
    assert any("ignored 1 damaged" in note for note in run.journal_notes)
    list(run)
    _same_report(got, want)
    assert run.summary.from_journal == 20


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_journal_that_is_not_a_regular_file_is_refused_at_once(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    synth.write_corpus(5, out=str(out), mix="seed-table", seed=1, median_segments=4)
    fifo = tmp_path / "j"
    os.mkfifo(fifo)
    began = time.monotonic()
    with pytest.raises(CanonkitError):
        reverify.run([out], jobs=1, journal=fifo)
    assert time.monotonic() - began < 10


def test_line_numbers_across_ranges_and_annotations(tmp_path: Path) -> None:
    """Byte ranges taken from the journal still number their lines after the ranges
    before them, and their annotations come out too."""
    out = tmp_path / "c.jsonl"
    synth.write_corpus(400, out=str(out), mix="seed-table", seed=5, median_segments=6)
    options: dict[str, Any] = {"jobs": 2, "batch_bytes": 1}  # every range the minimum
    want, want_notes = tmp_path / "want.jsonl", tmp_path / "want.notes"
    list(reverify.run([out], report=want, annotations=want_notes, **options))
    journal = tmp_path / "j"
    _interrupted([out], journal, 150, **options)
    got, got_notes = tmp_path / "got.jsonl", tmp_path / "got.notes"
    run = reverify.run([out], report=got, annotations=got_notes, journal=journal, **options)
    list(run)
    _same_report(got, want)
    assert got_notes.read_bytes() == want_notes.read_bytes()
    assert 0 < run.summary.from_journal < 400


def test_other_options_or_inputs_are_refused(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    synth.write_corpus(10, out=str(out), mix="all-outcomes", seed=6, median_segments=6)
    other = tmp_path / "d.jsonl"
    synth.write_corpus(5, out=str(other), mix="all-outcomes", seed=7, median_segments=6)
    journal = tmp_path / "j"
    list(reverify.run([out], jobs=1, journal=journal))
    before = journal.read_bytes()
    for options in ({"search_cap": 5}, {"require_layer3": True}):
        with pytest.raises(JournalError, match="other options"):
            reverify.run([out], jobs=1, journal=journal, **options)
    with pytest.raises(JournalError, match="other options or inputs"):
        reverify.run([out, other], jobs=1, journal=journal)
    assert journal.read_bytes() == before  # never touched
    done = _cli(out, "--journal", journal, "--search-cap", "3", "--no-progress",
                cwd=tmp_path)
    assert done.returncode == 2
    assert "journal" in done.stderr and str(journal) in done.stderr
    assert journal.read_bytes() == before

    foreign = tmp_path / "notes.txt"
    foreign.write_bytes(b"my notes\nsecond line\n")
    with pytest.raises(JournalError, match="not a canonkit reverify journal"):
        reverify.run([out], jobs=1, journal=foreign)
    foreign.write_bytes(b"no newline at all")
    with pytest.raises(JournalError, match="not a canonkit reverify journal"):
        reverify.run([out], jobs=1, journal=foreign)
    assert foreign.read_bytes() == b"no newline at all"
    done = _cli(out, "--journal", foreign, "--no-progress", cwd=tmp_path)
    assert done.returncode == 2 and "not a canonkit reverify journal" in done.stderr
    for url in ("http://example.invalid/run.journal", "file:///tmp/run.journal"):
        with pytest.raises(JournalError, match="object storage"):  # no PUT over http(s)
            reverify.run([out], jobs=1, journal=url)
    with pytest.raises(reverify.OutputPathError):
        reverify.run([out], jobs=1, journal=out)  # an input
    with pytest.raises(reverify.OutputPathError):
        reverify.run([out], jobs=1, journal=tmp_path / "r", report=tmp_path / "r")


def test_a_header_cut_while_written_starts_over(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    synth.write_corpus(10, out=str(out), mix="all-outcomes", seed=8, median_segments=6)
    journal = tmp_path / "j"
    list(reverify.run([out], jobs=1, journal=journal))
    header = _lines(journal)[0]
    journal.write_bytes(header[:20])
    run = reverify.run([out], jobs=1, journal=journal)
    assert run.summary.from_journal == 0
    assert _lines(journal)[0] == header and len(_lines(journal)) > 1


def test_counts_are_zero_without_journal_or_cache(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    synth.write_corpus(12, out=str(out), mix="all-outcomes", seed=9, median_segments=6)
    report = tmp_path / "r.jsonl"
    run = reverify.run([out], jobs=1, report=report)
    list(run)
    assert run.summary.from_journal == 0 and run.summary.from_cache == 0
    final = _final(report)
    assert final["from_journal"] == 0 and final["from_cache"] == 0
    done = _cli(out, "--json", "--no-progress", cwd=tmp_path)
    last = orjson.loads(done.stdout.splitlines()[-1])
    assert last["from_journal"] == 0 and last["from_cache"] == 0


def test_dask_engine_resumes(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    out = tmp_path / "c.jsonl"
    synth.write_corpus(200, out=str(out), mix="all-outcomes", seed=10, median_segments=6)
    docs = tmp_path / "docs"
    synth.write_corpus(30, out=str(docs) + os.sep, mix="all-outcomes", seed=11,
                       median_segments=6)
    want = tmp_path / "want.jsonl"
    list(reverify.run([out, docs], jobs=2, report=want))
    options: dict[str, Any] = {"engine": "dask", "jobs": 2, "batch_size": 4,
                               "batch_bytes": 1}
    journal = tmp_path / "j"
    _interrupted([out, docs], journal, 120, **options)
    got = tmp_path / "got.jsonl"
    run = reverify.run([out, docs], report=got, journal=journal, **options)
    list(run)
    _same_report(got, want)
    assert 0 < run.summary.from_journal < 230


@needs_obstore
def test_objects_in_object_storage_resume_by_etag(s3: S3Prefix, tmp_path: Path) -> None:
    """An object's identity is its URL, size and ETag: a resumed run over a bucket takes
    the ranges it finished from the journal; an object rewritten since (another ETag, the
    same size) is verified again."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    synth.write_corpus(150, out=str(a), mix="all-outcomes", seed=15, median_segments=6)
    synth.write_corpus(40, out=str(b), mix="all-outcomes", seed=16, median_segments=6)
    s3.put("a.jsonl", a.read_bytes())
    s3.put("b.jsonl", b.read_bytes())
    urls = [s3.key_url("a.jsonl"), s3.key_url("b.jsonl")]
    options: dict[str, Any] = {"jobs": 2, "batch_bytes": 1}
    want = tmp_path / "want.jsonl"
    list(reverify.run(urls, report=want, **options))
    journal = tmp_path / "j"
    _interrupted(urls, journal, 60, **options)
    got = tmp_path / "got.jsonl"
    run = reverify.run(urls, report=got, journal=journal, **options)
    list(run)
    _same_report(got, want)
    assert 0 < run.summary.from_journal < 190
    lines = _lines(b)
    lines[0] = b"x" * len(lines[0])  # another version of b.jsonl, of the same size
    s3.put("b.jsonl", b"\n".join(lines) + b"\n")
    fresh = tmp_path / "fresh.jsonl"
    list(reverify.run(urls, report=fresh, **options))
    run = reverify.run(urls, report=got, journal=journal, **options)
    records = [r.record for r in run]
    _same_report(got, fresh)
    assert run.summary.from_journal == 150
    assert records[150]["outcome"] == "invalid_record"


def test_units_reading_a_named_layer3_export_are_not_journalled(tmp_path: Path) -> None:
    """The journal keys on the corpus inputs: a unit holding an Episode whose Layer 3
    export is a file beside it is verified again on every resume (also when its result
    came from the cache), so a changed export is never missed."""
    corpus = tmp_path / "c"
    corpus.mkdir()
    named_export_corpus(corpus, "named.jsonl", 8, seed=17)
    synth.write_corpus(20, out=str(corpus / "plain.jsonl"), mix="all-outcomes", seed=18,
                       median_segments=6)
    journal, cache = tmp_path / "j", tmp_path / "cache"
    for options in ({}, {"cache": cache}, {"cache": cache}):
        if journal.exists():
            journal.unlink()
        list(reverify.run([corpus], jobs=2, journal=journal, **options))
        entries = [orjson.loads(x) for x in _lines(journal)[1:]]
        assert entries and all("plain.jsonl" in e["entry"]["unit"] for e in entries)
    (corpus / "l3" / "3.export").write_bytes(b'{"format": ')
    want, got = tmp_path / "want.jsonl", tmp_path / "got.jsonl"
    list(reverify.run([corpus], jobs=2, report=want))
    for options in ({}, {"cache": cache}):
        run = reverify.run([corpus], jobs=2, report=got, journal=journal, **options)
        records = [r.record for r in run]
        _same_report(got, want)
        assert run.summary.from_journal == 20
        assert records[3]["components"]["layer3"] == "failed"


@needs_obstore
def test_a_journal_in_object_storage_resumes(s3: S3Prefix, tmp_path: Path) -> None:
    """A journal under a prefix of object storage holds the header and one entry object per
    finished unit; a resumed run takes those units from it and writes the uninterrupted
    run's report; a damaged entry is verified again and counted when the run ends."""
    from canonkit._files import remote

    out = tmp_path / "c.jsonl"
    synth.write_corpus(120, out=str(out), mix="all-outcomes", seed=21, median_segments=6)
    options: dict[str, Any] = {"jobs": 1, "batch_size": 10, "batch_bytes": 1}
    want = tmp_path / "want.jsonl"
    list(reverify.run([out], report=want, **options))
    journal = s3.key_url("night.journal")
    _interrupted([out], journal, 50, **options)
    entries = remote.list_prefix(journal + "/entries/")
    assert remote.read_object(remote.head(journal + "/header")).startswith(
        b'{"format":"canonkit-reverify-journal/1"')
    assert 4 <= len(entries) < 120
    got = tmp_path / "got.jsonl"
    run = reverify.run([out], report=got, journal=journal, **options)
    list(run)
    _same_report(got, want)
    assert 0 < run.summary.from_journal < 120 and run.journal_notes == []
    done = len(remote.list_prefix(journal + "/entries/"))
    assert done > len(entries)
    # one entry damaged (its seal no longer matches), one gone after the listing
    remote.put(entries[0].url, b'{"entry":{"unit":"x"},"blake3":"' + b"0" * 64 + b'"}\n')
    run = reverify.run([out], report=got, journal=journal, **options)
    remote.delete(entries[1].url)
    list(run)
    _same_report(got, want)
    assert 0 < run.summary.from_journal < 120
    assert run.journal_notes == ["ignored 2 damaged entries (their units were verified "
                                 "again)"]
    # the damaged entry was written again: the next run takes every unit from the journal
    run = reverify.run([out], report=got, journal=journal, **options)
    list(run)
    assert run.summary.from_journal == 120 and run.journal_notes == []


@needs_obstore
def test_a_journal_in_object_storage_is_refused_before_any_work(s3: S3Prefix,
                                                                tmp_path: Path) -> None:
    """A journal of other options, or one under an input prefix (its objects would be
    inputs of the next run), is refused before anything is verified; so is a prefix
    whose header is not a journal's."""
    from canonkit._files import remote

    out = tmp_path / "c.jsonl"
    synth.write_corpus(20, out=str(out), mix="all-outcomes", seed=22, median_segments=4)
    journal = s3.key_url("j/")
    list(reverify.run([out], jobs=1, journal=journal))
    with pytest.raises(JournalError, match="other options or inputs"):
        reverify.run([out], jobs=1, journal=journal, search_cap=7)
    s3.put("corpus/c.jsonl", out.read_bytes())
    with pytest.raises(reverify.OutputPathError, match="under the input prefix"):
        reverify.run([s3.key_url("corpus/")], jobs=1, journal=s3.key_url("corpus/j"))
    remote.put(s3.key_url("foreign/header"), b"hello\n")
    with pytest.raises(JournalError, match="not a canonkit reverify journal"):
        reverify.run([out], jobs=1, journal=s3.key_url("foreign"))
    done = _cli(out, "--journal", s3.key_url("foreign"), "--no-progress", cwd=tmp_path)
    assert done.returncode == 2 and "not a canonkit reverify journal" in done.stderr


def test_entry_places_are_kept_in_sorted_arrays() -> None:
    """A resumed journal keeps 20 bytes an entry; a unit journalled twice is read from its
    last entry first, and keys sharing nothing are never confused."""
    from canonkit.reverify.journal import _Places

    places = _Places()
    for i in range(1000):
        places.add(f"unit {i % 700}", i * 1000, i + 1)
    places.freeze()
    assert len(places) == 1000
    assert places.places("unit 5") == [(705000, 706), (5000, 6)]
    assert places.places("unit 699") == [(699000, 700)]
    assert places.places("another") == []
    assert places._shorts.itemsize + places._offsets.itemsize + places._sizes.itemsize == 20
