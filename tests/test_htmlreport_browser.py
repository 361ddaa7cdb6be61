"""The HTML reports in a real browser (headless Chromium, tests/browser.py): pages made by
real runs — ``canonkit reverify`` over the bundled examples/seed-table corpus, ``canonkit
store fsck`` over a store with planted corruption — render to a screenshot that is not
blank, show every count of the summary where a reader sees it, sort their tables with a
click, read the same with JavaScript off, fetch nothing, and run no script from the data.

Each page and its screenshot are kept under build/html-reports/ (reverify.html,
reverify.png, fsck.html, fsck.png) for a reader to look at.
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from browser import Browser, Tab, require_chromium
from html_helpers import (
    HOSTILE_ID,
    HOSTILE_NAME,
    REPO,
    SEED_TABLE,
    STRAY,
    damaged_store,
    fsck_summary,
    hostile_corpus,
)
from PIL import Image, ImageStat

from canonkit.cli import main

SHOTS = REPO / "build" / "html-reports"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = require_chromium()
    started = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield started
    finally:
        started.close()  # asserts that none of its processes is left


@pytest.fixture(scope="module")
def reverify_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The page of a run over examples/seed-table and the report's final line."""
    out = tmp_path_factory.mktemp("reverify")
    report, html = out / "report.jsonl", out / "reverify.html"
    status = main(["reverify", str(SEED_TABLE), "--jobs", "1", "--batch-size", "4",
                   "--no-progress", "--report", str(report), "--html", str(html)])
    assert status == 1  # 5 of the 62 Episodes do not reproduce
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(html, SHOTS / "reverify.html")
    return html, orjson.loads(report.read_bytes().splitlines()[-1])


@pytest.fixture(scope="module")
def fsck_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The page of an fsck of a damaged store and its ``--json`` report."""
    out = tmp_path_factory.mktemp("fsck")
    store = damaged_store(out / "store")
    html = out / "fsck.html"
    proc = subprocess.run([sys.executable, "-m", "canonkit", "store", "fsck", store.root,
                           "--json", "--html", str(html)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(html, SHOTS / "fsck.html")
    return html, json.loads(proc.stdout)


def assert_not_blank(png: bytes) -> None:
    """A screenshot with a page on it: many colours, and a spread of brightness that a
    blank or single-colour page does not have."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.width >= 1000 and image.height >= 800, image.size
    grey = image.convert("L")
    spread = ImageStat.Stat(grey).stddev[0]
    colours = image.getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 64, f"{len(colours or [])} colours"
    assert spread > 15, f"brightness spread {spread:.1f}: a blank page"
    background = max(colours or [(0, None)], key=lambda c: c[0])[0]
    assert background < 0.9 * image.width * image.height  # not one colour almost everywhere


# JavaScript run in the page: the text of an element and whether a reader can see it
_SHOWN = """(function (ids) {
  return ids.map(function (id) {
    var el = document.getElementById(id);
    if (!el) { return [id, null, false]; }
    var box = el.getBoundingClientRect(), style = getComputedStyle(el);
    return [id, el.innerText, box.width > 0 && box.height > 0 &&
            style.visibility === "visible" && style.display !== "none"];
  });
})(%s)"""


def shown_counts(tab: Tab, ids: list[str]) -> dict[str, tuple[int | None, bool]]:
    out = {}
    for ident, text, visible in tab.evaluate(_SHOWN % json.dumps(ids)):
        out[ident] = (None if text is None else int(text.replace(",", "")), visible)
    return out


def test_the_reverify_report_shows_every_count_of_the_summary(
        browser: Browser, reverify_run: tuple[Path, dict[str, Any]]) -> None:
    html, line = reverify_run
    tab = browser.open(html.as_uri())
    expected = {f"count-{k}": v for k, v in line["summary"].items()}
    assert shown_counts(tab, list(expected)) == {k: (v, True) for k, v in expected.items()}
    assert tab.evaluate("document.documentElement.className") == "js"
    assert tab.evaluate("document.querySelectorAll('#failing-episodes tbody tr').length") == 5
    assert tab.evaluate("document.querySelectorAll('svg.chart').length") >= 4
    png = tab.screenshot(SHOTS / "reverify.png")
    assert_not_blank(png)


