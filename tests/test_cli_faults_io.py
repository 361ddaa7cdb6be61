"""Fault injection for the file-handling commands (``cbor``, ``fps``, ``manifest``,
``conformance``): unreadable inputs, a full disk under an output, FIFOs and bad output
paths. Every fault is reported (exit status 2 for an input that cannot be read or an
output that cannot be written, a finding and status 1 inside a corpus or manifest
check), nothing blocks, an existing output is never damaged and no temporary remains.

Unreadable files are made unreadable for real, by a command run as a user ``chmod 000``
stops (tests/unprivileged.py: nobody when running as root); the same cases also run in
process with ``open`` failing with ``EACCES``, so they run everywhere.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from unprivileged import run_unprivileged

from canonkit.cli import main

TIMEOUT = 60
SRC = REPO / "src"
AMDUAT = REPO / "conformance" / "amduat"
V1 = REPO / "conformance" / "v1"


def run(*argv: str | Path, prefix: list[str] | None = None,
        pythonpath: str = str(SRC)) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    try:
        return subprocess.run([*(prefix or []), sys.executable, "-m", "canonkit",
                               *map(str, argv)], capture_output=True, text=True,
                              timeout=TIMEOUT, env=env, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"canonkit {' '.join(map(str, argv))} blocked for {TIMEOUT} s")


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user can enter and write (pytest's own tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="canonkit-faults-"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _sample_files(root: Path) -> dict[str, Path]:
    """A small workspace: JSON, CBOR and binary inputs, a manifest corpus, a CBOR corpus."""
    (root / "in.json").write_text('{"a": [1, 2]}')
    (root / "good.cbor").write_bytes(bytes.fromhex("a1616101"))
    (root / "data.bin").write_bytes(b"\x01\x02\x03\x04")
    shutil.copytree(AMDUAT, root / "amduat",
                    ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
    shutil.copytree(V1, root / "v1")
    for path in root.rglob("*"):
        path.chmod(0o777 if path.is_dir() else 0o666)
    return {"json": root / "in.json", "cbor": root / "good.cbor", "bin": root / "data.bin",
            "manifest": root / "amduat" / "fixtures.json",
            "artifact": root / "amduat" / "artifacts" / "hello.txt",
            "vectors": root / "v1" / "vectors.json"}


# --- unreadable inputs ------------------------------------------------------------------

def _unreadable_cases(files: dict[str, Path], root: Path) -> list[tuple[list[Any], Path, int]]:
    """(argv, the file made unreadable, expected exit status)."""
    return [
        (["cbor", "check", files["cbor"], files["json"]], files["cbor"], 2),
        (["cbor", "decode", files["cbor"]], files["cbor"], 2),
        (["cbor", "encode", files["json"], "-o", root / "out.cbor"], files["json"], 2),
        (["fps", "run", "reverse", "--level", "byte", "--input", f"@{files['bin']}"],
         files["bin"], 2),
        (["manifest", "verify", files["manifest"]], files["manifest"], 2),
        (["manifest", "verify", files["manifest"]], files["artifact"], 1),  # a finding
        (["manifest", "write", root / "amduat" / "artifacts", "-o", root / "amduat" / "m.json"],
         files["artifact"], 2),
        (["conformance", "check", "--backend", "py", root / "v1"], files["vectors"], 1),
    ]


def _check_unreadable_outcome(argv: list[Any], status: int, out: str, err: str,
                              expected: int, victim: Path, root: Path) -> None:
    assert status == expected, (argv, out, err)
    assert victim.name in out + err
    assert "Traceback" not in err
    assert not (root / "out.cbor").exists() and not (root / "amduat" / "m.json").exists()
    assert not [p for p in root.rglob("*.partial")]


@pytest.mark.parametrize("case", range(8))
def test_unreadable_input_for_real(shared_dir: Path, case: int) -> None:
    files = _sample_files(shared_dir)
    argv, victim, expected = _unreadable_cases(files, shared_dir)[case]
    victim.chmod(0)
    result = run_unprivileged(*argv)
    _check_unreadable_outcome(argv, result.returncode, result.stdout, result.stderr,
                              expected, victim, shared_dir)
    assert "ermission denied" in result.stdout + result.stderr


@pytest.mark.parametrize("case", range(8))
def test_unreadable_input_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str], case: int) -> None:
    files = _sample_files(tmp_path)
    argv, victim, expected = _unreadable_cases(files, tmp_path)[case]
    real_open = os.open

    def refuse(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == str(victim) and not flags & (os.O_WRONLY | os.O_RDWR):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    _check_unreadable_outcome(argv, status, captured.out, captured.err, expected, victim,
                              tmp_path)
    assert "ermission denied" in captured.out + captured.err


def test_unreadable_directory_in_a_corpus_for_real(shared_dir: Path) -> None:
    _sample_files(shared_dir)
    (shared_dir / "amduat" / "artifacts").chmod(0)
    result = run_unprivileged("manifest", "verify", "--json",
                              shared_dir / "amduat" / "fixtures.json")
    assert result.returncode == 1, result.stderr
    problems = json.loads(result.stdout)["manifests"][0]["problems"]
    assert problems and {p["reason"] for p in problems} == {"missing_artifact"}
    assert all("ermission denied" in p["detail"] for p in problems)


def test_unreadable_directories_in_a_conformance_corpus_for_real(shared_dir: Path) -> None:
    _sample_files(shared_dir)
    hidden = shared_dir / "v1" / "extra"
    hidden.mkdir()
    (hidden / "unlisted.bin").write_bytes(b"x")
    hidden.chmod(0)
    result = run_unprivileged("conformance", "check", "--json", "--backend", "py",
                              shared_dir / "v1")
    assert result.returncode == 1, result.stderr
    failures = {(f["path"], f["reason"])
                for f in json.loads(result.stdout)[0]["backends"]["py"]["failures"]}
    assert failures == {("extra", "file_unreadable")}  # reported, not skipped silently
    (shared_dir / "v1").chmod(0)
    result = run_unprivileged("conformance", "check", shared_dir / "v1")
    assert result.returncode == 2 and "ermission denied" in result.stderr


# --- a full disk ------------------------------------------------------------------------

def _disk_full_after(monkeypatch: pytest.MonkeyPatch, allowed: int = 0) -> None:
    """Writes to a ``.partial`` temporary fail with ENOSPC after ``allowed`` bytes."""
    real = os.write
    left = {"bytes": allowed}

    def write(fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".partial"):
            if left["bytes"] <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            n = min(len(data), left["bytes"])
            left["bytes"] -= n
            return real(fd, memoryview(data)[:n])
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("allowed", [0, 3])
def test_full_disk_keeps_old_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str], allowed: int) -> None:
    files = _sample_files(tmp_path)
    outputs = {
        "cbor": (["cbor", "encode", files["json"], "-o", tmp_path / "out.cbor"],
                 tmp_path / "out.cbor"),
        "fps": (["fps", "run", "reverse", "--level", "byte", "--input", "0102030405",
                 "-o", tmp_path / "out.bin"], tmp_path / "out.bin"),
        "manifest": (["manifest", "write", tmp_path / "amduat" / "artifacts", "-o",
                      tmp_path / "amduat" / "m.json"], tmp_path / "amduat" / "m.json"),
    }
    for argv, target in outputs.values():
        target.write_bytes(b"the previous output\n")
    _disk_full_after(monkeypatch, allowed)
    for argv, target in outputs.values():
        status = main([str(a) for a in argv])
        err = capsys.readouterr().err
        assert status == 2, (argv, err)
        assert "No space left on device" in err
        assert target.read_bytes() == b"the previous output\n"
        assert not [p for p in target.parent.iterdir() if p.name.endswith(".partial")]


def test_full_disk_while_recording_a_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "conformance"
    root.mkdir()
    real = os.write

    def write(fd: int, data: Any) -> int:
        if "/.v2.tmp-" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    assert main(["conformance", "record", str(root), "--version", "2"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert names(root) == []  # no version directory, no temporary directory


# --- FIFOs ------------------------------------------------------------------------------

def test_fifos_never_block(tmp_path: Path) -> None:
    files = _sample_files(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    refused = [
        ["cbor", "check", fifo, files["cbor"]],
        ["cbor", "decode", fifo],
        ["cbor", "encode", fifo, "-o", tmp_path / "out.cbor"],
        ["fps", "run", "reverse", "--level", "byte", "--input", f"@{fifo}"],
        ["manifest", "verify", fifo],
    ]
    for argv in refused:
        result = run(*argv)
        assert result.returncode == 2, (argv, result.stderr)
        assert "is a FIFO" in result.stderr and "Traceback" not in result.stderr
    checked = run("cbor", "check", fifo, files["cbor"])
    assert f"{files['cbor']}: ok" in checked.stdout  # the other input is still checked
    # a FIFO inside a corpus or a fixtures directory is a finding, or skipped, never read
    (tmp_path / "v1" / "manifest.json").unlink()
    os.mkfifo(tmp_path / "v1" / "manifest.json")
    result = run("conformance", "check", "--json", tmp_path / "v1")
    assert result.returncode == 1
    assert "manifest.json" in result.stdout and "file_unreadable" in result.stdout
    os.mkfifo(tmp_path / "amduat" / "artifacts" / "pipe.bin")
    result = run("manifest", "write", tmp_path / "amduat" / "artifacts", "-o",
                 tmp_path / "amduat" / "m.json")
    assert result.returncode == 0, result.stderr
    listed = json.loads((tmp_path / "amduat" / "m.json").read_bytes())["fixtures"]
    assert "pipe.bin" not in {e["id"] for e in listed} and len(listed) == 4


# --- output paths -----------------------------------------------------------------------

def test_bad_output_paths_are_refused_before_work(tmp_path: Path) -> None:
    files = _sample_files(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    before = {p: p.read_bytes() for p in (files["json"], files["bin"])}
    cases = [
        (["cbor", "encode", files["json"], "-o", files["json"]], "one of the inputs"),
        (["cbor", "encode", files["json"], "-o", fifo], "is a FIFO"),
        (["cbor", "encode", files["json"], "-o", tmp_path], "is a directory"),
        (["cbor", "encode", files["json"], "-o", tmp_path / "no" / "x.cbor"], "does not exist"),
        (["fps", "run", "reverse", "--level", "byte", "--input", f"@{files['bin']}",
          "-o", files["bin"]], "one of the inputs"),
        (["manifest", "write", tmp_path / "amduat" / "artifacts", "-o",
          tmp_path / "no" / "m.json"], "does not exist"),
    ]
    for argv, reason in cases:
        result = run(*argv)
        assert result.returncode == 2, (argv, result.stderr)
        assert reason in result.stderr and "Traceback" not in result.stderr
    assert {p: p.read_bytes() for p in before} == before
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".partial")]
