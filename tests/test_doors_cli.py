"""The commands read through the input door and write through the output door
(canonkit._files): ``store get -o`` never replaces a device, a FIFO or a symlink and keeps
a file's mode; ``store put``/``store import`` refuse what is not a regular file at once;
``synth`` never destroys or silently replaces a corpus; a NUL byte in a manifest path is a
finding of the check, never an unexpected error."""
from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from canonkit.store import Store

ROOT = os.geteuid() == 0
HELLO = b"hello tovio\n"
TIMEOUT = 60


def _bounded_memory() -> None:  # a reader that does not stop fails fast, never the machine
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def canonkit(*argv: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-m", "canonkit", *map(str, argv)],
                              capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd,
                              preexec_fn=_bounded_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"canonkit {' '.join(map(str, argv))} blocked for {TIMEOUT} s")


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "s"
    return root, Store.init(root).put(HELLO)


# --- store get -o: the output door ---------------------------------------------------------

def test_get_into_a_fifo_or_a_device_is_refused_and_leaves_it(tmp_path: Path,
                                                              store: tuple[Path, str]) -> None:
    root, address = store
    targets = [tmp_path / "pipe"]
    os.mkfifo(targets[0])
    if ROOT:  # a character device like /dev/null (1, 3), made here: never the real one
        os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        targets.append(tmp_path / "null")
    for target in targets:
        kind = stat.S_IFMT(os.lstat(target).st_mode)
        done = canonkit("store", "get", root, address, "-o", target)
        assert done.returncode == 2, done.stderr
        assert "an output must be a file" in done.stderr
        assert stat.S_IFMT(os.lstat(target).st_mode) == kind  # still a FIFO / a device
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["s", *[t.name for t in targets]])


def test_get_writes_through_a_symlink_and_keeps_the_mode(tmp_path: Path,
                                                         store: tuple[Path, str]) -> None:
    root, address = store
    real = tmp_path / "data" / "real.bin"
    real.parent.mkdir()
    real.write_bytes(b"old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.bin"
    link.symlink_to(real)
    done = canonkit("store", "get", root, address, "-o", link)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)  # the link stays a link
    assert real.read_bytes() == HELLO
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    plain = tmp_path / "plain.bin"
    plain.write_bytes(b"old")
    os.chmod(plain, 0o604)
    assert canonkit("store", "get", root, address, "-o", plain).returncode == 0
    assert plain.read_bytes() == HELLO and stat.S_IMODE(plain.stat().st_mode) == 0o604
    assert sorted(p.name for p in real.parent.iterdir()) == ["real.bin"]  # no temporary


def test_get_into_a_directory_or_into_the_store_is_refused(tmp_path: Path,
                                                           store: tuple[Path, str]) -> None:
    root, address = store
    loose = root / "objects" / address[7:9] / address[9:]
    before = loose.read_bytes()
    for target in (tmp_path, loose, root / "objects" / "new.bin"):
        done = canonkit("store", "get", root, address, "-o", target)
        assert done.returncode == 2, done.stderr
        assert "an output must be a file" in done.stderr or "refusing" in done.stderr
    assert loose.read_bytes() == before and not (root / "objects" / "new.bin").exists()


# --- store put / import: the input door -----------------------------------------------------

def test_put_refuses_a_fifo_and_a_device_at_once(tmp_path: Path, store: tuple[Path, str]
                                                 ) -> None:
    root, _ = store
    os.mkfifo(tmp_path / "pipe")
    for name in (tmp_path / "pipe", Path("/dev/zero")):
        done = canonkit("store", "put", root, name)
        assert done.returncode == 2, done.stderr
        assert "not a regular file" in done.stderr and "Traceback" not in done.stderr
    good = tmp_path / "good.txt"
    good.write_bytes(HELLO)
    done = canonkit("store", "put", root, good, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["bytes"] == len(HELLO)


def test_import_refuses_a_vectors_file_that_is_not_regular(tmp_path: Path,
                                                           store: tuple[Path, str]) -> None:
    root, _ = store
    fifo, device = tmp_path / "fifo", tmp_path / "device"
    fifo.mkdir()
    os.mkfifo(fifo / "vectors.json")
    device.mkdir()
    (device / "vectors.json").symlink_to("/dev/zero")
    for corpus in (fifo, device):
        done = canonkit("store", "import", root, corpus)
        assert done.returncode == 2, done.stderr
        assert "not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_import_refuses_a_repeated_key(tmp_path: Path, store: tuple[Path, str]) -> None:
    root, _ = store
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "vectors.json").write_text('{"schema": "x", "schema": '
                                         '"canonkit.conformance.vectors.v1", "vectors": []}')
    done = canonkit("store", "import", root, corpus)
    assert done.returncode == 1, done.stderr  # bad data read, as in every command
    assert "duplicate_json_key" in done.stderr and "'schema' at offset 16" in done.stderr


