"""Print median-ratio tables from a pytest-benchmark JSON file.

    python -m pytest bench --benchmark-json=bench.json
    python bench/report.py bench.json [--baseline canonkit-c]

One table per group: each contender's median and its ratio to the baseline contender
(ratio > 1 means the baseline is that many times faster).
"""
from __future__ import annotations

import argparse
import json
from collections import defaultdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_file")
    parser.add_argument("--baseline", default="canonkit-c")
    args = parser.parse_args()
    with open(args.json_file, encoding="utf-8") as fh:
        benchmarks = json.load(fh)["benchmarks"]
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    for b in benchmarks:
        contender = b.get("extra_info", {}).get("contender") or b["name"]
        groups[b.get("group") or b["name"]][contender] = b["stats"]["median"]
    for group in sorted(groups):
        medians = groups[group]
        base = medians.get(args.baseline)
        print(f"\n{group}")
        for contender, median in sorted(medians.items(), key=lambda kv: kv[1]):
            ratio = f"{median / base:8.2f}x" if base else "        -"
            print(f"  {contender:<24} {median * 1e6:14.2f} us {ratio}")


if __name__ == "__main__":
    main()
