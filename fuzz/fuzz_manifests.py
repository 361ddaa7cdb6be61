"""Fuzz target: the manifest reader and verifier (every schema), with FPS cases run on
the compiled backend vs the twin: the same problems (case, reason) must come out, nothing
but ``ManifestError`` may escape ``loads``, nothing at all may escape ``verify``, and a
manifest that verifies keeps its canonical form through ``dumps``/``loads``.

The input is manifest text read as if it were in a copy of ``conformance/amduat`` (its
fixtures manifest and artifacts are there for fps_artifacts cases to use)."""
from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

import _harness
from _harness import REPO, Mismatch, instrumented, pair

with instrumented():
    from canonkit import manifests
    from canonkit.errors import ManifestError

    COMPILED, TWIN = pair("fps")

BASE = Path(tempfile.mkdtemp(prefix="canonkit-fuzz-manifests-"))
atexit.register(shutil.rmtree, BASE, ignore_errors=True)
shutil.copytree(REPO / "conformance" / "amduat", BASE, dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("*.py", "*.md"))


def one_input(data: bytes) -> None:
    try:
        manifest = manifests.loads(data, base=BASE, path=BASE / "fuzzed.json")
    except ManifestError:
        return
    found = [[(p.case, p.reason) for p in manifests.verify_manifest(manifest, fps=fps)]
             for fps in (COMPILED, TWIN)]
    if found[0] != found[1]:
        raise Mismatch(f"verify: compiled found {found[0]}, twin found {found[1]}")
    if found[0]:
        return
    try:
        text = manifests.dumps(manifest)
    except ManifestError:
        return
    if manifests.dumps(manifests.loads(text, base=BASE)) != text:
        raise Mismatch("dumps(loads(dumps(m))) != dumps(m)")


if __name__ == "__main__":
    _harness.run(one_input)
