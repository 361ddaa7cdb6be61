"""Named CBOR benchmark datasets, built deterministically (fixed seeds) and cached.

Each dataset is a Python value; ``bench/test_cbor.py`` encodes it with every contender
and decodes each contender's own encoding. The three real documents are DAG-CBOR files
(bench/data/*.dagcbor, nativejson-benchmark JSON) decoded with libipld outside any timing.
"""
from __future__ import annotations

import functools
import hashlib
import random
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"

# (name, description)
DATASETS = {
    "record": "one 5-key record (87 B)",
    "records10k": "10k records of 4-8 keys: name, size, 32-byte sha, children ints, ok bool",
    "blob8m": "an 8 MiB byte string in a one-key map",
    "tree": "a 3-ary tree of depth 8 (3280 maps)",
    "ints100k": "100k ints of every head size",
    "texts10k": "10k 100-character non-ASCII strings",
    "twitter": "twitter.json as DAG-CBOR (403 KB)",
    "citm": "citm_catalog.json as DAG-CBOR (342 KB)",
    "canada": "canada.json as DAG-CBOR (1.06 MB, mostly floats)",
}
# Small enough that the pure-Python twin is worth timing.
TWIN_DATASETS = ("record", "tree", "twitter")
# Float-free: core and dag-cbor produce identical bytes.
REAL_FILES = {"twitter": "twitter.json.dagcbor", "citm": "citm_catalog.json.dagcbor",
              "canada": "canada.json.dagcbor"}


def _record(rng: random.Random, i: int) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "name": f"file-{i:05d}-{rng.choice(['alpha', 'beta', 'gamma', 'delta'])}.dat",
        "size": rng.randrange(1 << 32),
        "sha": hashlib.sha256(i.to_bytes(4, "big")).digest(),
        "children": [rng.randrange(1 << rng.choice((4, 8, 16, 32))) for _ in range(rng.randrange(6))],
    }
    # 4 to 8 keys: "ok" and up to three optional fields
    extra = rng.randrange(5)
    if extra >= 1:
        rec["ok"] = rng.random() < 0.9
    if extra >= 2:
        rec["mode"] = 0o644
    if extra >= 3:
        rec["mtime"] = 1_700_000_000 + rng.randrange(10**7)
    if extra >= 4:
        rec["owner"] = rng.choice(["root", "alice", "bob"])
    return rec


def _tree(depth: int, counter: list[int]) -> dict[str, Any]:
    counter[0] += 1
    node: dict[str, Any] = {"id": counter[0], "name": f"n{counter[0]}"}
    if depth > 1:
        node["kids"] = [_tree(depth - 1, counter) for _ in range(3)]
    return node


@functools.lru_cache(maxsize=None)
def dataset(name: str) -> Any:
    """The Python value of dataset ``name`` (built once per process)."""
    if name == "record":
        return {"name": "report-2026.pdf", "size": 1_234_567,
                "sha": hashlib.sha256(b"report").digest(), "children": [1, 2, 3], "ok": True}
    if name == "records10k":
        rng = random.Random(10_000)
        return [_record(rng, i) for i in range(10_000)]
    if name == "blob8m":
        return {"blob": random.Random(8).randbytes(8 << 20)}
    if name == "tree":
        return _tree(8, [0])
    if name == "ints100k":
        rng = random.Random(100_000)
        widths = (4, 8, 16, 32, 63)
        return [rng.randrange(1 << rng.choice(widths)) * rng.choice((1, -1))
                for _ in range(100_000)]
    if name == "texts10k":
        rng = random.Random(10)
        alphabet = "äöüßéèçñøåœæ漢字かなカナ한글αβγδЖЯ€→✓"
        return ["".join(rng.choice(alphabet) for _ in range(100)) for _ in range(10_000)]
    if name in REAL_FILES:
        import libipld

        return libipld.decode_dag_cbor((DATA / REAL_FILES[name]).read_bytes())
    raise KeyError(name)
