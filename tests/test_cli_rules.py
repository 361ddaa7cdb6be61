"""What every command line does alike (README "Exit status", ``canonkit.cli._parsing``):
options anywhere among the positionals, a usage error shown with the usage of the
command it belongs to and its values described in words, and one exit rule for bad
input — what is wrong with the command line is 2, what is wrong with the data read is 1."""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, VECTORS
from test_cli_policy import SEED_TABLE, TWITTER, _leaf_commands, _store

from canonkit.cli import build_parser, main

CARV1 = VECTORS / "car" / "carv1-basic.car"

LEAVES = sorted(_leaf_commands(build_parser()))
POR = VECTORS / "astp" / "proof-of-record-5.0.0.json"
AMDUAT = REPO / "conformance" / "amduat"
CORPUS_V1 = REPO / "conformance" / "v1"


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _parsers(child)
    return found


# --- parsing ---------------------------------------------------------------------------

def test_every_command_parses_with_the_intermixing_parser() -> None:
    from canonkit.cli import _parsing

    assert {type(p) for p in _parsers(build_parser())} == {_parsing.CommandParser}


@pytest.mark.parametrize("words", LEAVES, ids=" ".join)
def test_a_usage_error_shows_the_commands_own_usage(words: tuple[str, ...],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main([*words, "--no-such-option"])
    err = capsys.readouterr().err
    prog = "canonkit " + " ".join(words)
    assert info.value.code == 2
    assert err.startswith(f"usage: {prog} "), err
    assert f"\n{prog}: error: " in err, err


def test_an_unknown_option_after_the_positionals_is_named_by_its_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "f"
    data.write_bytes(b"\x00")
    with pytest.raises(SystemExit) as info:
        main(["cbor", "check", "--wat", str(data)])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith("usage: canonkit cbor check ")
    assert "canonkit cbor check: error: unrecognized arguments: --wat" in err


def test_every_option_value_type_says_what_it_expected() -> None:
    from canonkit.cli import _parsing

    allowed = {None, str, Path, *_parsing.VALUE_TYPES}
    odd = [(p.prog, a.dest, a.type) for p in _parsers(build_parser()) for a in p._actions
           if a.type not in allowed]
    assert odd == []


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("positive", "two", "expected a whole number of at least 1, got 'two'"),
    ("positive", "0", "expected a whole number of at least 1, got '0'"),
    ("non_negative", "-1", "expected a whole number of at least 0, got '-1'"),
    ("integer", "1.5", "expected a whole number, got '1.5'"),
    ("fraction", "nan", "expected a number from 0 to 1, got 'nan'"),
    ("fraction", "1.01", "expected a number from 0 to 1, got '1.01'"),
    ("seconds", "-3", "expected a number of seconds (at least 0), got '-3'"),
])
def test_value_types_refuse_in_words(name: str, text: str, expected: str) -> None:
    from canonkit.cli import _parsing

    value_type: Callable[[str], object] = getattr(_parsing, name)
    with pytest.raises(argparse.ArgumentTypeError) as info:
        value_type(text)
    assert str(info.value) == expected
    assert value_type("1") == 1