def test_the_failing_episodes_sort_by_a_click(
        browser: Browser, reverify_run: tuple[Path, dict[str, Any]]) -> None:
    tab = browser.open(reverify_run[0].as_uri())
    column = """(function (n) {
      return Array.prototype.map.call(
        document.querySelectorAll('#failing-episodes tbody tr'),
        function (row) { return row.cells[n].textContent; });
    })"""
    click = "document.querySelectorAll('#failing-episodes th button')[%d].click()"
    in_order = [int(x) for x in tab.evaluate(column + "(0)")]
    assert in_order == sorted(in_order)
    tab.evaluate(click % 0)  # ascending: as it was
    assert [int(x) for x in tab.evaluate(column + "(0)")] == in_order
    tab.evaluate(click % 0)  # descending
    assert [int(x) for x in tab.evaluate(column + "(0)")] == in_order[::-1]
    assert tab.evaluate("document.querySelector('#failing-episodes th').getAttribute("
                        "'aria-sort')") == "descending"
    tab.evaluate(click % 2)  # by outcome; ties keep the run's order
    outcomes = tab.evaluate(column + "(2)")
    assert outcomes == sorted(outcomes)
    numbers = [int(x) for x in tab.evaluate(column + "(0)")]
    assert numbers == sorted(numbers, key=lambda n: (outcomes[numbers.index(n)], n))


def test_the_reverify_report_reads_the_same_without_javascript(
        browser: Browser, reverify_run: tuple[Path, dict[str, Any]]) -> None:
    html, line = reverify_run
    tab = browser.open(html.as_uri(), javascript=False)
    dom = tab.dom()
    assert '<html lang="en">' in dom  # the script did not run: no "js" class
    for key, value in line["summary"].items():
        assert f'id="count-{key}">{value:,}</td>' in dom
    assert dom.count('<tr data-index="') == 5 and "<svg" in dom
    assert "a click on a column heading" in dom  # present, hidden without the script
    assert_not_blank(tab.screenshot(SHOTS / "reverify-no-javascript.png"))


def test_the_page_fetches_nothing_and_runs_no_script_from_the_data(
        browser: Browser, tmp_path: Path) -> None:
    corpus, html = hostile_corpus(tmp_path), tmp_path / "hostile.html"
    main(["reverify", str(corpus), "--jobs", "1", "--no-progress", "--html", str(html)])
    tab = browser.open(html.as_uri())
    assert tab.evaluate("typeof window.__canonkit_pwned") == "undefined"
    assert tab.evaluate("document.scripts.length") == 1
    assert tab.evaluate("document.images.length") == 0
    cells = tab.evaluate("Array.prototype.map.call(document.querySelectorAll("
                         "'#failing-episodes td'), function (c) { return c.textContent; })")
    assert HOSTILE_ID.replace("\u202e", "\\u202e") in cells
    assert any(HOSTILE_NAME in c for c in cells)
    requests = tab.evaluate("performance.getEntriesByType('resource').length")
    assert requests == 0  # the page loaded nothing beyond itself


def test_the_fsck_report_shows_every_count_of_the_summary(
        browser: Browser, fsck_run: tuple[Path, dict[str, Any]]) -> None:
    html, report = fsck_run
    tab = browser.open(html.as_uri())
    expected = fsck_summary(report)
    assert shown_counts(tab, list(expected)) == {k: (v, True) for k, v in expected.items()}
    assert tab.evaluate("document.querySelectorAll('#findings-table tbody tr').length") == len(
        report["findings"])
    assert tab.evaluate("typeof window.__canonkit_pwned") == "undefined"
    text = tab.evaluate("document.body.innerText")
    assert STRAY in text and "digest_mismatch" in text
    png = tab.screenshot(SHOTS / "fsck.png")
    assert_not_blank(png)


def test_the_fsck_findings_sort_by_a_click(
        browser: Browser, fsck_run: tuple[Path, dict[str, Any]]) -> None:
    tab = browser.open(fsck_run[0].as_uri())
    severities = """Array.prototype.map.call(
        document.querySelectorAll('#findings-table tbody tr'),
        function (row) { return row.cells[1].textContent; })"""
    first = tab.evaluate(severities)
    order = {"error": 0, "warning": 1, "info": 2}
    assert first == sorted(first, key=order.__getitem__)  # errors first
    tab.evaluate("document.querySelectorAll('#findings-table th button')[1].click()")
    tab.evaluate("document.querySelectorAll('#findings-table th button')[1].click()")
    assert tab.evaluate(severities) == sorted(first, key=order.__getitem__, reverse=True)
