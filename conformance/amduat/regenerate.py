"""Regenerate canonkit's Amduat conformance corpus (this directory) deterministically.

    python conformance/amduat/regenerate.py [OUTDIR]    # default: this directory

Payloads come from seeded PRNGs, expected outputs from the pure-Python twin (the oracle)
and FPS.md's worked vectors are pinned as literals, so a twin regression cannot slip into
the corpus. Files written: fps.json (amduat.conformance.fps.v0), fps_negative.json,
fixtures.json + artifacts/ (amduat.conformance.fixtures.v0), fps_artifacts.json (the
large cases, inputs from fixtures.json), tgk_edges.json. The corpus is frozen: rerunning
must reproduce the committed bytes (tests/test_manifest_corpus.py checks this).
"""
from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path
from typing import Any

from canonkit.fps import _primitives_py as twin
from canonkit import manifests
from canonkit.errors import FPSError

HERE = Path(__file__).resolve().parent
X = "0123456789abcdef"
UNIT_BITS = {"bit": 1, "byte": 8, "word": 16, "long": 32}

# FPS.md §2, copied by hand: the corpus generator refuses to run if the twin disagrees
WORKED = {
    "spec-concat": ({"op": "concat", "inputs": ["0123", "4567"]}, "01234567"),
    "spec-reverse-bit": ({"op": "reverse", "input": X, "level": "bit"}, "f7b3d591e6a2c480"),
    "spec-reverse-byte": ({"op": "reverse", "input": X, "level": "byte"}, "efcdab8967452301"),
    "spec-reverse-word": ({"op": "reverse", "input": X, "level": "word"}, "cdef89ab45670123"),
    "spec-reverse-long": ({"op": "reverse", "input": X, "level": "long"}, "89abcdef01234567"),
    "spec-slice-bit": ({"op": "slice", "input": X, "offset": 4, "length": 16, "level": "bit"},
                       "1234"),
    "spec-slice-byte": ({"op": "slice", "input": X, "offset": 1, "length": 3, "level": "byte"},
                        "234567"),
    "spec-splice-bit": ({"op": "splice", "input": X, "offset": 4, "length": 8,
                         "insert": "ff", "level": "bit"}, "0ff3456789abcdef"),
    "spec-empty-output": ({"op": "slice", "input": X, "offset": 0, "length": 0}, ""),
}


def rand_hex(seed: int, size: int) -> str:
    return random.Random(seed).randbytes(size).hex()


