"""The documentation stands alone: every Markdown link in README.md and docs/ resolves
(files and #anchors), every specification a page cites is shipped in docs/spec/ unchanged,
and no page speaks of how the project was organised instead of the product."""
from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

REPO = Path(__file__).parent.parent
SPEC_DIR = REPO / "docs" / "spec"
PAGES = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md"),
                *(p for p in (REPO / "examples" / "README.md", REPO / "bench" / "data" / "README.md")
                  if p.exists())])
OWN_PAGES = [p for p in PAGES if SPEC_DIR not in p.parents]  # the specs are copies

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
SPEC_NAME = re.compile(r"(?<![\w/-])([A-Z][A-Z0-9]+\.md)\b")  # CBOR.md, not X-Y.md
REPO_PATH = re.compile(r"`((?:docs|bench|tests|examples|conformance|src|ext|fuzz|\.ci)/[^`\s]+)`")
# how the work was organised is not the product's business, nor when and where a figure
# was taken (docs/performance.md says how once)
ISSUE_TALK = re.compile(r"\bissues?\b|\bthe brief\b|\bcoordinator\b", re.I)
CIRCUMSTANCE_TALK = re.compile(r"load average|\bshared (?:\d-core )?machine|\b\d-core\b|"
                               r"\bthe seed\b|\bseed 000\b|\bother sessions\b", re.I)
PAGE_TALK = re.compile(f"{ISSUE_TALK.pattern}|{CIRCUMSTANCE_TALK.pattern}|\\bsessions?\\b", re.I)
# the suite's and the benchmarks' own words (code may say pytest's "session")
CODE_FILES = sorted(p for d in ("tests", "bench") for p in (REPO / d).rglob("*.py")
                    if p != Path(__file__))


def _prose(text: str) -> str:
    """The page without fenced blocks and code spans (links there are not links)."""
    return CODE_SPAN.sub(" ", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation except
    '-' and '_' removed, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # link -> its text
    text = text.replace("`", "").replace("*", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in HEADING.finditer(FENCE.sub("", page.read_text(encoding="utf-8"))):
        slug = _slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    found.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", page.read_text(encoding="utf-8")))
    return found


def links(page: Path) -> list[str]:
    text = _prose(page.read_text(encoding="utf-8"))
    return [m.group(1) for m in INLINE_LINK.finditer(text)] + REFERENCE_DEF.findall(text)


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    problems = []
    for target in links(page):
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            if not target:
                problems.append("empty link target")
            continue
        path_part, _, fragment = target.partition("#")
        resolved = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not resolved.exists():
            problems.append(f"{target}: no such file")
            continue
        if root.resolve() not in [resolved, *resolved.parents]:
            problems.append(f"{target}: outside the repository")
            continue
        if fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{target}: no heading #{fragment} in {resolved.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", OWN_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_cited_specifications_are_shipped(page: Path) -> None:
    shipped = {p.name for p in SPEC_DIR.glob("*.md")}
    cited = set(SPEC_NAME.findall(page.read_text(encoding="utf-8"))) - {"README.md"}
    assert cited <= shipped, f"cited but not in docs/spec/: {sorted(cited - shipped)}"


@pytest.mark.parametrize("page", OWN_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_pages_speak_of_the_product(page: Path) -> None:
    lines = page.read_text(encoding="utf-8").splitlines()
    talk = [f"{n}: {line.strip()}" for n, line in enumerate(lines, 1) if PAGE_TALK.search(line)]
    assert talk == [], "describe canonkit, not the work that produced it"


def test_tests_and_benchmarks_speak_of_the_product() -> None:
    talk = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in CODE_FILES
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if ISSUE_TALK.search(line) or CIRCUMSTANCE_TALK.search(line)]
    assert talk == [], "describe canonkit, not the work or the machine that produced it"


@pytest.mark.parametrize("page", OWN_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_mentioned_repository_paths_exist(page: Path) -> None:
    """`docs/cbor.md`, `bench/report.py`, ... in code spans name files that exist."""
    mentioned = REPO_PATH.findall(page.read_text(encoding="utf-8"))
    missing = [m for m in mentioned if not any(ch in m for ch in "*?{<")
               and not (REPO / m).exists() and not (page.parent / m).exists()]
    assert missing == []


def test_the_docs_index_lists_every_page() -> None:
    index = REPO / "docs" / "README.md"
    listed = {(index.parent / target.partition("#")[0]).resolve() for target in links(index)}
    pages = {p.resolve() for p in (REPO / "docs").glob("*.md")} - {index.resolve()}
    assert sorted(p.name for p in pages - listed) == [], "add these pages to docs/README.md"


def test_api_reference_is_current() -> None:
    """docs/api.md is generated from the docstrings; regenerate it with
    `python .ci/api_reference.py` after changing a public signature or docstring."""
    proc = subprocess.run([sys.executable, str(REPO / ".ci" / "api_reference.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_specifications_are_unchanged_copies() -> None:
    table = dict(re.findall(r"^\| \[(\w+\.md)\]\(\1\) \|.*\| `([0-9a-f]{64})` \|$",
                            (SPEC_DIR / "README.md").read_text(encoding="utf-8"), re.M))
    shipped = {p.name for p in SPEC_DIR.glob("*.md")} - {"README.md"}
    assert set(table) == shipped
    for name, digest in table.items():
        data = (SPEC_DIR / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, f"docs/spec/{name} was edited"
        source = REPO.parent / "shared" / "spec" / name  # present beside a development checkout
        if source.exists():
            assert source.read_bytes() == data, f"docs/spec/{name} differs from its source"


def test_the_checker_catches_what_it_should(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title `x`\n\n## Two words\n\n[ok](#two-words) "
                                   "[self](a.md#title-x) [bad](#nope) [gone](b.md) "
                                   "`[not a link](c.md)`\n\n```\n[nor](d.md)\n```\n")
    assert broken_links(tmp_path / "a.md", root=tmp_path) == ["#nope: no heading #nope in a.md",
                                               "b.md: no such file"]
    assert ISSUE_TALK.search("as the issue's target says") and ISSUE_TALK.search("Issue 12")
    assert not ISSUE_TALK.search("frozen, never re-issued as v2")
    for said in ("load average 8.2", "the shared 2-core machine", "on a shared machine",
                 "while six other sessions were compiling", "the seed's table", "seed 000"):
        assert PAGE_TALK.search(said), said
    assert not PAGE_TALK.search("session_id") and not PAGE_TALK.search("a random seed")
