"""What repack and gc did, as numbers a user would print (``str(stats)``) or store
(``stats.to_dict()``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["GCStats", "RepackStats"]


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    raise AssertionError("unreachable")


class _Stats:
    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload, no-any-return]

    def rows(self) -> list[tuple[str, str]]:
        out = []
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name.endswith("bytes") and isinstance(value, int):
                text = f"{value} ({_size(value)})"
            elif isinstance(value, float):
                text = f"{value:.3f}"
            else:
                text = "-" if value is None else str(value)
            out.append((f.name.replace("_", " "), text))
        return out

    def __str__(self) -> str:
        rows = self.rows()
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


@dataclass
class RepackStats(_Stats):
    """``objects`` now in the new pack (``pack``: its path, None if nothing was packed),
    of which ``deflated`` are stored DEFLATE; ``loose_removed`` files and ``packs_removed``
    old packs it superseded; ``skipped``: objects left where they were because their
    physical form is corrupt (fsck names them)."""

    objects: int = 0
    deflated: int = 0
    logical_bytes: int = 0
    pack_bytes: int = 0
    loose_removed: int = 0
    packs_removed: int = 0
    skipped: int = 0
    leftovers_removed: int = 0
    seconds: float = 0.0
    pack: str | None = None

    @property
    def ratio(self) -> float:
        """Pack size / sum of logical sizes (headers, index excluded)."""
        return self.pack_bytes / self.logical_bytes if self.logical_bytes else 0.0


@dataclass
class GCStats(_Stats):
    """``roots`` marked from (refs and named roots), ``reachable`` objects found;
    ``deleted`` unreachable object copies removed (``deleted_loose`` files, the rest
    dropped from rewritten packs), ``kept_young`` objects kept only by the grace period
    (young ones and what they reference; ``young_roots`` is how many were young);
    ``packs_written``/``packs_removed``; ``freed_bytes`` on disk; ``unfollowed``: objects
    whose references could not be followed (see fsck)."""

    roots: int = 0
    reachable: int = 0
    young_roots: int = 0
    deleted: int = 0
    deleted_loose: int = 0
    kept_young: int = 0
    packs_written: int = 0
    packs_removed: int = 0
    freed_bytes: int = 0
    leftovers_removed: int = 0
    unfollowed: int = 0
    seconds: float = 0.0