def positive_cases() -> dict[str, dict[str, Any]]:
    """id -> case arguments (the output is computed later)."""
    cases: dict[str, dict[str, Any]] = {k: dict(v[0]) for k, v in WORKED.items()}
    data = rand_hex(1, 61)  # 61 bytes: no level divides it except bit/byte
    data64 = rand_hex(2, 64)
    for phase in range(1, 8):  # every unaligned bit phase
        cases[f"slice-bit-phase{phase}"] = {"op": "slice", "input": data, "offset": 8 * 5 + phase,
                                            "length": 8 * 40, "level": "bit"}
        cases[f"splice-bit-phase{phase}"] = {"op": "splice", "input": data,
                                             "offset": 8 * 7 + phase, "length": 8 * 3,
                                             "insert": rand_hex(10 + phase, 5), "level": "bit"}
    for level, bits in UNIT_BITS.items():
        units = len(data64) * 4 // bits  # hex digits -> bits / unit bits
        cases[f"slice-{level}-maximal"] = {"op": "slice", "input": data64, "offset": 0,
                                           "length": units, "level": level}
        cases[f"slice-{level}-empty-at-end"] = {"op": "slice", "input": data64,
                                                "offset": units, "length": 0, "level": level}
        cases[f"slice-{level}-middle"] = {"op": "slice", "input": data64,
                                          "offset": units // 4 + (3 if level == "bit" else 1),
                                          "length": units // 2, "level": level}
        cases[f"splice-{level}-replace-all"] = {"op": "splice", "input": data64, "offset": 0,
                                                "length": units, "insert": "c0ffee",
                                                "level": level}
        cases[f"splice-{level}-insert-at-end"] = {"op": "splice", "input": data64,
                                                  "offset": units, "length": 0,
                                                  "insert": "ab", "level": level}
        cases[f"splice-{level}-delete"] = {"op": "splice", "input": data64,
                                           "offset": 1 if level != "bit" else 13,
                                           "length": units // 8 if level != "bit" else 16,
                                           "insert": "", "level": level}
        cases[f"reverse-{level}-64-bytes"] = {"op": "reverse", "input": data64, "level": level}
        cases[f"reverse-{level}-empty"] = {"op": "reverse", "input": "", "level": level}
    cases["slice-empty-input"] = {"op": "slice", "input": "", "offset": 0, "length": 0}
    cases["splice-empty-input"] = {"op": "splice", "input": "", "offset": 0, "length": 0,
                                   "insert": "00ff"}
    cases["splice-empty-everything"] = {"op": "splice", "input": "", "offset": 0, "length": 0,
                                        "insert": ""}
    cases["slice-default-level"] = {"op": "slice", "input": data, "offset": 3, "length": 9}
    cases["concat-single-input"] = {"op": "concat", "inputs": [data]}
    cases["concat-empty-inputs"] = {"op": "concat", "inputs": ["", "", ""]}
    cases["concat-mixed"] = {"op": "concat", "inputs": ["", data, "00", data64, ""]}
    big = rand_hex(3, 4099)  # inline "large": crosses every 8-byte kernel boundary
    cases["slice-bit-4k-phase5"] = {"op": "slice", "input": big, "offset": 5,
                                    "length": 8 * 4098, "level": "bit"}
    cases["reverse-bit-4k"] = {"op": "reverse", "input": big, "level": "bit"}
    cases["splice-bit-4k-phase3"] = {"op": "splice", "input": big, "offset": 8 * 1000 + 3,
                                     "length": 8 * 2000, "insert": rand_hex(4, 1027),
                                     "level": "bit"}
    return cases


def run(case: dict[str, Any]) -> bytes:
    return manifests.fps_exec.execute(twin, case["op"], case)


def fps_manifest() -> dict[str, Any]:
    entries = []
    for ident, case in positive_cases().items():
        output = run(case)
        if ident in WORKED and output.hex() != WORKED[ident][1]:
            raise SystemExit(f"twin disagrees with FPS.md on {ident}: {output.hex()}")
        entries.append({"id": ident, **case, "output": output.hex(),
                        "cid_sha256": twin.cid_sha256(output)})
    return {"schema": "amduat.conformance.fps.v0", "cases": entries}


NEGATIVE: dict[str, dict[str, Any]] = {
    # ERR_ARG_INVALID: FPS.md's list, one case each
    "arg-offset-negative": {"op": "slice", "input": X, "offset": -1, "length": 1,
                            "error": "ERR_ARG_INVALID"},
    "arg-length-not-integer": {"op": "slice", "input": X, "offset": 0, "length": 1.5,
                               "error": "ERR_ARG_INVALID"},
    "arg-length-string": {"op": "splice", "input": X, "offset": 0, "length": "1",
                          "insert": "", "error": "ERR_ARG_INVALID"},
    "arg-offset-2-pow-64": {"op": "slice", "input": X, "offset": 2**64, "length": 0,
                            "error": "ERR_ARG_INVALID"},
    "arg-hex-odd-length": {"op": "reverse", "input": "012", "level": "byte",
                           "error": "ERR_ARG_INVALID"},
    "arg-hex-uppercase": {"op": "reverse", "input": "ABCD", "level": "byte",
                          "error": "ERR_ARG_INVALID"},
    "arg-hex-0x-prefix": {"op": "concat", "inputs": ["0x01"], "error": "ERR_ARG_INVALID"},
    "arg-hex-in-insert": {"op": "splice", "input": X, "offset": 0, "length": 0,
                          "insert": "zz", "error": "ERR_ARG_INVALID"},
    "arg-missing-input": {"op": "reverse", "level": "bit", "error": "ERR_ARG_INVALID"},
    "arg-missing-length": {"op": "slice", "input": X, "offset": 0, "error": "ERR_ARG_INVALID"},
    "arg-missing-insert": {"op": "splice", "input": X, "offset": 0, "length": 0,
                           "error": "ERR_ARG_INVALID"},
    "arg-missing-inputs": {"op": "concat", "error": "ERR_ARG_INVALID"},
    "arg-input-wrong-type": {"op": "slice", "input": 42, "offset": 0, "length": 0,
                             "error": "ERR_ARG_INVALID"},
    "arg-inputs-not-a-list": {"op": "concat", "inputs": "0123", "error": "ERR_ARG_INVALID"},
    "arg-inputs-item-wrong-type": {"op": "concat", "inputs": ["01", None],
                                   "error": "ERR_ARG_INVALID"},
    # ERR_LEVEL_INVALID
    "level-unknown": {"op": "reverse", "input": X, "level": "nibble",
                      "error": "ERR_LEVEL_INVALID"},
    "level-missing-on-reverse": {"op": "reverse", "input": X, "error": "ERR_LEVEL_INVALID"},
    "level-null": {"op": "slice", "input": X, "offset": 0, "length": 1, "level": None,
                   "error": "ERR_LEVEL_INVALID"},
    "level-uppercase": {"op": "splice", "input": X, "offset": 0, "length": 0, "insert": "",
                        "level": "BYTE", "error": "ERR_LEVEL_INVALID"},
    # ERR_RANGE
    "range-slice-bit-past-end": {"op": "slice", "input": X, "offset": 60, "length": 8,
                                 "level": "bit", "error": "ERR_RANGE"},
    "range-splice-byte-past-end": {"op": "splice", "input": X, "offset": 8, "length": 1,
                                   "insert": "", "level": "byte", "error": "ERR_RANGE"},
    "range-slice-word-odd-input": {"op": "slice", "input": "010203", "offset": 1, "length": 1,
                                   "level": "word", "error": "ERR_RANGE"},
    "range-slice-empty-input": {"op": "slice", "input": "", "offset": 0, "length": 1,
                                "error": "ERR_RANGE"},
    "range-huge-offset-and-length": {"op": "slice", "input": X, "offset": 2**64 - 1,
                                     "length": 2**64 - 1, "level": "long",
                                     "error": "ERR_RANGE"},
    # ERR_LENGTH_MISALIGNED
    "misaligned-slice-7-bits": {"op": "slice", "input": X, "offset": 0, "length": 7,
                                "level": "bit", "error": "ERR_LENGTH_MISALIGNED"},
    "misaligned-reverse-word": {"op": "reverse", "input": "010203", "level": "word",
                                "error": "ERR_LENGTH_MISALIGNED"},
    "misaligned-reverse-long": {"op": "reverse", "input": "010203040506", "level": "long",
                                "error": "ERR_LENGTH_MISALIGNED"},
    "misaligned-splice-3-bits": {"op": "splice", "input": X, "offset": 1, "length": 3,
                                 "insert": "", "level": "bit",
                                 "error": "ERR_LENGTH_MISALIGNED"},
    # ERR_ARITY
    "arity-concat-empty": {"op": "concat", "inputs": [], "error": "ERR_ARITY"},
    # check order: arguments -> level -> range -> alignment
    "order-argument-before-level": {"op": "slice", "input": X, "offset": -5, "length": 7,
                                    "level": "nibble", "error": "ERR_ARG_INVALID"},
    "order-level-before-range": {"op": "slice", "input": X, "offset": 999, "length": 7,
                                 "level": "nibble", "error": "ERR_LEVEL_INVALID"},
    "order-range-before-alignment": {"op": "slice", "input": X, "offset": 60, "length": 7,
                                     "level": "bit", "error": "ERR_RANGE"},
    "order-argument-before-arity": {"op": "concat", "inputs": "", "error": "ERR_ARG_INVALID"},
}


def negative_manifest() -> dict[str, Any]:
    entries = []
    for ident, case in NEGATIVE.items():
        try:
            run(case)
        except FPSError as exc:
            if exc.code != case["error"]:
                raise SystemExit(f"{ident}: twin refuses with {exc.code}") from None
        else:
            raise SystemExit(f"{ident}: twin does not refuse it")
        entries.append({"id": ident, **case})
    return {"schema": "canonkit.conformance.fps_negative.v0", "cases": entries}


def write_artifacts(out: Path) -> None:
    art = out / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    (art / "input-1mib.bin").write_bytes(random.Random(5).randbytes((1 << 20) + 4))
    (art / "insert-64kib.bin").write_bytes(random.Random(6).randbytes((1 << 16) + 1))
    (art / "empty.bin").write_bytes(b"")
    (art / "hello.txt").write_bytes(b"hello, amduat\n")


LARGE_INPUT = "input-1mib.bin"
LARGE_INSERT = "insert-64kib.bin"


def artifact_cases(out: Path) -> dict[str, Any]:
    raw = {name: (out / "artifacts" / name).read_bytes()
           for name in (LARGE_INPUT, LARGE_INSERT, "empty.bin")}
    n = len(raw[LARGE_INPUT])
    specs: dict[str, dict[str, Any]] = {}
    for phase in (1, 3, 7):
        specs[f"large-slice-bit-phase{phase}-maximal"] = {
            "op": "slice", "input": LARGE_INPUT, "offset": phase,
            "length": (8 * n - phase) // 8 * 8, "level": "bit"}
        specs[f"large-splice-bit-phase{phase}"] = {
            "op": "splice", "input": LARGE_INPUT, "offset": 8 * 300_001 + phase,
            "length": 8 * 70_000, "insert": LARGE_INSERT, "level": "bit"}
    for level in UNIT_BITS:  # n = 2**20 + 4: whole longs, not whole 8-byte blocks
        specs[f"large-reverse-{level}"] = {"op": "reverse", "input": LARGE_INPUT,
                                           "level": level}
    specs["large-slice-long-maximal"] = {"op": "slice", "input": LARGE_INPUT, "offset": 0,
                                         "length": n // 4, "level": "long"}
    specs["large-slice-word-middle"] = {"op": "slice", "input": LARGE_INPUT, "offset": 1234,
                                        "length": 200_000, "level": "word"}
    specs["large-concat"] = {"op": "concat", "inputs": [LARGE_INPUT, "empty.bin",
                                                        LARGE_INSERT, LARGE_INPUT]}
    specs["large-reverse-empty-artifact"] = {"op": "reverse", "input": "empty.bin",
                                             "level": "long"}
    entries = []
    for ident, case in specs.items():
        output = manifests.fps_exec.execute(twin, case["op"], case, load=raw.__getitem__)
        entries.append({"id": ident, **case, "output_size": str(len(output)),
                        "cid_sha256": twin.cid_sha256(output)})
    return {"schema": "canonkit.conformance.fps_artifacts.v0", "fixtures": "fixtures.json",
            "cases": entries}


def tgk_manifest(out: Path) -> dict[str, Any]:
    def ref(hash_id: int, digest: bytes) -> str:
        return (hash_id.to_bytes(2, "big") + digest).hex()

    hello = hashlib.sha256((out / "artifacts" / "hello.txt").read_bytes()).digest()
    empty = hashlib.sha256(b"").digest()
    return {"schema": "amduat.conformance.tgk_edges.v0", "edges": [
        {"id": "edge-1-simple", "type": 1, "from": [ref(1, hello)], "to": [ref(1, empty)],
         "payload": "", "notes": "hash_id 1 (HASH-ASL1-256) references, empty payload"},
        {"id": "edge-2-fan-in", "type": 7, "from": [ref(1, empty), ref(1, hello)],
         "to": [ref(1, hello)], "payload": "a16474797065646c696e6b",
         "notes": "two sources, one target, CBOR payload"},
        {"id": "edge-3-opaque-hash-id", "type": 4294967295, "from": [ref(0x8001, b"\x01\x02")],
         "to": [], "payload": "00",
         "notes": "an unknown hash_id keeps its 2-byte digest opaque; empty target list"},
    ]}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    write_artifacts(out)
    manifests.write(manifests.build_fixtures(out / "artifacts", out / "fixtures.json"),
                    out / "fixtures.json")
    manifests.write(fps_manifest(), out / "fps.json")
    manifests.write(negative_manifest(), out / "fps_negative.json")
    manifests.write(artifact_cases(out), out / "fps_artifacts.json")
    manifests.write(tgk_manifest(out), out / "tgk_edges.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
