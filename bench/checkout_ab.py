"""Two checkouts of canonkit, built in place, timed on the same public calls: the A/B check
that a change which moves code (a new layout, a refactoring) slows nothing down.

    python bench/checkout_ab.py OTHER_CHECKOUT [--rounds 7] [--cases cbor,fps,...]

Both checkouts must have their extensions built in place (``python setup.py build_ext
--inplace``). Each measurement runs in a fresh interpreter whose ``PYTHONPATH`` is one
checkout's ``src``: the inputs are made there (from this checkout's ``bench`` datasets, the
same bytes for both), then the call is timed ``--repeat`` times and the best time is
printed. Round after round, every case runs in both checkouts in turn, the order
alternating from round to round, and each keeps its minimum over the rounds (interleaved
minimums, docs/performance.md). Only the public API both checkouts have is called, so the
two sides may differ in everything behind it. Prints, per case, both minimums and
other / this (above 1.00: this checkout is faster).

    python bench/checkout_ab.py OTHER_CHECKOUT --instructions [--repeat 3] [--cases cbor]

counts instructions instead (valgrind's callgrind): each case runs once and 1 + ``--repeat``
times in each checkout, and the difference over ``--repeat`` is the instructions per call.
With a fixed hash seed (set for these runs) the count is the same run after run, whatever
else the machine does, so it decides when two builds' times differ on code a change did not
touch.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
HERE = BENCH.parent


def _cbor_cases() -> dict[str, Callable[[], Callable[[], Any]]]:
    from cbor_datasets import dataset

    from canonkit import cbor

    def encode(name: str, profile: str) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            value = dataset(name)
            return lambda: cbor.encode(value, profile=profile)
        return make

    def decode(name: str, profile: str, check: bool = False) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            data = cbor.encode(dataset(name), profile=profile)
            call = cbor.check if check else cbor.decode
            return lambda: call(data, profile=profile)
        return make

    cases: dict[str, Callable[[], Callable[[], Any]]] = {}
    for name in ("records10k", "twitter", "canada"):
        cases[f"cbor.encode {name}"] = encode(name, "core")
        cases[f"cbor.decode {name}"] = decode(name, "core")
        cases[f"cbor.decode dag-cbor {name}"] = decode(name, "dag-cbor")
        cases[f"cbor.check {name}"] = decode(name, "core", check=True)
    return cases


def _fps_cases() -> dict[str, Callable[[], Callable[[], Any]]]:
    from canonkit import fps

    data = bytes(range(256)) * 4096  # 1 MiB

    return {
        "fps.slice bit 1 MiB": lambda: (lambda: fps.slice(data, 3, 8 * (len(data) - 1), "bit")),
        "fps.reverse byte 1 MiB": lambda: (lambda: fps.reverse(data, "byte")),
        "fps.concat 2x1 MiB": lambda: (lambda: fps.concat([data, data])),
        "fps.cid_sha256 1 MiB": lambda: (lambda: fps.cid_sha256(data)),
    }


def _astp_cases() -> dict[str, Callable[[], Callable[[], Any]]]:
    import hashlib

    from canonkit import astp

    raw = b"".join(hashlib.sha3_256(i.to_bytes(4, "big")).digest() for i in range(1 << 16))

    def reproduce() -> Callable[[], Any]:
        docs = [json.loads(p.read_text()) for p in sorted((HERE / "examples" / "seed-table")
                                                            .glob("*.json"))]
        return lambda: [astp.reproduce(d) for d in docs]

    return {"astp.merkle_root_v2 65536 leaves": lambda: (lambda: astp.merkle_root_v2(raw)),
            "astp.reproduce seed-table": reproduce}


def _reverify_cases() -> dict[str, Callable[[], Callable[[], Any]]]:
    from canonkit import reverify

    corpus = str(HERE / "examples" / "seed-table")
    return {"reverify.run seed-table jobs=1":
            lambda: (lambda: reverify.run([corpus], jobs=1).summary)}


GROUPS: dict[str, Callable[[], dict[str, Callable[[], Callable[[], Any]]]]] = {
    "cbor": _cbor_cases, "fps": _fps_cases, "astp": _astp_cases, "reverify": _reverify_cases,
}


def _worker(group: str, case: str, repeat: int) -> None:
    """In the fresh interpreter: make the inputs, time the call, print the best time."""
    sys.path.insert(0, str(BENCH))
    call = GROUPS[group]()[case]()
    call()  # warm caches and lazy imports outside the timing
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t)
    print(json.dumps(best))


def _calls(group: str, case: str, calls: int) -> None:
    """In the fresh interpreter under callgrind: make the inputs, call ``calls`` times."""
    sys.path.insert(0, str(BENCH))
    call = GROUPS[group]()[case]()
    for _ in range(calls):
        call()


def _environment(checkout: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(checkout / "src"))
    env.pop("CANONKIT_NO_EXTENSIONS", None)
    return env


def _measure(checkout: Path, group: str, case: str, repeat: int) -> float:
    proc = subprocess.run([sys.executable, __file__, "--worker", group, case, str(repeat)],
                          capture_output=True, text=True, env=_environment(checkout),
                          check=False, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"{case} failed in {checkout}:\n{proc.stderr}")
    return float(json.loads(proc.stdout))


def _instructions(checkout: Path, group: str, case: str, calls: int) -> int:
    """Instructions of a fresh interpreter that makes the inputs and calls ``calls`` times."""
    # a fixed hash seed: with a random one the same build's count moves by up to 20%
    env = dict(_environment(checkout), PYTHONHASHSEED="0")
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, __file__, "--calls", group, case, str(calls)],
                          capture_output=True, text=True, env=env,
                          check=False, timeout=3600)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"{case} failed under callgrind in {checkout}:\n{proc.stderr}")
    return int(found.group(1))


def _compare_instructions(sides: dict[str, Path], plan: list[tuple[str, str]],
                          repeat: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (callgrind) on PATH")
    print(f"{'case':<36} {'this':>14} {'other':>14} {'this/other':>10}  (instructions per call)")
    for group, case in plan:
        per_call = {side: (_instructions(root, group, case, 1 + repeat)
                           - _instructions(root, group, case, 1)) / repeat
                    for side, root in sides.items()}
        print(f"{case:<36} {per_call['this']:>14,.0f} {per_call['other']:>14,.0f} "
              f"{per_call['this'] / per_call['other']:>10.4f}")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "--calls":
        _calls(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", type=Path, help="the other checkout (its root folder)")
    parser.add_argument("--this", type=Path, default=HERE, help="this checkout (default: the "
                        "one holding this script)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per measurement")
    parser.add_argument("--cases", default=",".join(GROUPS), help="groups, comma-separated")
    parser.add_argument("--instructions", action="store_true", help="count instructions per "
                        "call under valgrind's callgrind instead of timing (--repeat calls)")
    args = parser.parse_args()
    sys.path.insert(0, str(BENCH))
    sides = {"this": args.this.resolve(), "other": args.other.resolve()}
    plan = [(g, c) for g in args.cases.split(",") for c in GROUPS[g]()]
    if args.instructions:
        _compare_instructions(sides, plan, args.repeat)
        return 0
    best: dict[tuple[str, str], float] = {}
    for r in range(args.rounds):
        order = ["this", "other"] if r % 2 == 0 else ["other", "this"]
        for group, case in plan:
            for side in order:
                t = _measure(sides[side], group, case, args.repeat)
                best[(side, case)] = min(best.get((side, case), float("inf")), t)
    print(f"{'case':<36} {'this':>11} {'other':>11} {'other/this':>10}")
    for _, case in plan:
        this, other = best[("this", case)], best[("other", case)]
        print(f"{case:<36} {this * 1e3:>9.3f}ms {other * 1e3:>9.3f}ms {other / this:>10.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
