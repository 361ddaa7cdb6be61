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

from canonkit.cbor import dag_json
from canonkit import cbor
from canonkit.cli import main
from canonkit.cli._cbor_json import JSONFormError, from_json, to_json


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_encode_decode_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.json"
    source.write_text('{"b": [1, 2.0, -0.0], "a": {"$bytes": "AP8"}, "c": {"$simple": 16}}')
    out = tmp_path / "out.cbor"
    status, _, err = _run(capsys, "cbor", "encode", str(source), "-o", str(out))
    assert status == 0, err
    data = out.read_bytes()
    assert cbor.decode(data)["a"] == b"\x00\xff"
    status, text, _ = _run(capsys, "cbor", "decode", str(out))
    assert status == 0
    assert json.loads(text) == {"a": {"$bytes": "AP8"}, "b": [1, 2.0, -0.0], "c": {
        "$simple": 16}}
    assert list(json.loads(text)) == ["a", "b", "c"]  # encoded key order


DAG_JSON = ('{"a":{"/":{"bytes":"AP8"}},"b":[1,2.0,0.0],'
            '"c":{"/":"bafyreibnoelefnzgwbcacyt4vh52ymxvzbjq7mmqhtcnwarfq4lzegsiqe"}}')


def test_dag_cbor_speaks_dag_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.json"
    source.write_text('{"c": {"/": "bafyreibnoelefnzgwbcacyt4vh52ymxvzbjq7mmqhtcnwarfq4lzegsiqe"'
                      '}, "b": [1, 2.0, -0.0],\n "a": {"/": {"bytes": "AP8"}}}')  # not canonical
    out = tmp_path / "out.cbor"
    status, _, err = _run(capsys, "cbor", "encode", str(source), "-o", str(out),
                          "--profile", "dag-cbor")
    assert status == 0, err
    value = cbor.decode(out.read_bytes(), profile="dag-cbor")
    assert value["a"] == b"\x00\xff" and isinstance(value["c"], cbor.Link)
    status, text, _ = _run(capsys, "cbor", "decode", str(out), "--profile", "dag-cbor")
    assert (status, text) == (0, DAG_JSON + "\n")
    block = tmp_path / "block.json"
    status, text, _ = _run(capsys, "cbor", "decode", str(out), "--profile", "dag-cbor",
                           "-o", str(block))
    assert (status, text) == (0, "")
    assert block.read_bytes() == DAG_JSON.encode()  # exactly the block, no newline
    assert dag_json.decode(block.read_bytes()) == value
    status, text, _ = _run(capsys, "cbor", "decode", str(out), "--profile", "dag-cbor",
                           "--indent", "2")
    assert status == 0 and "\n  " in text and dag_json.decode(text.encode(), strict=False) == value


def test_dag_json_fixtures_through_the_cli(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).parent / "vectors" / "ipld-codec-fixtures" / "fixtures"
    for name in ("map-with_complex_entries", "cid-arrayof", "float-8.940696716308594e-8",
                 "string-Čaues ßvěte!"):
        (cbor_file,) = (root / name).glob("*.dag-cbor")
        (json_file,) = (root / name).glob("*.dag-json")
        out = tmp_path / "o.json"
        assert _run(capsys, "cbor", "decode", str(cbor_file), "--profile", "dag-cbor",
                    "-o", str(out))[0] == 0
        assert out.read_bytes() == json_file.read_bytes()
        assert str(cbor.Link.for_block(out.read_bytes(), "dag-json")) == json_file.stem
        back = tmp_path / "o.cbor"
        assert _run(capsys, "cbor", "encode", str(json_file), "--profile", "dag-cbor",
                    "-o", str(back))[0] == 0
        assert back.read_bytes() == cbor_file.read_bytes()


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


