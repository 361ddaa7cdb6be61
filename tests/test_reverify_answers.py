"""``canonkit reverify --answers FILE``: a run compared with a synthetic corpus's answer
file, Episode by Episode — 0 when all agree, 1 listing each disagreement (Episode id,
expected, got), 1 for an answer file that is not one, 2 for one that is missing."""
from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from conftest import REPO

from canonkit.cli import main
from canonkit.reverify import synthetic_corpus as synth

SEED_TABLE = REPO / "examples" / "seed-table"
SEED_ANSWERS = REPO / "examples" / "seed-table.answers.jsonl"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, object]]]:
    """Every outcome class in 14 short Episodes, and their answers."""
    d = tmp_path_factory.mktemp("answers")
    out, ans = d / "corpus.jsonl", d / "answers.jsonl"
    synth.write_corpus(14, out=str(out), answers=str(ans), mix="all-outcomes", seed=5,
                       median_segments=3)
    return out, [orjson.loads(line) for line in ans.read_bytes().splitlines()]


def _write(path: Path, answers: list[dict[str, object]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(a) + b"\n" for a in answers))
    return path


def _reverify(corpus: Path, answers: Path, *extra: str) -> list[str]:
    return ["reverify", str(corpus), "--answers", str(answers), "--jobs", "1",
            "--no-progress", *extra]


def test_a_run_that_agrees_exits_0_though_episodes_fail(capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    # 5 of the 62 Episodes do not reproduce, as their answers say: the run agrees
    assert main(_reverify(SEED_TABLE, SEED_ANSWERS)) == 0
    out = capsys.readouterr().out
    assert "disagrees" not in out
    assert out.rstrip().endswith(f"answers: all 62 Episodes agree with {SEED_ANSWERS}")


def test_each_disagreement_is_listed_and_exits_1(corpus: tuple[Path, list[dict[str, object]]],
                                                 tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out, answers = corpus
    changed = [dict(a) for a in answers]
    target = next(a for a in changed if a["outcome"] == "reproduced" and a.get("episode_id"))
    target["outcome"] = "not_reproducible"
    assert main(_reverify(out, _write(tmp_path / "a.jsonl", changed))) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if "disagree" in line]
    assert lines == [f"disagrees: {target['episode_id']}  expected not_reproducible  "
                     "got reproduced", f"answers: 1 disagreement(s) with {tmp_path / 'a.jsonl'}"]


def test_missing_and_extra_answers_disagree(corpus: tuple[Path, list[dict[str, object]]],
                                            tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out, answers = corpus
    assert main(_reverify(out, _write(tmp_path / "short.jsonl", answers[:-1]))) == 1
    listed = capsys.readouterr().out
    assert f"expected (no answer)  got {answers[-1]['outcome']}" in listed
    extra = [*answers, {"index": len(answers), "outcome": "reproduced", "flags": [],
                        "episode_id": "00000000-0000-4000-8000-00000000beef"}]
    assert main(_reverify(out, _write(tmp_path / "long.jsonl", extra))) == 1
    listed = capsys.readouterr().out
    assert ("disagrees: 00000000-0000-4000-8000-00000000beef  expected reproduced  "
            "got (no Episode)") in listed


def test_json_lists_disagreements_among_the_report_lines(
        corpus: tuple[Path, list[dict[str, object]]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out, answers = corpus
    changed = [dict(a) for a in answers]
    changed[0]["outcome"] = "reproduced_by_search" if changed[0]["outcome"] != \
        "reproduced_by_search" else "reproduced"
    status = main(_reverify(out, _write(tmp_path / "a.jsonl", changed), "--json"))
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert status == 1
    found = [r["disagreement"] for r in records if "disagreement" in r]
    assert [(d["index"], d["expected"]) for d in found] == [(0, changed[0]["outcome"])]
    assert found[0]["got"].startswith(str(answers[0]["outcome"]))
    verdict = records[-1]["answers"]
    assert verdict["compared"] == len(answers) and verdict["disagreements"] == 1
    assert verdict["agree"] is False


@pytest.mark.parametrize(("content", "said"), [
    (b'{"index": 0, "outcome": "reproduced"}\n{"index": 1,\n', "line 2"),
    (b"[1, 2]\n", "line 1: not an answer"),
    (b'{"index": 0, "outcome": "fine"}\n', "line 1: not an answer"),
    (b"\xff\xfe\n", "line 1"),
])
def test_a_malformed_answer_file_is_bad_data(corpus: tuple[Path, list[dict[str, object]]],
                                             tmp_path: Path, content: bytes, said: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = corpus
    path = tmp_path / "a.jsonl"
    path.write_bytes(content)
    assert main(_reverify(out, path)) == 1
    captured = capsys.readouterr()
    assert f"canonkit reverify: {path}: {said}" in captured.err, captured.err
    assert "Traceback" not in captured.err
    assert f"answers: {path} is not an answer file" in captured.out


def test_a_missing_answer_file_stops_before_any_work(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.jsonl"
    assert main(_reverify(SEED_TABLE, missing)) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"canonkit reverify: {missing}: ")
    assert captured.out == ""  # no table: nothing was re-verified


def test_the_answers_a_synth_run_writes_are_the_ones_reverify_checks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, ans = tmp_path / "c.cborseq", tmp_path / "a.jsonl"
    assert main(["synth", "--episodes", "9", "--mix", "all-outcomes", "--seed", "3",
                 "--median-segments", "3", "--out", str(out), "--answers", str(ans),
                 "--no-progress"]) == 0
    assert main(_reverify(out, ans)) == 0
    assert "answers: all 9 Episodes agree" in capsys.readouterr().out
