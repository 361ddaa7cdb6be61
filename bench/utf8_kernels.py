"""The compiled ``check``'s UTF-8 kernels (scalar, SSE4.1, AVX2, AVX-512:
ext/cbor/cbor_utf8.h) on arrays of non-ASCII text strings of one length, per length: where
the vector kernels start to pay (``CU_SIMD_MIN``, ``CU_AVX2_MIN``, ``CU_AVX512_MIN``).

    PYTHONPATH=src python bench/utf8_kernels.py [--rounds 30]

Each array holds about 1 MB of text: strings of mostly-ASCII text with one 2-byte and one
3-byte character in every 16 bytes (like the non-ASCII strings of twitter.json). Every
kernel is called in turn inside each round (``_utf8_kernel`` selects it; strings shorter
than a kernel's minimum take the narrower one); the minimum thread time per string, the
whole ``check`` of one array item, is printed. Strings of 8 bytes or fewer are ASCII here
(the 16-byte unit's first 10 bytes), so those rows time the check's own ASCII test.
"""
from __future__ import annotations

import argparse
import time

from canonkit.cbor import _decode, encode

LENGTHS = (4, 8, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128, 256, 1024, 4096)


def text_of(n: int) -> str:
    """n bytes of UTF-8 cut from repeats of a 16-byte unit (padded with "a" where the cut
    splits a character)."""
    b = ("abcdefghijé€xyz".encode() * (n // 16 + 1))[:n]
    s = b.decode("utf-8", errors="ignore")
    return s + "a" * (n - len(s.encode()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    kernels = _decode._utf8_kernels()
    auto = _decode._utf8_kernel()
    print(f"{'bytes':>6} " + " ".join(f"{k + ' ns':>11}" for k in kernels))
    for n in LENGTHS:
        s = text_of(n)
        count = max(1, 1_000_000 // n)
        data = encode([s] * count)
        best = dict.fromkeys(kernels, float("inf"))
        for _ in range(args.rounds):
            for k in kernels:
                _decode._utf8_kernel(k)
                start = time.thread_time()
                _decode.check(data)
                best[k] = min(best[k], time.thread_time() - start)
        print(f"{len(s.encode()):6} " + " ".join(f"{best[k] / count * 1e9:11.1f}" for k in kernels))
    _decode._utf8_kernel(auto)


if __name__ == "__main__":
    main()
