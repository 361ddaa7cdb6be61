"""CAR files (Content Addressable aRchives), CARv1 and CARv2: verify, list, extract, write
(docs/car.md).

- :func:`verify` checks every rule of the format and recomputes every block's CID; the
  problems are findings with stable codes and file offsets (:class:`Report`);
- :func:`blocks` hands out the blocks one at a time, checked, and raises the error of the
  first problem (a ``canonkit.errors.CARError``);
- :func:`extract` writes blocks to files named by their CIDs;
- :func:`encode` and :func:`write` make CAR files, CARv2 with either index format.

The hot loops (walking the sections and hashing; checking index entries) run in the
compiled ``canonkit.car._sections`` when built, else in its twin ``canonkit.car._sections_py``
(``canonkit.backend()["car"]`` says which).
"""
from __future__ import annotations

from ..errors import CARError
from .extractor import ExtractReport, extract
from .findings import CODES, Finding, Report
from .format import INDEX_FORMATS, PRAGMA
from .reader import Block, CarFile, blocks, open_car
from .verifier import verify
from .writer import block, encode, write

__all__ = ["CODES", "INDEX_FORMATS", "PRAGMA", "Block", "CARError", "CarFile", "ExtractReport",
           "Finding", "Report", "block", "blocks", "encode", "extract", "open_car", "verify",
           "write"]
