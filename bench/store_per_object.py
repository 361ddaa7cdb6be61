"""Where a read of one 1 KiB object goes: the store's reads next to their parts, per object.

    python bench/store_per_object.py [--objects 20000] [--rounds 5]

On ``store_datasets.objects_1k``, stores written with ``durable=False`` in a temporary
directory: a packed store (``repack``, ``deflate="auto"``), one with raw entries
(``deflate="never"``) and a loose one. Each row reads the same random addresses (or hashes
or inflates the same objects) and keeps its least CPU time over ``--rounds``; printed in
µs per object. The parts: ``zlib.decompress`` of each object compressed at level 6 (with
libdeflate and ISA-L beside it when installed), ``blake3`` of each object, the address
parse and the kernel's index search without and with the hash.
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
import zlib
from collections.abc import Callable

from blake3 import blake3
from store_datasets import objects_1k

from canonkit.store import Store
from canonkit.store.store import inflate


def _least_cpu(fn: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def _store(root: str, objects: list[bytes], deflate: str | None) -> tuple[Store, list[str]]:
    store = Store.init(root, durable=False)
    addresses = [store.put(data) for data in objects]
    if deflate is not None:
        store.repack(deflate=deflate)
    return store, addresses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    objects = objects_1k(args.objects)
    with tempfile.TemporaryDirectory() as tmp:
        packed, addresses = _store(tmp + "/packed", objects, "auto")
        raw, _ = _store(tmp + "/raw", objects, "never")
        loose, _ = _store(tmp + "/loose", objects, None)
        rng = random.Random(1)
        wanted = [addresses[rng.randrange(len(addresses))] for _ in range(args.objects)]
        digests = [raw.kernel.parse_address(a) for a in wanted]
        pack = raw.packs.guarded()[0]
        find, index = pack.pack.find, pack.index
        streams = [zlib.compress(data, 6) for data in objects]
        rows: dict[str, Callable[[], object]] = {
            "`get_many` (DEFLATE entries)": lambda: packed.get_many(wanted),
            "loop of `get` (DEFLATE entries)": lambda: [packed.get(a) for a in wanted],
            "`zlib.decompress`": lambda: [zlib.decompress(s) for s in streams],
            "`blake3(x).digest()`": lambda: [blake3(data).digest() for data in objects],
            "loop of `get` (raw entries)": lambda: [raw.get(a) for a in wanted],
            "loop of `get` (loose files)": lambda: [loose.get(a) for a in wanted],
            "address parse": lambda: [raw.kernel.parse_address(a) for a in wanted],
            "index search and copy (raw)": lambda: [find(index, d, False, inflate, True)
                                                    for d in digests],
            "the same, verified": lambda: [find(index, d, True, inflate, True)
                                           for d in digests],
        }
        try:
            import deflate
        except ImportError:
            pass
        else:
            rows["libdeflate `zlib_decompress`"] = lambda: [
                deflate.zlib_decompress(s, 1024) for s in streams]
        try:
            from isal import isal_zlib
        except ImportError:
            pass
        else:
            rows["ISA-L `decompress`"] = lambda: [isal_zlib.decompress(s) for s in streams]
        print(f"{args.objects} objects of 1 KiB (cbor); CPU, least of {args.rounds} rounds\n")
        print("| read or part | µs per object |\n|---|---|")
        for name, fn in rows.items():
            print(f"| {name} | {_least_cpu(fn, args.rounds) / args.objects * 1e6:.2f} |")
        packed.close()
        raw.close()
        loose.close()


if __name__ == "__main__":
    main()
