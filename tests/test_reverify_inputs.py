"""Re-verification reads its inputs through the input door (canonkit._files.inputs):
a compressed stream that does not end cleanly is reported after every Episode read before
the break, a repeated JSON key is refused on every path with its offset, a corpus file
replaced under a run is refused rather than blended, and an over-long line is skipped
without being buffered."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from test_corpus_faults import canonkit_measured

import canonkit.reverify as rv
from canonkit.reverify import synthetic_corpus as synth
from canonkit.reverify import worker


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 reproducible Episodes as JSON lines (a few hundred KB: several zstd blocks)."""
    path = tmp_path_factory.mktemp("inputs") / "c.jsonl"
    synth.write_corpus(40, out=str(path), mix="reproduced", seed=21, median_segments=60)
    return path


def records(path: Path, **options: Any) -> list[dict[str, Any]]:
    return [r.record for r in rv.run([path], **options)]


def cli(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "canonkit", *map(str, argv)],
                          capture_output=True, text=True, timeout=300)


def _zstd_in_frames(data: bytes, frame: int) -> bytes:
    """``data`` as consecutive zstd frames of ``frame`` input bytes each."""
    compressor = zstandard.ZstdCompressor(level=3, write_checksum=True)
    return b"".join(compressor.compress(data[i:i + frame]) for i in range(0, len(data), frame))


# --- compressed streams ------------------------------------------------------------------

def _zstd_per_line(data: bytes) -> tuple[bytes, list[int]]:
    """``data`` with each line in a zstd frame of its own, and where each frame starts."""
    compressor = zstandard.ZstdCompressor(level=3)
    frames = [compressor.compress(line) for line in data.splitlines(keepends=True)]
    starts = [sum(map(len, frames[:k])) for k in range(len(frames))]
    return b"".join(frames), starts


@pytest.mark.parametrize("frame", [3, 17, 39])
def test_a_zstd_corpus_cut_inside_a_frame_is_reported_not_read_as_shorter(
        lines: Path, tmp_path: Path, frame: int) -> None:
    whole, starts = _zstd_per_line(lines.read_bytes())
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(whole[:starts[frame] + 20])  # the frame of line frame + 1 never ends
    *read, last = records(path, jobs=1)
    assert [r["outcome"] for r in read] == ["reproduced"] * frame
    assert last["outcome"] == "invalid_record" and last["source"]["line"] == frame + 1
    assert f"the zstd frame at offset {starts[frame]} does not end" in last["reason"]
    done = cli("reverify", path, "--jobs", "1", "--json", "--no-progress")
    assert done.returncode == 1, done.stderr


@pytest.mark.parametrize("cut", [0.25, 0.5, 0.9, 0.999])
def test_a_truncated_zstd_corpus_is_reported_after_the_episodes_before_the_cut(
        lines: Path, tmp_path: Path, cut: float) -> None:
    whole = _zstd_in_frames(lines.read_bytes(), 1 << 15)
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(whole[:int(len(whole) * cut)])
    *read, last = records(path, jobs=1)
    assert read and all(r["outcome"] == "reproduced" for r in read)
    assert len(read) < 40
    assert last["outcome"] == "invalid_record" and last["source"]["line"] == len(read) + 1
    assert "BrokenStreamError" in last["reason"] and "does not end" in last["reason"]


def test_a_zstd_corpus_cut_inside_its_only_frame_is_not_clean(lines: Path,
                                                              tmp_path: Path) -> None:
    whole = zstandard.ZstdCompressor().compress(lines.read_bytes())
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(whole[:-1])  # only the checksum or the last block's end is missing
    (last,) = [r for r in records(path, jobs=1) if r["outcome"] != "reproduced"]
    assert last["outcome"] == "invalid_record" and "does not end" in last["reason"]


@pytest.mark.parametrize("suffix", [".jsonl.zst", ".jsonl.gz"])
@pytest.mark.parametrize("trailer", [b"trailing junk", b"\x00" * 7, b"(\xb5/\xfd"])
def test_bytes_after_the_last_frame_keep_every_episode_before_them(
        lines: Path, tmp_path: Path, suffix: str, trailer: bytes) -> None:
    data = lines.read_bytes()
    compressed = (_zstd_in_frames(data, 1 << 16) if suffix.endswith("zst")
                  else gzip.compress(data))
    path = tmp_path / f"trail{suffix}"
    path.write_bytes(compressed + trailer)
    got = records(path, jobs=1)
    assert [r["outcome"] for r in got] == ["reproduced"] * 40 + ["invalid_record"]
    assert got[-1]["source"] == {"file": str(path), "line": 41}
    assert f"at offset {len(compressed)}" in got[-1]["reason"]
    clean = records(lines, jobs=1)
    assert [r["episode_id"] for r in got[:-1]] == [r["episode_id"] for r in clean]


def test_an_empty_compressed_file_is_not_an_empty_corpus(tmp_path: Path) -> None:
    for name in ("e.jsonl.zst", "e.jsonl.gz"):
        (tmp_path / name).write_bytes(b"")
        (only,) = records(tmp_path / name, jobs=1)
        assert only["outcome"] == "invalid_record" and "empty" in only["reason"]


# --- strict JSON on every path ------------------------------------------------------------

