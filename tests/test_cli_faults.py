"""Fault injection for ``canonkit reverify``: unreadable and non-regular inputs, output
paths that cannot be written, a full disk, signals at random moments, lost workers.

The principles under test (docs/reverify.md, "Failing closed"):
every input named is read completely or reported; every output is written completely or
not at all; every process started is stopped; a lost worker loses no work.
"""
from __future__ import annotations

import errno
import os
import random
import resource
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest
from unprivileged import run_unprivileged

import canonkit.reverify as rv
from canonkit.errors import OutputPathError
from canonkit.reverify import synthetic_corpus as synth



def cli(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "canonkit", "reverify", *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          **kw)


def leftovers(directory: Path) -> list[str]:
    """Temporary files a writer may leave: FILE.partial, FILE.<random>.tmp, ..."""
    return sorted(p.name for p in directory.iterdir()
                  if p.name.endswith((".partial", ".tmp")) or ".partial" in p.name
                  or p.name.startswith(".") and "tmp" in p.name)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 small Episodes, every outcome, as .json files in a directory tree."""
    d = tmp_path_factory.mktemp("small")
    synth.write_corpus(12, out=str(d / "corpus") + "/", mix="seed-table", seed=3,
                       median_segments=6)
    return d / "corpus"


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A JSON-lines corpus that keeps two workers busy for a few seconds."""
    d = tmp_path_factory.mktemp("big")
    path = d / "corpus.jsonl"
    synth.write_corpus(1200, out=str(path), mix="seed-table", seed=5, median_segments=120)
    return path


# --- D2: every input named is read completely or reported --------------------------------

def _tree(base: Path, small: Path) -> tuple[Path, Path]:
    """corpus/a.json and corpus/sub/b.json."""
    corpus = base / "corpus"
    (corpus / "sub").mkdir(parents=True)
    docs = sorted(small.glob("*.json"))
    (corpus / "a.json").write_bytes(docs[0].read_bytes())
    (corpus / "sub" / "b.json").write_bytes(docs[1].read_bytes())
    return corpus, corpus / "sub"


