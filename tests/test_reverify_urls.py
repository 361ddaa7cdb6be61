"""Re-verification of corpora where they live (REVERIFY.md §6): inputs named by URL, read
from a real S3 endpoint (moto's server, or ``CANONKIT_TEST_S3_ENDPOINT``) and a real HTTP
server (nginx) through the same input door as local files, with the same verdicts, the
URL in every ``source``, and every failure of the storage reported, never blended or
skipped."""
from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from canonkit import reverify
from canonkit._files import remote
from canonkit.cli import main as cli_main
from canonkit.reverify import synthetic_corpus as synth
from services import (DaskCluster, FaultProxy, HTTPServer, S3Prefix, needs_obstore, random_secret,
                      use_endpoint)

pytestmark = needs_obstore

SEED_TABLE = {"reproduced": 45, "reproduced_under_other_construction": 8,
              "reproduced_by_search": 4, "not_reproducible": 2, "no_seal_record": 3}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A seed-table corpus (62 Episodes) and its answers."""
    d = tmp_path_factory.mktemp("corpus")
    out, ans = d / "corpus.jsonl", d / "answers.jsonl"
    synth.write_corpus(62, out=str(out), answers=str(ans), mix="seed-table", seed=7,
                       median_segments=12)
    return out, [orjson.loads(line) for line in ans.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Large enough to be cut into several ranges."""
    out = tmp_path_factory.mktemp("big") / "corpus.jsonl"
    synth.write_corpus(600, out=str(out), mix="seed-table", seed=3, median_segments=12)
    return out


def records(run: reverify.Run) -> list[dict[str, Any]]:
    return [result.record for result in run]


def without_file(record: dict[str, Any]) -> dict[str, Any]:
    """The record with the name of its input left out of ``source``."""
    source = {k: v for k, v in record["source"].items() if k != "file"}
    return dict(record, source=source)


def local_records(path: Path) -> list[dict[str, Any]]:
    return records(reverify.run([path], jobs=1))


def assert_same_as_local(got: list[dict[str, Any]], path: Path, url: str) -> None:
    """Every verdict as over the local file, each ``source`` naming ``url``."""
    expected = local_records(path)
    assert [r["source"]["file"] for r in got] == [url] * len(expected)
    assert [without_file(r) for r in got] == [without_file(r) for r in expected]


