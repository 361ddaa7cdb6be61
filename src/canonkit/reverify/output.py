"""Report and annotation files: written to a unique temporary beside the target and
renamed into place only when the run completes (``canonkit._files.AtomicWriter``), so a
failed or interrupted run never leaves a partial report that looks complete. The inputs
are never opened for writing."""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import orjson

from .._files import AtomicWriter


class AtomicLines:
    """A JSON-lines file that appears under its name only on ``commit()``."""

    def __init__(self, path: str | os.PathLike[str], *,
                 inputs: Iterable[str | os.PathLike[str]] = ()) -> None:
        self.path = os.fspath(path)
        self._file = AtomicWriter(self.path, inputs=inputs)

    def write_line(self, line: bytes) -> None:
        self._file.write(line)
        self._file.write(b"\n")

    def write_json(self, value: Any) -> None:
        self.write_line(orjson.dumps(value))

    def commit(self) -> None:
        self._file.commit()

    def abort(self) -> None:
        self._file.abort()


def annotation(episode_id: str | None, source: Any, order: list[str]) -> dict[str, Any]:
    """An annotation to record for a search-resolved seal (ASTP.md §12): the order that
    reproduced the sealed spine root, as a ``resolved_signal_order``."""
    return {"episode_id": episode_id, "source": source, "resolved_signal_order": order}
