"""Interleaved min-of-N timings of the CBOR decode/check targets, in one process.

    PYTHONPATH=src python bench/cbor_interleaved.py [ROUNDS]

Every contender is called once per round, in turn, so a burst of load hits all of
them alike; each line reports minimum times over the rounds, in CPU time of the calling
thread (``time.thread_time``: time spent waiting for a core is not counted; collector
passes and page faults are). Columns: strict
decode against libipld's decode of its own encoding (libipld time / canonkit time) with
the cyclic garbage collector on (as a program runs by default) and off (``gc.disable()``
around the timed calls: the raw cost of building the objects, without the collector
passes a decoder may trigger), ``check`` throughput in GB/s, and ``check`` against
canonkit's own decode of the same bytes (decode time / check time). Last line: dag-cbor
encode of canada against libipld.
"""
from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import libipld  # noqa: E402
from backends import backend  # noqa: E402
from cbor_datasets import dataset  # noqa: E402

DATASETS = ("records10k", "twitter", "citm", "canada")


def minimums(fns: list[Callable[[], object]], rounds: int, collector: bool = True) -> list[float]:
    """Each call's minimum time over ``rounds``, the calls interleaved round by round;
    ``collector=False`` times them with the cyclic garbage collector disabled."""
    best = [float("inf")] * len(fns)
    was_enabled = gc.isenabled()
    try:
        for _ in range(rounds):
            for i, fn in enumerate(fns):
                if not collector:
                    gc.disable()
                start = time.thread_time()
                result = fn()
                elapsed = time.thread_time() - start
                del result  # freed outside the timed call, for every contender
                if was_enabled:
                    gc.enable()
                best[i] = min(best[i], elapsed)
    finally:
        if was_enabled:
            gc.enable()
    return best


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    cbor = backend("cbor", "c")
    print(f"{'dataset':11} {'profile':8} {'libipld/decode':>14} {'gc off':>7} "
          f"{'check GB/s':>10} {'decode/check':>12}")
    for name in DATASETS:
        value = dataset(name)
        theirs = libipld.encode_dag_cbor(value)
        for profile in ("core", "dag-cbor"):
            data = cbor.encode(value, profile=profile)
            decoder = cbor.Decoder(profile=profile)
            dec, lib, chk = minimums([lambda: decoder.decode(data),
                                      lambda: libipld.decode_dag_cbor(theirs),
                                      lambda: decoder.check(data)], rounds)
            raw, raw_lib = minimums([lambda: decoder.decode(data),
                                     lambda: libipld.decode_dag_cbor(theirs)], rounds,
                                    collector=False)
            print(f"{name:11} {profile:8} {lib / dec:14.2f} {raw_lib / raw:7.2f} "
                  f"{len(data) / chk / 1e9:10.2f} {dec / chk:12.2f}")
    value = dataset("canada")
    encoder = cbor.Encoder(profile="dag-cbor")
    enc, lib = minimums([lambda: encoder.encode(value), lambda: libipld.encode_dag_cbor(value)],
                        rounds)
    print(f"canada encode dag-cbor: libipld/canonkit {lib / enc:.2f}")


if __name__ == "__main__":
    main()