def _repeats(doc: bytes) -> dict[str, tuple[bytes, int]]:
    """Variants of one Episode's text with a key repeated at some depth, and the byte
    offset of the repeat."""
    out = {}
    seal = doc.index(b'"seal":')
    forged = doc[:1] + b'"seal":{"spine_root":"' + b"0" * 64 + b'"},' + doc[1:]
    out["seal, forged before the real one"] = (forged, forged.index(b'"seal":', 2))
    inner = doc[:seal + 8] + b'"spine_root":"ab",' + doc[seal + 8:]
    out["seal.spine_root"] = (inner, inner.index(b'"spine_root"', seal + 30))
    ep = doc[:1] + b'"episode_id":"x",' + doc[1:]
    out["episode_id"] = (ep, ep.index(b'"episode_id"', 3))
    segs = doc.index(b'"segments":[{') + len(b'"segments":[{')
    seg = doc[:segs] + b'"content_hash":"' + b"1" * 64 + b'",' + doc[segs:]
    out["segments[0].content_hash"] = (seg, seg.index(b'"content_hash"', segs + 10))
    first = doc.index(b'"segments":')
    twice = doc[:first] + b'"segments":[],' + doc[first:]
    out["segments"] = (twice, twice.index(b'"segments":', first + 5))
    ctx = doc[:-1] + b',"notes":[{"k":{"a":1,"b":[{"c":1,"c":2}]}}]}'
    out["notes[0].k.b[0].c"] = (ctx, ctx.rindex(b'"c"'))
    return out


def test_a_repeated_key_at_any_depth_is_refused_by_every_reader(
        lines: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = next(line for line in lines.read_bytes().splitlines()
               if b'"format":"canonkit-episode/1"' in line)
    for what, (text, offset) in _repeats(doc).items():
        corpus = tmp_path / "dup.jsonl"
        corpus.write_bytes(text + b"\n")
        for fast in (True, False):
            monkeypatch.setattr(worker, "FAST_PATH", fast)
            for jobs in (1, 2):
                (got,) = records(corpus, jobs=jobs)
                assert got["outcome"] == "invalid_record", (what, fast, jobs)
                assert got["reason"].startswith("duplicate_json_key:"), got["reason"]
                assert f"at offset {offset}" in got["reason"], (what, got["reason"])
        single = tmp_path / "dup.json"
        single.write_bytes(text)
        done = cli("astp", "reproduce", single)
        assert done.returncode == 1 and "duplicate_json_key" in done.stderr  # bad data read
        assert f"at offset {offset}" in done.stderr, (what, done.stderr)


# --- a corpus file that changes under the run ----------------------------------------------

@pytest.mark.parametrize("how", ["replaced", "rewritten"])
def test_a_corpus_file_changed_during_a_run_is_refused_not_blended(
        lines: Path, tmp_path: Path, how: str) -> None:
    original = lines.read_bytes()
    other = b"".join(reversed(original.splitlines(keepends=True)))  # same size
    assert len(other) == len(original) and other != original
    path = tmp_path / "c.jsonl"
    path.write_bytes(original)
    expected = [orjson.loads(line)["episode_id"] for line in original.splitlines()]
    run = iter(rv.run([path], jobs=2, batch_bytes=1))  # one line per unit
    got = [next(run).record]
    if how == "replaced":
        (tmp_path / "new").write_bytes(other)
        os.replace(tmp_path / "new", path)
    else:
        with open(path, "r+b") as handle:
            handle.write(other)
    got += [r.record for r in run]
    refused = [r for r in got if r["outcome"] == "invalid_record"]
    assert refused, "the change went unnoticed"
    change = "replaced by another file" if how == "replaced" else "rewritten"
    assert "not the file the run started on" in refused[0]["reason"]
    assert change in refused[0]["reason"]
    for r in refused[1:]:  # refused by its worker, or by the parent once one was
        assert change in r["reason"] or "an earlier range of it was refused" in r["reason"]
    for n, r in enumerate(got):  # the original's Episodes, in their places, then refusals
        if r["outcome"] != "invalid_record":
            assert r["source"]["line"] == n + 1 and r["episode_id"] == expected[n]
        else:
            assert set(r["source"]) == {"file", "offset"}  # its lines cannot be counted
            assert all(later["outcome"] == "invalid_record" for later in got[n:])
            break


def test_a_json_file_changed_under_the_run_is_refused(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    synth.write_corpus(3, out=str(corpus) + os.sep, mix="reproduced", seed=2,
                       median_segments=4)
    run = rv.run([corpus], jobs=2)
    first = sorted(corpus.iterdir())[0]
    text = first.read_bytes()
    first.write_bytes(text.replace(b'"status":"SEALED"', b'"status":"sealed"'))
    got = [r.record for r in run]
    assert got[0]["outcome"] == "invalid_record"
    assert "not the file the run started on" in got[0]["reason"]


# --- an over-long line --------------------------------------------------------------------

def test_an_over_long_line_is_skipped_without_being_buffered(lines: Path,
                                                             tmp_path: Path) -> None:
    limit = 256 * 1024 * 1024
    first, second = lines.read_bytes().splitlines(keepends=True)[:2]
    path = tmp_path / "long.jsonl"
    with open(path, "wb") as handle:  # a sparse 300 MiB line of NUL bytes between two
        handle.write(first)
        handle.seek(len(first) + limit + 40 * 1024 * 1024)
        handle.write(b"\n" + second)
    done = canonkit_measured("reverify", path, "--jobs", "1", "--json", "--no-progress")
    assert done.returncode == 1, done.stderr
    got = [json.loads(line) for line in done.stdout.splitlines()][:-1]
    assert [r["outcome"] for r in got] == ["reproduced", "invalid_record", "reproduced"]
    assert got[1]["source"]["line"] == 2 and "document limit" in got[1]["reason"]
    peak_mib = int(done.stderr.split("peak_rss_kib")[1].split()[0]) / 1024
    assert peak_mib < 200, f"peak RSS {peak_mib:.0f} MiB: the line was buffered"
