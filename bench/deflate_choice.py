"""Which DEFLATE implementation the store writes and reads with: a measurement.

    python bench/deflate_choice.py [--repeat 7]

Contenders (all write standard zlib streams): the standard library's ``zlib``, python-isal
(``isal_zlib``), ``zlib-ng`` (``zlib_ng``) and libdeflate (``deflate``). Data: the DAG-CBOR
files of ``bench/data`` whole (canada 1.0 MB, citm 0.3 MB, twitter 0.4 MB), and 2000
object-like 1 KiB slices of them. Compression is timed per implementation and level;
decompression on the same streams for every implementation (written by the standard
library at level 6), the way the store decodes: strictly (``decompressobj`` with a
length bound, then end-of-stream and unused-data checks) where the API allows it.
Timings are the minimum of ``--repeat`` interleaved rounds; only the ratios mean anything
(docs/performance.md, How we measure). Prints Markdown tables.
"""
from __future__ import annotations

import argparse
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"


def _implementations() -> dict[str, tuple[Callable[[bytes, int], bytes], Any, list[int]]]:
    out: dict[str, tuple[Callable[[bytes, int], bytes], Any, list[int]]] = {
        "zlib": (lambda d, lv: zlib.compress(d, lv), zlib, [1, 6, 9])}
    try:
        from isal import isal_zlib

        out["isal"] = (lambda d, lv: isal_zlib.compress(d, lv), isal_zlib, [0, 1, 2, 3])
    except ImportError:
        pass
    try:
        from zlib_ng import zlib_ng

        out["zlib-ng"] = (lambda d, lv: zlib_ng.compress(d, lv), zlib_ng, [1, 6, 9])
    except ImportError:
        pass
    try:
        import deflate

        out["libdeflate"] = (lambda d, lv: bytes(deflate.zlib_compress(d, lv)), None,
                             [1, 6, 9, 12])
    except ImportError:
        pass
    return out


def _strict(module: Any) -> Callable[[bytes, int], bytes]:
    def run(stream: bytes, n: int) -> bytes:
        d = module.decompressobj()
        out: bytes = d.decompress(stream, n + 1)
        if not d.eof or d.unused_data or len(out) != n:
            raise ValueError("not one stream of n bytes")
        return out
    return run


def _libdeflate(stream: bytes, n: int) -> bytes:
    import deflate

    # the length is only a bound, and bytes after the stream are not reported: libdeflate's
    # Python binding cannot read strictly
    return bytes(deflate.zlib_decompress(stream, n))


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    files = [p.read_bytes() for p in sorted(DATA.glob("*.dagcbor"))]
    joined = b"".join(files)
    small = [joined[i:i + 1024] for i in range(0, 2000 * 1024, 1024)]
    impls = _implementations()
    for label, items in (("bench/data files (1.8 MB)", files), ("2000 x 1 KiB", small)):
        total = sum(map(len, items))
        print(f"\n### {label}\n")
        print("| implementation | level | size ratio | compress MB/s |")
        print("|---|---|---|---|")
        for name, (compress, _, levels) in impls.items():
            for level in levels:
                streams = [compress(d, level) for d in items]
                t = _best(lambda: [compress(d, level) for d in items], args.repeat)
                print(f"| {name} | {level} | {sum(map(len, streams)) / total:.3f} | "
                      f"{total / t / 1e6:.0f} |")
        streams = [zlib.compress(d, 6) for d in items]
        print("\n| implementation | strict | decompress MB/s |")
        print("|---|---|---|")
        for name, (_, module, _) in impls.items():
            run = _libdeflate if module is None else _strict(module)
            assert [run(s, len(d)) for s, d in zip(streams, items)] == items
            t = _best(lambda: [run(s, len(d)) for s, d in zip(streams, items)], args.repeat)
            print(f"| {name} | {'no' if module is None else 'yes'} | {total / t / 1e6:.0f} |")


if __name__ == "__main__":
    main()
