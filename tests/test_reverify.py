"""The bulk re-verifier: synthetic corpora against their answer files under every engine,
byte-identical reports across engines, worker counts and batch sizes, every input
container, report/annotation files, the CLI and bounded memory."""
from __future__ import annotations

import gc
import gzip
import hashlib
import io
import os
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

import canonkit

from canonkit import reverify
from canonkit.cli import main as cli_main
from canonkit.reverify import synthetic_corpus as synth
from canonkit._progress import Progress

REPO = Path(__file__).parent.parent
EXAMPLE = REPO / "examples" / "seed-table"
EXAMPLE_ANSWERS = REPO / "examples" / "seed-table.answers.jsonl"
SEED_TABLE = {"reproduced": 45, "reproduced_under_other_construction": 8,
              "reproduced_by_search": 4, "not_reproducible": 2, "no_seal_record": 3}


def answers(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def check_against(results: list[reverify.Result], expected: list[dict[str, Any]]) -> None:
    assert len(results) == len(expected)
    for result, answer in zip(results, expected):
        record = result.record
        assert record["outcome"] == answer["outcome"], (answer, record)
        assert record["episode_id"] == answer["episode_id"], (answer, record)
        if answer["outcome"] in ("reproduced_by_search", "reproduced_with_annotation"):
            assert record["order"] == answer["order"], (answer, record)
        for flag in answer["flags"]:
            assert flag in record["flags"], (answer, record)
        if answer.get("reason"):
            assert answer["reason"].split("_")[0] in record["reason"], (answer, record)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A seed-table corpus (62 Episodes, short spines) and its answers."""
    d = tmp_path_factory.mktemp("seed")
    out, ans = d / "corpus.jsonl", d / "answers.jsonl"
    counts = synth.write_corpus(62, out=str(out), answers=str(ans), mix="seed-table", seed=7,
                                median_segments=12)
    assert {k: v for k, v in counts.items() if v} == SEED_TABLE
    return out, ans


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Every outcome class, both document formats."""
    d = tmp_path_factory.mktemp("all")
    out, ans = d / "corpus.jsonl", d / "answers.jsonl"
    synth.write_corpus(84, out=str(out), answers=str(ans), mix="all-outcomes", seed=11,
                       median_segments=10, por_fraction=0.5)
    return out, ans


# --- the generator ------------------------------------------------------------------

def test_allocate_seed_table_exact_and_scaled() -> None:
    plan = synth.allocate("seed-table", 62)
    assert {k: plan.count(k) for k in SEED_TABLE} == SEED_TABLE
    big = synth.allocate("seed-table", 6200)
    assert {k: big.count(k) for k in SEED_TABLE} == {k: v * 100 for k, v in SEED_TABLE.items()}
    odd = synth.allocate("seed-table", 1001)
    assert len(odd) == 1001 and abs(odd.count("reproduced") - 1001 * 45 / 62) < 1
    with pytest.raises(ValueError):
        synth.allocate("no-such-mix", 5)


def test_generator_is_deterministic(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    synth.write_corpus(20, out=str(a), mix="all-outcomes", seed=5, median_segments=6)
    synth.write_corpus(20, out=str(b), mix="all-outcomes", seed=5, median_segments=6)
    synth.write_corpus(20, out=str(c), mix="all-outcomes", seed=6, median_segments=6)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()


def test_generator_sizes_and_ties() -> None:
    eps = list(synth.generate(200, mix="seed-table", seed=1, median_segments=200))
    sizes = sorted(len(e.doc["segments"] if "segments" in e.doc else e.doc["stored"]["segments"])
                   for e in eps if e.doc)
    assert 100 <= sizes[len(sizes) // 2] <= 400  # median around 200
    assert sizes[0] >= 10 and sizes[-1] >= 500  # tens to thousands
    formats = {e.answer["format"] for e in eps}
    assert formats == set(synth.FORMATS)
    for e in eps:
        if e.answer["outcome"] == "reproduced_by_search":
            sig = [s for s in e.doc["signals"] if s["placement"] == "SPINE"]
            stored = [s["content_hash"] for s in sig]
            assert stored != e.answer["order"] and sorted(stored) == sorted(e.answer["order"])


# --- classification against the answers ------------------------------------------------

def test_seed_table_corpus_local_engine(corpus: tuple[Path, Path]) -> None:
    out, ans = corpus
    run = reverify.run([out], jobs=2, batch_size=8)
    check_against(list(run), answers(ans))
    assert {k: v for k, v in run.summary.counts.items() if v} == SEED_TABLE
    assert run.summary.exit_status == 1


def test_seed_table_corpus_dask_engine(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    out, ans = corpus
    local = tmp_path / "local.jsonl"
    dask = tmp_path / "dask.jsonl"
    list(reverify.run([out], jobs=1, report=local))
    run = reverify.run([out], engine="dask", jobs=2, batch_size=5, report=dask)
    check_against(list(run), answers(ans))
    assert dask.read_bytes() == local.read_bytes()


def test_dask_engine_connects_to_a_scheduler(everything: tuple[Path, Path],
                                             tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    out, ans = everything
    local = tmp_path / "local.jsonl"
    remote = tmp_path / "remote.jsonl"
    list(reverify.run([out], jobs=2, report=local))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        run = reverify.run([out], engine="dask", scheduler=cluster.scheduler_address,
                           batch_size=4, report=remote)
        check_against(list(run), answers(ans))
    assert remote.read_bytes() == local.read_bytes()


def test_every_outcome_class(everything: tuple[Path, Path]) -> None:
    out, ans = everything
    expected = answers(ans)
    assert {a["outcome"] for a in expected} == set(reverify.OUTCOMES)
    check_against(list(reverify.run([out], jobs=1)), expected)


def test_reports_identical_across_jobs_and_batch_sizes(everything: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    out, _ = everything
    reports = []
    for i, (jobs, batch) in enumerate([(1, 64), (1, 1), (2, 3), (2, 64), (3, 7)]):
        path = tmp_path / f"r{i}.jsonl"
        list(reverify.run([out], jobs=jobs, batch_size=batch, report=path))
        reports.append(path.read_bytes())
    assert all(r == reports[0] for r in reports)


# Episode report lines, SHA-256 over the lines in input order (sources relative to the
# corpus directory), frozen from the reader that predates the compiled document scanner:
# whichever path reads a document, compiled or twin, one worker or two, its line is the same.
# (all.jsonl's 38 lines that are not JSON carry the strict reader's words: code and offset.)
FROZEN_REPORTS = {
    "seed-table": ("90fae17607d08230bb05e8632e5101b1433a294186a6c3f75ce16ceac337598c", 62),
    "all.jsonl": ("212ce0a11628f72e8b92b2448910be348018b74f5748e275235b02c979ea29fc", 400),
    "st.cborseq": ("774d2808283548831f12d104aaa5bf30beae8f5eef5978fc1929b24d05cd5ab1", 200),
}
FROZEN_CORPORA = {
    "all.jsonl": "cfffa3594d7aca6f41e9631ff76eb330494e29188cc904fed9df4e20c99938e2",
    "st.cborseq": "22816e08c4f883adeafa44e1fe1d65a535d3212b9368e4c841565ab06cfc20b5",
}
_REPORT_DIGESTS = """
import hashlib, json, sys
import canonkit.reverify as rv

def main():
    out = {}
    for name in sys.argv[2:]:
        lines = b"".join(r.line + b"\\n" for r in rv.run([name], jobs=int(sys.argv[1])))
        out[name] = [hashlib.sha256(lines).hexdigest(), lines.count(b"\\n")]
    print(json.dumps(out))

if __name__ == "__main__":
    main()
"""


@pytest.fixture(scope="module")
def frozen_corpora(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("frozen")
    shutil.copytree(EXAMPLE, d / "seed-table")
    synth.write_corpus(400, out=str(d / "all.jsonl"), mix="all-outcomes", seed=2026,
                       median_segments=30, por_fraction=0.5)
    synth.write_corpus(200, out=str(d / "st.cborseq"), mix="seed-table", seed=7,
                       median_segments=20)
    for name, digest in FROZEN_CORPORA.items():
        assert hashlib.sha256((d / name).read_bytes()).hexdigest() == digest, name
    return d


@pytest.mark.parametrize("twin", [False, True], ids=["compiled", "twin"])
def test_report_lines_match_the_frozen_digests(frozen_corpora: Path, twin: bool) -> None:
    import json
    import subprocess
    import sys

    package_root = str(Path(canonkit.__file__).resolve().parent.parent)  # runs elsewhere
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [package_root, os.environ.get("PYTHONPATH", "")]))
    env.pop("CANONKIT_NO_EXTENSIONS", None)
    if twin:
        env["CANONKIT_NO_EXTENSIONS"] = "1"
    script = frozen_corpora / "digests.py"
    script.write_text(_REPORT_DIGESTS)
    jobs = "2" if twin else "1"
    done = subprocess.run([sys.executable, str(script), jobs, *FROZEN_REPORTS],
                          cwd=frozen_corpora, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    found = {k: tuple(v) for k, v in json.loads(done.stdout).items()}
    assert found == FROZEN_REPORTS


# --- input containers ---------------------------------------------------------------

def test_every_container_gives_the_same_verdicts(corpus: tuple[Path, Path],
                                                 tmp_path: Path) -> None:
    out, ans = corpus
    data = out.read_bytes()
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(data))
    import zstandard

    (tmp_path / "c.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
    synth.write_corpus(62, out=str(tmp_path / "c.cborseq"), mix="seed-table", seed=7,
                       median_segments=12)
    synth.write_corpus(62, out=str(tmp_path / "dir") + os.sep, mix="seed-table", seed=7,
                       median_segments=12)
    expected = answers(ans)
    for name in ("c.jsonl.gz", "c.jsonl.zst", "c.cborseq", "dir"):
        results = list(reverify.run([tmp_path / name], jobs=1))
        check_against(results, expected)
    cbor_sources = [r.record["source"] for r in reverify.run([tmp_path / "c.cborseq"], jobs=1)]
    assert cbor_sources[0] == {"file": str(tmp_path / "c.cborseq"), "offset": 0}
    assert all(isinstance(s["offset"], int) for s in cbor_sources)
    assert [s["offset"] for s in cbor_sources] == sorted(s["offset"] for s in cbor_sources)
    dir_sources = [r.record["source"]["file"] for r in reverify.run([tmp_path / "dir"], jobs=1)]
    assert dir_sources == sorted(dir_sources)


def test_broken_compressed_and_cbor_inputs_become_invalid_records(
        corpus: tuple[Path, Path], tmp_path: Path) -> None:
    out, _ = corpus
    gz = gzip.compress(out.read_bytes())
    (tmp_path / "cut.jsonl.gz").write_bytes(gz[: len(gz) // 2])
    synth.write_corpus(5, out=str(tmp_path / "c.cborseq"), mix="reproduced", seed=2,
                       median_segments=4)
    whole = (tmp_path / "c.cborseq").read_bytes()
    (tmp_path / "cut.cborseq").write_bytes(whole[:-10])
    (tmp_path / "junk.cbor").write_bytes(whole + b"\xff\x00")
    records = [r.record for r in reverify.run([tmp_path / "cut.jsonl.gz"], jobs=1)]
    assert records[-1]["outcome"] == "invalid_record"
    assert "stream" in records[-1]["reason"] and records[-1]["source"]["line"] >= 1
    cut = [r.record for r in reverify.run([tmp_path / "cut.cborseq"], jobs=1)]
    assert [r["outcome"] for r in cut] == ["reproduced"] * 4 + ["invalid_record"]
    assert "truncated" in cut[-1]["reason"]
    junk = [r.record for r in reverify.run([tmp_path / "junk.cbor"], jobs=1)]
    assert [r["outcome"] for r in junk] == ["reproduced"] * 5 + ["invalid_record"]
    assert junk[-1]["source"]["offset"] == len(whole)


def test_unreadable_file_in_a_directory_is_reported(corpus: tuple[Path, Path],
                                                    tmp_path: Path) -> None:
    out, _ = corpus
    (tmp_path / "a.jsonl").write_bytes(out.read_bytes().splitlines(keepends=True)[0])
    (tmp_path / "b.json").symlink_to(tmp_path / "vanished.json")
    records = [r.record for r in reverify.run([tmp_path], jobs=1)]
    assert records[-1]["outcome"] == "invalid_record"
    assert records[-1]["source"] == {"file": str(tmp_path / "b.json")}
    assert "cannot read" in records[-1]["reason"]
    assert len(records) == 2


def test_unknown_and_missing_paths_are_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(reverify.InputError):
        reverify.run([tmp_path / "notes.txt"])
    with pytest.raises(reverify.InputError):
        reverify.run([tmp_path / "missing.jsonl"])
    with pytest.raises(ValueError):
        reverify.run([tmp_path], engine="spark")
    with pytest.raises(ValueError):
        reverify.run([tmp_path], scheduler="tcp://127.0.0.1:1")


# --- outputs --------------------------------------------------------------------------

def test_report_and_annotations_files(corpus: tuple[Path, Path], tmp_path: Path) -> None:
    out, ans = corpus
    before = hashlib.sha256(out.read_bytes()).hexdigest()
    report, notes = tmp_path / "report.jsonl", tmp_path / "notes.jsonl"
    run = reverify.run([out], jobs=2, report=report, annotations=notes)
    results = list(run)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == before  # input untouched
    lines = [orjson.loads(x) for x in report.read_bytes().splitlines()]
    assert len(lines) == 63
    keys = ["episode_id", "outcome", "source", "components", "construction", "order",
            "flags", "reason"]
    assert all(list(line) == keys for line in lines[:-1])
    assert lines[-1]["summary"] == {**dict.fromkeys(reverify.OUTCOMES, 0), **SEED_TABLE,
                                    "total": 62}
    assert lines[-1]["format"] == "canonkit-reverify-report/1"
    assert lines[-1]["canonkit_version"] == canonkit.__version__
    assert lines[-1]["inputs"] == {"paths": [str(out)], "files": 1}
    assert [line for line in lines[:-1]] == [r.record for r in results]
    searched = [a for a in answers(ans) if a["outcome"] == "reproduced_by_search"]
    annotations = [orjson.loads(x) for x in notes.read_bytes().splitlines()]
    assert [a["episode_id"] for a in annotations] == [a["episode_id"] for a in searched]
    assert [a["resolved_signal_order"] for a in annotations] == [a["order"] for a in searched]
    assert not list(tmp_path.glob("*.partial"))


def test_recorded_annotations_are_then_admissible(corpus: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    out, _ = corpus
    notes = tmp_path / "notes.jsonl"
    list(reverify.run([out], jobs=1, annotations=notes))
    found = {a["episode_id"]: a["resolved_signal_order"]
             for a in map(orjson.loads, notes.read_bytes().splitlines())}
    docs = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    annotated = []
    for doc in docs:
        if doc["episode_id"] in found:
            doc["seal"]["resolved_signal_order"] = found[doc["episode_id"]]
            annotated.append(doc)
    path = tmp_path / "annotated.jsonl"
    path.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in annotated))
    assert {r.outcome for r in reverify.run([path], jobs=1)} == {"reproduced_with_annotation"}


def test_failed_run_leaves_no_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.reverify import runner

    corpus = tmp_path / "c.jsonl"
    synth.write_corpus(10, out=str(corpus), mix="reproduced", seed=1, median_segments=4)

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk vanished")

    report = tmp_path / "report.jsonl"
    monkeypatch.setattr(runner.engines, "open_engine", boom)
    with pytest.raises(OSError):
        list(reverify.run([corpus], jobs=1, report=report))
    assert not report.exists() and not list(tmp_path.glob("*.partial"))


def test_summary_table_is_the_seed_table(corpus: tuple[Path, Path]) -> None:
    out, _ = corpus
    table = reverify.run([out], jobs=1).summary.table().splitlines()
    body = [line.split()[-1] for line in table if line.split()[-1].isdigit()]
    assert body == ["45", "8", "4", "2", "3", "62"]


def test_progress_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    quiet = io.StringIO()
    p = Progress(1000, stream=quiet)
    p.update(500, 10)
    p.close()
    assert quiet.getvalue() == ""
    tty = Tty()
    p = Progress(1000, stream=tty, min_interval=0)
    p.update(500, 10)
    p.close()
    assert "Episodes/s" in tty.getvalue()


def test_progress_without_tqdm(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    tty = Tty()
    p = Progress(1000, stream=tty, min_interval=0)
    p.update(500, 10)
    p.close()
    shown = tty.getvalue()
    assert "Episodes/s" in shown and "MB/s" in shown and "ETA" in shown


@pytest.mark.parametrize("columns", [0, 12, 120])
def test_progress_shows_in_a_terminal_of_any_width(tmp_path: Path, columns: int) -> None:
    """A real pty: a 0-column terminal (where tqdm's dynamic width draws nothing) and a
    narrow one get the plain line with the rate, a wide one the bar."""
    from canonkit import _progress as progress_module
    import fcntl
    import pty
    import struct
    import subprocess
    import sys
    import termios

    corpus = tmp_path / "c.jsonl"
    synth.write_corpus(30, out=str(corpus), mix="reproduced", seed=2, median_segments=4)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    code = ("import sys, canonkit.reverify as rv\n"
            "from canonkit import _progress as progress\n"
            "for _ in rv.run([sys.argv[1]], jobs=1, progress=True, batch_size=1): pass\n")
    done = subprocess.run([sys.executable, "-c", code, str(corpus)], stderr=slave,
                          stdout=subprocess.DEVNULL, timeout=120)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    assert done.returncode == 0
    assert b"reverify" in shown, shown[-300:]  # the bar or the line, not nothing
    if columns < progress_module.MIN_BAR_COLUMNS:
        assert b"Episodes/s" in shown, shown[-300:]


# --- memory ---------------------------------------------------------------------------

def test_memory_is_bounded_by_batches_not_corpus(tmp_path: Path) -> None:
    small, large = tmp_path / "s.jsonl", tmp_path / "l.jsonl"
    synth.write_corpus(100, out=str(small), mix="reproduced", seed=3, median_segments=20)
    with open(large, "wb") as f:  # 10x the Episodes, same document sizes
        for _ in range(10):
            f.write(small.read_bytes())

    def peak(path: Path) -> int:
        tracemalloc.start()
        try:
            for _ in reverify.run([path], jobs=1, batch_size=16):
                pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert large.stat().st_size > 10 * 1024 * 1024 // 10
    p_small, p_large = peak(small), peak(large)
    assert p_large < 1.5 * p_small + 256 * 1024, (p_small, p_large)


def test_results_stream_before_the_input_is_read(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.reverify import runner

    corpus = tmp_path / "c.jsonl"
    synth.write_corpus(40, out=str(corpus), mix="reproduced", seed=4, median_segments=4)
    consumed: list[Any] = []
    original = runner.iter_items

    def counting(files: Any) -> Any:
        for item in original(files):
            consumed.append(item)
            yield item

    monkeypatch.setattr(runner, "iter_items", counting)
    results = iter(reverify.run([corpus], jobs=1, batch_size=4))
    assert next(results).outcome == "reproduced"
    assert len(consumed) == 4  # one batch read, not the corpus
    assert len(list(results)) == 39 and len(consumed) == 40


# --- CLI ------------------------------------------------------------------------------

def test_cli_reverify_and_exit_status(corpus: tuple[Path, Path], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = corpus
    report = tmp_path / "r.jsonl"
    assert cli_main(["reverify", str(out), "--jobs", "2", "--report", str(report)]) == 1
    shown = capsys.readouterr().out
    assert "45" in shown and "reproduced_under_other_construction" in shown
    clean = tmp_path / "clean.jsonl"
    synth.write_corpus(6, out=str(clean), mix="reproduced", seed=9, median_segments=4)
    assert cli_main(["reverify", str(clean), "--jobs", "1", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and orjson.loads(lines[-1])["summary"]["reproduced"] == 6
    assert cli_main(["reverify", str(tmp_path / "nope.jsonl")]) == 2
    assert cli_main(["reverify", str(clean), "--scheduler", "tcp://x:1"]) == 2
    with pytest.raises(SystemExit) as exc:
        cli_main(["reverify", str(clean), "--jobs", "0"])
    assert exc.value.code == 2


def test_cli_batch_bytes_cuts_smaller_units_and_keeps_the_report(
        corpus: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--batch-bytes`` sizes the units of work (counted by their journal entries, one
    per unit) and never changes the report."""
    out, _ = corpus
    reports, units = [], []
    for name, flags in (("default", []), ("small", ["--batch-bytes", "4096"])):
        report, journal = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.journal"
        assert cli_main(["reverify", str(out), "--jobs", "1", "--report", str(report),
                         "--journal", str(journal), "--no-progress", *flags]) == 1
        reports.append(report.read_bytes())
        units.append(len(journal.read_bytes().splitlines()) - 1)  # less the header
    assert reports[0] == reports[1]
    assert units[1] > units[0] >= 1
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli_main(["reverify", str(out), "--batch-bytes", "0"])
    assert exc.value.code == 2
    assert "--batch-bytes: expected a whole number of at least 1" in capsys.readouterr().err


def test_cli_help_for_both_commands(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, needle in ((["reverify", "--help"], "--annotations"),
                         (["synth", "--help"], "--episodes")):
        with pytest.raises(SystemExit) as exc:
            cli_main(argv)
        assert exc.value.code == 0
        assert needle in capsys.readouterr().out


def test_cli_synth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, ans = tmp_path / "c.jsonl.zst", tmp_path / "a.jsonl"
    assert cli_main(["synth", "--episodes", "62", "--mix", "seed-table",
                     "--seed", "3", "--out", str(out), "--answers", str(ans),
                     "--median-segments", "6"]) == 0
    assert "62" in capsys.readouterr().out
    check_against(list(reverify.run([out], jobs=1)), answers(ans))
    assert cli_main(["synth", "--episodes", "3", "--out", str(tmp_path / "x.txt")]) == 2
    # a directory corpus appears whole; a non-empty directory is never written into
    assert cli_main(["synth", "--episodes", "4", "--out", str(tmp_path / "d") + os.sep,
                     "--mix", "reproduced", "--median-segments", "3"]) == 0
    assert len(list((tmp_path / "d").glob("*.json"))) == 4
    assert cli_main(["synth", "--episodes", "4", "--out", str(tmp_path / "d") + os.sep]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "c.jsonl.zst", "d"]


def test_synth_leaves_nothing_behind_when_it_fails(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = synth._Maker.make

    def failing(self: Any, outcome: str, variant: int) -> Any:
        calls.append(outcome)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        return real(self, outcome, variant)

    monkeypatch.setattr(synth._Maker, "make", failing)
    (tmp_path / "c.jsonl").write_bytes(b"old corpus\n")
    for out in ("c.jsonl", "c.jsonl.gz", "c.jsonl.zst", "c.cborseq", "dir" + os.sep):
        calls.clear()
        with pytest.raises(OSError):
            synth.write_corpus(10, out=f"{tmp_path}{os.sep}{out}",
                               answers=str(tmp_path / "a.jsonl"), median_segments=3)
        # the failed run's objects are collected here, so a compressor left open would
        # write into its aborted file now, during this test ("Exception ignored")
        gc.collect()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]
    assert (tmp_path / "c.jsonl").read_bytes() == b"old corpus\n"


# --- the shipped example -------------------------------------------------------------

def test_example_corpus_prints_the_seed_table(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    expected = answers(EXAMPLE_ANSWERS)
    results = list(reverify.run([EXAMPLE], jobs=1))
    check_against(results, expected)
    formats = {a["format"] for a in expected}
    assert formats == set(synth.FORMATS)
    assert sum(f.stat().st_size for f in EXAMPLE.rglob("*")) < 400 * 1024
    assert cli_main(["reverify", str(EXAMPLE), "--jobs", "1"]) == 1
    table = capsys.readouterr().out
    assert [line.split()[-1] for line in table.splitlines()
            if line.split()[-1].isdigit()] == ["45", "8", "4", "2", "3", "62"]
    copy = tmp_path / "copy"
    shutil.copytree(EXAMPLE, copy)
    assert [r.line for r in reverify.run([copy], jobs=1)] != []


# --- robustness ------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LINE = st.one_of(
    st.binary(max_size=60).filter(lambda b: b"\n" not in b and b.strip()),
    st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1)
                 | st.text(max_size=8),
                 lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.sampled_from(["format", "episode_id", "seal",
                                                    "segments", "signals", "status",
                                                    "stored", "profile"]), inner, max_size=4),
                 max_leaves=8).map(orjson.dumps),
)


@settings(max_examples=40)
@given(lines=st.lists(_LINE, min_size=1, max_size=6), batch=st.integers(1, 4))
def test_arbitrary_lines_never_stop_a_run(tmp_path_factory: pytest.TempPathFactory,
                                          lines: list[bytes], batch: int) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "c.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    results = [r.record for r in reverify.run([path], jobs=1, batch_size=batch)]
    assert len(results) == len(lines)
    for line_no, record in enumerate(results, start=1):
        assert record["source"]["line"] == line_no
        assert record["outcome"] in reverify.OUTCOMES
        if record["outcome"] == "invalid_record":
            assert record["reason"]
