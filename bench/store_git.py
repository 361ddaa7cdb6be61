"""What the store benchmarks (``store_vs_git.py``, ``store_targets.py``) share: git's
commands, the random reads both time, and the interleaved timing of contenders."""
from __future__ import annotations

import random
import resource
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

Contender = tuple[Callable[[], object], Callable[[], None] | None]


def write_files(base: Path, items: list[bytes]) -> tuple[Path, bytes]:
    """Each object as a file under ``base/files``: the directory, and the files' paths
    as ``hash-object --stdin-paths`` takes them."""
    files = base / "files"
    files.mkdir()
    for i, data in enumerate(items):
        (files / f"{i:06d}").write_bytes(data)
    return files, "".join(f"{files / f'{i:06d}'}\n" for i in range(len(items))).encode()


def init_bare(repo: Path) -> None:
    """An empty bare repository at ``repo`` (whatever was there is removed)."""
    shutil.rmtree(repo, ignore_errors=True)
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """``git -C repo ARGS`` with ``stdin``; its stdout."""
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin,
                          stdout=subprocess.PIPE, check=True).stdout


def cpu_seconds() -> float:
    """CPU time of this process (every thread) and of its finished children (git)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def interleaved(contenders: list[Contender], repeat: int,
                clock: Callable[[], float] = time.perf_counter
                ) -> list[tuple[float, object]]:
    """Each contender's ``(minimum time, last result)``, the contenders called in turn
    round by round (``fresh``, if given, runs before each call, untimed). ``clock``:
    wall time, or ``cpu_seconds`` (CPU spent, whatever else the machine runs)."""
    best = [float("inf")] * len(contenders)
    results: list[object] = [None] * len(contenders)
    for _ in range(repeat):
        for i, (fn, fresh) in enumerate(contenders):
            if fresh is not None:
                fresh()
            start = clock()
            results[i] = fn()
            best[i] = min(best[i], clock() - start)
    return list(zip(best, results))


def random_reads(oids: list[bytes], addresses: list[str]) -> tuple[bytes, list[str]]:
    """``len(oids)`` random picks (with repeats, the same every run): git's ids as
    ``cat-file --batch`` input, and the same objects' store addresses."""
    rng = random.Random(5)
    picks = [rng.randrange(len(oids)) for _ in range(len(oids))]
    return b"".join(oids[i] + b"\n" for i in picks), [addresses[i] for i in picks]


def cat_file(repo: Path, batch: bytes) -> Callable[[], None]:
    """``git cat-file --batch`` of ``batch``, its output read to the end."""
    def run() -> None:
        with subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
            out, _ = proc.communicate(batch)
            assert len(out) > 1024 * batch.count(b"\n")
    return run
