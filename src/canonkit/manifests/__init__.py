"""Amduat conformance manifests (FPS.md §3): read, verify and write
``amduat.conformance.fixtures.v0``, ``amduat.conformance.tgk_edges.v0``,
``amduat.conformance.fps.v0`` and canonkit's siblings
``canonkit.conformance.fps_negative.v0`` and ``canonkit.conformance.fps_artifacts.v0``.

``read``/``loads`` raise ``ManifestError`` only when a file is not UTF-8 JSON with a
top-level object; everything else is verification's job. ``verify`` fails closed and
returns every ``Problem`` (case id, stable reason code from ``REASONS``, detail) rather
than raising. ``dumps``/``write`` emit the canonical form, so ``dumps(read(p)) ==
p.read_bytes()`` for a canonical manifest.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ._io import dumps, loads, read, write
from ._model import REASONS, Manifest, Problem
from ._verify import verify_manifest
from .build import build_fixtures
from .schemas import SCHEMAS

__all__ = ["REASONS", "SCHEMAS", "Manifest", "Problem", "build_fixtures", "dumps", "loads",
           "read", "verify", "verify_manifest", "write"]


def verify(manifest: Manifest | Path | str, *, fps: Any = None) -> list[Problem]:
    """Every problem of the manifest at a path (or an already parsed one); an empty list
    means it verifies. Raises ManifestError only if the file cannot be read as JSON."""
    if not isinstance(manifest, Manifest):
        manifest = read(manifest)
    return verify_manifest(manifest, fps=fps)
