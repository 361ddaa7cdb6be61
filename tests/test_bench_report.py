"""bench/report.py: one table per capability with the peers side by side, and the same
as bar charts with --plot (matplotlib, the bench extra)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


def _bench(group: str, contender: str, median: float, minimum: float) -> dict[str, object]:
    return {"group": group, "name": f"test[{contender}]", "extra_info": {"contender": contender},
            "stats": {"median": median, "min": minimum}}


BENCHMARKS = [
    _bench("cbor:decode:twitter", "canonkit-c", 2e-3, 1e-3),
    _bench("cbor:decode:twitter", "libipld", 3e-3, 1.5e-3),
    _bench("cbor:decode:twitter", "cbor2", 8e-3, 6e-3),
    _bench("cbor:decode:citm", "canonkit-c", 4e-3, 4e-3),
    _bench("cbor:decode:citm", "cbrrr", 2e-3, 2e-3),
    _bench("fps:bit-reverse-64MiB", "canonkit-c", 0.1, 0.1),
    _bench("fps:bit-reverse-64MiB", "bitarray", 0.5, 0.4),
    _bench("reverify:seed", "pool", 3.0, 2.0),  # no canonkit-c: medians shown
]


def _report(tmp_path: Path, *args: str) -> str:
    data = tmp_path / "bench.json"
    data.write_text(json.dumps({"benchmarks": BENCHMARKS}))
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "report.py"), str(data), *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_one_table_per_capability_peers_side_by_side(tmp_path: Path) -> None:
    out = _report(tmp_path, "--markdown")
    assert out.count("**") == 6  # three capabilities
    decode = out[out.index("**cbor:decode**"):out.index("**fps**")]
    assert "| dataset | canonkit-c median | canonkit-c | cbor2 | cbrrr | libipld |" in decode
    assert "| twitter | 2 ms | 1.00 (1.00) | 4.00 (6.00) | - | 1.50 (1.50) |" in decode
    assert "| citm | 4 ms | 1.00 (1.00) | - | 0.50 (0.50) | - |" in decode
    assert "| seed | - | 3 s |" in out


def test_plot_writes_one_chart_per_capability(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = _report(tmp_path, "--plot", str(tmp_path / "img"))
    charts = sorted(p.name for p in (tmp_path / "img").iterdir())
    assert charts == ["cbor-decode.svg", "fps.svg"]  # reverify has no baseline to divide by
    svg = (tmp_path / "img" / "cbor-decode.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "libipld" in svg
    assert f"![cbor:decode]({(tmp_path / 'img' / 'cbor-decode.svg').as_posix()})" in out
    again = _report(tmp_path, "--plot", str(tmp_path / "img"))  # same run, same bytes
    assert again == out and (tmp_path / "img" / "cbor-decode.svg").read_text() == svg
