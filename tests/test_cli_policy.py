"""The CLI failure policy (``canonkit.cli._common``): one exit status per condition in
every command, I/O failures reported with their path, and a broken pipe treated as
``| head`` only when it is stdout's reader that went away."""
from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from canonkit.cli import _common, build_parser, main

REPO = Path(__file__).parent.parent
SEED_TABLE = REPO / "examples" / "seed-table"
TWITTER = REPO / "bench" / "data" / "twitter.json.dagcbor"


def _leaf_commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
                   ) -> Iterator[tuple[str, ...]]:
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        yield words
        return
    for group in groups:
        for name, child in group.choices.items():
            yield from _leaf_commands(child, (*words, name))


# command -> invocations that name a missing input, or an output in a missing directory;
# each returns (argv, the path the message must name). Every command must be listed.
Case = Callable[[Path], tuple[list[str], Path]]


def _valid_json(tmp: Path) -> Path:
    path = tmp / "in.json"
    path.write_text('{"a": 1}')
    return path


def _a_file(tmp: Path) -> Path:
    path = tmp / "a-file"
    path.write_bytes(b"")
    return path


_EMPTY = "blake3:af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"


def _store(tmp: Path) -> Path:
    from canonkit.store import Store

    store = Store.init(tmp / "store", durable=False)
    store.put(b"")  # _EMPTY
    return tmp / "store"


def _car(tmp: Path) -> Path:
    from canonkit import car
    from canonkit.cbor import Link

    block = (Link.for_block(b"block", "raw"), b"block")
    path = tmp / "a.car"
    path.write_bytes(car.encode([block[0]], [block]))
    return path


