"""``canonkit car verify | ls | extract``: tables and JSON, and the exit status of every
command (0 clean, 1 error findings, 2 could not run)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from car_files import dag, raw, sample_blocks, section, write

from canonkit import car
from canonkit.cli import main


def clean(tmp_path: Path, name: str = "clean.car", version: int = 2) -> Path:
    blocks = sample_blocks()
    return write(tmp_path / name, car.encode([blocks[0][0]], blocks, version=version))


def broken(tmp_path: Path) -> Path:
    blocks = [dag({"a": 1}), raw(b"second")]
    data = car.encode([blocks[0][0]], blocks).replace(b"second", b"sec0nd")
    return write(tmp_path / "broken.car", data + b"\x00")


def test_verify_clean_files_exits_zero(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    one, two = clean(tmp_path, "one.car", 1), clean(tmp_path, "two.car", 2)
    assert main(["car", "verify", str(one), str(two)]) == 0
    out = capsys.readouterr().out
    assert out.count("ok  ") == 2 and "FAIL" not in out
    assert "CARv2 (car-multihash-index-sorted, 6 entries), 1 root, 7 blocks" in out
    assert "all verified" in out


def test_verify_findings_exit_one_with_a_table_and_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = broken(tmp_path)
    assert main(["car", "verify", str(bad), str(clean(tmp_path))]) == 1
    out = capsys.readouterr().out
    assert "FAIL  " in out and "ok    " in out
    assert "car_digest_mismatch" in out and "car_zero_length_section" in out
    assert "OFFSET" in out and str(raw(b"second")[0]) in out
    assert main(["car", "verify", "--json", str(bad)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    (only,) = report["files"]
    assert [f["code"] for f in only["findings"]] == ["car_digest_mismatch",
                                                     "car_zero_length_section"]
    assert only["counts"] == {"car_digest_mismatch": 1, "car_zero_length_section": 1}
    assert only["blocks"] == 2 and only["verified"] == 1 and only["version"] == 1


def test_verify_strict_and_the_limit(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    loose = bytes.fromhex("a2616202616101")
    from canonkit.cbor import Link

    cid = Link.for_block(loose)
    blocks = [(cid, loose)] * 3
    path = write(tmp_path / "loose.car", car.encode([cid], blocks))
    assert main(["car", "verify", str(path)]) == 0
    capsys.readouterr()
    assert main(["car", "verify", "--strict", "--limit", "1", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count("car_strict_decode") == 2  # one listed, and the line of the others
    assert "2 more car_strict_decode findings not listed (--limit 1)" in out


def test_warnings_do_not_fail_a_file(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    absent = dag({"absent": 1})[0]
    path = write(tmp_path / "a.car", car.encode([absent], [raw(b"x")]))
    assert main(["car", "verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "warning" in out and "car_root_missing" in out and out.startswith("ok")


@pytest.mark.parametrize("command", ["verify", "ls"])
def test_an_unusable_input_exits_two(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     command: str) -> None:
    assert main(["car", command, str(tmp_path / "missing.car")]) == 2
    assert "missing.car" in capsys.readouterr().err
    os.mkfifo(tmp_path / "pipe")
    assert main(["car", command, str(tmp_path / "pipe")]) == 2
    assert "FIFO" in capsys.readouterr().err
    assert main(["car", command, str(tmp_path)]) == 2
    assert "directory" in capsys.readouterr().err


def test_verify_an_unreadable_file_among_good_ones_exits_two(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["car", "verify", str(broken(tmp_path)), str(tmp_path / "missing.car")]) == 2


def test_ls_lists_sections_and_findings(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["car", "ls", str(clean(tmp_path))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and all(line.endswith("  ok") for line in lines)
    assert "blake3" in lines[3] and "identity" in lines[5]
    assert main(["car", "ls", str(broken(tmp_path))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1].endswith("car_digest_mismatch") and "car_zero_length_section" in out[2]


def test_ls_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["car", "ls", "--json", str(broken(tmp_path))]) == 1
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["kind"] for r in records] == ["header", "section", "section", "finding"]
    assert records[0]["version"] == 1 and records[1]["findings"] == []
    assert records[2]["findings"][0]["code"] == "car_digest_mismatch"
    assert records[3]["code"] == "car_zero_length_section"


def test_extract_writes_blocks_and_refuses_existing_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = clean(tmp_path)
    out = tmp_path / "out"
    assert main(["car", "extract", str(path), "-o", str(out)]) == 0
    assert "wrote 7 blocks" in capsys.readouterr().out
    assert len(list(out.iterdir())) == 7
    assert main(["car", "extract", str(path), "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["car", "extract", str(path), "-o", str(out), "--force", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["written"]) == 7


def test_extract_selected_blocks_missing_ones_and_bad_cids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = clean(tmp_path)
    first = str(sample_blocks()[0][0])
    absent = str(raw(b"absent")[0])
    out = tmp_path / "out"
    assert main(["car", "extract", str(path), "-o", str(out), "--cid", first,
                 "--cid", absent]) == 1
    assert [p.name for p in out.iterdir()] == [first]
    assert f"{absent}: not a verified block" in capsys.readouterr().err
    assert main(["car", "extract", str(path), "-o", str(out), "--cid", "not-a-cid"]) == 2
    assert "cannot parse CID" in capsys.readouterr().err


def test_extract_of_a_broken_file_skips_the_broken_block(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["car", "extract", str(broken(tmp_path)), "-o", str(out)]) == 1
    assert [p.name for p in out.iterdir()] == [str(dag({"a": 1})[0])]
    assert "car_digest_mismatch" in capsys.readouterr().out


def test_the_console_script_runs_car_verify(tmp_path: Path) -> None:
    path = clean(tmp_path)
    done = subprocess.run([sys.executable, "-m", "canonkit", "car", "verify", str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok") and done.stderr == ""


def test_section_helper_frames_as_the_writer_does() -> None:
    block = raw(b"abc")
    assert car.encode([block[0]], [block]).endswith(section(*block))
