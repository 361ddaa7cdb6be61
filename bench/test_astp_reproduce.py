"""Seal reproduction per Episode (``canonkit.astp.reproduce``) on the compiled kernels and on
the twin, in the same run.

    python -m pytest bench/test_astp_reproduce.py --benchmark-json=/tmp/repro.json
    python bench/report.py /tmp/repro.json

Both contenders run the same pure-Python package; only the kernel module differs. The twin
copy of ``canonkit.astp`` is a second import of the package made with extensions disabled
(``_backend.import_on_twins``), so the two live side by side. Datasets (canonkit-episode/1
documents built with ``seal_episode`` outside the timed call):

- ``sav2-1000``: 1000 Segments, 100 SPINE Signals, 7 structural members; sav 2.
- ``sav1-ov1-tie8``: 1000 Segments and one 8-Signal tied group sealed in the reverse of the
  stored order, the last of the 8! = 40320 candidate orders: a full tie search.
- ``por-5.0.0``: the 5.0.0 Episode of Record (astp-proof-of-record/1).
"""
from __future__ import annotations

import hashlib
import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from canonkit import _backend

EP = "550e8400-e29b-41d4-a716-446655440000"
POR = Path(__file__).parent.parent / "tests" / "vectors" / "astp" / "proof-of-record-5.0.0.json"


COMPILED = importlib.import_module("canonkit.astp")
TWIN = _backend.import_on_twins("canonkit.astp")  # the twin's kernels
assert TWIN.__backend__ == "python"
CONTENDERS = {"canonkit-c": COMPILED, "canonkit-py": TWIN}


def H(text: str) -> str:
    return hashlib.sha3_256(text.encode()).hexdigest()


def u(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012x}"


def _body(n: int, signals: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "canonkit-episode/1", "episode_id": EP, "status": "SEALED",
            "closed_at": "2026-01-02T00:00:00Z", "sealed_at": "2026-01-02T00:00:00Z",
            "segments": [{"node_id": u(i), "node_type": "segment", "schema_version": "1.0.0",
                          "sequence_index": i, "content_hash": H(f"s{i}"), "parent_node_id": EP,
                          "retention_tier": "STANDARD", "created_at": "2026-01-01T00:00:00Z"}
                         for i in range(n)],
            "signals": signals, "structural_members": [{"hash": H(f"m{i}")} for i in range(7)],
            "seal": None}


def _datasets() -> dict[str, tuple[dict[str, Any], str]]:
    sav2 = COMPILED.seal_episode(
        _body(1000, [{"content_hash": H(f"g{i}"), "received_at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z",
                      "placement": "SPINE"} for i in range(100)]),
        spine_algorithm_version=2, ordering_version=2)
    tied = [{"content_hash": H(f"t{i}"), "received_at": "2026-01-01T00:05:00Z", "placement": "SPINE"}
            for i in range(8)]
    tie8 = COMPILED.seal_episode(_body(1000, tied), spine_algorithm_version=1, ordering_version=1,
                                 signal_order=[s["content_hash"] for s in tied][::-1])
    return {"sav2-1000": (sav2, "reproduced"), "sav1-ov1-tie8": (tie8, "reproduced_by_search"),
            "por-5.0.0": (json.loads(POR.read_text()), "reproduced")}


DATASETS = _datasets()


@pytest.mark.parametrize("contender", sorted(CONTENDERS))
@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_reproduce(benchmark: Any, dataset: str, contender: str) -> None:
    package = CONTENDERS[contender]
    document, expected = DATASETS[dataset]
    benchmark.group = f"astp-reproduce:{dataset}"
    benchmark.extra_info["contender"] = contender
    if contender == "canonkit-py" and dataset == "sav1-ov1-tie8":
        result = benchmark.pedantic(package.reproduce, args=(document,), rounds=2, iterations=1)
    else:
        result = benchmark(package.reproduce, document)
    assert result.outcome == expected
