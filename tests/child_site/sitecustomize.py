"""Imported at start-up by every Python process the test suite starts (tests/conftest.py
puts this directory first on PYTHONPATH): an "Exception ignored" in a child — a CLI run, a
pool or Dask worker — is printed as usual and recorded in CANONKIT_UNRAISABLE_DIR, where
the suite's guard finds it and fails the test that was running."""
import os
import sys


def record(unraisable, _dir=os.environ.get("CANONKIT_UNRAISABLE_DIR"), _getpid=os.getpid,
           _open=open, _join=os.path.join, _sys=sys):
    """Append one line about ``unraisable`` to this process's record (best effort: it may
    run while the interpreter shuts down, hence everything it needs bound here)."""
    if not _dir:
        return
    try:
        what = getattr(unraisable.exc_type, "__name__", unraisable.exc_type)
        argv = " ".join(map(str, getattr(_sys, "argv", ())))[:160]
        line = (f"pid {_getpid()} ({argv}): "
                f"{unraisable.err_msg or 'Exception ignored in'}: {unraisable.object!r}: "
                f"{what}: {unraisable.exc_value}\n")
        with _open(_join(_dir, f"{_getpid()}.log"), "a", encoding="utf-8") as f:
            f.write(line)
    except Exception:  # noqa: BLE001 - never an error of its own
        pass


def _hook(unraisable, _default=sys.__unraisablehook__, _record=record):
    _default(unraisable)
    _record(unraisable)


if os.environ.get("CANONKIT_UNRAISABLE_DIR"):
    sys.unraisablehook = _hook
