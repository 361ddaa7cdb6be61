"""Artifact files named by manifests: confined to the manifest's directory, hashed in
chunks (never read whole just to hash)."""
from __future__ import annotations

import hashlib
import stat
from pathlib import Path, PurePosixPath

from .._files import open_regular, resolve_within
from ..errors import PathOutsideError
from ._model import Problem

_CHUNK = 1 << 20


def resolve_artifact(base: Path, relative: str, case: str, name: str = "artifact"
                     ) -> Path | Problem:
    """The file ``relative`` names under ``base``, or the Problem that refuses it: an
    absolute path, a ``..`` component, a backslash or a symlink leading outside ``base``
    is ``artifact_escapes``; a path with no regular file is ``missing_artifact``."""
    pure = PurePosixPath(relative)
    if (not relative or pure.is_absolute() or "\\" in relative or "\x00" in relative
            or ".." in pure.parts or (pure.parts and ":" in pure.parts[0])):
        return Problem(case, "artifact_escapes", f"{name} {relative!r} is not a relative "
                       "path inside the manifest's directory")
    try:  # the input door's confinement: symlinks resolved, nothing outside ``base``
        target = Path(resolve_within(base, relative))
    except PathOutsideError:
        return Problem(case, "artifact_escapes",
                       f"{name} {relative!r} resolves outside the manifest's directory")
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return Problem(case, "missing_artifact", f"{name} {relative!r} does not exist")
    except OSError as exc:  # e.g. a directory on the way that may not be searched
        return Problem(case, "missing_artifact", f"{name} {relative!r} cannot be read: "
                       f"{exc.strerror or exc}")
    if not stat.S_ISREG(mode):  # a FIFO, socket, device or directory is never opened
        return Problem(case, "missing_artifact", f"{name} {relative!r} is not a regular file")
    return target


def sha256_file(path: Path) -> tuple[int, str]:
    """(size, lowercase hex SHA-256) of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with open_regular(path) as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()
