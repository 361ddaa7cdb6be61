"""A local store's files copied under a prefix of object storage, byte for byte: the same
store in both places (STORE.md §7 keeps the layout), for tests that compare them."""
from __future__ import annotations

import os
from pathlib import Path

from canonkit._files import remote
from canonkit.store.findings import FsckReport

# findings whose detail says an age: the two copies were written at different moments
AGED = ("unpublished_pack", "tmp_leftover", "lock_held", "stale_lock")


def upload(root: Path, url: str) -> None:
    """Every file of the store at ``root`` (none of its directories: an object store
    has none) as an object under the prefix ``url`` (ending in "/")."""
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            remote.put(url + path.relative_to(root).as_posix(), path.read_bytes())


def comparable(report: FsckReport) -> dict[str, object]:
    """What two fsck runs of one store must agree on: the findings (an age left out) and
    every count, but not the time taken nor the engine."""
    findings = [(f.severity, f.code, f.path, f.offset, f.address,
                 None if f.code in AGED else f.detail) for f in report.findings]
    counts = {k: v for k, v in report.to_dict().items()
              if k not in ("findings", "seconds", "phases", "engine", "jobs")}
    return {"findings": findings, **counts}
