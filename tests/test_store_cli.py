"""``canonkit store ...``: every action, its output (--json where it is data) and its
exit status (0 done, 1 errors found, 2 could not run, 143 on SIGTERM)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from canonkit import errors
from canonkit.cli import main
from canonkit.store import Store

HELLO_ADDRESS = "blake3:4321fae3f39665682914de5dec718fd33c3be477b162546057f7b321e961dfd3"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"),
                                                    os.environ.get("PYTHONPATH", "")])}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["store", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_store_actions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = str(tmp_path / "s")
    assert run(capsys, "init", s)[0] == 0
    code, _, err = run(capsys, "init", s)
    assert code == 2 and "store already" in err
    f = tmp_path / "hello.txt"
    f.write_bytes(b"hello tovio\n")
    code, out, _ = run(capsys, "put", s, str(f), "--json")
    assert code == 0 and json.loads(out) == {"file": str(f), "address": HELLO_ADDRESS,
                                             "bytes": 12}
    assert run(capsys, "put", s, str(f), "--form", "deflate")[1] == f"{HELLO_ADDRESS}  {f}\n"
    assert run(capsys, "ref", s, "main", HELLO_ADDRESS) == (0, "", "")
    code, out, _ = run(capsys, "ref", s, "--json")
    assert json.loads(out) == {"main": HELLO_ADDRESS}
    assert run(capsys, "ref", s, "main")[1] == HELLO_ADDRESS + "\n"
    code, _, err = run(capsys, "ref", s, "main", HELLO_ADDRESS, "--expect", "none")
    assert code == 2 and "ref_conflict" not in err and "holds" in err
    out_file = tmp_path / "out.bin"
    assert run(capsys, "get", s, HELLO_ADDRESS, "-o", str(out_file))[0] == 0
    assert out_file.read_bytes() == b"hello tovio\n"
    code, out, _ = run(capsys, "repack", s, "--json", "--no-progress")
    stats = json.loads(out)
    assert code == 0 and stats["objects"] == 1 and stats["pack"].startswith("packs/pack-")
    code, out, _ = run(capsys, "fsck", s, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["objects"] == 1 and report["findings"] == []
    code, out, err = run(capsys, "fsck", s)
    assert code == 0 and out.startswith("clean: 1 objects") and err == ""  # no bar: no TTY
    code, out, _ = run(capsys, "gc", s, "--grace", "0", "--json")
    assert code == 0 and json.loads(out)["reachable"] == 1
    assert run(capsys, "ref", s, "main", "--delete")[0] == 0
    assert run(capsys, "ref", s, "main")[0] == 2
    code, out, _ = run(capsys, "unlock", s, "--json")
    assert code == 0 and json.loads(out) is None


def test_fsck_exit_status_on_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                    ) -> None:
    store = Store.init(tmp_path / "s")
    address = store.put(b"some bytes")
    path = tmp_path / "s" / "objects" / address[7:9] / address[9:]
    path.write_bytes(path.read_bytes()[:-1] + b"!")
    code, out, _ = run(capsys, "fsck", str(tmp_path / "s"))
    assert code == 1 and "digest_mismatch" in out and out.splitlines()[-1].startswith("ERRORS")
    code, out, _ = run(capsys, "fsck", str(tmp_path / "s"), "--json", "--jobs", "2")
    assert code == 1 and json.loads(out)["findings"][0]["code"] == "digest_mismatch"
    code, _, err = run(capsys, "get", str(tmp_path / "s"), address)
    assert code == 1 and "digest_mismatch" in err
    code, _, err = run(capsys, "fsck", str(tmp_path / "s"), "--scheduler", "tcp://x:1")
    assert code == 2 and "--engine dask" in err


def test_could_not_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "fsck", str(tmp_path / "none"))
    assert code == 2 and "not a canonkit store" in err
    Store.init(tmp_path / "s")
    code, _, err = run(capsys, "get", str(tmp_path / "s"), "blake3:" + "00" * 32)
    assert code == 2 and "not in the store" in err
    code, _, err = run(capsys, "get", str(tmp_path / "s"), "nonsense")
    assert code == 2 and "not a blake3 address" in err
    code, _, err = run(capsys, "ref", str(tmp_path / "s"), "../x", HELLO_ADDRESS)
    assert code == 2 and "invalid ref name" in err
    (tmp_path / "s" / "lock").write_text(json.dumps({"pid": os.getpid(), "host":
                                                     os.uname().nodename, "started": 0}))
    code, _, err = run(capsys, "repack", str(tmp_path / "s"))
    assert code == 2 and f"pid {os.getpid()}" in err
    code, _, err = run(capsys, "unlock", str(tmp_path / "s"))
    assert code == 2 and "not breaking" in err
    assert run(capsys, "unlock", str(tmp_path / "s"), "--force")[0] == 0


@pytest.mark.parametrize("url", ["ftp://host/st", "http://host/st/", "https://host/st",
                                 "file:///tmp/st", "s4://bucket/st"])
def test_a_url_is_never_taken_for_a_store_directory(url: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # s3://, gs:// and az:// name stores in object storage (test_store_bucket.py); any
    # other URL is refused before a request is made or a directory created
    monkeypatch.chdir(tmp_path)
    for action in ("init", "fsck", "gc"):
        code, _, err = run(capsys, action, url)
        assert code == 2 and url.split("://")[0] in err, err
    with pytest.raises(errors.UnsupportedURLError):
        Store.init(url)
    with pytest.raises(errors.UnsupportedURLError):
        Store(url)
    assert os.listdir(tmp_path) == []  # no "ftp:" directory


def test_import_puts_every_vector_of_the_corpus(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    corpus = REPO / "conformance" / "v1"
    vectors = json.loads((corpus / "vectors.json").read_bytes())["vectors"]
    Store.init(tmp_path / "s")
    code, out, _ = run(capsys, "import", str(tmp_path / "s"), str(corpus), "--json",
                       "--form", "deflate")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["name"] for r in rows] == [v["name"] for v in vectors]
    assert all(r["ok"] and r["address"] == r["expected"] for r in rows)
    store = Store(tmp_path / "s")
    for v in vectors:
        assert store.get(v["address"]) == bytes.fromhex(v["hex"])
        assert store.form(v["address"]) == "deflate"
    # a corpus whose vector does not hash to its address: exit 1, named
    bad = tmp_path / "bad"
    bad.mkdir()
    vectors[0]["address"] = "blake3:" + "11" * 32
    (bad / "vectors.json").write_text(json.dumps({"schema": "canonkit.conformance.vectors.v1",
                                                  "vectors": vectors}))
    code, _, err = run(capsys, "import", str(tmp_path / "s"), str(bad))
    assert code == 1 and vectors[0]["name"] in err
    code, _, err = run(capsys, "import", str(tmp_path / "s"), str(tmp_path))
    assert code == 2 and "vectors.json" in err


_TERM = """
import os, signal, sys
from canonkit.cli import main
from canonkit.store import repack
real, calls = repack.read_for_pack, []
def read(*args, **kwargs):
    calls.append(1)
    if len(calls) == 50:
        os.kill(os.getpid(), signal.SIGTERM)
    return real(*args, **kwargs)
