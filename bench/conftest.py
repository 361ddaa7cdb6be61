"""Benchmarks are a separate pytest root: `python -m pytest bench --benchmark-json=out.json`,
then `python bench/report.py out.json` prints the median ratio tables.

Conventions (so report.py can build tables): every benchmark sets
``benchmark.group = "<capability>:<dataset>"`` and
``benchmark.extra_info["contender"] = "<name>"`` (canonkit-c, canonkit-py, cbor2, cbrrr,
libipld, bitarray, numpy, hashlib, memcpy, ...). Inputs are built outside the timed call.
"""
from pathlib import Path

DATA = Path(__file__).parent / "data"
