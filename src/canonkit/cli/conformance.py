"""``canonkit conformance check|record`` (OBJECTS.md §2).

``check DIR...``: each DIR is a corpus version directory (``conformance/v1``) or a corpus
root (``conformance/``), in which case every ``v<N>`` directory inside is checked. A
directory holding any corpus file (or named ``v<N>``) is a version directory, even if
files are missing — so a damaged corpus is reported, never mistaken for an empty root.
Every available CBOR backend checks independently; exit 1 on any failure (including
backends that disagree), 2 on a usage error.

``record ROOT --version N``: ROOT is the corpus root; the new version is written to
``ROOT/vN`` (refused if it exists).
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import CanonkitError
from ._common import (
    EXIT_FAILURES,
    EXIT_OK,
    report_os_error,
    report_usage_error,
    table_lines,
)
from ._parsing import integer

CORPUS_FILES = ("manifest.json", "vectors.json", "negative.json")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "conformance", help="check or record a frozen conformance corpus",
        description="Check a conformance corpus (vectors.json, negative.json, "
                    "manifest.json) or record a new corpus version from the live encoder.")
    sub = parser.add_subparsers(dest="conformance_command", metavar="ACTION", required=True)

    chk = sub.add_parser(
        "check", help="check corpus directories; exit 1 on any failure",
        description="Check each DIR (a version directory such as conformance/v1, or a "
                    "corpus root: every v<N> inside is checked) with every available CBOR "
                    "backend. Exit status 0 if all pass, 1 on any failure.")
    chk.add_argument("dirs", nargs="+", metavar="DIR", type=Path,
                     help="a version directory (conformance/v1) or a corpus root "
                          "(conformance/)")
    chk.add_argument("--json", action="store_true", help="print a JSON report instead of a table")
    chk.add_argument("--backend", choices=("all", "c", "py"), default="all",
                     help="which CBOR backends to check with (default: all available)")
    chk.set_defaults(func=run_check)

    rec = sub.add_parser(
        "record", help="record a new corpus version from the live encoder",
        description="Write ROOT/v<N> from canonkit's fixture definitions through the live "
                    "encoder: refuses to overwrite, writes atomically, re-verifies.")
    rec.add_argument("root", metavar="ROOT", type=Path,
                     help="the corpus root (e.g. conformance/); the corpus goes to ROOT/vN")
    rec.add_argument("--version", dest="format_version", type=integer, required=True, metavar="N",
                     help="the new format version (a positive integer)")
    rec.set_defaults(func=run_record)


def version_dirs(path: Path) -> list[Path]:
    """The version directories ``path`` stands for (see the module docstring)."""
    from ..conformance.layout import version_of

    if version_of(path.name) is not None or any((path / f).exists() for f in CORPUS_FILES):
        return [path]
    if path.is_dir():
        found = sorted((p for p in path.iterdir() if p.is_dir() and version_of(p.name)),
                       key=lambda p: version_of(p.name) or 0)
        if found:
            return found
    return [path]  # checking it reports what is missing


def run_check(args: argparse.Namespace) -> int:
    from ..conformance import available_backends, check_backends

    backends = available_backends()
    if args.backend != "all":
        if args.backend not in backends:
            return report_usage_error("conformance check",
                                      f"backend {args.backend!r} is not available")
        backends = {args.backend: backends[args.backend]}
    for given in args.dirs:  # a path that is not there at all is not a damaged corpus
        if not given.exists():
            return report_os_error("conformance check", FileNotFoundError(
                errno.ENOENT, os.strerror(errno.ENOENT), str(given)))
        if given.is_dir():  # ... nor is one that cannot be listed: the check cannot run
            try:
                os.listdir(given)
            except OSError as exc:
                return report_os_error("conformance check", exc)
    results = []
    for given in args.dirs:
        for directory in version_dirs(given):
            reports, disagreements = check_backends(str(directory), backends)
            results.append((str(directory), reports, disagreements))
    failed = any(dis or not all(r.ok for r in reps.values()) for _, reps, dis in results)
    if args.json:
        doc = [{"directory": d, "ok": not dis and all(r.ok for r in reps.values()),
                "backends": {name: r.to_dict() for name, r in reps.items()},
                "disagreements": [f.__dict__ for f in dis]} for d, reps, dis in results]
        print(json.dumps(doc, indent=2))
    else:
        for name, reports, disagreements in results:
            print_table(name, reports, disagreements)
    return EXIT_FAILURES if failed else EXIT_OK


def print_table(directory: str, reports: dict[str, Any], disagreements: list[Any]) -> None:
    rows = [(name, f.path, f.reason, f.detail)
            for name, report in reports.items() for f in report.failures]
    rows += [("*", f.path, f.reason, f.detail) for f in disagreements]
    any_report = next(iter(reports.values()))
    status = "FAIL" if rows else "ok"
    print(f"{directory}: {status} — {any_report.files} files, {any_report.vectors} vectors, "
          f"{any_report.cases} negative cases; backends: {', '.join(reports)}")
    if not rows:
        return
    header, *lines = table_lines(("backend", "path", "reason", "detail"), rows)
    print(header)
    print("-" * min(len(header) + 40, 120))
    for line in lines:
        print(line)


def run_record(args: argparse.Namespace) -> int:
    from ..conformance import record

    try:
        path = record(args.root, args.format_version)
    except OSError as exc:  # the version exists (CorpusExistsError), disk errors
        return report_os_error("conformance record", exc)
    except CanonkitError as exc:  # the recorded corpus fails its own check
        print(f"canonkit conformance record: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    except ValueError as exc:  # a bad --version
        return report_usage_error("conformance record", str(exc))
    print(f"recorded {path}")
    return 0
