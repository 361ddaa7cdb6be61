"""Report and annotation files: written to a unique temporary beside the target and
renamed into place only when the run completes (``canonkit._files.AtomicWriter``: fsync
before the rename), so a failed or interrupted run never leaves a partial report that
looks complete, and an existing report stays as it was. The inputs are never opened for
writing."""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import orjson

from .._files import AtomicWriter
from ..errors import OutputPathError


class AtomicLines:
    """A JSON-lines file that appears under its name only on ``commit()``. A failed
    write is an ``OutputPathError`` naming the file (the temporary is gone by then)."""

    def __init__(self, path: str | os.PathLike[str], *,
                 inputs: Iterable[str | os.PathLike[str]] = ()) -> None:
        self.path = os.fspath(path)
        try:
            self._file = AtomicWriter(self.path, inputs=inputs)
        except OutputPathError:
            raise
        except OSError as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: OSError) -> OutputPathError:
        return OutputPathError(f"{self.path}: cannot be written: {exc.strerror or exc}",
                               detail=self.path)

    def write_line(self, line: bytes) -> None:
        self.write(line + b"\n")

    def write(self, lines: bytes) -> None:
        """Whole lines, each ending with a newline."""
        try:
            self._file.write(lines)
        except OSError as exc:
            raise self._failed(exc) from exc

    def write_json(self, value: Any) -> None:
        self.write_line(orjson.dumps(value))

    def commit(self) -> None:
        try:
            self._file.commit()
        except OSError as exc:
            raise self._failed(exc) from exc

    def abort(self) -> None:
        self._file.abort()


def annotation(episode_id: str | None, source: Any, order: list[str]) -> dict[str, Any]:
    """An annotation to record for a search-resolved seal (ASTP.md §12): the order that
    reproduced the sealed spine root, as a ``resolved_signal_order``."""
    return {"episode_id": episode_id, "source": source, "resolved_signal_order": order}
