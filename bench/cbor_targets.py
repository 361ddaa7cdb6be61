"""Check the CBOR speed targets against a pytest-benchmark JSON of bench/test_cbor.py.

    python -m pytest bench/test_cbor.py --benchmark-json=/tmp/cbor.json
    python bench/cbor_targets.py /tmp/cbor.json

Each line: the target, the measured value from the medians (what bench/report.py
prints) and from the minimum times, and whether each meets it. Ratios are
peer time / canonkit time (> 1: canonkit is faster) unless the line says otherwise; all
come from one run. A burst of load during one contender's rounds moves its median; the
minimum is the better estimate of CPU cost.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Callable

DECODE_DATASETS = ("records10k", "twitter", "citm", "canada")

# (group, peer, minimum ratio peer/canonkit-c): "canonkit-c at least N x faster"
FASTER_THAN = [
    (f"cbor:{op}:{name}", peer, need)
    for name in ("records10k", "twitter", "citm")
    for op, peer, need in (("encode", "libipld", 1.0), ("encode", "cbrrr", 2.0),
                           ("decode", "cbrrr", 1.5))
] + [
    (f"cbor:{op}-dag:{name}", peer, need)
    for name in DECODE_DATASETS
    for op, peer, need in (("encode", "libipld", 1.1 if name == "canada" else 1.0),
                           ("decode", "cbrrr", 1.5))
] + [
    # strict decode (every check kept) against libipld's lax decode, in both profiles
    (f"cbor:{group}:{name}", "libipld", 1.15)
    for group in ("decode", "decode-dag") for name in DECODE_DATASETS
]
# (group, contender, baseline, maximum ratio contender/baseline): "at most N x slower"
AT_MOST = [
    ("cbor:encode:blob8m", "canonkit-c", "memcpy", 2.0),
    ("cbor:encode-profiles:records10k", "canonkit-c-dcbor", "canonkit-c", 1.3),
    ("cbor:decode-profiles:records10k", "canonkit-c-dcbor", "canonkit-c", 1.3),
    # hooks cost nothing until called (5% is the noise allowance of one run)
    ("cbor:decode-hooks:records10k", "canonkit-c-taghook", "canonkit-c", 1.05),
    ("cbor:decode-hooks:twitter", "canonkit-c-taghook", "canonkit-c", 1.05),
]
# check: at least 5x canonkit's own decode of the same bytes, in both profiles ...
CHECK_VS_DECODE = [(f"cbor:check:{name}", check, decode, 5.0)
                   for name in DECODE_DATASETS
                   for check, decode in (("canonkit-c-check", "canonkit-c"),
                                         ("canonkit-c-dag-check", "canonkit-c-dag"))]
# ... and at least 1.5 GB/s on twitter and citm
CHECK_SPEED = [(f"cbor:check:{name}", contender, 1.5)
               for name in ("twitter", "citm")
               for contender in ("canonkit-c-check", "canonkit-c-dag-check")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_file")
    args = parser.parse_args()
    with open(args.json_file, encoding="utf-8") as fh:
        benchmarks = json.load(fh)["benchmarks"]
    stats: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    size: dict[str, dict[str, int]] = defaultdict(dict)
    for b in benchmarks:
        contender = b["extra_info"]["contender"]
        stats[b["group"]][contender] = (b["stats"]["median"], b["stats"]["min"])
        size[b["group"]][contender] = b["extra_info"].get("bytes", 0)
    missed = 0
    print(f"{'target':<64} {'median':>7} met  {'min':>6} met")
    for group, peer, need in FASTER_THAN:
        missed += _line(f"{group}: canonkit-c >= {need:g}x {peer}",
                        stats[group].get(peer), stats[group].get("canonkit-c"),
                        lambda t, o: t / o, lambda r: r >= need)
    for group, contender, base, limit in AT_MOST:
        missed += _line(f"{group}: {contender} <= {limit:g}x {base}",
                        stats[group].get(contender), stats[group].get(base),
                        lambda c, b: c / b, lambda r: r <= limit)
    for group, check, decode, need in CHECK_VS_DECODE:
        missed += _line(f"{group}: {check} >= {need:g}x {decode}",
                        stats[group].get(decode), stats[group].get(check),
                        lambda d, c: d / c, lambda r: r >= need)
    for group, contender, need in CHECK_SPEED:
        nbytes = size[group].get(contender, 0)
        missed += _line(f"{group}: {contender} >= {need:g} GB/s",
                        stats[group].get(contender), (1.0, 1.0),
                        lambda t, _: nbytes / t / 1e9, lambda r: r >= need)
    print(f"\n{missed} target line(s) missed by median or minimum")


def _line(label: str, first: tuple[float, float] | None, second: tuple[float, float] | None,
          ratio: Callable[[float, float], float], ok: Callable[[float], bool]) -> int:
    """Print one target line (median, minimum); 1 if either misses, else 0."""
    if first is None or second is None:
        print(f"{label:<64} not measured")
        return 1
    values = [ratio(a, b) for a, b in zip(first, second)]
    # by minimum time: the fastest round of each (the ratio of the two minimums)
    cells = "  ".join(f"{v:6.2f} {'yes' if ok(v) else 'NO ':<3}" for v in values)
    print(f"{label:<64} {cells}")
    return 0 if all(ok(v) for v in values) else 1


if __name__ == "__main__":
    main()
