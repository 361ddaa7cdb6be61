"""Work descriptors for seekable inputs (reverify/ranges.py): range planning covers every
line exactly once, workers read the same documents the parent would have shipped, and
reports are byte-identical between byte-shipping and range modes under every engine."""
from __future__ import annotations

import gzip
import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from canonkit import reverify
from canonkit.reverify import synthetic_corpus as synth
from canonkit.reverify import ranges, runner, sources, units

REPO = Path(__file__).parent.parent
EXAMPLE = REPO / "examples" / "seed-table"

_LINE = st.one_of(
    st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b" ", b"\r", b"\t \r", b'{"a": 1}', b"\xff\xfe", b"[1, 2"]),
    st.integers(40, 300).map(lambda n: b"x" * n),  # longer than most chunks
)


def _file_bytes(lines: list[bytes], endings: list[bytes], trailing: bool) -> bytes:
    body = b"".join(line + end for line, end in zip(lines, endings))
    return body if trailing else body[: len(body) - len(endings[-1])] if lines else body


def _reference(path: str) -> list[tuple[str, bytes, int]]:
    """What the parent's reader (sources._read_jsonl) yields: kind, payload, line."""
    return [(i.kind, i.payload, i.source.number)
            for i in sources.iter_items([sources.Input(path, "jsonl")])]


def _from_ranges(path: str, chunk: int) -> list[tuple[str, bytes, int]]:
    """The same through planned ranges, as the workers read them (units._verify_range)."""
    out = []
    base = 0
    for start, end in ranges.plan_ranges(path, chunk):
        lines = 0
        for lines, _, line in ranges.read_lines(path, start, end, sources.MAX_DOCUMENT_BYTES):
            if line is None:
                out.append(("error", units.too_long().encode(), base + lines))
            elif line:
                out.append(("json", line, base + lines))
        base += lines
    return out


def _line_offsets_are_exact(path: str, chunk: int) -> None:
    data = Path(path).read_bytes()
    for start, end in ranges.plan_ranges(path, chunk):
        for _, at, line in ranges.read_lines(path, start, end, sources.MAX_DOCUMENT_BYTES):
            if line:
                assert data[at:at + len(line)] == line


def _check_plan(data: bytes, path: str, chunk: int) -> None:
    spans = list(ranges.plan_ranges(path, chunk))
    assert [s for s, _ in spans][:1] in ([], [0])
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))  # contiguous
    assert (spans[-1][1] if spans else 0) == len(data)  # ... and covering the file
    for start, end in spans:
        assert start < end
        assert end - start >= chunk or end == len(data)
        assert start == 0 or data[start - 1:start] == b"\n"  # whole lines only
    assert _from_ranges(path, chunk) == _reference(path)
    _line_offsets_are_exact(path, chunk)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, max_size=12), data=st.data(), trailing=st.booleans(),
       chunk=st.integers(1, 80))
@example(lines=[b"x" * 500], data=None, trailing=False, chunk=3)
def test_ranges_cover_every_line_exactly_once(tmp_path_factory: pytest.TempPathFactory,
                                              lines: list[bytes], data: st.DataObject | None,
                                              trailing: bool, chunk: int) -> None:
    endings = (data.draw(st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=len(lines),
                                  max_size=len(lines))) if data is not None
               else [b"\n"] * len(lines))
    raw = _file_bytes(lines, endings, trailing)
    path = tmp_path_factory.mktemp("plan") / "f.jsonl"
    path.write_bytes(raw)
    _check_plan(raw, str(path), chunk)


@pytest.mark.parametrize("raw", [
    b"",
    b"\n",
    b"\n\n\n",
    b'{"a": 1}',                          # no trailing newline
    b'{"a": 1}\r\n{"b": 2}\r\n',          # CRLF
    b'\n\n{"a": 1}\n\n \n{"b": 2',        # blank lines, truncated last line
    b"y" * 5000 + b"\n" + b"z" * 3,       # a chunk boundary deep inside a long line
    b"\xff\xfe\n\x00\n{\n",                # not UTF-8, NUL, truncated JSON
])
@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 20])
def test_range_edge_cases(tmp_path: Path, raw: bytes, chunk: int) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    _check_plan(raw, str(path), chunk)


def test_over_long_line_is_reported_like_the_parent_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources, "MAX_DOCUMENT_BYTES", 10)
    monkeypatch.setattr(units, "MAX_DOCUMENT_BYTES", 10)
    raw = b'{"a": 1}\n' + b"q" * 40 + b"\n{}\n" + b"r" * 25
    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    assert [k for k, _, _ in _reference(str(path))] == ["json", "error", "json", "error"]
    for chunk in (1, 5, 12, 100):
        _check_plan(raw, str(path), chunk)


