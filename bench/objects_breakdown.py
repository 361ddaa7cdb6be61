"""Where the time of encoding + addressing one ``commit`` goes, as interleaved minimums.

    PYTHONPATH=src python bench/objects_breakdown.py [--rounds 60] [--number 500]

Each contender is timed in turn, ``--rounds`` times ``--number`` calls, and its minimum
kept, so a burst of load hits every contender alike. The same object
as ``bench/test_objects.py`` (``objects:commit-5-field``): canonkit's ``address_object``
next to its parts (the fields check, ``encode_merged``, ``address``) and next to the
peers (cbrrr + blake3, the bare ``blake3`` package calls), and ``Link.for_block`` of the
same bytes next to its checking path and the bare hash. Times are in ns per call; the
ratio is cbrrr + blake3's minimum over the contender's (above 1: faster than the peer).
"""
from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from hashlib import sha256

import cbrrr
from blake3 import blake3

from canonkit import cbor, objects
from canonkit.cbor import Link
from canonkit.cbor._cid import make_cid

FIELDS = {"tree": bytes(range(32)), "parents": [bytes(range(1, 33))],
          "author": "Ada Lovelace <ada@example.org>", "time": 1767225600000,
          "message": "initial import\n"}
ENVELOPE = {"t": "commit", "v": 1, **FIELDS}


def contenders() -> dict[str, Callable[[], object]]:
    data = cbrrr.encode_dag_cbor(ENVELOPE)
    spec = objects.get_kind("commit", 1)
    encode_merged = cbor.Encoder(profile="core").encode_merged
    address_object, address = objects.address_object, objects.address
    hasher = blake3()

    def package_floor() -> bytes:  # the package's three calls on a reused hasher
        hasher.reset()
        hasher.update(data)
        return hasher.digest()  # type: ignore[no-any-return]

    assert address_object("commit", FIELDS) == "blake3:" + blake3(data).hexdigest()
    assert encode_merged(spec._envelope, FIELDS) == data
    return {
        "canonkit address_object (check, encode, hash)": lambda: address_object(
            "commit", FIELDS),
        "cbrrr + blake3 (encode, hash)": lambda: "blake3:" + blake3(
            cbrrr.encode_dag_cbor(ENVELOPE)).hexdigest(),
        "part: fields check (spec._fast)": lambda: spec._fast(FIELDS),
        "part: cbor encode_merged(envelope, fields)": lambda: encode_merged(
            spec._envelope, FIELDS),
        "part: canonkit address(bytes)": lambda: address(data),
        "peer part: cbrrr.encode_dag_cbor": lambda: cbrrr.encode_dag_cbor(ENVELOPE),
        "peer part: blake3(x).hexdigest()": lambda: "blake3:" + blake3(data).hexdigest(),
        "package: reset+update+digest (reused hasher)": package_floor,
        "package: blake3() construction": blake3,
        # a CID for the same bytes: the fast path, the checking path, the raw hash
        "Link.for_block(bytes)": lambda: Link.for_block(data),
        "part: Link(make_cid(...)) (checking path)": lambda: Link(
            make_cid(data, "dag-cbor", "sha2-256", 1)),
        "package: hashlib.sha256(bytes).digest()": lambda: sha256(data).digest(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--number", type=int, default=500)
    args = parser.parse_args()
    runs = contenders()
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.rounds):
        for name, run in runs.items():
            best[name] = min(best[name], timeit.timeit(run, number=args.number) / args.number)
    baseline = best["cbrrr + blake3 (encode, hash)"]
    print(f"{'contender':48} {'min ns':>8} {'cbrrr+blake3 / it':>18}")
    for name, seconds in best.items():
        print(f"{name:48} {seconds * 1e9:8.0f} {baseline / seconds:17.2f}x")


if __name__ == "__main__":
    main()
