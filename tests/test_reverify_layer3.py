"""Layer 3 inside bulk re-verification: the ``layer3`` component of a report line, its
findings, the summary row, ``--require-layer3``, synthetic corpora with Layer 3 answers,
and the same lines from every path that reads a document."""
from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

import canonkit
import canonkit.reverify as reverify
from canonkit.astp.layer3 import synthetic_exports as l3synth
from canonkit.cli import main as cli_main
from canonkit.reverify import synthetic_corpus as synth
from canonkit.reverify import worker

FINDING_KEYS = ["vector", "node_id", "field", "detail"]


def _episodes(n: int, seed: int, mix: str = "reproduced") -> list[dict[str, Any]]:
    """Readable canonkit-episode/1 documents (short spines, Segments with node_id)."""
    eps = [e.doc for e in synth.generate(n, mix=mix, seed=seed, median_segments=6,
                                         por_fraction=0.0)]
    return [d for d in eps if d is not None]


def _export(episode: dict[str, Any], violation: str | None = None, seed: int = 1
            ) -> tuple[dict[str, Any], list[str]]:
    export, vectors = l3synth.make_export(random.Random(seed), violation=violation,
                                          episode=episode)
    return orjson.loads(orjson.dumps(export)), vectors


def _lines(path: Path, *, jobs: int = 1, require: bool = False, **kw: Any
           ) -> list[dict[str, Any]]:
    return [r.record for r in reverify.run([path], jobs=jobs, require_layer3=require, **kw)]


def _write_jsonl(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in docs))
    return path


def _without_layer3(record: dict[str, Any]) -> dict[str, Any]:
    out = dict(record, components={k: v for k, v in record["components"].items()
                                   if k != "layer3"})
    out.pop("layer3_findings", None)
    return out


# --- the component ---------------------------------------------------------------------

def test_layer3_ok(tmp_path: Path) -> None:
    doc = _episodes(1, 3)[0]
    doc["layer3"], vectors = _export(doc)
    assert vectors == []
    (record,) = _lines(_write_jsonl(tmp_path / "c.jsonl", [doc]))
    assert record["outcome"] == "reproduced"
    assert record["components"]["layer3"] == "ok"
    assert list(record["components"])[-1] == "layer3"
    assert "layer3_findings" not in record


@pytest.mark.parametrize("violation", l3synth.VIOLATIONS)
def test_layer3_failed_names_the_vector(tmp_path: Path, violation: str) -> None:
    doc = _episodes(1, 5)[0]
    doc["layer3"], vectors = _export(doc, violation, seed=11)
    assert vectors == [violation]
    (record,) = _lines(_write_jsonl(tmp_path / "c.jsonl", [doc]))
    assert record["outcome"] == "reproduced"  # L3-002: the outcome is the Spine's alone
    assert record["components"]["layer3"] == "failed"
    findings = record["layer3_findings"]
    assert findings and all(list(f) == FINDING_KEYS for f in findings)
    assert violation in {f["vector"] for f in findings}
    assert list(record)[-1] == "layer3_findings"


def test_layer3_absent_is_written_only_when_required(tmp_path: Path) -> None:
    docs = _episodes(2, 7)
    corpus = _write_jsonl(tmp_path / "c.jsonl", docs)
    plain = _lines(corpus)
    assert all("layer3" not in r["components"] for r in plain)
    required = _lines(corpus, require=True)
    assert [r["components"]["layer3"] for r in required] == ["absent", "absent"]
    assert [_without_layer3(r) for r in required] == plain
    # a null member is no Layer 3
    docs[0]["layer3"] = None
    corpus.unlink()
    assert _lines(_write_jsonl(corpus, docs)) == plain


def test_invalid_records_carry_no_layer3(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b'{"format":"canonkit-episode/1","episode_id":"x","layer3":{}}\n'
                       b"not json\n")
    records = _lines(corpus, require=True)
    assert [r["outcome"] for r in records] == ["invalid_record"] * 2
    assert all(r["components"] == {} and "layer3_findings" not in r for r in records)


