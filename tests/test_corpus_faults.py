"""Conformance corpora and manifests fail closed on hostile files: a FIFO never blocks a
check, an artifact that failed its size check is never read or run, and a number from a
file is bounded before conversion, costing one finding instead of the rest of the check.

The checks run as a subprocess (``python -m canonkit ...``) with a timeout, so a check
that would hang fails the test instead of the test run.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from canonkit import conformance, manifests

V1 = REPO / "conformance" / "v1"
AMDUAT = REPO / "conformance" / "amduat"
TIMEOUT = 60  # seconds; every check here finishes in a few


def canonkit(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-m", "canonkit", *map(str, argv)],
                              capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"canonkit {' '.join(map(str, argv))} blocked for {TIMEOUT} s")


# VmHWM, not ru_maxrss: the latter counts the forking parent's pages (the test process)
MEASURED = """
import sys
from canonkit.cli import main
try:
    status = main(sys.argv[1:])
finally:
    with open("/proc/self/status") as status_file:
        peak = next(line.split()[1] for line in status_file if line.startswith("VmHWM:"))
    print("peak_rss_kib", peak, file=sys.stderr)
sys.exit(status)
"""


def canonkit_measured(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    """``canonkit(*argv)`` whose stderr ends with the process's own peak RSS."""
    try:
        return subprocess.run([sys.executable, "-c", MEASURED, *map(str, argv)],
                              capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"canonkit {' '.join(map(str, argv))} blocked for {TIMEOUT} s")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    target = tmp_path / "v1"
    shutil.copytree(V1, target)
    return target


@pytest.fixture
def amduat(tmp_path: Path) -> Path:
    copy = tmp_path / "amduat"
    shutil.copytree(AMDUAT, copy, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
    return copy


def edit_json(path: Path, change: Any) -> None:
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def listed(manifest: dict[str, Any], path: str) -> dict[str, Any]:
    """The ``files`` entry of a conformance manifest for ``path``."""
    return next(e for e in manifest["files"] if e["path"] == path)  # type: ignore[no-any-return]


def failures(result: subprocess.CompletedProcess[str]) -> set[tuple[str, str]]:
    """(path, reason) of every failure of ``conformance check --json``, all backends."""
    doc = json.loads(result.stdout)
    return {(f["path"], f["reason"]) for d in doc for r in d["backends"].values()
            for f in r["failures"]}


# --- D7: a FIFO never blocks ---------------------------------------------------------

def test_a_fifo_listed_in_a_conformance_manifest_is_refused(corpus: Path) -> None:
    os.mkfifo(corpus / "extra.bin")
    edit_json(corpus / "manifest.json", lambda doc: doc["files"].append(
        {"path": "extra.bin", "bytes": "0", "sha256": "0" * 64}))
    result = canonkit("conformance", "check", "--json", corpus)
    assert result.returncode == 1, result.stderr
    found = failures(result)
    assert ("extra.bin", "file_unreadable") in found
    detail = json.loads(result.stdout)[0]["backends"]["py"]["failures"]
    assert any("FIFO" in f["detail"] for f in detail if f["path"] == "extra.bin")


def test_a_fifo_as_vectors_json_is_refused(corpus: Path) -> None:
    (corpus / "vectors.json").unlink()
    os.mkfifo(corpus / "vectors.json")
    result = canonkit("conformance", "check", "--json", corpus)
    assert result.returncode == 1, result.stderr
    assert ("vectors.json", "file_unreadable") in failures(result)
    # the rest of the corpus is still checked
    assert json.loads(result.stdout)[0]["backends"]["py"]["cases"] > 0


def test_manifest_verify_of_a_fifo_reports_it_unreadable(tmp_path: Path) -> None:
    fifo = tmp_path / "fixtures.json"
    os.mkfifo(fifo)
    result = canonkit("manifest", "verify", "--json", fifo)
    assert result.returncode == 2, result.stderr  # an input that cannot be read
    assert "FIFO" in result.stderr
    (report,) = json.loads(result.stdout)["manifests"]
    assert [p["reason"] for p in report["problems"]] == ["unreadable"]
    assert "FIFO" in report["problems"][0]["detail"]


def test_a_fifo_artifact_is_not_a_regular_file(amduat: Path) -> None:
    (amduat / "artifacts" / "hello.txt").unlink()
    os.mkfifo(amduat / "artifacts" / "hello.txt")
    result = canonkit("manifest", "verify", "--json", amduat / "fixtures.json")
    assert result.returncode == 1, result.stderr
    problems = json.loads(result.stdout)["manifests"][0]["problems"]
    assert [(p["case"], p["reason"]) for p in problems] == [("hello.txt", "missing_artifact")]
    assert "not a regular file" in problems[0]["detail"]


# --- D8: nothing reads more than it must -----------------------------------------------

def test_a_huge_artifact_that_failed_its_size_check_is_never_read(amduat: Path) -> None:
    big = amduat / "artifacts" / "input-1mib.bin"
    with open(big, "r+b") as handle:  # 1 GiB, sparse: costs no disk, only reads
        handle.truncate(1 << 30)
    result = canonkit_measured("manifest", "verify", "--json", amduat / "fps_artifacts.json")
    assert result.returncode == 1, result.stderr
    found = {(p["case"], p["reason"])
             for p in json.loads(result.stdout)["manifests"][0]["problems"]}
    assert ("fixtures:input-1mib.bin", "size_mismatch") in found
    cases = json.loads((amduat / "fps_artifacts.json").read_bytes())["cases"]
    users = {c["id"] for c in cases
             if big.name in [c.get("input"), c.get("insert"), *c.get("inputs", [])]}
    assert len(users) > 3
    assert {(case, reason) for case, reason in found if case in users} == \
        {(case, "fixture_unverified") for case in users}
    # nothing was read or built: the process's peak RSS stays far below the artifact's
    # size (before the fix: 3.1 GB)
    peak_kib = int(result.stderr.rsplit("peak_rss_kib ", 1)[1])
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib} KiB"


