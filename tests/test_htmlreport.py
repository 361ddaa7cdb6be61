"""The HTML reports of ``canonkit reverify --html`` and ``canonkit store fsck --html``
(docs/reverify.md, docs/store.md): what the page holds, that everything taken from the
input renders as text, that its size is bounded, and that it is written completely or not
at all — checked before the work, written on exit 1, never on an interrupt — while the
JSON-lines report stays byte for byte what it was. The same pages in a real browser:
tests/test_htmlreport_browser.py."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest
from html_helpers import (
    HOSTILE_ID,
    HOSTILE_NAME,
    SEED_TABLE,
    STRAY,
    Page,
    damaged_store,
    fsck_summary,
    hostile_corpus,
)

from canonkit import htmlreport
from canonkit.cli import main
from canonkit.htmlreport import page as page_module
from canonkit.htmlreport.svg import nice_ticks
from canonkit.htmlreport.text import cell, escape, visible
from canonkit.htmlreport.timeline import Timeline
from canonkit.reverify import synthetic_corpus
from canonkit.reverify.summary import Summary
from canonkit.store import Store


def _run(*argv: str | Path) -> int:
    return main([str(a) for a in argv])


def _summary_line(report: Path) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads(report.read_bytes().splitlines()[-1])
    return value


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".partial" in p.name)


# --- text, charts, timeline ---------------------------------------------------------------

def test_text_from_the_input_is_escaped_and_its_invisible_characters_shown() -> None:
    assert escape('<script>"x" & \'y\'') == "&lt;script&gt;&quot;x&quot; &amp; &#x27;y&#x27;"
    # controls, DEL, C1, bidirectional overrides and isolates, lone surrogates
    assert visible("a\x00b\x1bc\x7fd\x85e\u202ef\u2066g\udcff") == (
        "a\\u0000b\\u001bc\\u007fd\\u0085e\\u202ef\\u2066g\\udcff")
    assert visible("tab\tand\nnewline é 中") == "tab\tand\nnewline é 中"  # shown as they are


def test_a_cell_is_bounded_and_never_cuts_an_escape_in_two() -> None:
    assert cell("x" * 10, 10) == "x" * 10
    assert cell("x" * 11, 10) == "x" * 9 + "\u2026"
    cut = cell("abcdefg\x00\x00", 12)  # the second escape would be cut: it is left out
    assert cut == "abcdefg\u2026" or cut.endswith("\\u0000\u2026")
    assert "\\u000\u2026" not in cell("ab\x00\x00\x00", 10)
    assert len(cell("<" * 10_000, 100)) == 99 * 4 + 1  # bounded before the entities


def test_the_timeline_keeps_bounded_evenly_spread_samples_and_exact_totals() -> None:
    timeline = Timeline(limit=64)
    for i in range(1, 100_001):
        timeline.add(i * 0.01, 3, 1000)
    points = timeline.points()
    assert len(points) <= 64 and timeline.updates == 100_000
    assert points[0] == (0.0, 0, 0) and points[-1] == (1000.0, 300_000, 100_000_000)
    gaps = {round(b[0] - a[0], 6) for a, b in zip(points[:-2], points[1:-1])}
    assert len(gaps) == 1  # evenly spread (the latest update is appended as it is)
    assert all(b[1] > a[1] for a, b in zip(points, points[1:]))


def test_timeline_rates_read_the_cumulative_samples() -> None:
    timeline = Timeline()
    timeline.add(1.0, 10)
    timeline.add(2.0, 30)
    timeline.add(3.0, 0)
    timeline.add(4.0, 0)
    rates = timeline.rates(spans=4)
    assert timeline.rates(spans=2) == [(0.0, 2.0, 20.0), (2.0, 4.0, 0.0)]
    assert rates == [(0.0, 1.0, 10.0), (1.0, 2.0, 30.0), (2.0, 3.0, 0.0), (3.0, 4.0, 0.0)]
    assert Timeline().rates() == []
    spread = Timeline()
    spread.add(10.0, 100)
    assert spread.rates(spans=5) == [(0.0, 10.0, 10.0)]  # one sample: one span


def test_axis_ticks_are_round_and_cover_or_stay_within_the_data() -> None:
    assert nice_ticks(62) == [0, 20, 40, 60, 80]
    assert nice_ticks(0.103, cover=False) == pytest.approx([0, 0.025, 0.05, 0.075, 0.1])
    assert nice_ticks(0) == [0.0, 1.0] and nice_ticks(float("nan")) == [0.0, 1.0]


def test_the_page_policy_allows_exactly_its_own_style_and_script() -> None:
    html = htmlreport.ReverifyPage().render(Summary(paths=["p"], files=1))
    page = Page(html)
    (policy,) = [v for t, n, v in page.attributes if t == "meta" and n == "content"
                 and "default-src" in v]

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"

    assert page.scripts == [page_module.SCRIPT] and page.styles == [page_module.STYLE]
    assert f"script-src {digest(page.scripts[0])};" in policy
    assert f"style-src {digest(page.styles[0])};" in policy
    assert policy.startswith("default-src 'none';")
    # nothing to fetch: no src, href or url() anywhere; the one URL is SVG's namespace
    assert [a for a in page.attributes if a[1] in ("src", "href", "srcset", "action")] == []
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) == {"http://www.w3.org/2000/svg"}
    assert "url(" not in html and "@import" not in html


@pytest.mark.parametrize("ci", ["", "true"])
def test_the_browser_tests_skip_without_chromium_except_under_ci(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ci: str) -> None:
    import browser

    monkeypatch.delenv("CANONKIT_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no browser on it
    monkeypatch.setenv("CI", ci)
    if ci:
        with pytest.raises(pytest.fail.Exception, match="CI runs the browser tests"):
            browser.require_chromium()
    else:
        with pytest.raises(pytest.skip.Exception) as skipped:
            browser.require_chromium()
        assert skipped.value.msg == browser.MISSING


# --- the reverify page ---------------------------------------------------------------------

def test_reverify_html_shows_every_count_of_the_summary_and_the_failing_episodes(
        tmp_path: Path) -> None:
    report, html = tmp_path / "report.jsonl", tmp_path / "run.html"
    assert _run("reverify", SEED_TABLE, "--jobs", "1", "--batch-size", "4", "--no-progress",
                "--report", report, "--html", html) == 1  # written on exit 1 too
    summary = _summary_line(report)["summary"]
    page = Page(html.read_text(encoding="utf-8"))
    for key, value in summary.items():
        assert page.number(f"count-{key}") == value, key
    assert summary["total"] == 62 and page.by_id["exit-status"].startswith("exit status 1")
    failing = [orjson.loads(line) for line in report.read_bytes().splitlines()[:-1]
               if orjson.loads(line)["outcome"] in
               ("not_reproducible", "no_seal_record", "invalid_record")]
    text = "".join(page.text)
    assert f"All {len(failing)} failing Episodes" in page.by_id["failing-note"]
    for record in failing:
        assert record["episode_id"] in text and record["source"]["file"] in text
    assert "spine_root" in page.by_id["failing-episodes"]  # the first mismatch
    assert "Episodes done over the run" in html.read_text(encoding="utf-8")
    assert leftovers(tmp_path) == []


def test_the_report_lines_are_byte_identical_with_and_without_html(tmp_path: Path) -> None:
    plain, with_html = tmp_path / "plain.jsonl", tmp_path / "with.jsonl"
    notes_a, notes_b = tmp_path / "a.notes", tmp_path / "b.notes"
    common = ("reverify", SEED_TABLE, "--jobs", "1", "--no-progress")
    assert _run(*common, "--report", plain, "--annotations", notes_a) == 1
    assert _run(*common, "--report", with_html, "--annotations", notes_b,
                "--html", tmp_path / "r.html") == 1
    assert plain.read_bytes() == with_html.read_bytes()
    assert notes_a.read_bytes() == notes_b.read_bytes()


def test_markup_in_an_episode_id_or_a_path_renders_as_text(tmp_path: Path) -> None:
    corpus, html = hostile_corpus(tmp_path), tmp_path / "run.html"
    _run("reverify", corpus, "--jobs", "1", "--no-progress", "--html", html)
    markup = html.read_text(encoding="utf-8")
    page = Page(markup)
    assert page.scripts == [page_module.SCRIPT]
    assert not any(name.startswith("on") for _, name, _ in page.attributes)
    assert [t for t, n, _ in page.attributes if t == "img"] == []
    text = "".join(page.text)
    assert HOSTILE_ID.replace("\u202e", "\\u202e") in text  # the override shown, not obeyed
    assert HOSTILE_NAME in text
    assert "\u202e" not in markup


def test_the_page_is_bounded_however_many_episodes_fail() -> None:
    def line(episode: str, source: str, reason: str) -> bytes:
        return orjson.dumps({
            "episode_id": episode, "outcome": "not_reproducible",
            "source": {"file": source, "line": 7}, "components": {"spine_root": "mismatch"},
            "construction": None, "order": None, "flags": ["f"], "reason": reason})

    huge = line("e" * 10_000, "<" * 5000, "\x00" * 50_000)  # every cell far over its bound
    small = line("e", "f", "r")
    sizes = []
    for n in (2_000, 150_000):
        collected = htmlreport.ReverifyPage()
        summary = Summary(paths=["corpus"], files=1)
        for i in range(n):
            collected.add_line(huge if i < htmlreport.MAX_ROWS else small)
            summary.add("not_reproducible")
        page = collected.render(summary)
        sizes.append(len(page.encode()))
        parsed = Page(page)
        assert parsed.number("rows-left") == n - htmlreport.MAX_ROWS
        assert parsed.number("count-not_reproducible") == n
    # the rows are capped and each cell is bounded: only the counts' digits differ
    assert abs(sizes[1] - sizes[0]) < 100 and sizes[1] < 8_000_000


def test_only_episode_lines_are_taken() -> None:
    page = htmlreport.ReverifyPage()
    with pytest.raises(ValueError, match="not an Episode line"):
        page.add_line(b'{"summary": {"total": 0}, "format": "canonkit-reverify-report/1"}')
    with pytest.raises(ValueError, match="not an Episode line"):
        page.add_line(b"[1, 2]")
    # odd shapes in an Episode line are shown, never a crash
    page.add_line(b'{"outcome": "invalid_record", "components": [], "flags": "xy", '
                  b'"reason": 7, "source": "s", "episode_id": {"a": 1}}')
    markup = page.render(Summary(paths=["p"], files=1))
    assert page.failing == 1 and '{"a":1}' in "".join(Page(markup).text)


def test_a_page_with_layer3_counts_it_apart(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    synthetic_corpus.write_corpus(24, out=str(corpus), mix="all-outcomes", seed=4, median_segments=6,
                       layer3=0.8)
    report, html = tmp_path / "r.jsonl", tmp_path / "r.html"
    _run("reverify", corpus, "--jobs", "1", "--no-progress", "--require-layer3",
         "--report", report, "--html", html)
    line = _summary_line(report)
    page = Page(html.read_text(encoding="utf-8"))
    for key, value in line["summary"].items():
        assert page.number(f"count-{key}") == value
    for state in ("ok", "failed", "absent"):
        assert page.number(f"count-layer3-{state}") == line["layer3"][state]
    assert "Layer 3 findings by vector" in "".join(page.text)


@pytest.mark.parametrize("clash", ["report", "annotations", "input", "directory", "device",
                                   "missing-directory"])
def test_the_html_output_is_checked_before_any_work(tmp_path: Path, clash: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(SEED_TABLE, corpus)
    report, notes = tmp_path / "report.jsonl", tmp_path / "notes.jsonl"
    html = {"report": report, "annotations": notes, "input": corpus / "0000000.json",
            "directory": tmp_path, "device": Path(os.devnull),
            "missing-directory": tmp_path / "nowhere" / "r.html"}[clash]
    before = (corpus / "0000000.json").read_bytes()
    status = _run("reverify", corpus, "--jobs", "1", "--no-progress", "--report", report,
                  "--annotations", notes, "--html", html)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith(f"canonkit reverify: {html}") and "Traceback" not in err
    assert not report.exists() and not notes.exists() and leftovers(tmp_path) == []
    assert (corpus / "0000000.json").read_bytes() == before


def _limit_file_size(limit: int) -> Any:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a dead process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("command", ["reverify", "fsck"])
def test_a_page_that_cannot_be_written_keeps_the_old_one(tmp_path: Path, command: str) -> None:
    """A real failing write (RLIMIT_FSIZE: EFBIG once the page passes 4 KiB)."""
    html = tmp_path / "out" / "page.html"
    html.parent.mkdir()
    html.write_text("old page")
    if command == "reverify":
        argv = ["reverify", str(SEED_TABLE), "--jobs", "1", "--no-progress"]
    else:
        argv = ["store", "fsck", damaged_store(tmp_path / "store").root]
    done = subprocess.run([sys.executable, "-m", "canonkit", *argv, "--html", str(html)],
                          capture_output=True, text=True, timeout=120,
                          preexec_fn=_limit_file_size(4096))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2 and f"{html}: cannot be written" in done.stderr, done.stderr
    assert html.read_text() == "old page" and leftovers(html.parent) == []


_INTERRUPT_WHILE_WRITING = """
import os, signal, sys
from canonkit._files import outputs
from canonkit.cli import main
real = outputs._write_all
def write_all(fd, data):
    if data[:15] == b"<!DOCTYPE html>":
        os.kill(os.getpid(), signal.SIGTERM)
    return real(fd, data)