# --- an export by path -----------------------------------------------------------------

def test_export_by_path_beside_the_episode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    docs = _episodes(2, 9)
    corpus = tmp_path / "corpus"  # a directory corpus reads every .json under it: the
    lines = tmp_path / "lines"      # exports below it carry another suffix
    for directory in (corpus / "l3", lines / "l3"):
        directory.mkdir(parents=True)
    for i, doc in enumerate(docs):
        export, _ = _export(doc, None if i == 0 else "EX-003", seed=i)
        for directory in (corpus / "l3", lines / "l3"):
            (directory / f"{i}.export").write_bytes(orjson.dumps(export))
        doc["layer3"] = f"l3/{i}.export"
        (corpus / f"{i}.json").write_bytes(orjson.dumps(doc))
    _write_jsonl(lines / "all.jsonl", docs)
    monkeypatch.chdir(lines / "l3")  # the names resolve beside the Episode's file, not here
    for path in (Path("../../corpus"), Path("../all.jsonl")):
        for jobs in (1, 2):
            records = _lines(path, jobs=jobs)
            assert [r["components"]["layer3"] for r in records] == ["ok", "failed"], path
            assert "EX-003" in {f["vector"] for f in records[1]["layer3_findings"]}


def test_export_paths_leaving_the_episodes_directory_are_refused(tmp_path: Path) -> None:
    doc = _episodes(1, 9)[0]
    export, _ = _export(doc)
    outside = tmp_path / "outside.json"
    outside.write_bytes(orjson.dumps(export))  # a valid export: only the path is wrong
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "sub" / "ok.json").write_bytes(orjson.dumps(export))
    (corpus / "link.json").symlink_to(outside)
    (corpus / "sub" / "up").symlink_to(tmp_path)
    names = ["../outside.json", str(outside), "/etc/passwd", "link.json",
             "sub/../../outside.json", "sub/up/outside.json", "bad\x00name.json"]
    docs = [dict(doc, layer3=name) for name in [*names, "sub/ok.json", "sub/../sub/ok.json"]]
    records = _lines(_write_jsonl(corpus / "c.jsonl", docs))
    states = [r["components"]["layer3"] for r in records]
    assert states == ["failed"] * len(names) + ["ok", "ok"]
    for name, record in zip(names, records):
        (finding,) = record["layer3_findings"]
        assert finding["vector"] == "L3-003" and finding["field"] == "layer3"
        assert finding["detail"].startswith(f"refused the Layer 3 export path {name!r}")
        assert "path_outside" in finding["detail"]


