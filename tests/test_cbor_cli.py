"""``canonkit cbor encode | decode | check``, in-process through ``canonkit.cli.main`` and
once as a subprocess; the decode JSON form is reversible for every profile."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import PROFILE_VALUES

from canonkit import cbor
from canonkit.cli import main
from canonkit.cli._cbor_json import JSONFormError, from_json, to_json


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_encode_decode_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.json"
    source.write_text('{"b": [1, 2.0, -0.0], "a": {"$bytes": "00ff"}, "c": {"$link": '
                      '"bafyreibnoelefnzgwbcacyt4vh52ymxvzbjq7mmqhtcnwarfq4lzegsiqe"}}')
    out = tmp_path / "out.cbor"
    status, _, err = _run(capsys, "cbor", "encode", str(source), "-o", str(out),
                          "--profile", "dag-cbor")
    assert status == 0, err
    data = out.read_bytes()
    assert cbor.decode(data, profile="dag-cbor")["b"] == [1, 2.0, 0.0]
    status, text, _ = _run(capsys, "cbor", "decode", str(out), "--profile", "dag-cbor")
    assert status == 0
    assert json.loads(text) == {"a": {"$bytes": "00ff"}, "b": [1, 2.0, 0.0], "c": {
        "$link": "bafyreibnoelefnzgwbcacyt4vh52ymxvzbjq7mmqhtcnwarfq4lzegsiqe"}}
    assert list(json.loads(text)) == ["a", "b", "c"]  # encoded key order


def test_decode_diag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.cbor"
    path.write_bytes(bytes.fromhex("a26161f93e006162c24901000000000000000" "0"))
    status, text, _ = _run(capsys, "cbor", "decode", "--diag", str(path))
    assert status == 0
    assert text == "{\"a\": 1.5, \"b\": 2(h'010000000000000000')}\n"


def test_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.cbor"
    good.write_bytes(cbor.encode({"t": 1, "v": [1.5]}))
    bad = tmp_path / "bad.cbor"
    bad.write_bytes(bytes.fromhex("a261741817617601"))
    status, out, _ = _run(capsys, "cbor", "check", str(good))
    assert (status, out) == (0, f"{good}: ok\n")
    status, out, _ = _run(capsys, "cbor", "check", str(good), str(bad))
    lines = out.splitlines()
    assert status == 1
    assert lines[0] == f"{good}: ok"
    assert lines[1].startswith(f"{bad}: non_shortest_integer at offset 3: ")
    # an unreadable file is not a check result: reported on stderr, and 2 outranks 1
    status, out, err = _run(capsys, "cbor", "check", str(good), str(bad), str(tmp_path / "none"))
    assert status == 2 and len(out.splitlines()) == 2
    assert err == f"canonkit cbor check: {tmp_path / 'none'}: No such file or directory\n"


def test_check_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "half.cbor"
    path.write_bytes(bytes.fromhex("a16176f93e00"))
    assert _run(capsys, "cbor", "check", str(path))[0] == 0
    status, out, _ = _run(capsys, "cbor", "check", "--profile", "dag-cbor", str(path))
    assert status == 1 and "float_outside_profile at offset 3" in out


def test_errors_leave_no_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.cbor"
    for text, fragment in [('{"a": NaN}', "JSON has no NaN"), ('{"a": 1, "a": 2}', "duplicate"),
                           ('{"$bytes": "zz"}', "$bytes"), ('{"$nope": 1}', "special form"),
                           ('[1e400, {"$float": "NaN"}]', None), ("[", "bad JSON")]:
        source = tmp_path / "in.json"
        source.write_text(text)
        status, _, err = _run(capsys, "cbor", "encode", str(source), "-o", str(out),
                              "--profile", "dag-cbor")
        assert status == 1
        assert fragment is None or fragment in err
        assert not out.exists()
        assert list(tmp_path.iterdir()) == [source]
    status, _, err = _run(capsys, "cbor", "decode", str(tmp_path / "in.json"))
    assert status == 1 and "canonkit cbor decode: " in err


def test_help_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["cbor", "--help"], ["cbor", "encode", "--help"], ["cbor", "decode", "--help"],
                 ["cbor", "check", "--help"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
        assert "usage: canonkit cbor" in capsys.readouterr().out


def test_subprocess_pipe(tmp_path: Path) -> None:
    document = '{"k": [1, {"$simple": 16}, {"$undefined": true}, {"$map": [[1, 2]]}]}'
    encoded = subprocess.run([sys.executable, "-m", "canonkit", "cbor", "encode"],
                             input=document.encode(), capture_output=True, check=True).stdout
    assert encoded == bytes.fromhex("a1616b8401f0f7a10102")
    decoded = subprocess.run([sys.executable, "-m", "canonkit", "cbor", "decode", "-"],
                             input=encoded, capture_output=True, check=True).stdout
    assert json.loads(decoded) == json.loads(document)


FORM_CASES: list[tuple[str, Any]] = [
    ("core", {"$x": 1, "a": 2}),  # text keys starting with $ need the $map form
    ("core", {1: "a", "b": 2}),
    ("core", {(1, 2): [b"\x00"], cbor.FrozenDict({"k": (1,)}): 3}),
    ("core", [float("nan"), float("inf"), -float("inf"), -0.0, 1.0, 1, 1 << 80]),
    ("core", cbor.Tag(1000, {"$tag": 1})),
]


@pytest.mark.parametrize("profile,value", FORM_CASES)
def test_json_form_examples(profile: str, value: Any) -> None:
    data = cbor.encode(value, profile=profile)
    text = json.dumps(to_json(cbor.decode(data, profile=profile)), allow_nan=False)
    assert cbor.encode(from_json(json.loads(text)), profile=profile) == data


def test_json_form_rejects() -> None:
    for bad in ({"$float": "1.5"}, {"$float": "0x3ff0000000000000"}, {"$tag": 1},
                {"$map": [[1]]}, {"$map": [[1, 2], [1, 3]]}, {"$undefined": False},
                {"$simple": 23}, {"$link": "nope"}, {"$bytes": 5}):
        with pytest.raises(JSONFormError):
            from_json(bad)


@pytest.mark.parametrize("profile", ["core", "dcbor", "dag-cbor"])
def test_json_form_is_reversible(profile: str) -> None:
    @settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
    @given(PROFILE_VALUES[profile]())
    def run(value: Any) -> None:
        data = cbor.encode(value, profile=profile)
        text = json.dumps(to_json(cbor.decode(data, profile=profile)), allow_nan=False)
        assert cbor.encode(from_json(json.loads(text)), profile=profile) == data

    run()
