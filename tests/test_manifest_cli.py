"""``canonkit manifest verify|write`` and ``canonkit fps run``."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO

from canonkit.cli import main

CORPUS = REPO / "conformance" / "amduat"


def test_verify_ok_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifest", "verify", *map(str, sorted(CORPUS.glob("*.json")))]) == 0
    out = capsys.readouterr().out
    assert out.count("ok  ") == 5 and "FAIL" not in out


def test_verify_drift_exits_one_with_table_and_json(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "fps.json"
    document = json.loads((CORPUS / "fps.json").read_text())
    document["cases"][0]["cid_sha256"] = "0" * 64
    bad.write_text(json.dumps(document))
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not json")
    assert main(["manifest", "verify", str(bad), str(garbage)]) == 1
    table = capsys.readouterr().out
    assert "wrong_cid" in table and "unreadable" in table and "REASON" in table
    assert main(["manifest", "verify", "--json", str(bad)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert report["manifests"][0]["problems"] == [
        {"case": document["cases"][0]["id"], "reason": "wrong_cid",
         "detail": report["manifests"][0]["problems"][0]["detail"]}]


def test_write_builds_a_verifying_manifest(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(CORPUS / "artifacts", tmp_path / "artifacts")
    out = tmp_path / "fixtures.json"
    assert main(["manifest", "write", str(tmp_path / "artifacts"), "-o", str(out)]) == 0
    assert out.read_bytes() == (CORPUS / "fixtures.json").read_bytes()
    assert main(["manifest", "verify", str(out)]) == 0


def test_write_refuses_a_directory_outside(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert main(["manifest", "write", str(tmp_path / "a"), "-o",
                 str(tmp_path / "b" / "m.json")]) == 2
    assert "inside" in capsys.readouterr().err


def test_fps_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["fps", "run", "slice", "--input", "0123456789abcdef", "--offset", "4",
                 "--length", "16", "--level", "bit"]) == 0
    out = capsys.readouterr().out
    assert "1234" in out and "0597222b71927ea5" in out
    payload = tmp_path / "in.bin"
    payload.write_bytes(bytes.fromhex("0123456789abcdef"))
    assert main(["fps", "run", "reverse", "--input", f"@{payload}", "--level", "word",
                 "--json"]) == 0
    case = json.loads(capsys.readouterr().out)
    assert case["output"] == "cdef89ab45670123"
    assert main(["fps", "run", "concat", "--inputs", "01", "02", "-o",
                 str(tmp_path / "o.bin")]) == 0
    assert (tmp_path / "o.bin").read_bytes() == b"\x01\x02"


@pytest.mark.parametrize("argv", [
    ["concat", "--inputs", "01", "02"],
    ["--inputs", "01", "02", "concat"],  # --inputs takes the words after it, the name too
    ["--inputs", "01", "concat", "02"],
])
def test_fps_run_takes_the_operation_before_or_after_the_inputs(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(["fps", "run", *argv, "--json"]) == 0
    case = json.loads(capsys.readouterr().out)
    assert case["op"] == "concat" and case["inputs"] == ["01", "02"]
    assert case["output"] == "0102"


@pytest.mark.parametrize("argv", [["--inputs", "01", "02"], ["--inputs", "concat", "concat"],
                                  []])
def test_fps_run_without_one_operation_is_a_usage_error(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["fps", "run", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "usage: canonkit fps run" in err
    assert "required: op (one of slice, concat, reverse, splice)" in err


def test_fps_run_reverse_needs_a_level(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["fps", "run", "reverse", "--input", "00"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "reverse needs --level" in err and "usage:" in err and "None" not in err


@pytest.mark.parametrize(("argv", "code"), [
    (["reverse", "--input", "010203", "--level", "word"], "ERR_LENGTH_MISALIGNED"),
    (["slice", "--input", "00", "--offset", "0", "--length", "2"], "ERR_RANGE"),
])
def test_fps_run_refusals_by_the_input_exit_one(capsys: pytest.CaptureFixture[str],
                                                argv: list[str], code: str) -> None:
    assert main(["fps", "run", *argv]) == 1
    assert capsys.readouterr().err.startswith(code)


@pytest.mark.parametrize(("argv", "code"), [
    (["concat"], "ERR_ARG_INVALID"),
    (["concat", "--inputs"], "ERR_ARITY"),
    (["slice", "--input", "00", "--offset", "-1", "--length", "0"], "ERR_ARG_INVALID"),
    (["reverse", "--input", "0g", "--level", "bit"], "ERR_ARG_INVALID"),
    (["reverse", "--input", "00", "--level", "nibble"], "ERR_LEVEL_INVALID"),
])
def test_fps_run_malformed_arguments_are_usage_errors(capsys: pytest.CaptureFixture[str],
                                                      argv: list[str], code: str) -> None:
    assert main(["fps", "run", *argv]) == 2
    assert capsys.readouterr().err.startswith(code)
