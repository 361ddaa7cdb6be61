"""``canonkit manifest``: verify Amduat conformance manifests, build a fixtures.v0
manifest for a directory of artifacts."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .._files import validate_output_path
from ..errors import ManifestError
from ._common import (
    EXIT_COULD_NOT_RUN,
    EXIT_FAILURES,
    EXIT_OK,
    report_os_error,
    report_usage_error,
    table_lines,
    worst,
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "manifest", help="verify or write Amduat conformance manifests",
        description="Verify or write Amduat conformance manifests (fixtures.v0, "
                    "tgk_edges.v0, fps.v0, canonkit's fps_negative.v0 and fps_artifacts.v0).")
    sub = parser.add_subparsers(dest="manifest_command", metavar="ACTION", required=True)
    verify = sub.add_parser(
        "verify", help="verify manifests; exit 1 on any drift",
        description="Verify each manifest fail-closed: every problem is listed with the case "
                    "id and a stable reason code. Exit status 0 if all verify, 1 otherwise.")
    verify.add_argument("paths", nargs="+", metavar="PATH", type=Path, help="manifest file")
    verify.add_argument("--json", action="store_true",
                        help="print one JSON report instead of a table")
    verify.set_defaults(func=run_verify)
    write = sub.add_parser(
        "write", help="build a fixtures.v0 manifest for a directory",
        description="List every file under DIR (recursively) in a canonical "
                    "amduat.conformance.fixtures.v0 manifest: id = path relative to DIR, "
                    "artifact = path relative to the manifest, size and sha256 measured. "
                    "DIR must lie inside the manifest's directory.")
    write.add_argument("directory", metavar="DIR", type=Path)
    write.add_argument("-o", "--output", metavar="MANIFEST", type=Path, required=True,
                       help="manifest file to write")
    write.set_defaults(func=run_write)


def _report(path: Path) -> dict[str, Any]:
    from .. import manifests

    try:
        manifest = manifests.read(path)
    except ManifestError as exc:
        if isinstance(exc.__cause__, OSError):  # could not read it: the run is incomplete
            report_os_error("manifest verify", exc.__cause__)
            status = EXIT_COULD_NOT_RUN
        else:
            status = EXIT_FAILURES
        return {"manifest": str(path), "schema": None, "entries": 0, "status": status,
                "problems": [{"case": None, "reason": "unreadable", "detail": str(exc)}]}
    schema = manifest.schema
    array = manifests.SCHEMAS[schema].array if schema in manifests.SCHEMAS else None
    entries = manifest.document.get(array) if array else None
    return {
        "manifest": str(path),
        "schema": schema if isinstance(schema, str) else None,
        "entries": len(entries) if isinstance(entries, list) else 0,
        "problems": [p.as_dict() for p in manifests.verify(manifest)],
    }


def run_verify(args: argparse.Namespace) -> int:
    reports = [_report(path) for path in args.paths]
    failed = any(r["problems"] for r in reports)
    exit_status = worst(r.pop("status", EXIT_FAILURES if r["problems"] else EXIT_OK)
                   for r in reports)
    if args.json:
        print(json.dumps({"ok": not failed, "manifests": reports}, indent=2))
        return exit_status
    rows = [(r["manifest"], p["case"] or "-", p["reason"], p["detail"])
            for r in reports for p in r["problems"]]
    for r in reports:
        status = "FAIL" if r["problems"] else "ok"
        print(f"{status:4}  {r['manifest']}  ({r['schema']}, {r['entries']} entries, "
              f"{len(r['problems'])} problems)")
    if rows:
        print()
        for line in table_lines(("MANIFEST", "CASE", "REASON", "DETAIL"), rows):
            print(line)
    return exit_status


def run_write(args: argparse.Namespace) -> int:
    from .. import manifests

    try:
        validate_output_path(args.output)  # before hashing the directory, not after
        manifest = manifests.build_fixtures(args.directory, args.output)
        manifests.write(manifest, args.output)
    except OSError as exc:
        return report_os_error("manifest write", exc)
    except ManifestError as exc:  # DIR missing or outside the manifest's directory
        return report_usage_error("manifest write", str(exc))
    count = len(manifest.document["fixtures"])
    print(f"wrote {args.output} ({count} fixtures)")
    return 0