CASES: dict[tuple[str, ...], list[Case]] = {
    ("cbor", "encode"): [
        lambda t: (["cbor", "encode", str(t / "missing.json")], t / "missing.json"),
        lambda t: (["cbor", "encode", str(_valid_json(t)), "-o", str(t / "no" / "o.cbor")],
                   t / "no"),
    ],
    ("cbor", "decode"): [
        lambda t: (["cbor", "decode", str(t / "missing.cbor")], t / "missing.cbor"),
        lambda t: (["cbor", "decode", "--diag", str(t / "missing.cbor")], t / "missing.cbor"),
    ],
    ("cbor", "check"): [
        lambda t: (["cbor", "check", str(t / "missing.cbor")], t / "missing.cbor"),
        lambda t: (["cbor", "check", str(TWITTER), str(t / "missing.cbor"),
                    "--profile", "dag-cbor"], t / "missing.cbor"),
    ],
    ("fps", "run"): [
        lambda t: (["fps", "run", "reverse", "--input", f"@{t / 'missing'}", "--level", "bit"],
                   t / "missing"),
        lambda t: (["fps", "run", "concat", "--inputs", "01", "02", "-o", str(t / "no" / "o")],
                   t / "no"),
    ],
    ("manifest", "verify"): [
        lambda t: (["manifest", "verify", str(t / "missing.json")], t / "missing.json"),
        lambda t: (["manifest", "verify", "--json", str(t / "missing.json")],
                   t / "missing.json"),
    ],
    ("manifest", "write"): [
        lambda t: (["manifest", "write", str(t / "missing"), "-o", str(t / "m.json")],
                   t / "missing"),
    ],
    ("conformance", "check"): [
        lambda t: (["conformance", "check", str(t / "missing")], t / "missing"),
    ],
    ("conformance", "record"): [
        lambda t: (["conformance", "record", str(_a_file(t) / "corpus"), "--version", "1"],
                   t / "a-file"),
    ],
    ("reverify",): [
        lambda t: (["reverify", str(t / "missing.jsonl")], t / "missing.jsonl"),
        lambda t: (["reverify", str(SEED_TABLE), "--jobs", "1", "--no-progress",
                    "--report", str(t / "no" / "r.jsonl")], t / "no"),
    ],
    ("synth",): [
        lambda t: (["synth", "--episodes", "1", "--out", str(t / "no" / "c.jsonl")], t / "no"),
        lambda t: (["synth", "--episodes", "1", "--out", str(t / "c.jsonl"),
                    "--answers", str(t / "no" / "a.jsonl")], t / "no"),
    ],
    ("astp", "reproduce"): [
        lambda t: (["astp", "reproduce", str(t / "missing.json")], t / "missing.json"),
    ],
    ("astp", "prove"): [
        lambda t: (["astp", "prove", str(t / "missing.json"), "--leaf", "0"], t / "missing.json"),
    ],
    ("astp", "verify-proof"): [
        lambda t: (["astp", "verify-proof", str(t / "missing.json")], t / "missing.json"),
    ],
    ("astp", "layer3", "verify"): [
        lambda t: (["astp", "layer3", "verify", str(t / "missing.json")], t / "missing.json"),
        lambda t: (["astp", "layer3", "verify", str(_valid_json(t)), "--episode",
                    str(t / "missing.json")], t / "missing.json"),
    ],
    ("astp", "hash", "form-b"): [
        lambda t: (["astp", "hash", "form-b", str(t / "missing.json")], t / "missing.json"),
    ],
    ("astp", "hash", "leaf"): [
        lambda t: (["astp", "hash", "leaf", str(t / "missing.json")], t / "missing.json"),
    ],
    ("astp", "hash", "spine"): [
        lambda t: (["astp", "hash", "spine", "--sav", "2", f"@{t / 'missing'}"], t / "missing"),
    ],
    ("store", "init"): [
        lambda t: (["store", "init", str(_a_file(t) / "s")], t / "a-file"),
    ],
    ("store", "put"): [
        lambda t: (["store", "put", str(t / "missing"), str(_a_file(t))], t / "missing"),
        lambda t: (["store", "put", str(_store(t)), str(t / "missing")], t / "missing"),
    ],
    ("store", "get"): [
        lambda t: (["store", "get", str(t / "missing"), "blake3:" + "00" * 32], t / "missing"),
        lambda t: (["store", "get", str(_store(t)), _EMPTY, "-o", str(t / "no" / "o")],
                   t / "no"),
    ],
    ("store", "ref"): [lambda t: (["store", "ref", str(t / "missing")], t / "missing")],
    ("store", "repack"): [lambda t: (["store", "repack", str(t / "missing")], t / "missing")],
    ("store", "gc"): [lambda t: (["store", "gc", str(t / "missing")], t / "missing")],
    ("store", "fsck"): [lambda t: (["store", "fsck", str(t / "missing")], t / "missing")],
    ("store", "unlock"): [lambda t: (["store", "unlock", str(t / "missing")], t / "missing")],
    ("store", "import"): [
        lambda t: (["store", "import", str(t / "missing"), str(t)], t / "missing"),
        lambda t: (["store", "import", str(_store(t)), str(t / "missing")], t / "missing"),
    ],
    ("car", "verify"): [
        lambda t: (["car", "verify", str(t / "missing.car")], t / "missing.car"),
        lambda t: (["car", "verify", str(_car(t)), str(t / "missing.car")], t / "missing.car"),
    ],
    ("car", "ls"): [lambda t: (["car", "ls", str(t / "missing.car")], t / "missing.car")],
    ("car", "extract"): [
        lambda t: (["car", "extract", str(t / "missing.car"), "-o", str(t / "out")],
                   t / "missing.car"),
        lambda t: (["car", "extract", str(_car(t)), "-o", str(t / "no" / "out")], t / "no"),
    ],
}
# sub-commands routed outside argparse's sub-parsers are listed here by hand
HIDDEN: set[tuple[str, ...]] = set()