# --- synth: never destroys a corpus --------------------------------------------------------

def test_synth_refuses_one_file_for_the_corpus_and_its_answers(tmp_path: Path) -> None:
    for name in ("c.jsonl", "c.jsonl.gz"):
        out = tmp_path / name
        done = canonkit("synth", "--episodes", "3", "--out", out, "--answers", out,
                        "--no-progress")
        assert done.returncode == 2 and "two files" in done.stderr, done.stderr
        assert not out.exists()
        link = tmp_path / f"link-{name}"
        link.symlink_to(out)  # the same file under another name
        done = canonkit("synth", "--episodes", "3", "--out", out, "--answers", link,
                        "--no-progress")
        assert done.returncode == 2 and not out.exists()
    directory = tmp_path / "dir"
    done = canonkit("synth", "--episodes", "3", "--out", f"{directory}{os.sep}",
                    "--answers", directory / "answers.jsonl", "--no-progress")
    assert done.returncode == 2 and not directory.exists(), done.stderr


def test_synth_replaces_an_existing_corpus_only_with_force(tmp_path: Path) -> None:
    out, answers = tmp_path / "c.jsonl", tmp_path / "a.jsonl"
    first = ["synth", "--episodes", "3", "--seed", "1", "--out", out, "--answers", answers,
             "--no-progress"]
    assert canonkit(*first).returncode == 0
    corpus, key = out.read_bytes(), answers.read_bytes()
    os.chmod(out, 0o640)
    second = ["synth", "--episodes", "4", "--seed", "2", "--out", out, "--no-progress"]
    done = canonkit(*second)
    assert done.returncode == 2 and "--force" in done.stderr, done.stderr
    assert out.read_bytes() == corpus
    done = canonkit(*second[:-1], "--answers", answers, "--no-progress")
    assert done.returncode == 2 and out.read_bytes() == corpus
    fresh = tmp_path / "fresh.jsonl"  # a new corpus, but the answer file exists
    done = canonkit("synth", "--episodes", "4", "--out", fresh, "--answers", answers,
                    "--no-progress")
    assert done.returncode == 2 and not fresh.exists() and answers.read_bytes() == key
    done = canonkit(*second, "--answers", answers, "--force")
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() != corpus and answers.read_bytes() != key
    assert len(out.read_bytes().splitlines()) == 4
    assert stat.S_IMODE(out.stat().st_mode) == 0o640  # a replaced corpus keeps its mode


# --- a NUL byte in a manifest path ----------------------------------------------------------

def test_a_nul_byte_in_a_conformance_manifest_path_is_a_bad_path(tmp_path: Path) -> None:
    corpus = tmp_path / "v1"
    shutil.copytree(REPO / "conformance" / "v1", corpus)
    manifest = json.loads((corpus / "manifest.json").read_bytes())
    manifest["files"].append({"path": "zz\u0000evil", "bytes": "0", "sha256": "0" * 64})
    (corpus / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    done = canonkit("conformance", "check", "--json", corpus)
    assert done.returncode == 1, done.stderr
    found = {(f["path"], f["reason"]) for d in json.loads(done.stdout)
             for r in d["backends"].values() for f in r["failures"]}
    assert ("zz\x00evil", "bad_path") in found
    assert not any(reason == "unexpected_error" for _, reason in found)
