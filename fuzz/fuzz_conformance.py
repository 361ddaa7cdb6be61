"""Fuzz target: the conformance corpus checker on a copy of ``conformance/v1`` with one
of its files replaced by the input (the first byte picks which), checked with the
compiled CBOR backend and with the twin: the two must report the same failures, and the
checker must never fail itself (``unexpected_error``)."""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import _harness
from _harness import REPO, Mismatch, instrumented, pair

with instrumented():
    from canonkit import conformance

    COMPILED, TWIN = pair("cbor")

FILES = ("vectors.json", "negative.json", "manifest.json")
ROOT = Path(tempfile.mkdtemp(prefix="canonkit-fuzz-conformance-"))
atexit.register(shutil.rmtree, ROOT, ignore_errors=True)
CORPUS = ROOT / "v1"
shutil.copytree(REPO / "conformance" / "v1", CORPUS)
ORIGINAL = {name: (CORPUS / name).read_bytes() for name in FILES}


def one_input(data: bytes) -> None:
    if not data:
        return
    name = FILES[data[0] % len(FILES)]
    (CORPUS / name).write_bytes(data[1:])
    try:
        reports = {"c": conformance.check(CORPUS, cbor=COMPILED),
                   "py": conformance.check(CORPUS, cbor=TWIN)}
    finally:
        (CORPUS / name).write_bytes(ORIGINAL[name])
    broken = [f for r in reports.values() for f in r.failures if f.reason == "unexpected_error"]
    if broken:
        raise Mismatch(f"the checker failed on a fuzzed {name}: {broken[0]}")
    disagree = conformance.compare_reports(reports)
    if disagree:
        raise Mismatch(f"backends disagree on a fuzzed {name}: {disagree[:3]}")


if __name__ == "__main__":
    _harness.run(one_input)
