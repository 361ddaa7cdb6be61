"""examples/typed_usage.py is type-checked in CI (mypy --strict, pyright); here it runs,
so the example stays true as well as well-typed."""
from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_typed_usage_example_runs() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "typed_usage.py")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(":", 1) for line in proc.stdout.splitlines()[1:])
    assert lines["address"].strip() == (
        "blake3:4321fae3f39665682914de5dec718fd33c3be477b162546057f7b321e961dfd3")
    assert lines["reverify exit"].strip() == "1"  # the bundled 62-Episode corpus: 5 Episodes fail