@pytest.mark.parametrize("argv", [
    ["reverify", "--jobs", "two", str(SEED_TABLE)],
    ["store", "fsck", "ST", "--jobs", "two"],
    ["synth", "--episodes", "many", "--out", "c.jsonl"],
    ["cbor", "decode", "--indent", "wide"],
    ["astp", "prove", "e.json", "--leaf", "first"],
    ["conformance", "record", "R", "--version", "one"],
], ids=lambda argv: " ".join(argv[:2]))
def test_a_malformed_value_names_the_option_not_the_parser(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "expected a whole number" in err
    assert "invalid" not in err and "_positive" not in err and "int value" not in err


# --- options anywhere: every --json a usage line shows ---------------------------------

def _episode_store(tmp: Path) -> tuple[str, str]:
    store = _store(tmp)
    data = tmp / "blob"
    data.write_bytes(b"hello tovio\n")
    return str(store), str(data)


def _sav2(tmp: Path) -> str:
    from strategies_astp import sav2_episode

    path = tmp / "e.json"
    path.write_text(json.dumps(sav2_episode()))
    return str(path)


def _proof(tmp: Path) -> str:
    from canonkit import astp

    proof = astp.inclusion_proof_v1([astp.sha3_256(b"a"), astp.sha3_256(b"b")], 1)
    path = tmp / "p.json"
    path.write_text(json.dumps({"leaf_hash": proof.leaf_hash, "merkle_path": proof.merkle_path,
                                "path_directions": proof.path_directions,
                                "spine_root": proof.spine_root}))
    return str(path)


def _layer3_node(tmp: Path) -> str:
    import random

    from canonkit.astp.layer3.synthetic_exports import make_export

    doc, _ = make_export(random.Random(5))
    path = tmp / "node.json"
    path.write_text(json.dumps(doc["nodes"][0]))
    return str(path)


def _put_argv(tmp: Path) -> list[str]:
    store, data = _episode_store(tmp)
    return ["store", "put", store, "--json", data]


# each builds an argv with --json between or after the positionals, and the status it gives
JSON_CASES: dict[tuple[str, ...], Callable[[Path], tuple[list[str], int]]] = {
    ("cbor", "check"): lambda t: (["cbor", "check", str(TWITTER), "--json", str(TWITTER),
                                   "--profile", "dag-cbor"], 0),
    ("fps", "run"): lambda t: (["fps", "run", "reverse", "--json", "--input", "01",
                                "--level", "bit"], 0),
    ("manifest", "verify"): lambda t: (["manifest", "verify", str(AMDUAT / "fps.json"),
                                        "--json", str(AMDUAT / "fixtures.json")], 0),
    ("conformance", "check"): lambda t: (["conformance", "check", str(CORPUS_V1), "--json"],
                                         0),
    ("reverify",): lambda t: (["reverify", str(SEED_TABLE / "0000000.json"), "--json",
                               str(SEED_TABLE / "0000001.json"), "--jobs", "1",
                               "--no-progress"], -1),
    ("store", "put"): lambda t: (_put_argv(t), 0),
    ("store", "ref"): lambda t: (["store", "ref", str(_store(t)), "--json"], 0),
    ("store", "repack"): lambda t: (["store", "repack", str(_store(t)), "--json",
                                     "--no-progress"], 0),
    ("store", "gc"): lambda t: (["store", "gc", str(_store(t)), "--json"], 0),
    ("store", "fsck"): lambda t: (["store", "fsck", str(_store(t)), "--json",
                                   "--no-progress"], 0),
    ("store", "unlock"): lambda t: (["store", "unlock", str(_store(t)), "--json"], 0),
    ("store", "import"): lambda t: (["store", "import", str(_store(t)), "--json",
                                     str(CORPUS_V1)], 0),
    ("astp", "reproduce"): lambda t: (["astp", "reproduce", str(POR), "--json"], 0),
    ("astp", "prove"): lambda t: (["astp", "prove", _sav2(t), "--json", "--leaf", "1"], 0),
    ("astp", "verify-proof"): lambda t: (["astp", "verify-proof", "--json", _proof(t)], 0),
    ("astp", "layer3", "verify"): lambda t: (["astp", "layer3", "verify", _sav2(t),
                                              "--json"], -1),
    ("astp", "hash", "form-b"): lambda t: (["astp", "hash", "form-b", "--json",
                                            _layer3_node(t)], 0),
    ("astp", "hash", "leaf"): lambda t: (["astp", "hash", "leaf", "--json", "--node-id",
                                          "00000000-0000-4000-8000-000000000000",
                                          "--schema-version", "1.0.0", "--sequence-index",
                                          "0", "--content-hash", "00" * 32], 0),
    ("astp", "hash", "spine"): lambda t: (["astp", "hash", "spine", "00" * 32, "--json",
                                           "11" * 32, "--sav", "2"], 0),
    ("car", "verify"): lambda t: (["car", "verify", "--json", str(CARV1)], 0),
    ("car", "ls"): lambda t: (["car", "ls", "--json", str(CARV1)], 0),
    ("car", "extract"): lambda t: (["car", "extract", str(CARV1), "--json",
                                    "-o", str(t / "blocks")], 0),
}


def test_every_json_option_has_a_case() -> None:
    with_json = {words for words in LEAVES
                 if any("--json" in a.option_strings for p in _parsers(build_parser())
                        if p.prog == "canonkit " + " ".join(words) for a in p._actions)}
    assert with_json == set(JSON_CASES)


@pytest.mark.parametrize("words", sorted(JSON_CASES), ids=" ".join)
def test_json_works_wherever_it_stands(words: tuple[str, ...], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    argv, expected = JSON_CASES[words](tmp_path)
    status = main(argv)
    out, err = capsys.readouterr()
    assert "usage:" not in err and "Traceback" not in err, err
    assert status in ((0, 1) if expected == -1 else (expected,)), err
    lines = [line for line in out.splitlines() if line.strip()]
    assert lines, err
    if out.lstrip().startswith("{\n") or out.lstrip().startswith("[\n"):
        json.loads(out)  # one indented document
    else:
        for line in lines:
            json.loads(line)


def test_store_put_takes_json_after_the_store(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    store, data = _episode_store(tmp_path)
    assert main(["store", "put", store, "--json", data]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["file"] == data and record["bytes"] == len(b"hello tovio\n")


# --- one exit rule for bad input --------------------------------------------------------

def _bad_json(tmp: Path) -> str:
    path = tmp / "bad.json"
    path.write_text('{"a": 1,')
    return str(path)


def _bad_cbor(tmp: Path) -> str:
    path = tmp / "bad.cbor"
    path.write_bytes(b"\x18\x01")  # 1 in two bytes: not the shortest head
    return str(path)


def _bad_car(tmp: Path) -> str:
    path = tmp / "bad.car"
    path.write_bytes(CARV1.read_bytes()[:-7])  # the last section cut short
    return str(path)


def _bad_corpus_dir(tmp: Path) -> str:
    (tmp / "corpus").mkdir()
    _bad_json(tmp / "corpus")
    return str(tmp / "corpus")


def _bad_vectors(tmp: Path) -> str:
    (tmp / "v").mkdir()
    (tmp / "v" / "vectors.json").write_text("[1,")
    return str(tmp / "v")


def _bad_digests(tmp: Path) -> str:
    path = tmp / "digests.txt"
    path.write_text("00" * 32 + "\nnot a digest\n")
    return "@" + str(path)


# command -> an invocation whose input data is wrong: status 1 (ran and found it wrong)
BAD_DATA: dict[tuple[str, ...], Callable[[Path], list[str]]] = {
    ("cbor", "encode"): lambda t: ["cbor", "encode", _bad_json(t)],
    ("cbor", "decode"): lambda t: ["cbor", "decode", _bad_cbor(t)],
    ("cbor", "check"): lambda t: ["cbor", "check", _bad_cbor(t)],
    ("manifest", "verify"): lambda t: ["manifest", "verify", _bad_json(t)],
    ("conformance", "check"): lambda t: ["conformance", "check", _bad_vectors(t)],
    ("reverify",): lambda t: ["reverify", _bad_corpus_dir(t), "--jobs", "1", "--no-progress"],
    ("store", "fsck"): lambda t: ["store", "fsck", _corrupt_store(t), "--no-progress"],
    ("store", "import"): lambda t: ["store", "import", str(_store(t)), _bad_vectors(t)],
    ("astp", "reproduce"): lambda t: ["astp", "reproduce", _bad_json(t)],
    ("astp", "prove"): lambda t: ["astp", "prove", _bad_json(t), "--leaf", "0"],
    ("astp", "verify-proof"): lambda t: ["astp", "verify-proof", _bad_json(t)],
    ("astp", "layer3", "verify"): lambda t: ["astp", "layer3", "verify", _bad_json(t)],
    ("car", "verify"): lambda t: ["car", "verify", _bad_car(t)],
    ("car", "ls"): lambda t: ["car", "ls", _bad_car(t)],
    ("car", "extract"): lambda t: ["car", "extract", _bad_car(t), "-o", str(t / "blocks")],
    ("astp", "hash", "form-b"): lambda t: ["astp", "hash", "form-b", _bad_json(t)],
    ("astp", "hash", "leaf"): lambda t: ["astp", "hash", "leaf", _bad_json(t)],
    ("astp", "hash", "spine"): lambda t: ["astp", "hash", "spine", "--sav", "2", _bad_digests(t)],
}
# commands that read no data canonkit could find malformed (raw bytes, or nothing)
READS_NO_DATA = {("store", "init"), ("store", "put"), ("store", "get"), ("store", "ref"),
                 ("store", "repack"), ("store", "gc"), ("store", "unlock"), ("synth",),
                 ("manifest", "write"), ("conformance", "record"), ("fps", "run")}


def _corrupt_store(tmp: Path) -> str:
    from canonkit.store import Store

    store = Store.init(tmp / "corrupt", durable=False)
    digest = store.put(b"some bytes that will rot").partition(":")[2]
    loose = tmp / "corrupt" / "objects" / digest[:2] / digest[2:]
    loose.chmod(0o644)
    loose.write_bytes(b"other bytes")
    return str(tmp / "corrupt")


# command -> an invocation whose command line is wrong in a value: status 2
BAD_ARGUMENTS: dict[tuple[str, ...], Callable[[Path], list[str]]] = {
    ("fps", "run"): lambda t: ["fps", "run", "reverse", "--input", "0g", "--level", "bit"],
    ("astp", "hash", "spine"): lambda t: ["astp", "hash", "spine", "--sav", "2", "nothex"],
    ("astp", "prove"): lambda t: ["astp", "prove", _sav2(t), "--leaf", "99"],
    ("store", "get"): lambda t: ["store", "get", str(_store(t)), "not-an-address"],
}


def test_every_command_is_placed_by_the_bad_data_rule() -> None:
    assert set(BAD_DATA) | READS_NO_DATA == set(LEAVES)
    assert not set(BAD_DATA) & READS_NO_DATA


@pytest.mark.parametrize("words", sorted(BAD_DATA), ids=" ".join)
def test_bad_input_data_exits_1(words: tuple[str, ...], tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    status = main(BAD_DATA[words](tmp_path))
    out, err = capsys.readouterr()
    assert status == 1, (out, err)
    assert "Traceback" not in err and "usage:" not in err


@pytest.mark.parametrize("words", sorted(BAD_ARGUMENTS), ids=" ".join)
def test_a_malformed_argument_exits_2(words: tuple[str, ...], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    status = main(BAD_ARGUMENTS[words](tmp_path))
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err and err.startswith(("canonkit ", "ERR_")), err
