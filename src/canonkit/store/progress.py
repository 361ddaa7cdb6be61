"""Progress bars for long store operations: tqdm on stderr, only when asked or (by
default) when stderr is a terminal; fitted to the terminal's width as it changes."""
from __future__ import annotations

import sys
from typing import Any

__all__ = ["Bar", "bar"]


class Bar:
    """A bar that may be off: ``update(n)`` and ``close()`` are then free."""

    def __init__(self, inner: Any = None) -> None:
        self._inner = inner

    def update(self, n: int = 1) -> None:
        if self._inner is not None:
            self._inner.update(n)

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()
            self._inner = None


def bar(progress: bool | None, total: int, desc: str, unit: str) -> Bar:
    """A ``Bar`` over ``total`` ``unit``s: shown when ``progress`` is True, or when it is
    None and stderr is a terminal; never when tqdm is not installed."""
    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
    if not progress or total <= 0:
        return Bar()
    try:
        from tqdm import tqdm
    except ImportError:
        return Bar()
    return Bar(tqdm(total=total, desc=desc, unit=unit, dynamic_ncols=True, leave=False,
                    file=sys.stderr, mininterval=0.25))
