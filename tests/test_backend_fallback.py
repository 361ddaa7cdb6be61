"""A capability that falls back to its twin without being asked to warns once per
process (a silent 10-30x slowdown is a bug report waiting to happen);
``CANONKIT_NO_EXTENSIONS=1`` asks for the twins and is silent."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from canonkit._capabilities import compiled_modules

# Hide the compiled modules from the import system, then use two capabilities.
_SCRIPT = """
import importlib.abc, json, sys, warnings

COMPILED = set(json.loads(sys.argv[1]))

class Unbuilt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in COMPILED:
            raise ImportError(f"No module named {name!r} (simulated: not built)")
        return None

sys.meta_path.insert(0, Unbuilt())
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import canonkit
    from canonkit import cbor, fps
    assert cbor.decode(cbor.encode([1, "a"])) == [1, "a"]
print(json.dumps({"backend": canonkit.backend(),
                  "warnings": [[w.category.__name__, str(w.message), w.filename]
                               for w in caught]}))
"""


def _run(no_extensions: bool) -> dict[str, object]:
    env = dict(os.environ)
    env.pop("CANONKIT_NO_EXTENSIONS", None)
    if no_extensions:
        env["CANONKIT_NO_EXTENSIONS"] = "1"
    compiled = compiled_modules()
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(compiled)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout)
    return result


def test_unrequested_fallback_warns_once() -> None:
    result = _run(no_extensions=False)
    backend = result["backend"]
    assert isinstance(backend, dict) and set(backend.values()) == {"python"}, backend
    assert {"cbor", "fps", "astp"} <= set(backend)
    warned = result["warnings"]
    assert isinstance(warned, list) and len(warned) == 1, warned
    category, message, filename = warned[0]
    assert category == "ExtensionFallbackWarning"  # a RuntimeWarning (canonkit.errors)
    assert message.startswith("canonkit.cbor runs on its pure-Python twin")
    assert "simulated: not built" in message and "CANONKIT_NO_EXTENSIONS=1" in message


def test_requested_twins_are_silent() -> None:
    result = _run(no_extensions=True)
    assert set(result["backend"].values()) == {"python"}  # type: ignore[union-attr]
    assert result["warnings"] == []
