"""``canonkit car verify`` against libipld's ``decode_car`` plus a hashlib pass over every
block, on the same files: the table of docs/car.md.

    python bench/car_vs_libipld.py [--rounds 7] [--records 50000]

The files are bench/car_datasets.py's, written to a temporary directory (the page cache
holds them). Every contender runs once per round, in turn, in this one process; a time is
the minimum over the rounds (interleaved minimums: the same conditions for each). The peer
reads the file, runs ``libipld.decode_car`` on its bytes (on the CARv1 payload of a CARv2:
``decode_car`` reads CARv1 only) and hashes every block with
``hashlib.sha256`` — the block bytes sliced out before timing, so it is not charged for
finding them; for ``big-raw`` (raw blocks, which ``decode_car`` refuses) it only hashes.
canonkit's ``verify`` opens and streams the file, walks every section, recomputes every
CID and checks the CARv2 index; ``strict`` also validates every dag-cbor block as strict
DAG-CBOR. Ratios are the peer's time over canonkit's. Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import hashlib
import shutil
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from car_datasets import write_all

from canonkit import _backend, car

DESCRIPTION = {"repo": "atproto-like repo export, CARv1",
               "repo-v2": "the same, CARv2 + car-multihash-index-sorted",
               "big-dagcbor": "256 KiB dag-cbor blocks (bytes)",
               "big-raw": "256 KiB raw blocks"}


def carv1_payload(data: bytes) -> bytes:
    """The CARv1 inside a CARv2 (``decode_car`` reads CARv1 only, from bytes), else the
    file."""
    if data[:11] != car.PRAGMA:
        return data
    offset, size = struct.unpack_from("<QQ", data, 27)
    return data[offset:offset + size]


def _peer(path: Path, *, decode: bool) -> Callable[[], object]:
    import libipld

    blocks = [block.data for block in car.blocks(path)]
    sha256 = hashlib.sha256

    def run() -> None:
        data = path.read_bytes()
        if decode:
            libipld.decode_car(carv1_payload(data))
        for block in blocks:
            sha256(block).digest()

    return run


def _interleaved(contenders: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):
        for name, run in contenders.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--records", type=int, default=50_000)
    args = parser.parse_args()
    if _backend.LIVE.get("car") != "compiled":
        raise SystemExit(f"canonkit.car runs on its twin: {_backend.WHY_NOT_COMPILED}")
    directory = Path(tempfile.mkdtemp(prefix="canonkit-car-vs-libipld-"))
    try:
        paths = write_all(directory, records=args.records)
        print("| file | size | blocks | `verify` | `verify --strict` | peer | peer / `verify` "
              "| peer / `--strict` |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, path in paths.items():
            report = car.verify(path)
            assert report.ok and report.verified == report.blocks, report.findings[:3]
            contenders: dict[str, Callable[[], object]] = {
                "verify": lambda p=path: car.verify(p),
                "strict": lambda p=path: car.verify(p, strict=True),
                "peer": _peer(path, decode=name != "big-raw"),
            }
            t = _interleaved(contenders, args.rounds)
            peer_name = "hashlib" if name == "big-raw" else "libipld + hashlib"
            print(f"| {name}: {DESCRIPTION[name]} | {path.stat().st_size / 2**20:.1f} MiB "
                  f"| {report.blocks:,} | {t['verify'] * 1e3:.1f} ms "
                  f"| {t['strict'] * 1e3:.1f} ms | {t['peer'] * 1e3:.1f} ms ({peer_name}) "
                  f"| {t['peer'] / t['verify']:.2f}x | {t['peer'] / t['strict']:.2f}x |")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