def test_chunk_size_for_small_and_large_files() -> None:
    assert ranges.chunk_bytes_for(10, 2, 8 << 20) == ranges.MIN_RANGE_BYTES
    assert ranges.chunk_bytes_for(10 << 30, 2, 8 << 20) == 8 << 20
    assert ranges.chunk_bytes_for(8 << 20, 2, 8 << 20) == 1 << 20


def test_seekable_kinds() -> None:
    assert ranges.seekable_kind("a/b.JSONL") == "lines"
    assert ranges.seekable_kind("b.ndjson") == "lines"
    assert ranges.seekable_kind("b.json") == "json"
    for name in ("b.jsonl.gz", "b.jsonl.zst", "b.cborseq", "b.cbor"):
        assert ranges.seekable_kind(name) is None


# --- whole runs: byte-shipping and range modes give identical reports ---------------


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory with a JSON lines corpus full of awkward lines, a compressed
    copy, a directory of .json documents (one unreadable) and the example corpus."""
    d = tmp_path_factory.mktemp("mixed")
    synth.write_corpus(24, out=str(d / "c.jsonl"), mix="all-outcomes", seed=5,
                       median_segments=6)
    body = (d / "c.jsonl").read_bytes().splitlines(keepends=True)
    awkward = [b"\n", b"  \r\n", b"\xff\xfe not utf-8\n", b"[1, 2]\n", b"{\"trunc\n"]
    mixed_lines = []
    for i, line in enumerate(body):
        mixed_lines.append(line if i % 3 else line.replace(b"\n", b"\r\n"))
        mixed_lines.append(awkward[i % len(awkward)])
    (d / "c.jsonl").write_bytes(b"".join(mixed_lines) + body[0][:-40])  # truncated, no \n
    (d / "c.jsonl.gz").write_bytes(gzip.compress(body[1] + body[2]))
    synth.write_corpus(6, out=str(d / "docs") + os.sep, mix="all-outcomes", seed=6,
                       median_segments=6)
    os.symlink(d / "docs" / "missing.json", d / "docs" / "zz-dangling.json")
    shutil.copytree(EXAMPLE, d / "seed-table")
    return d


_INPUTS = ["c.jsonl", "c.jsonl.gz", "docs", "c.jsonl", "seed-table"]


def _report(cwd: Path, name: str, monkeypatch: pytest.MonkeyPatch, *, ranges_on: bool,
            **options: object) -> bytes:
    monkeypatch.chdir(cwd)  # relative names: sources keep the names as given
    monkeypatch.setattr(runner, "SEEKABLE_RANGES", ranges_on)
    list(reverify.run(_INPUTS, report=name, annotations=name + ".notes", **options))
    return (cwd / name).read_bytes() + (cwd / (name + ".notes")).read_bytes()


def test_local_pool_ranges_match_shipped_bytes(mixed: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _report(mixed, "ref.jsonl", monkeypatch, ranges_on=False, jobs=1)
    assert b'"line":' in expected and b"zz-dangling.json" in expected
    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 1)
    planned: list[tuple[int, int]] = []
    plan = ranges.plan_ranges

    def spy(path: str, chunk: int, expect: Any = None) -> Iterator[tuple[int, int]]:
        for span in plan(path, chunk, expect):
            planned.append(span)
            yield span

    monkeypatch.setattr(ranges, "plan_ranges", spy)
    for i, (batch_bytes, batch_size) in enumerate([(1, 1), (3000, 4), (1 << 20, 64)]):
        planned.clear()
        got = _report(mixed, f"pool{i}.jsonl", monkeypatch, ranges_on=True, jobs=2,
                      batch_bytes=batch_bytes, batch_size=batch_size)
        assert got == expected, (batch_bytes, batch_size)
        assert len(planned) > 2  # the JSON lines really went as ranges


def test_dask_ranges_match_shipped_bytes(mixed: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("dask.distributed")
    expected = _report(mixed, "ref-d.jsonl", monkeypatch, ranges_on=False, jobs=1)
    monkeypatch.setattr(ranges, "MIN_RANGE_BYTES", 1)
    got = _report(mixed, "dask.jsonl", monkeypatch, ranges_on=True, engine="dask", jobs=2,
                  batch_bytes=5000, batch_size=3)
    assert got == expected


def test_example_corpus_identical_in_both_modes(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    reports = []
    for i, on in enumerate([False, True]):
        monkeypatch.setattr(runner, "SEEKABLE_RANGES", on)
        path = tmp_path / f"r{i}.jsonl"
        list(reverify.run([EXAMPLE], jobs=2, batch_size=5, report=path))
        reports.append(path.read_bytes())
    assert reports[0] == reports[1]
