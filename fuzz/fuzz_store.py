"""Fuzz target: the object store's readers, compiled vs twin, on a store one of whose
files — the pack, its index, a raw or a DEFLATE loose object — is the fuzzed bytes
(``store_cases``: ``[selector][file bytes]``). ``get`` (verified, unverified, without a
copy), ``get_many`` and fsck must give the same values, or the same error class, code,
path and offset, and the same findings, with either set of readers."""
from __future__ import annotations

import atexit
import shutil

import _harness
from _harness import Mismatch, instrumented, pair

with instrumented():
    import store_cases

    COMPILED, TWIN = pair("store")

ROOT = store_cases.scratch("fuzz-store")
atexit.register(shutil.rmtree, ROOT, ignore_errors=True)


def one_input(data: bytes) -> None:
    store_cases.write(ROOT, data)
    compiled = store_cases.answers(ROOT, COMPILED)
    twin = store_cases.answers(ROOT, TWIN)
    if compiled != twin:
        for i, (c, t) in enumerate(zip(compiled, twin)):
            if c != t:
                raise Mismatch(f"store answer {i}: compiled gave {str(c)[:400]}, twin gave "
                               f"{str(t)[:400]}")
        raise Mismatch("store: the answers differ in number")


if __name__ == "__main__":
    _harness.run(one_input)
