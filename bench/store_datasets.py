"""Object sets for the store benchmarks: 1 KiB objects of CBOR (slices of the DAG-CBOR
files in ``bench/data``, each with a unique 8-byte prefix: compressible like real object
data), the same with their second half random (half compressible) and 1 MiB random
objects (incompressible)."""
from __future__ import annotations

import random
from pathlib import Path

DATA = Path(__file__).parent / "data"


def objects_1k(n: int) -> list[bytes]:
    """``n`` distinct 1 KiB objects."""
    src = b"".join(p.read_bytes() for p in sorted(DATA.glob("*.dagcbor")))
    span = len(src) - 1016
    return [i.to_bytes(8, "big") + src[(i * 977) % span:(i * 977) % span + 1016]
            for i in range(n)]


def objects_1m(n: int, seed: int = 3) -> list[bytes]:
    """``n`` random 1 MiB objects."""
    rng = random.Random(seed)
    return [rng.randbytes(1 << 20) for _ in range(n)]


def objects_half_random(n: int, seed: int = 4) -> list[bytes]:
    """``n`` distinct 1 KiB objects: the first 512 bytes of ``objects_1k``'s, then 512
    random bytes."""
    rng = random.Random(seed)
    return [data[:512] + rng.randbytes(512) for data in objects_1k(n)]


DATA_SETS = {"cbor": objects_1k, "half-random": objects_half_random}


def objects_named(name: str, n: int) -> list[bytes]:
    """``n`` objects of 1 KiB of the set a ``--data`` option names (``DATA_SETS``)."""
    return DATA_SETS[name](n)