def test_every_command_has_a_missing_path_case() -> None:
    leaves = set(_leaf_commands(build_parser()))
    missing = leaves - set(CASES)
    assert not missing, f"add missing-input cases for {sorted(missing)} to CASES"
    assert set(CASES) - leaves <= HIDDEN


@pytest.mark.parametrize("case", [(c, i) for c, cases in CASES.items()
                                  for i in range(len(cases))],
                         ids=lambda c: " ".join(c[0]) + f" #{c[1]}")
def test_missing_path_exits_2_naming_it(case: tuple[tuple[str, ...], int], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    argv, path = CASES[case[0]][case[1]](tmp_path)
    status = main(argv)
    err = capsys.readouterr().err
    assert status == _common.EXIT_COULD_NOT_RUN, err
    assert str(path) in err
    assert "Traceback" not in err
    assert err.startswith(f"canonkit {' '.join(case[0])}: "), err


def test_one_exit_table() -> None:
    from canonkit.reverify import outcomes

    assert (outcomes.EXIT_OK, outcomes.EXIT_FAILURES, outcomes.EXIT_USAGE) == (
        _common.EXIT_OK, _common.EXIT_FAILURES, _common.EXIT_COULD_NOT_RUN)
    assert _common.worst([0, 2, 1]) == 2 and _common.worst([0, 1]) == 1
    assert _common.worst([]) == 0
    assert "128+n" in build_parser().format_help()


_BROKEN_PIPE_INSIDE = """\
import sys
import canonkit.reverify

def resource_tracker_fails(*args, **kwargs):
    raise BrokenPipeError(32, "Broken pipe")

canonkit.reverify.run = resource_tracker_fails
from canonkit.cli import main
sys.exit(main(["reverify", sys.argv[1]]))
"""


def test_broken_pipe_elsewhere_is_a_failure() -> None:
    """D14: a BrokenPipeError that is not stdout's (here: the process pool's resource
    tracker) must not pass for ``| head`` and exit 0 with no output."""
    proc = subprocess.run([sys.executable, "-c", _BROKEN_PIPE_INSIDE, str(SEED_TABLE)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr == "canonkit reverify: Broken pipe\n"


def test_stdout_closed_by_its_reader_is_quiet(tmp_path: Path) -> None:
    """``canonkit cbor check MANY | head -c 16``: no traceback, status 128+SIGPIPE. (Many
    small writes: one large write to a pipe that closes midway is cut short by CPython
    without an error, so it would not exercise the path.)"""
    item = tmp_path / ("x" * 60 + ".cbor")
    item.write_bytes(b"\x00")
    argv = [sys.executable, "-m", "canonkit", "cbor", "check", *[str(item)] * 4000]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert len(proc.stdout.read(16)) == 16
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == _common.EXIT_STDOUT_CLOSED == 141
    assert err == b""


def test_stdout_reader_gone_only_for_a_closed_pipe(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    import os

    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as stdout:
        monkeypatch.setattr(sys, "__stdout__", stdout)
        assert not _common.stdout_reader_gone()  # reader still there
        os.close(read_end)
        assert _common.stdout_reader_gone()
    with open(tmp_path / "out.txt", "w") as regular:
        monkeypatch.setattr(sys, "__stdout__", regular)
        assert not _common.stdout_reader_gone()  # a file cannot lose its reader


def test_unexpected_exception_is_not_status_1(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import canonkit.reverify

    def bug(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(canonkit.reverify, "run", bug)
    assert main(["reverify", str(SEED_TABLE)]) == 2
    err = capsys.readouterr().err
    assert "ZeroDivisionError: a bug" in err and "internal error" in err


def test_missing_optional_package_names_its_extra(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if not installed
    out = tmp_path / "c.jsonl.zst"
    assert main(["synth", "--episodes", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("canonkit synth") and err.endswith(
        f": writing {out} needs the optional package 'zstandard': "
        "pip install 'canonkit[zstd]'\n")
    assert not out.exists() and list(tmp_path.iterdir()) == []
