"""Layer 3: Form B hashing of 10^5 realistic ExecutionNodes, and verification of a 10^4-node
export.

    python -m pytest bench/test_astp_layer3.py --benchmark-json=/tmp/l3.json
    python bench/report.py /tmp/l3.json

Form B contenders over the same 10^5 dicts (as parsed from JSON: UUIDs and instants as
their §19.2 text, a nested ``input_state`` of ~20 values, ~850 bytes of preimage each):
``canonkit-c`` (``execution_node_hash``, compiled Form B kernel), ``canonkit-py`` (the twin:
the §19.2 pseudo-code with json.dumps), and ``json-dumps-sha3`` — the plain loop
``hashlib.sha3_256(json.dumps(node, separators=(",", ":"), ensure_ascii=False).encode())``
over the dicts as they are. ``extra_info["nodes_per_s"]`` is on every contender, and
``["ratio_interleaved_min"]`` on ``canonkit-c``: the loop's time over Form B's, both timed
alternately (best of 5 each), the steadiest ratio when the load varies.

Verification: ``verify`` of one export with 10^4 nodes (workflows of 20 executions, skills
on half of them), on the compiled kernels and on the twin's; and against its floor, the
plain loop ``hashlib.sha3_256(orjson.dumps(x))`` over every node, audit record and edge of
the export (``["ratio_to_floor_interleaved_min"]``: verify's time over the loop's, timed
alternately, best of 5 each; ``["ratio_to_floor_cpu_interleaved_min"]`` the same in CPU
time). The inputs are bench/layer3_datasets.py's.

Writes: ``Workspace`` building an export in memory (``["nodes_per_s"]``, and
``["nodes_per_cpu_s"]`` by the least CPU time of 5 more), and over a journal, where every
write is two appended lines each flushed and fsynced, so the rate is the disk's fsync rate
over two (``["fsyncs_per_s"]`` says what the disk gave). bench/layer3_speed.py measures
the three against their floors interleaved, wall and CPU.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import layer3_datasets as data
import pytest

from canonkit import _backend
from canonkit.astp import layer3

N_NODES = 100_000
TWIN = _backend.import_on_twins("canonkit.astp")
assert TWIN.__backend__ == "python"


NODES = [data.execution_node(random.Random(42), i) for i in range(N_NODES)]


def _form_b(hash_node: Callable[[dict[str, Any]], str]) -> Callable[[], object]:
    return lambda: [hash_node(n) for n in NODES]


def _loop() -> object:
    dumps, sha3 = json.dumps, hashlib.sha3_256
    return [sha3(dumps(n, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
            for n in NODES]


def _interleaved(fast: Callable[[], object], slow: Callable[[], object], pairs: int = 5,
                 clock: Callable[[], float] = time.perf_counter) -> float:
    best_fast = best_slow = float("inf")
    for _ in range(pairs):
        t0 = clock()
        slow()
        t1 = clock()
        fast()
        t2 = clock()
        best_slow, best_fast = min(best_slow, t1 - t0), min(best_fast, t2 - t1)
    return best_slow / best_fast


def _cpu_min(fn: Callable[[], object], rounds: int = 5) -> float:
    """The least CPU time of this process ``fn`` took over ``rounds`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


FORM_B = {"canonkit-c": _form_b(layer3.execution_node_hash),
          "canonkit-py": _form_b(TWIN.layer3.execution_node_hash),
          "json-dumps-sha3": _loop}


@pytest.mark.parametrize("contender", list(FORM_B))
def test_form_b_hashing(benchmark: Any, contender: str) -> None:
    fn = FORM_B[contender]
    benchmark.group = "astp-layer3:form-b-1e5-execution-nodes"
    benchmark.extra_info["contender"] = contender
    benchmark.pedantic(fn, rounds=3 if contender != "canonkit-py" else 1, iterations=1)
    benchmark.extra_info["nodes_per_s"] = N_NODES / benchmark.stats.stats.min
    if contender == "canonkit-c":
        assert FORM_B["canonkit-c"]() == FORM_B["canonkit-py"]()   # same hashes, both backends
        benchmark.extra_info["ratio_interleaved_min"] = _interleaved(fn, _loop)


EXPORT = data.export(10_000)


@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-py"])
def test_verify_10k_node_export(benchmark: Any, contender: str) -> None:
    verify = layer3.verify if contender == "canonkit-c" else TWIN.layer3.verify
    assert len(EXPORT["nodes"]) == 10_000 and verify(EXPORT).ok
    benchmark.group = "astp-layer3:verify-1e4-node-export"
    benchmark.extra_info["contender"] = contender
    benchmark.pedantic(lambda: verify(EXPORT), rounds=3, iterations=1)
    benchmark.extra_info["nodes_per_s"] = 10_000 / benchmark.stats.stats.min


def test_verify_against_the_hashing_floor(benchmark: Any) -> None:
    benchmark.group = "astp-layer3:verify-vs-hashing-floor"
    benchmark.pedantic(lambda: layer3.verify(EXPORT), rounds=1, iterations=1)
    benchmark.extra_info["ratio_to_floor_interleaved_min"] = _interleaved(
        lambda: data.hashing_floor(EXPORT), lambda: layer3.verify(EXPORT))
    # the same in CPU time: a round that waits for a core counts in wall time only
    benchmark.extra_info["ratio_to_floor_cpu_interleaved_min"] = _interleaved(
        lambda: data.hashing_floor(EXPORT), lambda: layer3.verify(EXPORT),
        clock=time.process_time)


WRITES = 2_000


def test_workspace_writes_in_memory(benchmark: Any) -> None:
    benchmark.group = "astp-layer3:workspace-writes"
    benchmark.extra_info["contender"] = "in-memory"
    plan = data.writes(WRITES)
    ws = benchmark.pedantic(lambda: data.write(plan), rounds=5, iterations=1)
    assert len(ws.export()["nodes"]) == WRITES and layer3.verify(ws.export()).ok
    benchmark.extra_info["nodes_per_s"] = WRITES / benchmark.stats.stats.min
    benchmark.extra_info["nodes_per_cpu_s"] = WRITES / _cpu_min(lambda: data.write(plan))


def test_workspace_writes_to_a_journal(benchmark: Any, tmp_path: Path) -> None:
    benchmark.group = "astp-layer3:workspace-writes"
    benchmark.extra_info["contender"] = "journal"
    plan = data.writes(200)
    paths = iter(tmp_path / f"journal-{i}.jsonl" for i in range(100))
    ws = benchmark.pedantic(lambda: data.write(plan, next(paths)), rounds=3, iterations=1)
    writes = len(ws.audit)
    benchmark.extra_info["nodes_per_s"] = 200 / benchmark.stats.stats.min
    benchmark.extra_info["fsyncs_per_s"] = (2 * writes + 1) / benchmark.stats.stats.min