def reverify_unprivileged(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``canonkit reverify`` as a user who cannot read what mode 000 protects."""
    return run_unprivileged("reverify", "--jobs", "1", "--no-progress", "--json", *args)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[Path]:
    """A scratch directory an unprivileged user can enter (pytest's is private)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="canonkit-faults-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        for p in d.rglob("*"):
            if p.is_dir() and not p.is_symlink():
                p.chmod(0o755)
        shutil.rmtree(d)


def _lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in done.stdout.splitlines()]


@pytest.mark.parametrize("which", ["sub", "top"])
def test_unreadable_directory_is_reported_and_fails(world: Path, small: Path,
                                                    which: str) -> None:
    corpus, sub = _tree(world, small)
    for p in world.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    locked = sub if which == "sub" else corpus
    locked.chmod(0)
    done = reverify_unprivileged(corpus)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = _lines(done)
    errors = [x for x in lines[:-1] if x["outcome"] == "invalid_record"]
    assert [e["source"] for e in errors] == [{"file": str(locked)}]
    assert "cannot read the directory" in errors[0]["reason"]
    assert lines[-1]["summary"]["invalid_record"] == 1
    assert lines[-1]["summary"]["total"] == (2 if which == "sub" else 1)


def test_unreadable_directory_simulated(tmp_path: Path, small: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through a failing ``os.scandir`` (for platforms where neither root nor
    mode 000 can be used)."""
    corpus, sub = _tree(tmp_path, small)
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path) == str(sub):
            raise PermissionError(errno.EACCES, "Permission denied", str(sub))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    run = rv.run([corpus], jobs=1)
    records = [r.record for r in run]
    assert [r["outcome"] for r in records][-1] == "invalid_record"
    assert records[-1]["source"] == {"file": str(sub)}
    assert "Permission denied" in records[-1]["reason"]
    assert run.summary.exit_status == 1


def test_empty_input_directory_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not an input")
    for target in ("empty", "other"):
        done = cli(tmp_path / target, "--no-progress")
        assert done.returncode == 2, (target, done.returncode, done.stdout, done.stderr)
        assert "no input" in done.stderr and str(tmp_path / target) in done.stderr
    with pytest.raises(rv.InputError):
        rv.run([tmp_path / "empty"])


def test_fifo_inputs_are_refused_without_blocking(tmp_path: Path, small: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.json").write_bytes(sorted(small.glob("*.json"))[0].read_bytes())
    os.mkfifo(corpus / "b.jsonl")
    done = cli(corpus, "--no-progress", "--json", timeout=60)
    assert done.returncode == 1, done.stderr
    lines = _lines(done)
    assert lines[1]["source"] == {"file": str(corpus / "b.jsonl")}
    assert "not a regular file" in lines[1]["reason"]
    named = cli(corpus / "b.jsonl", "--no-progress", timeout=60)
    assert named.returncode == 2 and "not a regular file" in named.stderr


# --- D3, D4: every output is written completely or not at all ---------------------------

def _assert_refused(done: subprocess.CompletedProcess[str], path: Path) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert str(path) in done.stderr, done.stderr
    assert done.stdout == ""  # refused before any work: no table


def test_report_and_annotations_on_one_path_are_refused(tmp_path: Path, small: Path) -> None:
    same = tmp_path / "s.jsonl"
    done = cli(small, "--report", same, "--annotations", same, "--no-progress")
    _assert_refused(done, same)
    assert not same.exists() and leftovers(tmp_path) == []
    # the same file under two spellings
    same.write_bytes(b"old\n")
    done = cli(small, "--report", same, "--annotations", f"{tmp_path}/./s.jsonl",
               "--no-progress")
    _assert_refused(done, same)
    assert same.read_bytes() == b"old\n"


@pytest.mark.parametrize("option", ["--report", "--annotations"])
def test_output_onto_an_input_is_refused(tmp_path: Path, small: Path, option: str) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b"".join(p.read_bytes().strip() + b"\n"
                                for p in sorted(small.glob("*.json"))))
    before = corpus.read_bytes()
    done = cli(corpus, option, corpus, "--no-progress")
    _assert_refused(done, corpus)
    assert corpus.read_bytes() == before and leftovers(tmp_path) == []
    inside = sorted(small.glob("*.json"))[0]  # a file of a directory given as input
    snapshot = inside.read_bytes()
    done = cli(small, option, inside, "--no-progress")
    _assert_refused(done, inside)
    assert inside.read_bytes() == snapshot


@pytest.mark.parametrize("option", ["--report", "--annotations"])
def test_output_in_a_missing_directory_is_refused(tmp_path: Path, small: Path,
                                                  option: str) -> None:
    target = tmp_path / "missing" / "out.jsonl"
    done = cli(small, option, target, "--no-progress")
    _assert_refused(done, target)
    assert leftovers(tmp_path) == [] and not (tmp_path / "missing").exists()
    with pytest.raises(OutputPathError):
        rv.run([small], **{option.lstrip("-"): target})


def test_output_naming_a_directory_is_refused_before_work(tmp_path: Path, big: Path) -> None:
    started = time.monotonic()
    done = cli(big, "--report", tmp_path, "--jobs", "1", "--no-progress")
    _assert_refused(done, tmp_path)
    assert time.monotonic() - started < 20  # not after verifying 1200 Episodes


# --- a full disk --------------------------------------------------------------------------

def _limit_file_size(limit: int) -> Any:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a dead process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_write_failure_keeps_the_old_report(tmp_path: Path, small: Path) -> None:
    """A real failing write (RLIMIT_FSIZE: EFBIG once the report passes 4 KiB)."""
    report = tmp_path / "report.jsonl"
    report.write_bytes(b'{"old": true}\n')
    done = cli(small, "--report", report, "--jobs", "1", "--no-progress",
               preexec_fn=_limit_file_size(4096))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2 and str(report) in done.stderr, done.stderr
    assert report.read_bytes() == b'{"old": true}\n'
    assert leftovers(tmp_path) == []


def test_enospc_keeps_the_old_report(tmp_path: Path, small: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that raises ENOSPC half way: the old report stays, no temporary remains."""
    from canonkit._files import outputs

    report = tmp_path / "report.jsonl"
    report.write_bytes(b'{"old": true}\n')
    real_write = os.write
    written = [0]

    def write(fd: int, data: Any) -> int:
        written[0] += len(data)
        if written[0] > 2048:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(outputs.os, "write", write)
    with pytest.raises(OutputPathError, match="No space left"):
        list(rv.run([small], jobs=1, report=report))
    assert report.read_bytes() == b'{"old": true}\n'
    assert leftovers(tmp_path) == []


# --- D5: signals at random moments ----------------------------------------------------------

def _watch_descendants(proc: subprocess.Popen[str], until: float) -> dict[int, psutil.Process]:
    """Every descendant seen while the command runs, until ``until`` (monotonic)."""
    seen: dict[int, psutil.Process] = {}
    parent = psutil.Process(proc.pid)
    while time.monotonic() < until and proc.poll() is None:
        try:
            for child in parent.children(recursive=True):
                seen.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)
    return seen


def _alive(procs: dict[int, psutil.Process], seconds: float = 15) -> list[str]:
    _, alive = psutil.wait_procs(list(procs.values()), timeout=seconds)
    out = []
    for p in alive:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(f"{p.pid} {' '.join(p.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            pass
    return out


# moments as fractions of a clean run of ``big`` (the first fifth is mostly start-up), so
# that they fall inside the run on a fast machine and a slow one alike (fixed moments all
# came after a fast machine's run)
_MOMENTS = [x / 100 for x in random.Random(1105).sample(range(20, 98), 5)]


@pytest.fixture(scope="module")
def big_run_seconds(big: Path, tmp_path_factory: pytest.TempPathFactory) -> float:
    """The wall time of a clean ``--jobs 2`` run of ``big`` here, start-up included."""
    started = time.monotonic()
    _clean_report(big, tmp_path_factory.mktemp("timed"))
    return time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("moment", _MOMENTS)
def test_signal_at_a_random_moment(tmp_path: Path, big: Path, big_run_seconds: float,
                                   signum: int, moment: float) -> None:
    delay = moment * big_run_seconds
    report, notes = tmp_path / "report.jsonl", tmp_path / "notes.jsonl"
    report.write_bytes(b'{"old": true}\n')
    with subprocess.Popen(
        [sys.executable, "-m", "canonkit", "reverify", str(big), "--jobs", "2",
         "--report", str(report), "--annotations", str(notes), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:
        seen = _watch_descendants(proc, time.monotonic() + delay)
        finished_first = proc.poll() is not None
        if not finished_first:
            proc.send_signal(signum)
        try:
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert _alive(seen) == []
    assert leftovers(tmp_path) == []
    if report.read_bytes() != b'{"old": true}\n':
        # the run got to the end first: both outputs complete; the signal, if it came,
        # found the work done (a status of 128+n, or death by the signal after clean-up)
        assert orjson.loads(report.read_bytes().splitlines()[-1])["summary"]["total"] == 1200
        assert notes.exists()
        assert proc.returncode in (1, 128 + signum, -signum), (proc.returncode, err)
        return
    assert not notes.exists()  # neither output, or both
    if proc.returncode != 128 + signum:
        # the signal came while Python was still starting, before canonkit could take
        # it over: nothing had been started or written yet
        assert not finished_first and proc.returncode != 0 and not seen, (proc.returncode, err)
        return
    assert "Traceback" not in err, err


@pytest.mark.slow
def test_sigkill_of_the_parent_leaves_no_orphans(big: Path, tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "canonkit", "reverify", str(big), "--jobs", "2",
         "--report", str(tmp_path / "r.jsonl"), "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
    ) as proc:
        seen = _watch_descendants(proc, time.monotonic() + 2.5)
        proc.kill()
        proc.wait(30)
    assert len(seen) >= 2  # the pool had started
    assert _alive(seen) == []


@pytest.mark.slow
def test_closed_stdout_stops_the_run_and_its_workers(big: Path, tmp_path: Path) -> None:
    """``canonkit reverify --json ... | head``: the reader going away ends the run quietly
    (141), with its workers, and leaves no report or temporary; any other broken pipe is a
    failure (tests/test_cli_policy.py)."""
    report = tmp_path / "report.jsonl"
    with subprocess.Popen(
        [sys.executable, "-m", "canonkit", "reverify", str(big), "--jobs", "2", "--json",
         "--report", str(report), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert len(proc.stdout.read(100)) == 100
        seen = _watch_descendants(proc, time.monotonic() + 0.5)
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 141, err.decode()
    assert err == b""
    assert _alive(seen) == []
    assert not report.exists() and leftovers(tmp_path) == []


# --- D6: a lost worker loses no work ------------------------------------------------------

def _clean_report(big: Path, tmp_path: Path) -> bytes:
    clean = tmp_path / "clean.jsonl"
    done = cli(big, "--jobs", "2", "--report", clean, "--no-progress")
    assert done.returncode == 1, done.stderr
    return clean.read_bytes()


def _workers(proc: subprocess.Popen[bytes]) -> list[psutil.Process]:
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for k in kids:
        try:
            cmd = " ".join(k.cmdline())
        except psutil.NoSuchProcess:
            continue
        if "resource_tracker" not in cmd and ("spawn_main" in cmd or "forkserver" in cmd):
            out.append(k)
    return out


_HOLD = textwrap.dedent("""
    # In pool workers only: the first worker to meet the held Episode writes its pid to
    # CANONKIT_TEST_HOLD_FILE (created exclusively: only one worker ever holds) and waits
    # there until it is killed; the worker that takes the unit over goes on.
    import os, sys, time
    HOLD = os.environ.get("CANONKIT_TEST_HOLD", "").encode()
    MARK = os.environ.get("CANONKIT_TEST_HOLD_FILE", "")
    if HOLD and MARK and "multiprocessing" in " ".join(getattr(sys, "orig_argv", [])):
        import canonkit.reverify.units as _units
        _real = _units.verify_one

        def verify_one(kind, payload, *args, **kwargs):
            if HOLD in payload:
                try:
                    fd = os.open(MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
                except FileExistsError:
                    pass
                else:
                    os.write(fd, str(os.getpid()).encode())
                    os.close(fd)
                    time.sleep(600)
            return _real(kind, payload, *args, **kwargs)

        _units.verify_one = verify_one
""")


@pytest.mark.slow
def test_worker_killed_mid_run_report_is_identical(big: Path, tmp_path: Path) -> None:
    expected = _clean_report(big, tmp_path)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_HOLD)
    held = orjson.loads(big.read_bytes().splitlines()[700])["episode_id"]
    mark = tmp_path / "held-by"
    env = dict(os.environ, CANONKIT_TEST_HOLD=held, CANONKIT_TEST_HOLD_FILE=str(mark),
               PYTHONPATH=os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")]))
    report = tmp_path / "report.jsonl"
    with subprocess.Popen(
        [sys.executable, "-m", "canonkit", "reverify", str(big), "--jobs", "2",
         "--report", str(report), "--no-progress"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    ) as proc:
        deadline = time.monotonic() + 120
        while not (mark.exists() and mark.read_text()) and proc.poll() is None:
            assert time.monotonic() < deadline, "no worker reached the held Episode"
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()[1].decode()
        victim = psutil.Process(int(mark.read_text()))
        assert victim.pid in {w.pid for w in _workers(proc)}  # one of this run's workers
        victim.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err.decode()
    assert b"Traceback" not in err
    assert report.read_bytes() == expected


_POISON = textwrap.dedent("""
    # In pool workers only: die (SIGKILL) on any document that names the poisoned Episode.
    import os, sys
    POISON = os.environ.get("CANONKIT_TEST_POISON", "").encode()
    if POISON and "multiprocessing" in " ".join(getattr(sys, "orig_argv", [])):
        import canonkit.reverify.worker as _w
        _real = _w.verify_one

        def verify_one(kind, payload, *args, **kwargs):
            if POISON in payload:
                os.kill(os.getpid(), 9)
            return _real(kind, payload, *args, **kwargs)

        _w.verify_one = verify_one
        import importlib
        for _name in ("ranges", "units"):  # modules that bound the name at import
            try:
                _m = importlib.import_module("canonkit.reverify." + _name)
            except ImportError:
                continue
            if hasattr(_m, "verify_one"):
                _m.verify_one = verify_one
""")


@pytest.mark.slow
def test_an_episode_that_kills_its_worker_is_reported_worker_lost(tmp_path: Path,
                                                                  small: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_POISON)
    corpus = tmp_path / "c.jsonl"
    docs = [p.read_bytes().strip() for p in sorted(small.glob("*.json"))]
    corpus.write_bytes(b"".join(d + b"\n" for d in docs))
    victim = orjson.loads(docs[4])["episode_id"]
    env = dict(os.environ, CANONKIT_TEST_POISON=victim,
               PYTHONPATH=os.pathsep.join([str(hooks), os.environ.get("PYTHONPATH", "")]))
    done = cli(corpus, "--jobs", "2", "--batch-size", "1", "--json", "--no-progress", env=env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    lines = _lines(done)
    lost = [x for x in lines[:-1] if x["outcome"] == "invalid_record"]
    assert [x["source"] for x in lost] == [{"file": str(corpus), "line": 5}]
    assert lost[0]["reason"].startswith("worker_lost")
    clean = _lines(cli(corpus, "--jobs", "1", "--json", "--no-progress"))
    assert [x for i, x in enumerate(lines[:-1]) if i != 4] == [
        x for i, x in enumerate(clean[:-1]) if i != 4]
