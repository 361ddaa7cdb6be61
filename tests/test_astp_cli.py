"""``canonkit astp``: each action on good and bad input, exit statuses 0/1/2, ``--json``."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import VECTORS
from strategies_astp import EP, sav2_episode

from canonkit import astp
from canonkit.astp.layer3.synthetic_exports import make_export

POR = VECTORS / "astp" / "proof-of-record-5.0.0.json"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "canonkit", "astp", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def test_reproduce(tmp_path: Path) -> None:
    done = run("reproduce", str(POR), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "reproduced"
    tampered = json.loads(POR.read_text())
    tampered["stored"]["segments"][0]["content_hash"] = "0" * 64
    done = run("reproduce", str(write(tmp_path / "t.json", tampered)))
    assert done.returncode == 1 and "not_reproducible" in done.stdout
    done = run("reproduce", str(tmp_path / "missing.json"))
    assert done.returncode == 2 and "missing.json" in done.stderr
    (tmp_path / "bad.json").write_text("{not json")  # bad input data: 1, as in every command
    done = run("reproduce", str(tmp_path / "bad.json"))
    assert done.returncode == 1 and "invalid_json_input" in done.stderr
    write(tmp_path / "odd.json", {"format": "x"})
    done = run("reproduce", str(tmp_path / "odd.json"))
    assert done.returncode == 1 and "invalid_record" in done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_not_blocked_on(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = run("reproduce", str(fifo))
    assert done.returncode == 2 and "not a regular file" in done.stderr


def test_prove_and_verify_proof(tmp_path: Path) -> None:
    episode = write(tmp_path / "e.json", sav2_episode())
    done = run("prove", str(episode), "--leaf", "3", "--json")
    assert done.returncode == 0, done.stderr
    proof = json.loads(done.stdout)
    assert proof["siblings"][0] == "8c5558dd9cf6dbbfb7d5c64757d4c2640fabc5b1105404a77c6fd5120fce9889"
    assert proof["spine_root"] == "4420e38a22409317822ac14e3d5bc8069e6556c0fc08928290f76d23396daa01"
    done = run("verify-proof", str(write(tmp_path / "p.json", proof)))
    assert done.returncode == 0 and "verifies" in done.stdout
    wrong = {**proof, "leaf_index": 2}
    assert run("verify-proof", str(write(tmp_path / "w.json", wrong))).returncode == 1
    del proof["spine_root"]
    assert run("verify-proof", str(write(tmp_path / "x.json", proof))).returncode == 1
    assert run("prove", str(episode), "--leaf", "7").returncode == 2  # a usage error
    assert run("prove", str(POR), "--leaf", "0").returncode == 1     # sav 1: no v2 proof
    four = astp.inclusion_proof_v1([astp.sha3_256(b"a"), astp.sha3_256(b"b")], 1)
    v1 = {"leaf_hash": four.leaf_hash, "merkle_path": four.merkle_path,
          "path_directions": four.path_directions, "spine_root": four.spine_root}
    done = run("verify-proof", str(write(tmp_path / "v1.json", v1)), "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == {"form": "4.x", "valid": True}


def test_layer3_verify(tmp_path: Path) -> None:
    doc, _ = make_export(random.Random(1))
    done = run("layer3", "verify", str(write(tmp_path / "ok.json", doc)), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["ok"] is True
    bad, expected = make_export(random.Random(2), violation="WF-004")
    done = run("layer3", "verify", str(write(tmp_path / "bad.json", bad)), "--json")
    assert done.returncode == 1
    assert {f["vector"] for f in json.loads(done.stdout)["findings"]} == set(expected)
    episode = sav2_episode()
    doc, _ = make_export(random.Random(3), episode=episode)
    carrying = write(tmp_path / "ep.json", {**episode, "layer3": doc})
    assert run("layer3", "verify", str(carrying)).returncode == 0
    clash, _ = make_export(random.Random(4), violation="L3-001", episode=episode)
    carrying = write(tmp_path / "clash.json", {**episode, "layer3": clash})
    done = run("layer3", "verify", str(carrying))
    assert done.returncode == 1 and "L3-001" in done.stdout


def test_hash_calculators(tmp_path: Path) -> None:
    done = run("hash", "leaf", "--node-id", "00000000-0000-4000-8000-000000000000",
               "--schema-version", "1.0.0", "--sequence-index", "0",
               "--content-hash", astp.sha3_256(b"leaf-0").hex(), "--parent-node-id", EP)
    assert done.stdout.strip() == "25b617f0d7ac09871f88ce7e2851cc8f50b48305dee51d081b62a5f21ed84935"
    leaves = tmp_path / "leaves.txt"
    leaves.write_text("\n".join(astp.sha3_256(f"leaf-{i}".encode()).hex() for i in range(1)))
    done = run("hash", "spine", "--sav", "2", f"@{leaves}", "--json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["spine_root"] == astp.spine_root(
        [astp.sha3_256(b"leaf-0")], spine_algorithm_version=2)
    assert run("hash", "spine", "--sav", "2", "nothex").returncode == 2
    doc, _ = make_export(random.Random(5))
    node = doc["nodes"][0]
    done = run("hash", "form-b", "-", stdin=json.dumps(node))
    assert done.returncode == 0 and "matches" in done.stdout
    done = run("hash", "form-b", "-", "--json", stdin=json.dumps({**node, "content_hash": "0" * 64}))
    assert done.returncode == 1 and json.loads(done.stdout)["content_hash"] == node["content_hash"]
    del node["declared_at"]
    done = run("hash", "form-b", "-", stdin=json.dumps(node))
    assert done.returncode == 1 and "declared_at" in done.stderr
