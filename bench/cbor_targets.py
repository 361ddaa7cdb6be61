"""Check the CBOR issue targets against a pytest-benchmark JSON of bench/test_cbor.py.

    python -m pytest bench/test_cbor.py --benchmark-json=/tmp/cbor.json
    python bench/cbor_targets.py /tmp/cbor.json

Each line: the target, the measured ratio (peer median / canonkit-c median, so > 1 means
canonkit is faster; for the memcpy and dcbor lines the ratio is the other way round, as
the target is stated) and whether it is met. Ratios come from one run.
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict

# (group, contender, minimum ratio peer/canonkit)  — "canonkit at least N x faster"
FASTER_THAN = [
    (f"cbor:{op}:{name}", peer, need)
    for name in ("records10k", "twitter", "citm")
    for op, peer, need in (
        ("encode", "libipld", 1.0), ("encode", "cbrrr", 2.0),
        ("decode", "libipld", 1.0), ("decode", "cbrrr", 1.5),
    )
] + [
    (f"cbor:{op}-dag:{name}", peer, need)
    for name in ("records10k", "twitter", "citm", "canada")
    for op, peer, need in (("encode", "libipld", 1.0), ("decode", "cbrrr", 1.5))
]
# (group, contender, maximum ratio canonkit/contender) — "canonkit at most N x slower"
AT_MOST = [
    ("cbor:encode:blob8m", "memcpy", 2.0),
    ("cbor:encode-profiles:records10k", "canonkit-c-dcbor", 1.3),
    ("cbor:decode-profiles:records10k", "canonkit-c-dcbor", 1.3),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_file")
    args = parser.parse_args()
    with open(args.json_file, encoding="utf-8") as fh:
        benchmarks = json.load(fh)["benchmarks"]
    med: dict[str, dict[str, float]] = defaultdict(dict)
    for b in benchmarks:
        med[b["group"]][b["extra_info"]["contender"]] = b["stats"]["median"]
    print(f"{'target':<58} {'ratio':>7}  met")
    for group, peer, need in FASTER_THAN:
        ours, theirs = med[group].get("canonkit-c"), med[group].get(peer)
        if ours is None or theirs is None:
            print(f"{group} vs {peer}: not measured")
            continue
        ratio = theirs / ours
        label = f"{group}: canonkit-c >= {need:g}x {peer}"
        print(f"{label:<58} {ratio:7.2f}  {'yes' if ratio >= need else 'NO'}")
    for group, other, limit in AT_MOST:
        if other == "canonkit-c-dcbor":
            ours, base = med[group].get(other), med[group].get("canonkit-c")
            label = f"{group}: dcbor <= {limit:g}x core"
        else:
            ours, base = med[group].get("canonkit-c"), med[group].get(other)
            label = f"{group}: canonkit-c <= {limit:g}x {other}"
        if ours is None or base is None:
            print(f"{label}: not measured")
            continue
        ratio = ours / base
        print(f"{label:<58} {ratio:7.2f}  {'yes' if ratio <= limit else 'NO'}")


if __name__ == "__main__":
    main()
