"""Frozen, self-verifying conformance corpora (OBJECTS.md §2).

    >>> from canonkit import conformance
    >>> report = conformance.check("conformance/v1")          # doctest: +SKIP
    >>> report.ok, report.failures                            # doctest: +SKIP
    (True, [])

``check`` reads a corpus version directory (``vectors.json``, ``negative.json``,
``manifest.json``) and returns a ``Report`` of ``Failure(path, reason, detail)`` records;
``record`` writes a new version directory from the live encoder. ``check_backends`` runs
the check once per CBOR backend (compiled and pure Python) and adds a
``backends_disagree`` failure for anything they do not both report.
"""
from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType

from .checker import REASONS, Failure, Report, check, compare_reports
from .fixtures import NEGATIVE_CLASSES, NEGATIVE_FIXTURES, OBJECT_FIXTURES, REQUIREMENTS
from .layout import build_corpus
from .recorder import record

__all__ = ["NEGATIVE_CLASSES", "NEGATIVE_FIXTURES", "OBJECT_FIXTURES", "REASONS",
           "REQUIREMENTS", "Failure", "Report", "available_backends", "build_corpus",
           "check", "check_backends", "compare_reports", "record"]


def available_backends() -> dict[str, ModuleType]:
    """``{"c": canonkit.cbor._codec, "py": canonkit.cbor._codec_py}``, without ``c`` when it is not
    built or ``CANONKIT_NO_EXTENSIONS=1``."""
    import importlib

    from .. import _backend

    out: dict[str, ModuleType] = {}
    if not _backend.NO_EXTENSIONS:
        try:
            out["c"] = importlib.import_module("canonkit.cbor._codec")
        except ImportError:
            pass
    out["py"] = importlib.import_module("canonkit.cbor._codec_py")
    return out


def check_backends(directory: str, backends: Mapping[str, ModuleType] | None = None
                   ) -> tuple[dict[str, Report], list[Failure]]:
    """Check ``directory`` once per backend; returns the reports and the disagreements."""
    backends = available_backends() if backends is None else backends
    reports = {name: check(directory, cbor=module) for name, module in backends.items()}
    return reports, compare_reports(reports)
