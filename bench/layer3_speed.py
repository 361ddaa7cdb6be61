"""Layer 3 against its floors, interleaved (the tables of docs/astp-layer3.md):

    python bench/layer3_speed.py --rounds 9

- ``verify`` of one 10^4-node export (bench/layer3_datasets.py: 500 workflows of 20
  ExecutionNodes, a skill on every other step, each closed) against the hashing floor,
  SHA3-256 of every node, audit record and edge as ``orjson.dumps`` writes it;
- ``Workspace`` writing 2 000 nodes in memory;
- ``Workspace`` writing 200 nodes over a journal, against the disk's own rate: as many
  lines appended to one open file, each flushed and fsynced before the next (what the
  journal's policy asks of the disk, and nothing else), so the journal's own share of a
  write shows apart from the disk's. --dir puts both files on the disk to measure
  (default: the system's temporary directory).

Each contender runs once per round, in turn; each keeps its minimum over the rounds, in
wall time and in CPU time of this process (the CPU figure is the steadier one when other
work competes for the cores: a round that waits for a core costs wall time only). Prints
Markdown; --json writes the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import layer3_datasets as data

from canonkit.astp import layer3

EXPORT_NODES = 10_000
MEMORY_WRITES = 2_000
JOURNAL_WRITES = 200


class Best:
    """The minimum wall and CPU time of a contender over the rounds."""

    def __init__(self) -> None:
        self.wall = self.cpu = float("inf")

    def time(self, fn: Callable[[], object]) -> object:
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        self.wall = min(self.wall, time.perf_counter() - wall)
        self.cpu = min(self.cpu, time.process_time() - cpu)
        return out


def _fsyncs(path: Path, lines: int) -> None:
    """``lines`` lines appended to ``path``, each flushed and fsynced before the next."""
    with open(path, "a", encoding="utf-8") as handle:
        for _ in range(lines):
            handle.write("{}\n")
            handle.flush()
            os.fsync(handle.fileno())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--json", type=Path, help="write the numbers here as JSON")
    parser.add_argument("--dir", type=Path, help="where the journals are written (the disk "
                        "measured); default: the system's temporary directory")
    args = parser.parse_args(argv)
    export = data.export(EXPORT_NODES)
    assert layer3.verify(export).ok
    memory, journal = data.writes(MEMORY_WRITES), data.writes(JOURNAL_WRITES)
    times = {name: Best() for name in ("verify", "floor", "memory", "journal", "disk")}
    lines = 0
    with tempfile.TemporaryDirectory(prefix="canonkit-bench-layer3-", dir=args.dir) as work:
        for r in range(args.rounds):
            times["verify"].time(lambda: layer3.verify(export))
            times["floor"].time(lambda: data.hashing_floor(export))
            times["memory"].time(lambda: data.write(memory))
            path = Path(work) / f"journal-{r}.jsonl"
            ws: Any = times["journal"].time(lambda: data.write(journal, path))
            lines = sum(1 for _ in open(path, "rb"))
            times["disk"].time(lambda: _fsyncs(Path(work) / f"disk-{r}.jsonl", lines))
            assert len(ws.export()["nodes"]) == JOURNAL_WRITES
    out: dict[str, Any] = {"rounds": args.rounds, "journal_lines": lines}
    for clock in ("wall", "cpu"):
        t = {name: getattr(best, clock) for name, best in times.items()}
        out[clock] = {
            "verify_s": t["verify"], "floor_s": t["floor"],
            "verify_over_floor": t["verify"] / t["floor"],
            "memory_nodes_per_s": MEMORY_WRITES / t["memory"],
            "journal_nodes_per_s": JOURNAL_WRITES / t["journal"],
            "disk_fsyncs_per_s": lines / t["disk"]}
    wall, cpu = out["wall"], out["cpu"]
    print(f"| min of {args.rounds} rounds, interleaved | wall | CPU |")
    print("|---|---|---|")
    print(f"| `verify`, {EXPORT_NODES:,}-node export / hashing floor | "
          f"**{wall['verify_over_floor']:.2f}x** | **{cpu['verify_over_floor']:.2f}x** |")
    print(f"| `Workspace` writes in memory, nodes/s | **{wall['memory_nodes_per_s']:,.0f}** | "
          f"**{cpu['memory_nodes_per_s']:,.0f}** |")
    print(f"| `Workspace` writes over a journal, nodes/s | {wall['journal_nodes_per_s']:,.0f} | "
          f"{cpu['journal_nodes_per_s']:,.0f} |")
    print(f"| the disk: {lines} lines appended to one file, each fsynced, per s | "
          f"{wall['disk_fsyncs_per_s']:,.0f} | {cpu['disk_fsyncs_per_s']:,.0f} |")
    print(f"| journal nodes/s x {lines / JOURNAL_WRITES:.2f} lines a node / the disk's rate | "
          f"{wall['journal_nodes_per_s'] * lines / JOURNAL_WRITES / wall['disk_fsyncs_per_s']:.2f} "
          "| |")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
