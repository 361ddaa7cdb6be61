"""The generic engine layer (canonkit.engines): order, bounded windows, lost workers,
shutdown, signals, and workers that die with their parent."""
from __future__ import annotations

import doctest
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

import engine_tasks as tasks
from canonkit import engines
from canonkit.engines import Interrupted, Lost, open_engine

HERE = Path(__file__).parent


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_docstring_example_runs() -> None:
    failures, tried = doctest.testmod(engines)
    assert tried >= 1 and failures == 0


@pytest.mark.parametrize("jobs", [1, 2])
def test_results_in_task_order_with_args(jobs: int) -> None:
    with open_engine("local", jobs=jobs) as engine:
        out = list(engine.map(tasks.square, range(40), 1))
    assert out == [(i, i * i + 1) for i in range(40)]


def test_tasks_are_drawn_lazily_within_the_window() -> None:
    drawn: list[int] = []

    def source() -> object:
        for i in range(100):
            drawn.append(i)
            yield i

    with open_engine("local", jobs=2) as engine:
        assert isinstance(engine, engines.LocalPoolEngine)
        it = engine.map(tasks.square, source())
        assert next(it) == (0, 0)
        assert len(drawn) <= engine.window + 1
        assert list(it)[-1] == (99, 99 * 99)


def test_a_worker_lost_once_loses_nothing(tmp_path: Path) -> None:
    marker = str(tmp_path / "died")
    with open_engine("local", jobs=2) as engine:
        out = list(engine.map(tasks.die_once, [(i, marker) for i in range(12)]))
    assert os.path.exists(marker)  # the worker really died
    assert [r for _, r in out] == [i * i for i in range(12)]


def test_a_task_that_always_kills_its_worker_is_lost_alone() -> None:
    with open_engine("local", jobs=2) as engine:
        out = dict(engine.map(tasks.die_always, range(12)))
        # the pool was replaced and still works afterwards
        assert list(engine.map(tasks.square, [7])) == [(7, 49)]
    assert isinstance(out[5], Lost) and "died twice" in out[5].reason
    assert {k: v for k, v in out.items() if k != 5} == {i: i * i for i in range(12) if i != 5}


def test_a_worker_that_dies_right_after_starting_is_a_lost_task() -> None:
    """Its start-up handshake and its death arrive together (the parent was busy): the
    task is run again and lost, not an EOFError out of the engine."""
    with engines.LocalPoolEngine(1) as engine:
        ticket = engine.submit(tasks.die_always, 5)
        deadline = time.monotonic() + 60
        while any(_running(pid) for pid in engine.pids()) and time.monotonic() < deadline:
            time.sleep(0.05)  # started, handshake sent, task taken, dead: none of it read
        outcome = engine.settle(ticket)
        assert isinstance(outcome, Lost), outcome
        assert list(engine.map(tasks.square, [3])) == [(3, 9)]


def test_a_task_exception_propagates_and_the_pool_stops() -> None:
    with pytest.raises(ValueError, match="bug in task 0"):
        with open_engine("local", jobs=2) as engine:
            list(engine.map(tasks.boom, range(4)))
    assert isinstance(engine, engines.LocalPoolEngine)
    assert not [pid for pid in engine.pids() if _running(pid)]


def test_abort_kills_running_workers() -> None:
    import threading

    engine = open_engine("local", jobs=2)
    assert isinstance(engine, engines.LocalPoolEngine)
    errors: list[BaseException] = []

    def consume() -> None:
        try:
            list(engine.map(tasks.slow_square, range(2), 60.0))
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            errors.append(exc)

    thread = threading.Thread(target=consume)
    thread.start()
    deadline = time.monotonic() + 30
    pids = engine.pids()
    assert len(pids) == 2
    while time.monotonic() < deadline and not all(w.ticket for w in engine._workers):
        time.sleep(0.1)
    time.sleep(1.0)  # both running their 60-second task
    started = time.monotonic()
    engine.abort()
    thread.join(30)
    assert not thread.is_alive() and time.monotonic() - started < 10
    assert errors  # the consumer learns the work was abandoned
    assert not [pid for pid in pids if _running(pid)]


def test_validation() -> None:
    with pytest.raises(ValueError):
        open_engine("local", jobs=0)
    with pytest.raises(ValueError):
        open_engine("spark")
    with pytest.raises(ValueError):
        open_engine("local", scheduler="tcp://127.0.0.1:1")


def test_interruptible_turns_sigterm_into_interrupted() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as info:
        with engines.interruptible():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert info.value.signum == signal.SIGTERM and info.value.exit_status == 143
    assert isinstance(info.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is before


_SPAWN_MASKS_SCRIPT = textwrap.dedent("""
    import signal
    from multiprocessing import util
    from canonkit.engines import open_engine
    real = util.spawnv_passfds
    def spawn(path, args, fds):
        if any("spawn_main" in str(a) for a in args):  # a worker, not the resource tracker
            held = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, ())
            print("held" if held else "open", flush=True)
        return real(path, args, fds)
    util.spawnv_passfds = spawn
    with open_engine("local", jobs=2) as engine:
        assert list(engine.map(abs, [-1, -2])) == [(-1, 1), (-2, 2)]
""")


def test_signals_stay_held_while_every_worker_starts() -> None:
    # a fresh interpreter: its first worker start also starts CPython's resource tracker,
    # which unblocks SIGINT and SIGTERM as it starts; an interrupt landing after that,
    # between a worker's spawn and the pipe write, left a child the pool did not know
    out = subprocess.run([sys.executable, "-c", _SPAWN_MASKS_SCRIPT], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.split() == ["held", "held"]


_ORPHAN_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import engine_tasks
    from canonkit.engines import open_engine
    engine = open_engine("local", jobs=2)
    for task, pid in engine.map(engine_tasks.worker_pid, range(6), 0.2):
        print(pid, flush=True)
        if task == 1:
            break
    # hang with two workers busy: the test kills this process now
    list(engine.map(engine_tasks.slow_square, range(4), 60.0))
""")


def _descendants_after(proc: subprocess.Popen[str], lines: int) -> list[psutil.Process]:
    assert proc.stdout is not None
    for _ in range(lines):
        assert proc.stdout.readline()
    time.sleep(0.5)
    return psutil.Process(proc.pid).children(recursive=True)


def _wait_gone(procs: list[psutil.Process], seconds: float = 15) -> list[psutil.Process]:
    _, alive = psutil.wait_procs(procs, timeout=seconds)
    return [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_their_parent(how: int) -> None:
    with subprocess.Popen([sys.executable, "-c", _ORPHAN_SCRIPT.format(tests=str(HERE))],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            children = _descendants_after(proc, 2)
            assert len(children) >= 2  # the workers (and the resource tracker)
            proc.send_signal(how)
            proc.wait(30)
            assert _wait_gone(children) == []
        finally:
            proc.kill()


@pytest.mark.slow
def test_dask_local_cluster_in_order() -> None:
    pytest.importorskip("dask.distributed")
    with open_engine("dask", jobs=2) as engine:
        assert engine.jobs == 2 and engine.shares_files
        out = list(engine.map(tasks.square, range(20), 3))
    assert out == [(i, i * i + 3) for i in range(20)]


def test_workers_that_cannot_start_end_the_run(tmp_path: Path) -> None:
    """A script without the main guard: every spawned worker fails while importing it. The
    parent must say so at once, not lose every task to worker_lost (or spin)."""
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        import engine_tasks
        from canonkit.engines import open_engine
        with open_engine("local", jobs=2) as engine:
            print(list(engine.map(engine_tasks.square, range(4))))
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "failed to start" in done.stderr
