"""Build a fixtures.v0 manifest for a directory of artifact files."""
from __future__ import annotations

from pathlib import Path

from ..errors import ManifestError
from ._artifacts import sha256_file
from ._model import Manifest
from .fixtures import NAME


def build_fixtures(directory: Path | str, manifest_path: Path | str) -> Manifest:
    """A fixtures.v0 manifest listing every regular file under ``directory`` (recursively,
    the manifest file itself excepted); ids are the files' paths relative to
    ``directory``, artifacts their paths relative to the manifest's directory, which must
    contain ``directory`` (ManifestError otherwise: an artifact may not escape it)."""
    directory = Path(directory).resolve()
    manifest_path = Path(manifest_path).resolve()
    base = manifest_path.parent
    if not directory.is_dir():
        raise ManifestError(f"{directory} is not a directory")
    if directory != base and base not in directory.parents:
        raise ManifestError(f"{directory} is not inside the manifest's directory {base}")
    entries = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.is_symlink()):
        if path == manifest_path:
            continue
        size, digest = sha256_file(path)
        entries.append({
            "id": path.relative_to(directory).as_posix(),
            "artifact": path.relative_to(base).as_posix(),
            "size": str(size),
            "sha256": digest,
        })
    return Manifest({"schema": NAME, "fixtures": entries}, base=base, path=manifest_path)