def test_a_size_mismatch_is_found_without_hashing(amduat: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.manifests import _artifacts, fixtures

    (amduat / "artifacts" / "hello.txt").write_bytes(b"x" * 100)
    hashed: list[Path] = []
    real = _artifacts.sha256_file
    monkeypatch.setattr(fixtures, "sha256_file", lambda p: hashed.append(p) or real(p))
    found = {(p.case, p.reason) for p in manifests.verify(amduat / "fixtures.json")}
    assert found == {("hello.txt", "size_mismatch")}
    assert all(p.name != "hello.txt" for p in hashed)


def test_an_artifact_changed_after_its_check_is_caught(amduat: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The bytes a case runs on are the bytes that were verified: read once more, they
    are hashed again (a swap between check and use is a digest mismatch, not a wrong
    output)."""
    from canonkit.manifests import fps_artifacts

    real = fps_artifacts.read_regular
    artifact = amduat / "artifacts" / "input-1mib.bin"

    def swapped(path: Any, **options: Any) -> bytes:
        data = bytearray(real(path, **options))
        if Path(path).name == artifact.name:
            data[7] ^= 1
        return bytes(data)

    monkeypatch.setattr(fps_artifacts, "read_regular", swapped)
    found = {(p.case, p.reason) for p in manifests.verify(amduat / "fps_artifacts.json")}
    assert ("large-reverse-bit", "digest_mismatch") in found
    assert not {r for _, r in found} & {"wrong_cid", "wrong_output", "size_mismatch"}


# --- D9: numbers from files are bounded --------------------------------------------------

def test_a_5000_digit_size_in_a_conformance_manifest_is_one_finding(corpus: Path) -> None:
    edit_json(corpus / "manifest.json",
              lambda doc: listed(doc, "negative.json").update(bytes="7" * 5000))
    total = len(json.loads((corpus / "manifest.json").read_bytes())["files"])
    for name, module in conformance.available_backends().items():
        report = conformance.check(corpus, cbor=module)
        reasons = {(f.path, f.reason) for f in report.failures}
        assert reasons == {("negative.json", "bad_field")}, name
        assert report.vectors > 0 and report.cases > 0
        assert report.files == total - 1  # every other listed file was measured


@pytest.mark.parametrize("bytes_", [str(2**64), "1" * 21, "01", "1e3", "-0"])
def test_sizes_outside_the_domain_in_a_conformance_manifest(corpus: Path,
                                                            bytes_: str) -> None:
    edit_json(corpus / "manifest.json",
              lambda doc: listed(doc, "vectors.json").update(bytes=bytes_))
    report = conformance.check(corpus, cbor=conformance.available_backends()["py"])
    assert {(f.path, f.reason) for f in report.failures} == {("vectors.json", "bad_field")}


def test_a_5000_digit_number_in_a_manifest_is_one_problem(amduat: Path) -> None:
    path = amduat / "fps.json"
    text = path.read_text()
    doc = json.loads(text)
    case = next(c for c in doc["cases"] if "offset" in c)
    old = f'"offset": {case["offset"]},'
    assert text.count(old) >= 1
    path.write_text(text.replace(old, '"offset": ' + "9" * 5000 + ",", 1))
    problems = manifests.verify(path)
    first = next(c for c in json.loads(text)["cases"] if "offset" in c)["id"]
    assert {(p.case, p.reason) for p in problems} == {(first, "invalid_value")}
    assert "5000 digits" in problems[0].detail
    assert len(problems[0].detail) < 200
