"""A Dask cluster that loses every worker in the middle of a run (REVERIFY.md §7,
docs/reverify.md "Engines"): the run fails closed — a non-zero exit naming the lost
workers, within a bounded wait, no report — and, with fresh workers, the same command on
the same journal resumes and writes the uninterrupted run's report. The cluster is the
test's own: its workers are killed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from services import DaskCluster, start_dask_cluster, unavailable

#: seconds the run may wait with no worker before it gives up (CANONKIT_DASK_WORKER_WAIT)
WORKER_WAIT = 5


@pytest.fixture
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        unavailable(f"dask[distributed] is not installed ({exc}): pip install -e '.[test]'")
    cluster = start_dask_cluster(tmp_path_factory.mktemp("dask-own"), dict(os.environ))
    try:
        yield cluster
    finally:
        cluster.stop()


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def _gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _session(sid: int) -> list[int]:
    """The PIDs still alive in session ``sid`` (zombies are dead)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid and not _gone(int(entry)):
                    out.append(int(entry))
            except OSError:
                pass
    return out


def _synth(n: int, out: Path, seed: int) -> None:
    subprocess.run([sys.executable, "-m", "canonkit", "synth", "--episodes", str(n),
                    "--out", str(out), "--mix", "all-outcomes", "--seed", str(seed),
                    "--median-segments", "8", "--no-progress"], check=True,
                   capture_output=True, timeout=300)


def test_every_worker_killed_mid_run_fails_closed_then_resumes(
        own_cluster: DaskCluster, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _synth(600, corpus / "a.jsonl", 31)  # byte ranges the workers read
    _synth(1800, corpus / "b.jsonl.gz", 32)  # batches the client reads and ships
    env = dict(os.environ, CANONKIT_DASK_WORKER_WAIT=str(WORKER_WAIT))
    common = ["--batch-size", "5", "--no-progress"]

    want = tmp_path / "want.jsonl"
    done = subprocess.run([sys.executable, "-m", "canonkit", "reverify", str(corpus),
                           "--jobs", "2", "--report", str(want), *common],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # the corpus holds failing outcomes

    journal, report = tmp_path / "run.journal", tmp_path / "got.jsonl"
    argv = [sys.executable, "-m", "canonkit", "reverify", str(corpus), "--engine", "dask",
            "--scheduler", own_cluster.address, "--journal", str(journal),
            "--report", str(report), *common]
    stderr = tmp_path / "stderr"
    nannies = [w.pid for w in own_cluster.workers]
    workers = list(own_cluster.worker_pids().values())
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (journal.exists() and len(_lines(journal)) >= 2):  # header + one unit
            assert proc.poll() is None, stderr.read_text()
            assert time.monotonic() < deadline, "no unit finished"
            time.sleep(0.02)
        for pid in nannies + workers:  # the nannies first: none may start a worker again
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        assert proc.poll() is None, "the run finished before its workers were killed"
        try:
            status = proc.wait(WORKER_WAIT + 60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the run still waits {WORKER_WAIT + 60} s after losing every worker")
        waited = time.monotonic() - killed
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    message = stderr.read_text()
    assert status == 2, message  # could not run: never 0 or 1 over what it skipped
    assert "no workers" in message and own_cluster.address in message, message
    assert "worker-0" in message and "worker-1" in message, message  # the lost, by name
    assert "Traceback" not in message, message
    assert WORKER_WAIT - 1 <= waited <= WORKER_WAIT + 30, waited
    assert not report.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".got")] == []
    finished = len(_lines(journal)) - 1
    assert finished >= 1
    for w in own_cluster.workers:
        w.process.wait(10)  # reaped
    assert all(_gone(pid) for pid in nannies + workers)
    assert _session(proc.pid) == []  # nothing of the run is left behind

    for _ in range(2):  # fresh workers, the same command, the same journal
        own_cluster.add_worker()
    own_cluster.wait_for_workers(2)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=env)
    assert done.returncode == 1, done.stderr
    got_lines, want_lines = _lines(report), _lines(want)
    assert got_lines[:-1] == want_lines[:-1]  # every Episode line, byte for byte
    final, whole = orjson.loads(got_lines[-1]), orjson.loads(want_lines[-1])
    assert 0 < final["from_journal"] < final["summary"]["total"]
    assert final["summary"] == whole["summary"]


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf", "nan"])
def test_a_bad_worker_wait_is_a_usage_error_before_any_work(value: str,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    _synth(5, out, 33)
    report = tmp_path / "r.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "canonkit", "reverify", str(out), "--engine", "dask",
         "--scheduler", "tcp://127.0.0.1:9", "--report", str(report), "--no-progress"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env=dict(os.environ, CANONKIT_DASK_WORKER_WAIT=value))
    assert done.returncode == 2, done.stderr
    assert "CANONKIT_DASK_WORKER_WAIT" in done.stderr and "Traceback" not in done.stderr
    assert not report.exists()
