"""Record a new corpus version from the live encoder (OBJECTS.md §2).

``record(root, version)`` writes ``root/v<version>/``:

1. refuses if that directory exists (``CorpusExistsError``) — frozen versions are never
   rewritten;
2. builds every file in memory, then writes them into a fresh temporary directory in
   ``root`` (same filesystem, so the final rename is atomic), each file created
   exclusively and fsynced, then the temporary directory itself fsynced;
3. checks the temporary directory with the full corpus check (with the same backend);
   a corpus that fails its own check is never published;
4. renames the temporary directory to ``v<version>`` and fsyncs ``root``;
5. re-reads and checks the published directory once more.

A crash or kill before step 4 leaves no ``v<version>`` directory, only a temporary
``.v<version>.tmp-*`` directory (removed on any exception we can see; a SIGKILL cannot
be cleaned up after, so ``record`` ignores such leftovers and they are safe to delete).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from types import ModuleType

from .._files import fsync_directory, write_exclusive
from ..errors import CorpusExistsError, ManifestError
from ..objects import ObjectCodec
from .checker import Report, check
from .layout import build_corpus

__all__ = ["record"]


def _refuse_existing(target: Path) -> None:
    if target.exists() or target.is_symlink():
        raise CorpusExistsError(
            f"{target} exists; a recorded corpus version is frozen (record a new version)",
            detail=str(target))


def _raise_failed(report: Report, where: str) -> None:
    lines = "; ".join(f"{f.path}: {f.reason} {f.detail}".strip() for f in report.failures[:10])
    raise ManifestError(f"recorded corpus fails its own check ({where}): {lines}",
                        detail=report.failures)


def record(root: str | os.PathLike[str], version: int, *,
           cbor: ModuleType | None = None) -> Path:
    """Write corpus format ``version`` into ``root/v<version>`` and return that path."""
    if type(version) is not int or version < 1:
        raise ValueError(f"version must be a positive int, got {version!r}")
    if cbor is None:
        from .. import cbor as live

        cbor = live
    root = Path(root)
    target = root / f"v{version}"
    _refuse_existing(target)
    files = build_corpus(version, ObjectCodec(cbor))  # fails before touching the disk
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".v{version}.tmp-", dir=root))
    try:
        for name, data in files.items():  # manifest.json last: it seals the others
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)  # forms/...
            write_exclusive(tmp / name, data, mode=0o644)
        os.chmod(tmp, 0o755)  # mkdtemp makes it 0700; a corpus is meant to be read
        for directory in sorted({(tmp / name).parent for name in files}, reverse=True):
            fsync_directory(directory)
        report = check(tmp, cbor=cbor, format_version=version)
        if not report.ok:
            _raise_failed(report, "before publishing")
        _refuse_existing(target)  # someone may have recorded it meanwhile
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_directory(root)
    report = check(target, cbor=cbor)
    if not report.ok:
        _raise_failed(report, "after publishing")
    return target
