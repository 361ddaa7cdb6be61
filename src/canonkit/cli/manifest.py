"""``canonkit manifest``: verify Amduat conformance manifests, build a fixtures.v0
manifest for a directory of artifacts."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import ManifestError
from ._common import table_lines


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
        return {"manifest": str(path), "schema": None, "entries": 0,
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
    if args.json:
        print(json.dumps({"ok": not failed, "manifests": reports}, indent=2))
        return 1 if failed else 0
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
    return 1 if failed else 0


def run_write(args: argparse.Namespace) -> int:
    from .. import manifests

    try:
        manifest = manifests.build_fixtures(args.directory, args.output)
        manifests.write(manifest, args.output)
    except (ManifestError, OSError) as exc:
        print(f"canonkit manifest write: {exc}", file=sys.stderr)
        return 1
    count = len(manifest.document["fixtures"])
    print(f"wrote {args.output} ({count} fixtures)")
    return 0