repack.read_for_pack = read
sys.exit(main(["store", "repack", sys.argv[1]]))
"""


def test_sigterm_stops_a_repack_cleanly(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    addresses = [store.put(b"object %d" % i) for i in range(200)]
    proc = subprocess.run([sys.executable, "-c", _TERM, str(tmp_path / "s")], env=ENV,
                          capture_output=True, text=True)
    assert proc.returncode == 143 and "SIGTERM" in proc.stderr
    after = Store(tmp_path / "s")
    assert after.lock_info() is None  # released on the way out
    assert os.listdir(tmp_path / "s" / "tmp") == []  # the half-written pack removed
    assert list((tmp_path / "s" / "packs").iterdir()) == []
    assert after.get_many(addresses) == [b"object %d" % i for i in range(200)]


def test_gc_shows_progress_while_it_rewrites_a_pack_unless_told_not_to(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gc rewrites a pack holding unreachable objects under a bar on stderr when asked
    (``progress=True``), and prints nothing with ``--no-progress`` or without a terminal."""
    def packed_store(name: str) -> Store:
        store = Store.init(tmp_path / name)
        store.set_ref("main", store.put(b"kept"))
        for i in range(50):
            store.put(b"dropped %d" % i)
        store.repack(grace_seconds=0)
        return store

    stats = packed_store("asked").gc(grace_seconds=0, progress=True)
    assert stats.packs_written == 1 and stats.deleted == 50
    assert "gc: 100%" in capsys.readouterr().err
    for flags in (["--no-progress"], []):  # told not to; no terminal (the default: None)
        name = f"cli{len(flags)}"
        packed_store(name)
        code, out, err = run(capsys, "gc", str(tmp_path / name), "--grace", "0", "--json",
                             *flags)
        assert code == 0 and json.loads(out)["packs_written"] == 1 and err == ""