@pytest.mark.parametrize("name,content", [
    ("missing.json", None),
    ("a-directory", "dir"),
    ("not-json.json", b"{\"format\": "),
    ("duplicate-key.json", b'{"format":"canonkit-layer3/1","format":"x"}'),
    ("nan.json", b'{"format": NaN}'),
    ("", None),
])
def test_unreadable_export_is_a_layer3_failure(tmp_path: Path, name: str, content: Any
                                               ) -> None:
    doc = _episodes(1, 13)[0]
    if content == "dir":
        (tmp_path / name).mkdir()
    elif content is not None:
        (tmp_path / name).write_bytes(content)
    doc["layer3"] = name
    (record,) = _lines(_write_jsonl(tmp_path / "c.jsonl", [doc]))
    assert record["outcome"] == "reproduced"
    assert record["components"]["layer3"] == "failed"
    (finding,) = record["layer3_findings"]
    assert finding["vector"] == "L3-003" and finding["field"] == "layer3"
    assert repr(name) in finding["detail"] or "names no file" in finding["detail"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_export_path_naming_a_fifo_never_blocks(tmp_path: Path) -> None:
    doc = _episodes(1, 13)[0]
    os.mkfifo(tmp_path / "pipe")
    doc["layer3"] = "pipe"
    (record,) = _lines(_write_jsonl(tmp_path / "c.jsonl", [doc]))
    assert record["components"]["layer3"] == "failed"
    assert "not a regular file" in record["layer3_findings"][0]["detail"]


@pytest.mark.parametrize("member", [
    17, [], {"format": "canonkit-layer3/9", "nodes": [], "edges": [], "audit": []},
    {"format": "canonkit-layer3/1", "nodes": {}, "edges": [], "audit": []},
    {"format": "canonkit-layer3/1", "nodes": [7, {"node_type": 1}], "edges": [[]],
     "audit": [None]},
])
def test_malformed_export_is_a_layer3_failure(tmp_path: Path, member: Any) -> None:
    doc = _episodes(1, 15)[0]
    doc["layer3"] = member
    (record,) = _lines(_write_jsonl(tmp_path / "c.jsonl", [doc]))
    assert record["outcome"] == "reproduced"
    assert record["components"]["layer3"] == "failed"
    assert record["layer3_findings"]


# --- the outcome never depends on Layer 3 ----------------------------------------------

def test_outcome_is_unchanged_by_layer3(tmp_path: Path) -> None:
    """L3-002: the same Episodes, with and without failing exports, have the same lines
    but for the Layer 3 component."""
    docs = _episodes(16, 17, mix="all-outcomes")
    before = _lines(_write_jsonl(tmp_path / "a.jsonl", docs))
    for i, doc in enumerate(docs):
        doc["layer3"], _ = _export(doc, l3synth.VIOLATIONS[i % len(l3synth.VIOLATIONS)]
                                   if "segments" in doc else "CIA-003", seed=i)
    after = _lines(_write_jsonl(tmp_path / "b.jsonl", docs))
    assert {r["outcome"] for r in before} - {"invalid_record"}, "a mix of outcomes"
    for b, a in zip(before, after, strict=True):
        if b["outcome"] == "invalid_record":
            continue
        assert a["components"]["layer3"] == "failed"
        assert _without_layer3(dict(a, source=b["source"])) == b


# --- exit status and the summary row ---------------------------------------------------

def test_exit_status_and_require_layer3(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    docs = _episodes(3, 19)
    none = _write_jsonl(tmp_path / "none.jsonl", docs)
    good = [dict(d, layer3=_export(d, seed=i)[0]) for i, d in enumerate(docs)]
    ok = _write_jsonl(tmp_path / "ok.jsonl", good)
    bad = _write_jsonl(tmp_path / "bad.jsonl",
                       good[:2] + [dict(docs[2], layer3=_export(docs[2], "L3-007")[0])])
    part = _write_jsonl(tmp_path / "part.jsonl", good[:2] + docs[2:])

    def status(path: Path, *flags: str) -> int:
        code = cli_main(["reverify", str(path), "--jobs", "1", "--no-progress", *flags])
        capsys.readouterr()
        return code

    assert status(none) == 0 and status(ok) == 0 and status(bad) == 0 and status(part) == 0
    assert status(ok, "--require-layer3") == 0
    assert status(bad, "--require-layer3") == 1   # a failed Layer 3
    assert status(part, "--require-layer3") == 1  # an Episode without Layer 3
    assert status(none, "--require-layer3") == 1


def test_summary_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = _episodes(4, 21)
    docs[0]["layer3"] = _export(docs[0])[0]
    docs[1]["layer3"] = _export(docs[1], "WF-004")[0]
    docs[2]["layer3"] = _export(docs[2], "SK-001")[0]
    corpus = _write_jsonl(tmp_path / "c.jsonl", docs)
    run = reverify.run([corpus], jobs=1)
    summary = run.summary
    assert summary.counts["reproduced"] == 4  # the outcome rows are the Spine's alone
    assert summary.to_json()["layer3"] == {"ok": 1, "failed": 2, "absent": 0,
                                           "required": False}
    assert list(summary.to_json())[:2] == ["summary", "layer3"]
    assert "Layer 3: ok 1, failed 2, absent 0" in summary.table()
    required = reverify.run([corpus], jobs=1, require_layer3=True).summary
    assert required.to_json()["layer3"] == {"ok": 1, "failed": 2, "absent": 1,
                                            "required": True}
    assert "Layer 3 (required): ok 1, failed 2, absent 1" in required.table()
    assert required.exit_status == 1
    assert cli_main(["reverify", str(corpus), "--jobs", "1", "--no-progress", "--json"]) == 0
    final = orjson.loads(capsys.readouterr().out.splitlines()[-1])
    assert final["layer3"]["failed"] == 2
    # a corpus without Layer 3 has no row at all
    plain = reverify.run([_write_jsonl(tmp_path / "p.jsonl", _episodes(2, 23))], jobs=1)
    assert "layer3" not in plain.summary.to_json()
    assert "Layer 3" not in plain.summary.table()


# --- synthetic corpora with Layer 3 answers --------------------------------------------

def check_layer3(records: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Each line's Layer 3 result is its answer's: the state, and exactly the vectors."""
    assert len(records) == len(expected)
    for record, answer in zip(records, expected):
        assert record["outcome"] == answer["outcome"], (answer, record)
        if answer["layer3"] is None:  # not an Episode
            assert "layer3" not in record["components"]
            continue
        state = record["components"].get("layer3", "absent")
        assert state == answer["layer3"], (answer, record)
        found = sorted({f["vector"] for f in record.get("layer3_findings", [])})
        assert found == answer["layer3_vectors"], (answer, record)


@pytest.fixture(scope="module")
def layer3_corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("l3")
    out, ans = d / "c.jsonl", d / "a.jsonl"
    assert cli_main(["synth", "--episodes", "90", "--mix", "all-outcomes", "--seed", "5",
                     "--out", str(out), "--answers", str(ans), "--median-segments", "6",
                     "--layer3", "0.8", "--layer3-violating", "0.6", "--no-progress"]) == 0
    return out, ans


def _answers(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_synth_round_trip(layer3_corpus: tuple[Path, Path]) -> None:
    out, ans = layer3_corpus
    expected = _answers(ans)
    states = {a["layer3"] for a in expected}
    assert states == {"ok", "failed", "absent", None}
    seen = {v for a in expected for v in a["layer3_vectors"]}
    assert seen == set(l3synth.VIOLATIONS)  # every violation class
    run = reverify.run([out], jobs=2, batch_size=7)
    check_layer3([r.record for r in run], expected)
    counts = {s: sum(a["layer3"] == s for a in expected) for s in ("ok", "failed", "absent")}
    assert {k: v for k, v in run.summary.to_json()["layer3"].items() if k != "required"} \
        == {**counts, "absent": 0}  # absent is written only when required
    required = reverify.run([out], jobs=1, require_layer3=True)
    check_layer3([r.record for r in required], expected)
    assert {k: v for k, v in required.summary.layer3.items()} == counts


def test_synth_without_layer3_is_unchanged(tmp_path: Path) -> None:
    """Layer 3 draws from its own stream: the corpus is the same bytes with it off."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    synth.write_corpus(30, out=str(a), mix="all-outcomes", seed=4, median_segments=5)
    synth.write_corpus(30, out=str(b), mix="all-outcomes", seed=4, median_segments=5,
                       layer3=0.0)
    assert a.read_bytes() == b.read_bytes()
    with_l3 = tmp_path / "c.jsonl"
    synth.write_corpus(30, out=str(with_l3), mix="all-outcomes", seed=4, median_segments=5,
                       layer3=1.0)
    stripped = []
    for line in with_l3.read_bytes().splitlines():
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            stripped.append(line)
            continue
        doc.pop("layer3", None)
        stripped.append(orjson.dumps(doc))
    assert stripped == a.read_bytes().splitlines()


def test_synth_layer3_in_every_json_container(layer3_corpus: tuple[Path, Path],
                                              tmp_path: Path) -> None:
    _, ans = layer3_corpus
    expected = _answers(ans)
    for name in ("c.jsonl.gz", "dir"):
        out = str(tmp_path / name) + (os.sep if name == "dir" else "")
        synth.write_corpus(90, out=out, mix="all-outcomes", seed=5,
                           median_segments=6, layer3=0.8, layer3_violating=0.6)
        check_layer3([r.record for r in reverify.run([tmp_path / name], jobs=2)], expected)
    # CBOR sorts map keys, which changes the Form B hashes of an export: refused
    with pytest.raises(ValueError, match="JSON corpus"):
        synth.write_corpus(3, out=str(tmp_path / "c.cborseq"), layer3=0.5)
    assert not (tmp_path / "c.cborseq").exists()


def test_export_in_a_cbor_document_is_verified(tmp_path: Path) -> None:
    """A CBOR Episode's export is verified like a JSON one's; CBOR's sorted keys change
    the Form B hash of an object written in another order, and that is found."""
    from canonkit import cbor

    doc = _episodes(1, 25)[0]
    doc["layer3"], _ = _export(doc)
    (tmp_path / "c.cborseq").write_bytes(cbor.encode(doc))
    (record,) = _lines(tmp_path / "c.cborseq")
    assert record["outcome"] == "reproduced"
    assert record["components"]["layer3"] == "failed"  # input_context {"b", "a", ...}
    assert {f["vector"] for f in record["layer3_findings"]} >= {"WF-001"}


# --- every path that reads a document gives the same line ------------------------------

def test_fast_path_and_general_reader_agree(layer3_corpus: tuple[Path, Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    out, _ = layer3_corpus
    fast = [r.line for r in reverify.run([out], jobs=1, require_layer3=True)]
    monkeypatch.setattr(worker, "FAST_PATH", False)
    general = [r.line for r in reverify.run([out], jobs=1, require_layer3=True)]
    assert fast == general


def test_fast_path_carries_the_member(tmp_path: Path) -> None:
    """The compiled document scanner hands the ``layer3`` member over with the rest of
    the document (never dropped with the segments it reads itself)."""
    from canonkit.astp.documents import read_episode_bytes

    doc = _episodes(1, 27)[0]
    doc["layer3"], _ = _export(doc, "L3-008")
    episode = read_episode_bytes(orjson.dumps(doc))
    assert episode is not None and episode.layer3 == doc["layer3"]
    (record,) = _lines(_write_jsonl(tmp_path / "c.jsonl", [doc]))
    assert "L3-008" in {f["vector"] for f in record["layer3_findings"]}


_DIGEST = """
import hashlib, json, sys
import canonkit.reverify as rv

def main():
    lines = b"".join(r.line + b"\\n" for r in rv.run([sys.argv[1]], jobs=1,
                                                     require_layer3=True))
    print(json.dumps([hashlib.sha256(lines).hexdigest(), lines.count(b"\\n")]))

if __name__ == "__main__":
    main()
"""


def test_compiled_and_twin_backends_agree(layer3_corpus: tuple[Path, Path],
                                          tmp_path: Path) -> None:
    out, _ = layer3_corpus
    package_root = str(Path(canonkit.__file__).resolve().parent.parent)
    script = tmp_path / "digest.py"
    script.write_text(_DIGEST)
    found = []
    for twin in (False, True):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [package_root, os.environ.get("PYTHONPATH", "")]))
        env.pop("CANONKIT_NO_EXTENSIONS", None)
        if twin:
            env["CANONKIT_NO_EXTENSIONS"] = "1"
        done = subprocess.run([sys.executable, str(script), str(out)], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        found.append(json.loads(done.stdout))
    lines = b"".join(r.line + b"\n" for r in reverify.run([out], jobs=1, require_layer3=True))
    assert found[0] == found[1] == [hashlib.sha256(lines).hexdigest(), 90]


def test_dask_engine_carries_layer3(layer3_corpus: tuple[Path, Path], tmp_path: Path
                                    ) -> None:
    pytest.importorskip("dask.distributed")
    out, ans = layer3_corpus
    local, dask = tmp_path / "local.jsonl", tmp_path / "dask.jsonl"
    list(reverify.run([out], jobs=1, report=local, require_layer3=True))
    run = reverify.run([out], engine="dask", jobs=2, batch_size=9, report=dask,
                       require_layer3=True)
    check_layer3([r.record for r in run], _answers(ans))
    assert dask.read_bytes() == local.read_bytes()
