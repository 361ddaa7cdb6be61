"""Re-verification CPU of Episodes that carry Layer 3 exports against the same corpus
without them (``verify`` against its hashing floor and ``Workspace`` writes per second are
in bench/test_astp_layer3.py).

    python bench/layer3_reverify.py --episodes 400

Two corpora of the same seed are written on demand under --dir (default
/tmp/canonkit-layer3-bench, never in the repository) by ``canonkit synth --layer3 1.0`` and
``--layer3 0``, and reused when present. One child process then re-verifies each in
process (``jobs=1``), alternately, and keeps each corpus's minimum CPU time: the ratio with / without is the cost Layer 3 adds. Prints
Markdown; --json writes the numbers.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, sys, time
import canonkit.reverify as rv
paths, rounds = sys.argv[1:3], int(sys.argv[3])
best = [float("inf")] * len(paths)
episodes = [0] * len(paths)
for _ in range(rounds):
    for i, path in enumerate(paths):
        cpu = time.process_time()
        run = rv.run([path], engine="local", jobs=1, progress=False)
        for _ in run:
            pass
        best[i] = min(best[i], time.process_time() - cpu)
        episodes[i] = run.summary.episodes
print(json.dumps({"cpu_seconds": best, "episodes": episodes}))
"""


def _corpus(directory: Path, episodes: int, layer3: float) -> Path:
    path = directory / f"episodes-{episodes}-layer3-{layer3:g}.jsonl"
    if not path.exists():
        subprocess.run([sys.executable, "-m", "canonkit", "synth", "--episodes", str(episodes),
                        "--layer3", str(layer3), "--out", str(path), "--no-progress"],
                       check=True)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/canonkit-layer3-bench"))
    parser.add_argument("--json", type=Path, help="write the numbers here as JSON")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    with_l3 = _corpus(args.dir, args.episodes, 1.0)
    without = _corpus(args.dir, args.episodes, 0.0)
    out = subprocess.run([sys.executable, "-c", CHILD, str(with_l3), str(without),
                          str(args.rounds)], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    cpu_with, cpu_without = result["cpu_seconds"]
    ratio = cpu_with / cpu_without
    print(f"| corpus ({args.episodes} Episodes, jobs 1) | CPU s (min of {args.rounds}) |")
    print("|---|---|")
    print(f"| `synth --layer3 1.0` | {cpu_with:.3f} |")
    print(f"| `synth --layer3 0` | {cpu_without:.3f} |")
    print(f"| **with / without** | **{ratio:.2f}x** |")
    if args.json:
        args.json.write_text(json.dumps({"episodes": args.episodes, "cpu_with_layer3": cpu_with,
                                         "cpu_without_layer3": cpu_without, "ratio": ratio}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
