"""Recording a corpus: new directory only, atomic (an interrupted record leaves no version
directory), re-verified; and the ``canonkit conformance`` CLI."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO

from canonkit import conformance, errors
from canonkit.cli import main
from canonkit.conformance import fixtures
from canonkit.conformance.layout import build_corpus
from canonkit.objects import ObjectCodec

V1 = REPO / "conformance" / "v1"


def test_record_writes_a_checked_version_directory(tmp_path: Path,
                                                   cbor_impl: ModuleType) -> None:
    path = conformance.record(tmp_path / "conformance", 3, cbor=cbor_impl)
    assert path == tmp_path / "conformance" / "v3"
    assert sorted(p.name for p in (tmp_path / "conformance").iterdir()) == ["v3"]  # no temp
    expected = build_corpus(3, ObjectCodec(cbor_impl))
    assert {p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*")
            if p.is_file()} == expected
    assert conformance.check(path, cbor=cbor_impl).failures == []
    manifest = json.loads((path / "manifest.json").read_bytes())
    assert manifest["format_version"] == 3
    # recording v1 again reproduces the frozen corpus byte for byte (vectors and cases)
    for name in ("vectors.json", "negative.json"):
        assert expected[name] == (V1 / name).read_bytes()


def test_record_refuses_an_existing_version(tmp_path: Path) -> None:
    root = tmp_path / "conformance"
    shutil.copytree(V1, root / "v1")
    before = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
              if p.is_file()}
    with pytest.raises(errors.CorpusExistsError) as info:
        conformance.record(root, 1)
    assert info.value.code == "corpus_exists" and isinstance(info.value, FileExistsError)
    (root / "v2").mkdir()  # even an empty directory is never replaced
    with pytest.raises(errors.CorpusExistsError):
        conformance.record(root, 2)
    assert {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file()} == before
    assert sorted(p.name for p in root.iterdir()) == ["v1", "v2"]


@pytest.mark.parametrize("version", [0, -1, True, "2", 1.0])
def test_record_rejects_bad_versions(tmp_path: Path, version: object) -> None:
    with pytest.raises(ValueError):
        conformance.record(tmp_path, version)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: object, dst: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "rename", refuse)
    with pytest.raises(OSError, match="disk on fire"):
        conformance.record(tmp_path, 2)
    assert list(tmp_path.iterdir()) == []


def test_a_corpus_failing_its_own_check_is_never_published(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.conformance import layout

    accepted = fixtures.NegativeFixture("trailing_data_not", "trailing_data",
                                        "a valid input", "00", None)
    monkeypatch.setattr(layout, "NEGATIVE_FIXTURES", fixtures.NEGATIVE_FIXTURES + (accepted,))
    monkeypatch.setattr(layout.build_corpus, "__defaults__",
                        (fixtures.OBJECT_FIXTURES, fixtures.NEGATIVE_FIXTURES + (accepted,)))
    with pytest.raises(errors.ManifestError) as info:
        conformance.record(tmp_path, 2)
    assert any(f.reason == "negative_accepted" for f in info.value.detail)
    assert list(tmp_path.iterdir()) == []


KILL_AFTER_FIRST_FILE = """
import os, signal, sys
from canonkit.conformance import recorder as rec
real = rec.write_exclusive
def write_then_die(path, data, **options):
    real(path, data, **options)
    os.kill(os.getpid(), signal.SIGKILL)
rec.write_exclusive = write_then_die
rec.record(sys.argv[1], 2)
"""


def test_killing_record_between_files_leaves_no_version_directory(tmp_path: Path) -> None:
    root = tmp_path / "conformance"
    proc = subprocess.run([sys.executable, "-c", KILL_AFTER_FIRST_FILE, str(root)],
                          capture_output=True, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not (root / "v2").exists()
    leftovers = list(root.iterdir())  # only the temporary directory, with one file
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".v2.tmp-")
    assert len(list(leftovers[0].iterdir())) == 1
    # the next record is not confused by the leftover, and the CLI sees one version only
    assert conformance.record(root, 2) == root / "v2"
    assert main(["conformance", "check", str(root)]) == 0


# --- the CLI --------------------------------------------------------------------------

def test_cli_check_frozen_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "check", str(V1)]) == 0
    out = capsys.readouterr().out
    assert f"{V1}: ok" in out and "16 vectors, 25 negative cases" in out


def test_cli_check_root_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "check", str(REPO / "conformance"), "--json",
                 "--backend", "py"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [d["directory"] for d in doc] == [str(V1)]
    assert doc[0]["ok"] and doc[0]["backends"]["py"]["failures"] == []


def test_cli_check_reports_failures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "v1"
    shutil.copytree(V1, corpus)
    (corpus / "stray.bin").write_bytes(b"\0")
    (corpus / "negative.json").unlink()
    assert main(["conformance", "check", str(corpus)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out
    assert "stray.bin" in out and "file_unlisted" in out
    assert "negative.json" in out and "file_missing" in out
    assert main(["conformance", "check", str(corpus), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    failures = {(f["path"], f["reason"]) for r in doc[0]["backends"].values()
                for f in r["failures"]}
    assert {("stray.bin", "file_unlisted"), ("negative.json", "file_missing")} <= failures


def test_cli_check_an_empty_directory_fails(tmp_path: Path) -> None:
    assert main(["conformance", "check", str(tmp_path)]) == 1


def test_cli_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "record", str(tmp_path), "--version", "2"]) == 0
    assert f"recorded {tmp_path / 'v2'}" in capsys.readouterr().out
    assert main(["conformance", "record", str(tmp_path), "--version", "2"]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["conformance", "record", str(tmp_path), "--version", "0"]) == 2
    (tmp_path / "a-file").write_bytes(b"")
    assert main(["conformance", "record", str(tmp_path / "a-file"), "--version", "1"]) == 2
    assert "a-file" in capsys.readouterr().err
    assert main(["conformance", "check", str(tmp_path / "v2")]) == 0


def test_cli_help_mentions_both_actions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["conformance", "--help"])
    out = capsys.readouterr().out
    assert "check" in out and "record" in out