def test_check_json_and_sequences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.cbor"
    good.write_bytes(cbor.encode({"t": 1}))
    seq = tmp_path / "items.cborseq"
    seq.write_bytes(b"".join(cbor.encode(v) for v in (1, "a", [2.5], {"k": None})))
    bad_seq = tmp_path / "bad.cborseq"
    bad_seq.write_bytes(cbor.encode(1) + bytes.fromhex("a2617401617401"))
    empty = tmp_path / "empty.cborseq"
    empty.write_bytes(b"")
    missing = tmp_path / "none"

    status, out, _ = _run(capsys, "cbor", "check", "--sequence", str(seq), str(empty))
    assert (status, out) == (0, f"{seq}: ok (4 items)\n{empty}: ok (0 items)\n")
    # a sequence is not one item: without --sequence the second item is trailing data
    status, out, _ = _run(capsys, "cbor", "check", str(seq))
    assert status == 1 and out.startswith(f"{seq}: trailing_data at offset 1: ")

    status, out, err = _run(capsys, "cbor", "check", "--json", "--sequence", str(seq),
                            str(bad_seq), str(missing))
    records = [json.loads(line) for line in out.splitlines()]
    assert status == 2 and err == f"canonkit cbor check: {missing}: No such file or directory\n"
    assert records[0] == {"path": str(seq), "status": "ok", "items": 4, "profile": "core"}
    assert records[1]["status"] == "invalid" and records[1]["code"] == "duplicate_map_key"
    assert records[1]["offset"] == 5 and records[1]["profile"] == "core"
    assert records[2] == {"path": str(missing), "status": "unreadable", "profile": "core",
                          "message": f"{missing}: No such file or directory"}

    status, out, _ = _run(capsys, "cbor", "check", "--json", str(good))
    assert status == 0 and json.loads(out) == {"path": str(good), "status": "ok",
                                               "profile": "core"}
    # check accepts a valid core map whose keys collide as Python values (1 and 1.0)
    colliding = tmp_path / "colliding.cbor"
    colliding.write_bytes(bytes.fromhex("a201f5f93c00f4"))
    assert _run(capsys, "cbor", "check", str(colliding))[0] == 0


def test_errors_leave_no_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.cbor"
    for text, profile, fragment in [
            ('{"a": NaN}', "core", "JSON has no NaN"), ('{"a": 1, "a": 2}', "core", "duplicate"),
            ('{"$bytes": "zz="}', "core", "$bytes"), ('{"$bytes": "0"}', "dcbor", "$bytes"),
            ('{"$nope": 1}', "core", "special form"), ("[", "core", "bad JSON"),
            ('[1e400, {"$float": "NaN"}]', "dag-cbor", "float_outside_profile"),
            ('{"a": 1, "a": 2}', "dag-cbor", "duplicate_map_key"),
            ('{"/": "nope"}', "dag-cbor", "invalid_link"),
            ('{"/": {"bytes": "AP8="}}', "dag-cbor", "reserved_namespace"),
            ('{"a": NaN}', "dag-cbor", "bad DAG-JSON input"), ("[", "dag-cbor", "truncated")]:
        source = tmp_path / "in.json"
        source.write_text(text)
        status, _, err = _run(capsys, "cbor", "encode", str(source), "-o", str(out),
                              "--profile", profile)
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
                {"$simple": 23}, {"$link": "nope"}, {"$bytes": 5}, {"$bytes": "AA=="},
                {"$bytes": "00ff"[:3]}, {"$bytes": "AB"}):
        with pytest.raises(JSONFormError):
            from_json(bad)


def test_json_form_bytes_are_unpadded_base64() -> None:
    assert to_json(b"\x00\xff") == {"$bytes": "AP8"}
    assert from_json({"$bytes": "AP8"}) == b"\x00\xff" and from_json({"$bytes": ""}) == b""


@pytest.mark.parametrize("profile", ["core", "dcbor", "dag-cbor"])
def test_json_form_is_reversible(profile: str) -> None:
    @settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
    @given(PROFILE_VALUES[profile]())
    def run(value: Any) -> None:
        data = cbor.encode(value, profile=profile)
        text = json.dumps(to_json(cbor.decode(data, profile=profile)), allow_nan=False)
        assert cbor.encode(from_json(json.loads(text)), profile=profile) == data

    run()