outputs._write_all = write_all
sys.exit(main(sys.argv[1:]))
"""


def test_a_signal_while_the_html_is_written_leaves_no_page(tmp_path: Path) -> None:
    html, report = tmp_path / "run.html", tmp_path / "report.jsonl"
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_WHILE_WRITING, "reverify",
                           str(SEED_TABLE), "--jobs", "1", "--no-progress", "--report",
                           str(report), "--html", str(html)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert not html.exists() and leftovers(tmp_path) == []
    assert _summary_line(report)["summary"]["total"] == 62  # committed before the page


@pytest.fixture(scope="module")
def long_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSON-lines corpus that keeps two workers busy for about a second even on a quiet
    machine (12,000 Episodes, 650 MB: 2,000 written once, then five more copies of them,
    which costs a copy instead of generating them)."""
    d = tmp_path_factory.mktemp("long")
    once, path = d / "once.jsonl", d / "corpus.jsonl"
    synthetic_corpus.write_corpus(2000, out=str(once), mix="seed-table", seed=8, median_segments=120)
    with open(path, "wb") as out:
        for _ in range(6):
            with open(once, "rb") as part:
                shutil.copyfileobj(part, out)
    once.unlink()
    return path


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_run_leaves_neither_page_nor_report(
        tmp_path: Path, long_corpus: Path, signum: int) -> None:
    html, report = tmp_path / "run.html", tmp_path / "report.jsonl"
    with subprocess.Popen(
            [sys.executable, "-m", "canonkit", "reverify", str(long_corpus), "--jobs", "2",
             "--no-progress", "--report", str(report), "--html", str(html)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        deadline = time.monotonic() + 60
        while not leftovers(tmp_path) and proc.poll() is None:  # the report's temporary
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.1)  # the workers are starting
        finished_first = proc.poll() is not None
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    assert not finished_first, "the corpus is too small to interrupt the run"
    assert proc.returncode == 128 + signum, err
    assert not html.exists() and not report.exists() and leftovers(tmp_path) == []


# --- the fsck page -------------------------------------------------------------------------

def test_fsck_html_shows_every_count_of_the_summary(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    damaged_store(tmp_path / "store")
    html = tmp_path / "fsck.html"
    assert _run("store", "fsck", tmp_path / "store", "--json", "--html", html) == 1
    report = json.loads(capsys.readouterr().out)
    page = Page(html.read_text(encoding="utf-8"))
    expected = fsck_summary(report)
    assert {k: page.number(k) for k in expected} == expected
    assert report["counts"]["digest_mismatch"] >= 1 and report["forms"]["loose_deflate"]
    text = "".join(page.text)
    assert STRAY in text and page.scripts == [page_module.SCRIPT]
    assert page.by_id["exit-status"].startswith("exit status 1")
    for finding in report["findings"]:
        assert finding["path"] in text


def test_fsck_counts_objects_by_form_and_times_its_phases(tmp_path: Path,
                                                         store_impl: ModuleType) -> None:
    store = Store.init(tmp_path / "s", durable=False, backend=store_impl)
    for i in range(3):
        store.put(b"packed %d" % i * 50)
    store.repack(deflate="always", grace_seconds=0)
    store.put(b"loose raw")
    store.put(b"loose deflate" * 20, form="deflate")
    store.put(b"loose deflate too" * 20, form="deflate")
    report = store.fsck()
    assert report.ok
    assert {k: v["objects"] for k, v in report.forms.items()} == {
        "loose": 1, "loose_deflate": 2, "packed": 0, "packed_deflate": 3}
    assert report.forms["loose"]["bytes"] == len(b"loose raw")
    assert sum(v["bytes"] for v in report.forms.values()) == report.logical_bytes
    assert set(report.phases) == {"plan", "check", "reachability"}
    assert sum(report.phases.values()) == pytest.approx(report.seconds)
    assert store.fsck(jobs=2).forms == report.forms  # counted alike by pool workers


def test_fsck_html_inside_the_store_or_on_a_device_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = damaged_store(tmp_path / "store")
    for target in (Path(store.root) / "report.html", Path(os.devnull), tmp_path):
        assert _run("store", "fsck", store.root, "--html", target) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"canonkit store fsck: {target}"), err
    assert not (Path(store.root) / "report.html").exists()


_INTERRUPT_FSCK = """
import os, signal, sys
from canonkit.cli import main
from canonkit.store import fsck
real = fsck.reachability
def reachability(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)
    return real(*args, **kwargs)
fsck.reachability = reachability
sys.exit(main(sys.argv[1:]))
"""


def test_an_interrupted_fsck_writes_no_page(tmp_path: Path) -> None:
    store, html = damaged_store(tmp_path / "store"), tmp_path / "fsck.html"
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_FSCK, "store", "fsck",
                           store.root, "--html", str(html)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert not html.exists() and leftovers(tmp_path) == []
