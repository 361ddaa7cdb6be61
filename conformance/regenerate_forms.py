"""Regenerate the physical-form fixtures of conformance/v1 (``forms/``) and the manifest
entries that freeze them, deterministically.

    python conformance/regenerate_forms.py [OUTDIR]    # default: conformance/v1

The forms are a pure function of the vectors' bytes (``canonkit.conformance.forms``):
loose and DEFLATE loose files per vector and one pack with its index, DEFLATE payloads
from canonkit's pinned fixed-Huffman encoder (``canonkit.conformance.fixed_deflate``),
never from a zlib library whose output may differ between machines. The manifest is
rebuilt by the same function that records corpora; its entries for vectors.json,
negative.json and every vector are unchanged (they are checked here before anything is
written), new entries are only added. Rerunning reproduces the committed bytes exactly
(tests/test_conformance.py checks it).
"""
from __future__ import annotations

import sys
from pathlib import Path

from canonkit import cbor
from canonkit.conformance.layout import MANIFEST, NEGATIVE, VECTORS, build_corpus
from canonkit.objects import ObjectCodec

HERE = Path(__file__).resolve().parent / "v1"


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    files = build_corpus(1, ObjectCodec(cbor))
    for frozen in (VECTORS, NEGATIVE):  # never changed: the forms only add files
        if files[frozen] != (HERE / frozen).read_bytes():
            sys.exit(f"{frozen} would change; the corpus is frozen")
    for rel, data in files.items():
        if rel.startswith("forms/") or rel == MANIFEST or out != HERE:
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    print(f"wrote {sum(1 for r in files if r.startswith('forms/'))} forms and {MANIFEST} "
          f"to {out}")


if __name__ == "__main__":
    main()