@pytest.fixture
def parent_gets(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every ranged GET this process (not its workers) sends."""
    fetched: list[int] = []
    real_get = remote._get

    def counting_get(info: remote.ObjectInfo, start: int, end: int) -> Any:
        fetched.append(end - start)
        return real_get(info, start, end)

    monkeypatch.setattr(remote, "_get", counting_get)
    return fetched


# --- one object, every engine -------------------------------------------------------------

@pytest.mark.parametrize("jobs", [1, 2])
def test_a_jsonl_object_verifies_as_the_local_file_does(
        s3: S3Prefix, corpus: tuple[Path, list[dict[str, Any]]], jobs: int) -> None:
    path, answers = corpus
    s3.put("runs/c.jsonl", path.read_bytes())
    url = s3.key_url("runs/c.jsonl")
    run = reverify.run([url], jobs=jobs, batch_bytes=20_000)
    got = records(run)
    assert [r["outcome"] for r in got] == [a["outcome"] for a in answers]
    assert_same_as_local(got, path, url)
    assert {k: v for k, v in run.summary.counts.items() if v} == SEED_TABLE
    assert run.summary.paths == [url]


def test_pool_workers_read_their_own_ranges_from_the_store(
        s3: S3Prefix, big_corpus: Path, parent_gets: list[int]) -> None:
    """The client process plans the ranges with a few small GETs at each boundary; the
    corpus bytes are fetched by the workers, never by it."""
    data = big_corpus.read_bytes()
    s3.put("big.jsonl", data)
    run = reverify.run([s3.key_url("big.jsonl")], jobs=2, batch_bytes=len(data) // 8)
    got = records(run)
    assert len(got) == 600 and run.summary.counts["reproduced"] > 0
    assert 0 < sum(parent_gets) < len(data) // 8, (sum(parent_gets), len(data))
    assert_same_as_local(got, big_corpus, s3.key_url("big.jsonl"))


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_compressed_object_is_one_unit_read_by_its_worker(
        s3: S3Prefix, corpus: tuple[Path, list[dict[str, Any]]], parent_gets: list[int],
        jobs: int, tmp_path: Path) -> None:
    path, answers = corpus
    s3.put("c.jsonl.gz", gzip.compress(path.read_bytes()))
    url = s3.key_url("c.jsonl.gz")
    notes, local_notes = tmp_path / "notes.jsonl", tmp_path / "local-notes.jsonl"
    got = records(reverify.run([url], jobs=jobs, annotations=notes))
    assert [r["outcome"] for r in got] == [a["outcome"] for a in answers]
    assert_same_as_local(got, path, url)
    assert (sum(parent_gets) == 0) == (jobs > 1)  # in-process, the parent is the worker
    reverify.run([path], jobs=1, annotations=local_notes).summary
    expected = local_notes.read_text().replace(orjson.dumps(str(path)).decode(),
                                               orjson.dumps(url).decode())
    assert notes.read_text() == expected and '"line":' in expected


def test_json_documents_and_cbor_sequences_in_a_bucket(
        s3: S3Prefix, corpus: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    from canonkit import cbor

    path, answers = corpus
    lines = path.read_bytes().splitlines()
    s3.put("one.json", lines[0])
    items = [orjson.loads(line) for line in lines[:5]]
    s3.put("five.cborseq", b"".join(cbor.encode(item) for item in items))
    for jobs in (1, 2):
        got = records(reverify.run([s3.key_url("one.json"), s3.key_url("five.cborseq")],
                                   jobs=jobs, annotations=tmp_path / f"notes{jobs}.jsonl"))
        assert [r["outcome"] for r in got] == [a["outcome"] for a in answers[:1] + answers[:5]]
        assert got[0]["source"] == {"file": s3.key_url("one.json")}
        assert got[1]["source"] == {"file": s3.key_url("five.cborseq"), "offset": 0}


# --- prefixes -------------------------------------------------------------------------------

def test_a_prefix_is_listed_recursively_in_directory_walk_order(
        s3: S3Prefix, corpus: tuple[Path, list[dict[str, Any]]]) -> None:
    path, _ = corpus
    lines = path.read_bytes().splitlines(keepends=True)
    s3.put("p/b.jsonl", b"".join(lines[:3]))
    s3.put("p/a/z.json", lines[3])
    s3.put("p/c.json", lines[4])
    s3.put("p/notes.txt", b"not an input")
    run = reverify.run([s3.url + "p/"], jobs=1)
    assert run.files == [s3.key_url(n) for n in ("p/b.jsonl", "p/c.json", "p/a/z.json")]
    got = records(run)
    assert [r["source"]["file"] for r in got] == [s3.key_url("p/b.jsonl")] * 3 + [
        s3.key_url("p/c.json"), s3.key_url("p/a/z.json")]
    assert [r["source"].get("line") for r in got] == [1, 2, 3, None, None]


# --- usage errors ---------------------------------------------------------------------------

def test_a_named_object_that_does_not_exist_is_exit_2_naming_it(
        s3: S3Prefix, capsys: pytest.CaptureFixture[str]) -> None:
    missing = s3.key_url("no/such.jsonl")
    assert cli_main(["reverify", "--no-progress", missing]) == 2
    err = capsys.readouterr().err
    assert missing in err and "no such object" in err
    with pytest.raises(reverify.InputError, match="no input objects"):
        reverify.run([s3.url + "empty/"])


def test_urls_canonkit_cannot_read_are_usage_errors(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    assert cli_main(["reverify", "--no-progress", "ftp://host/c.jsonl"]) == 2
    assert "'ftp' is not supported" in capsys.readouterr().err
    assert cli_main(["reverify", "--no-progress", "http://127.0.0.1:9/runs/"]) == 2
    assert "cannot be listed" in capsys.readouterr().err


def test_a_file_url_reads_the_local_file(corpus: tuple[Path, list[dict[str, Any]]]) -> None:
    path, answers = corpus
    got = records(reverify.run([path.as_uri()], jobs=1))
    assert [r["outcome"] for r in got] == [a["outcome"] for a in answers]
    assert got[0]["source"] == {"file": str(path), "line": 1}


def test_without_obstore_a_url_is_exit_2_naming_the_extra(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "obstore", None)  # import obstore -> ImportError
    monkeypatch.setattr(remote, "_clients", {})
    assert cli_main(["reverify", "--no-progress", "s3://bucket/c.jsonl"]) == 2
    assert "pip install 'canonkit[s3]'" in capsys.readouterr().err


def test_a_worker_without_obstore_stops_the_run_with_exit_2_naming_the_extra(
        s3: S3Prefix, corpus: tuple[Path, Any], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Listed by a client that has the extra, read by a worker that has not."""
    from canonkit.errors import MissingDependencyError

    path, _ = corpus
    s3.put("c.jsonl", path.read_bytes())

    def no_client(*args: Any) -> Any:
        raise MissingDependencyError("reading object storage needs the optional package "
                                     "'obstore': pip install 'canonkit[s3]'")

    monkeypatch.setattr(remote, "_get", no_client)
    report = tmp_path / "report.jsonl"
    assert cli_main(["reverify", "--no-progress", "--jobs", "1", "--report", str(report),
                     s3.key_url("c.jsonl")]) == 2
    assert "pip install 'canonkit[s3]'" in capsys.readouterr().err
    assert not report.exists()


# --- objects that change or vanish under the run ---------------------------------------------

@pytest.mark.parametrize("jobs", [1, 2])
def test_an_object_rewritten_since_listing_is_refused_never_blended(
        s3: S3Prefix, corpus: tuple[Path, list[dict[str, Any]]], jobs: int) -> None:
    path, _ = corpus
    data = path.read_bytes()
    s3.put("c.jsonl", data)
    run = reverify.run([s3.key_url("c.jsonl")], jobs=jobs)  # listed here
    s3.put("c.jsonl", data[: len(data) // 2])  # another version, another ETag
    got = records(run)
    assert got and all(r["outcome"] == "invalid_record" for r in got)
    assert all("not the object the run started on" in r["reason"] for r in got)
    assert all(r["source"]["file"] == s3.key_url("c.jsonl") for r in got)
    assert run.summary.exit_status != 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_object_lost_mid_run_is_invalid_record_with_url_and_status(
        s3: S3Prefix, corpus: tuple[Path, list[dict[str, Any]]], jobs: int) -> None:
    path, _ = corpus
    s3.put("lost.jsonl", path.read_bytes())
    s3.put("kept.json", path.read_bytes().splitlines()[0])
    run = reverify.run([s3.key_url("lost.jsonl"), s3.key_url("kept.json")], jobs=jobs)
    remote.delete(s3.key_url("lost.jsonl"))
    got = records(run)
    lost = [r for r in got if r["source"]["file"] == s3.key_url("lost.jsonl")]
    assert len(lost) == 1 and lost[0]["outcome"] == "invalid_record"
    assert s3.key_url("lost.jsonl") in lost[0]["reason"] and "404" in lost[0]["reason"]
    assert got[-1]["source"] == {"file": s3.key_url("kept.json")}
    assert got[-1]["outcome"] != "invalid_record"
    assert run.summary.exit_status != 0


# --- retries and credentials ----------------------------------------------------------------

def test_throttling_and_5xx_during_a_run_are_retried(
        s3: S3Prefix, corpus: tuple[Path, list[dict[str, Any]]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    path, answers = corpus
    s3.put("c.jsonl", path.read_bytes())
    proxy = FaultProxy(s3.endpoint.url.removeprefix("http://"))
    try:
        use_endpoint(monkeypatch, dict(s3.endpoint.env, AWS_ENDPOINT_URL=proxy.url,
                                       AWS_ALLOW_HTTP="true"))
        proxy.fail(503, 2, match=lambda method, _: method == "HEAD")
        run = reverify.run([s3.key_url("c.jsonl")], jobs=2)
        proxy.fail(429, 2, match=lambda method, _: method == "GET")
        proxy.fail(500, 1, match=lambda method, _: method == "GET")
        proxy.drop(1, match=lambda method, _: method == "GET")
        got = records(run)
    finally:
        proxy.close()
    assert proxy.faults == 6
    assert [r["outcome"] for r in got] == [a["outcome"] for a in answers]


def test_no_credential_appears_in_reports_errors_or_logs(
        s3: S3Prefix, corpus: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """moto takes any key: the run uses a random key id and secret, then every output of
    a run that meets a missing object, a lost object and a changed one is searched."""
    path, _ = corpus
    key_id, secret, token = random_secret(), random_secret(), random_secret()
    use_endpoint(monkeypatch, dict(s3.endpoint.env, AWS_ACCESS_KEY_ID=key_id,
                                   AWS_SECRET_ACCESS_KEY=secret, AWS_SESSION_TOKEN=token))
    data = path.read_bytes()
    for name in ("lost.jsonl", "changed.jsonl"):
        s3.put(name, data)
    report = tmp_path / "report.jsonl"
    status = cli_main(["reverify", "--no-progress", "--report", str(report),
                       s3.key_url("no-such.jsonl")])
    assert status == 2
    run = reverify.run([s3.key_url("lost.jsonl"), s3.key_url("changed.jsonl")], jobs=2,
                       report=report)
    remote.delete(s3.key_url("lost.jsonl"))
    s3.put("changed.jsonl", data[:100])
    assert all(r["outcome"] == "invalid_record" for r in records(run))
    out, err = capfd.readouterr()
    everything = out + err + report.read_text()
    assert "no such object" in err and "404" in report.read_text()
    for value in (key_id, secret, token):
        assert value not in everything


# --- HTTP ----------------------------------------------------------------------------------

def test_a_corpus_served_over_http_is_read_by_ranges(
        http_server: HTTPServer, big_corpus: Path) -> None:
    (http_server.root / "big.jsonl").write_bytes(big_corpus.read_bytes())
    url = http_server.url + "big.jsonl"
    got = records(reverify.run([url], jobs=2, batch_bytes=big_corpus.stat().st_size // 4))
    assert_same_as_local(got, big_corpus, url)
    with pytest.raises(reverify.InputError, match="missing.jsonl: no such object"):
        reverify.run([http_server.url + "missing.jsonl"])


# --- Layer 3 exports beside an object ---------------------------------------------------------

def test_a_layer3_export_named_by_an_episode_is_read_beside_its_object(
        s3: S3Prefix, tmp_path: Path) -> None:
    """The same Layer 3 results as with the exports inside the Episodes."""
    embedded = tmp_path / "l3.jsonl"
    synth.write_corpus(12, out=str(embedded), mix="seed-table", seed=2, median_segments=6,
                       layer3=1.0, layer3_violating=0.5)
    named = []
    for i, line in enumerate(embedded.read_bytes().splitlines()):
        doc = orjson.loads(line)
        if isinstance(doc, dict) and isinstance(doc.get("layer3"), dict):
            s3.put(f"l3/exports/{i}.json", orjson.dumps(doc["layer3"]))
            doc["layer3"] = f"exports/{i}.json"
        named.append(orjson.dumps(doc) + b"\n")
    s3.put("l3/episodes.jsonl", b"".join(named))
    expected = [r["components"].get("layer3")
                for r in records(reverify.run([embedded], jobs=1, require_layer3=True))]
    got = records(reverify.run([s3.key_url("l3/episodes.jsonl")], jobs=1,
                               require_layer3=True))
    assert [r["components"].get("layer3") for r in got] == expected
    assert "ok" in expected and "failed" in expected


def test_a_layer3_name_leaving_the_prefix_is_refused(s3: S3Prefix,
                                                     corpus: tuple[Path, Any]) -> None:
    path, _ = corpus
    doc = orjson.loads(path.read_bytes().splitlines()[0])
    for name in ("../outside.json", "/etc/passwd", "s3://other/x.json", "a//b.json"):
        s3.put("e.json", orjson.dumps(dict(doc, layer3=name)))
        (got,) = records(reverify.run([s3.key_url("e.json")], jobs=1))
        assert got["components"]["layer3"] == "failed"
        assert "refused the Layer 3 export path" in got["layer3_findings"][0]["detail"]


# --- a real Dask cluster reading the bucket ---------------------------------------------------

def test_dask_workers_read_their_ranges_from_the_bucket(
        s3: S3Prefix, big_corpus: Path, dask_cluster: DaskCluster, tmp_path: Path) -> None:
    """On a cluster of processes, the report over the bucket is the local pool's over the
    local file, but for the name in ``source``."""
    data = big_corpus.read_bytes()
    s3.put("big.jsonl", data)
    url = s3.key_url("big.jsonl")
    on_dask, local = tmp_path / "dask.jsonl", tmp_path / "local.jsonl"
    run = reverify.run([url], engine="dask", scheduler=dask_cluster.address,
                       batch_bytes=len(data) // 6, report=on_dask)
    got = records(run)
    reverify.run([big_corpus], jobs=2, report=local).summary
    mine = [orjson.loads(x) for x in local.read_bytes().splitlines()[:-1]]
    assert [without_file(r) for r in got] == [without_file(r) for r in mine]
    theirs = [orjson.loads(x) for x in on_dask.read_bytes().splitlines()[:-1]]
    assert theirs == got and all(r["source"]["file"] == url for r in got)
    assert os.getpid() not in dask_cluster.worker_pids().values()


def test_a_report_named_by_a_url_is_refused_and_nothing_is_created(
        corpus: tuple[Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = corpus
    monkeypatch.chdir(tmp_path)
    for option in ("--report", "--annotations"):
        assert cli_main(["reverify", "--no-progress", option, "s3://bucket/r.jsonl",
                         str(path)]) == 2
        assert "s3://bucket/r.jsonl: a URL" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
