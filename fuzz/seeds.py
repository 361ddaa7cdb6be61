"""Build the seed corpus of every fuzz target from the frozen vectors and corpora:

    python fuzz/seeds.py OUT      # writes OUT/<target>/<sha1 of the seed>

- CBOR targets: every hex string in tests/vectors/cbor (JSON and CSV) and in
  conformance/v1 (object vectors and negative cases);
- fps: the cases of conformance/amduat/fps.json and fps_negative.json, laid out as
  ``fps_cases`` reads them;
- astp_documents: tests/vectors/astp/proof-of-record-5.0.0.json and the Episodes of
  examples/seed-table;
- episode_readers: the small kept corpus of fuzz/corpus/episode_readers (a plan of
  mutations, then an Episode: every outcome, both formats) and the proof-of-record vector;
- manifests: the manifests of conformance/amduat;
- conformance: each file of conformance/v1, behind the byte that selects it;
- store: each file of ``store_cases``' small store behind its selector, and the hostile
  cases kept in fuzz/corpus/store/;
- layer3: the exports (``*.json``, behind byte 0) and journals (``*.jsonl``, behind byte 1)
  of fuzz/corpus/layer3 (fuzz/corpus/layer3/README.md says how they were made);
- car: the small CAR files of tests/vectors/car, and CAR files written by
  ``canonkit.car.encode`` (CARv1; CARv2 with either index, padding, fully indexed; every
  hash function) with some broken on purpose (``car_seeds``).
"""
from __future__ import annotations

import csv
import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _harness import REPO
from fps_cases import LEVELS, build

CBOR_TARGETS = ("cbor_core", "cbor_dcbor", "cbor_dag_cbor")
TARGETS = (*CBOR_TARGETS, "fps", "astp_documents", "episode_readers", "manifests",
           "conformance", "layer3", "store", "car")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")


def _hex_strings(value: Any) -> Iterator[bytes]:
    if isinstance(value, str):
        if _HEX.fullmatch(value):
            yield bytes.fromhex(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _hex_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _hex_strings(item)


def cbor_seeds() -> Iterator[bytes]:
    for path in sorted((REPO / "tests" / "vectors" / "cbor").glob("*.json")):
        yield from _hex_strings(json.loads(path.read_bytes()))
    with open(REPO / "tests" / "vectors" / "cbor" / "cde-example-table.csv",
              newline="") as handle:
        for row in csv.reader(handle):
            for cell in row:
                if _HEX.fullmatch(cell.replace(" ", "")):
                    yield bytes.fromhex(cell.replace(" ", ""))
    for name in ("vectors.json", "negative.json"):
        yield from _hex_strings(json.loads((REPO / "conformance" / "v1" / name).read_bytes()))


def _fps_case(case: dict[str, Any]) -> bytes | None:
    try:
        inputs = case["inputs"] if case["op"] == "concat" else \
            [case["input"], *([case["insert"]] if "insert" in case else [])]
        chunks = [bytes.fromhex(h)[:255] for h in inputs]
        level = case.get("level", "byte" if case["op"] in ("slice", "splice") else None)
        offset, length = int(case.get("offset", 0)), int(case.get("length", 0))
    except (KeyError, TypeError, ValueError):
        return None
    if level not in LEVELS or not (0 <= offset < 1 << 32 and 0 <= length < 1 << 32):
        return None
    return build(case["op"], level, offset, length, chunks, use_out=len(b"".join(chunks)) % 2 == 0)


def fps_seeds() -> Iterator[bytes]:
    for name in ("fps.json", "fps_negative.json"):
        for case in json.loads((REPO / "conformance" / "amduat" / name).read_bytes())["cases"]:
            seed = _fps_case(case)
            if seed is not None:
                yield seed


def astp_seeds() -> Iterator[bytes]:
    yield (REPO / "tests" / "vectors" / "astp" / "proof-of-record-5.0.0.json").read_bytes()
    for path in sorted((REPO / "examples" / "seed-table").glob("*.json")):
        yield path.read_bytes()


def episode_reader_seeds() -> Iterator[bytes]:
    for path in sorted((REPO / "fuzz" / "corpus" / "episode_readers").iterdir()):
        yield path.read_bytes()
    vector = REPO / "tests" / "vectors" / "astp" / "proof-of-record-5.0.0.json"
    yield b"\x00" + vector.read_bytes()  # an empty plan: the document as it is


def manifest_seeds() -> Iterator[bytes]:
    for path in sorted((REPO / "conformance" / "amduat").glob("*.json")):
        yield path.read_bytes()


def conformance_seeds() -> Iterator[bytes]:
    for selector, name in enumerate(("vectors.json", "negative.json", "manifest.json")):
        yield bytes([selector]) + (REPO / "conformance" / "v1" / name).read_bytes()


def store_seeds() -> Iterator[bytes]:
    import store_cases

    yield from store_cases.seeds()
    for path in sorted((REPO / "fuzz" / "corpus" / "store").iterdir()):
        yield path.read_bytes()


def layer3_seeds() -> Iterator[bytes]:
    corpus = REPO / "fuzz" / "corpus" / "layer3"
    for path in sorted(corpus.glob("*.json")):
        yield b"\x00" + path.read_bytes()
    for path in sorted(corpus.glob("*.jsonl")):
        yield b"\x01" + path.read_bytes()


def car_seeds() -> Iterator[bytes]:
    from canonkit import car, cbor
    from canonkit.cbor import Link

    for name in ("carv1-basic.car", "carv2-basic.car"):
        yield (REPO / "tests" / "vectors" / "car" / name).read_bytes()
    blocks = [(Link.for_block(data, codec, hash_name), data) for data, codec, hash_name in [
        (cbor.encode({"a": [1, "two"]}, profile="dag-cbor"), "dag-cbor", "sha2-256"),
        (b"raw block", "raw", "blake2b-256"), (b"blake3 block", "raw", "blake3"),
        (b"id", "raw", "identity"), (b"512", "raw", "sha2-512")]]
    roots = [blocks[0][0]]
    yield car.encode(roots, blocks)
    for index in ("car-index-sorted", "car-multihash-index-sorted"):
        yield car.encode(roots, blocks, version=2, index=index, data_padding=3, index_padding=2)
        yield car.encode(roots, blocks, version=2, index=index, fully_indexed=True)
    yield car.encode(roots, blocks, version=2, index=None)
    v1 = car.encode(roots, blocks)
    yield v1[:-3]                                   # a truncated last section
    yield v1 + b"\x00\x00"                          # zero-length sections
    yield v1.replace(b"raw block", b"raw blocK")    # a digest mismatch


def seeds(target: str) -> list[bytes]:
    """The distinct seeds of ``target``, in a stable order."""
    source = {"fps": fps_seeds, "astp_documents": astp_seeds,
              "episode_readers": episode_reader_seeds, "manifests": manifest_seeds,
              "conformance": conformance_seeds, "layer3": layer3_seeds,
              "store": store_seeds, "car": car_seeds}.get(target, cbor_seeds)
    return list(dict.fromkeys(source()))


def write(out: Path) -> dict[str, int]:
    counts = {}
    for target in TARGETS:
        directory = out / target
        directory.mkdir(parents=True, exist_ok=True)
        found = seeds(target)
        for seed in found:
            (directory / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        counts[target] = len(found)
    return counts


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python fuzz/seeds.py OUT")
    for target, count in write(Path(sys.argv[1])).items():
        print(f"{target}: {count} seeds")
