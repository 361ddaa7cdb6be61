"""``canonkit car verify | ls | extract``: CAR files, CARv1 and CARv2 (docs/car.md).

Exit status as every command: 0 checked and clean, 1 findings of severity error (or a
requested block that is not in the file), 2 could not run (a usage error, an input that
is missing, unreadable or changed while read, an output that cannot be written); SIGINT,
SIGTERM and SIGHUP stop an extraction with its partial file removed (128 + the signal).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ..errors import InvalidLinkError
from ._common import (
    EXIT_FAILURES,
    EXIT_OK,
    report_os_error,
    report_usage_error,
    table_lines,
    worst,
)

from ._parsing import positive

if TYPE_CHECKING:
    from ..car import Finding, Report

__all__ = ["register"]

_DESCRIPTION = ("CAR files (CARv1, CARv2 with either index format): verify every rule and "
                "every block's CID, list the sections, extract the blocks.")
_STRICT = "also decode every dag-cbor block as strict DAG-CBOR"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("car", help="verify, list or extract CAR files",
                                   description=_DESCRIPTION)
    sub = parser.add_subparsers(dest="car_command", metavar="ACTION", required=True)
    verify = sub.add_parser(
        "verify", help="check every rule and recompute every CID; exit 1 on any error",
        description="Check each CAR file: the pragma and headers, the CARv2 offsets, sizes "
                    "and padding, the framing of every section, every block's CID recomputed "
                    "(sha2-256, blake2b-256, blake3, identity and the other functions canonkit "
                    "computes; any other is a finding), and a CARv2 index against the data. "
                    "Findings carry stable codes and file offsets (docs/car.md). Exit status "
                    "0 if every file is clean, 1 on an error finding (warnings do not fail), "
                    "2 if a file could not be read.")
    verify.add_argument("files", nargs="+", metavar="FILE", help="a CAR file")
    verify.add_argument("--strict", action="store_true", help=_STRICT)
    verify.add_argument("--json", action="store_true", help="print one JSON report")
    verify.add_argument("--limit", type=positive, default=1000, metavar="N",
                        help="findings listed per code and file (all are counted; "
                             "default 1000)")
    verify.set_defaults(func=_verify)
    ls = sub.add_parser(
        "ls", help="list the sections of a CAR file",
        description="One line per section: its offset and length, the block's codec, hash "
                    "function, length and CID, and 'ok' or the codes of its findings; "
                    "framing findings in their place. Exit status 1 if any is an error, 2 if the "
                    "file could not be read.")
    ls.add_argument("file", metavar="FILE", help="a CAR file")
    ls.add_argument("--strict", action="store_true", help=_STRICT)
    ls.add_argument("--json", action="store_true",
                    help="JSON lines: the header, then one object per section or finding")
    ls.set_defaults(func=_ls)
    extract = sub.add_parser(
        "extract", help="write verified blocks to files named by their CIDs",
        description="Write each block whose CID verifies (or only those given with --cid) to "
                    "DIR/<CID>, each file complete or not at all; nothing is written if a "
                    "target exists and --force is not given. Exit status 1 if the file has "
                    "error findings or a requested CID is not a verified block of it.")
    extract.add_argument("file", metavar="FILE", help="a CAR file")
    extract.add_argument("-o", "--output", metavar="DIR", required=True,
                         help="directory to write to (created if missing)")
    extract.add_argument("--cid", action="append", default=[], metavar="CID",
                         help="extract only this block (repeatable)")
    extract.add_argument("--force", action="store_true", help="replace existing files")
    extract.add_argument("--strict", action="store_true",
                         help="write a dag-cbor block only if it is strict DAG-CBOR")
    extract.add_argument("--json", action="store_true", help="print a JSON report")
    extract.set_defaults(func=_extract)


def _summary(report: Report) -> str:
    if report.version is None:
        kind = "not a CAR file"
    elif report.version == 1:
        kind = "CARv1"
    else:
        kind = "CARv2"
        if report.index_format:
            kind += f" ({report.index_format}, {report.index_entries:,} entries)"
        elif report.index_offset:
            kind += " (index not checked)"
        else:
            kind += " (no index)"
    roots = f"{len(report.roots)} root" + ("" if len(report.roots) == 1 else "s")
    errors = sum(n for code, n in report.counts.items() if _severity(code) == "error")
    found = sum(report.counts.values())
    tail = "all verified" if found == 0 else (
        f"{found:,} finding{'' if found == 1 else 's'} ({errors:,} error"
        f"{'' if errors == 1 else 's'})")
    strict = ", strict" if report.strict else ""
    return (f"{kind}, {roots}, {report.blocks:,} blocks ({report.block_bytes:,} bytes){strict}"
            f": {tail}")


def _severity(code: str) -> str:
    from ..car import CODES

    return CODES[code][0]


def _finding_row(path: str, f: Finding) -> tuple[str, ...]:
    return (path, str(f.offset), f.severity, f.code, f.cid or "-", f.detail)


def _verify(args: argparse.Namespace) -> int:
    from .. import car

    reports = []
    statuses = []
    for path in args.files:
        try:
            report = car.verify(path, strict=args.strict, limit=args.limit)
        except OSError as exc:
            statuses.append(report_os_error("car verify", exc))
            continue
        reports.append(report)
        statuses.append(report.exit_status)
    if args.json:
        print(json.dumps({"ok": all(s == EXIT_OK for s in statuses),
                          "files": [r.to_dict() for r in reports]}, indent=2))
        return worst(statuses)
    rows = []
    for r in reports:
        print(f"{'ok' if r.ok else 'FAIL':4}  {r.path}  {_summary(r)}")
        rows += [_finding_row(r.path, f) for f in r.findings]
    if rows:
        print()
        for line in table_lines(("FILE", "OFFSET", "SEVERITY", "CODE", "CID", "DETAIL"), rows):
            print(line)
    for r in reports:
        kept: dict[str, int] = {}
        for f in r.findings:
            kept[f.code] = kept.get(f.code, 0) + 1
        for code, count in r.counts.items():
            if count > kept.get(code, 0):
                print(f"{r.path}: {count - kept.get(code, 0):,} more {code} findings not listed "
                      f"(--limit {args.limit})")
    return worst(statuses)


def _ls(args: argparse.Namespace) -> int:
    from .. import car

    failed = False
    try:
        with car.open_car(args.file) as opened:
            layout = opened.layout
            header = {"kind": "header", "version": layout.version,
                      "roots": [str(r) for r in layout.roots],
                      "data_offset": layout.v2.data_offset if layout.v2 else None,
                      "data_size": layout.v2.data_size if layout.v2 else None,
                      "index_offset": (layout.v2.index_offset or None) if layout.v2 else None}
            if args.json:
                print(json.dumps(header))
            for f in opened.header_findings:
                failed |= f.severity == "error"
                _print_ls_finding(f, args.json)
            for item in opened.sections(strict=args.strict):
                if isinstance(item, car.Finding):
                    failed |= item.severity == "error"
                    _print_ls_finding(item, args.json)
                    continue
                failed |= any(f.severity == "error" for f in item.findings)
                _print_ls_section(item, args.json)
    except OSError as exc:
        return report_os_error("car ls", exc)
    return EXIT_FAILURES if failed else EXIT_OK


def _print_ls_finding(f: Finding, as_json: bool) -> None:
    if as_json:
        print(json.dumps({"kind": "finding", **f.to_dict()}))
    else:
        print(f"{f.offset:>10}  {f.severity}  {f.code}: {f.detail}")


def _print_ls_section(s: Any, as_json: bool) -> None:
    from ..cbor._cid import code_name

    codec = code_name(s.fields.codec) if s.fields else "-"
    hash_name = code_name(s.fields.hash_code) if s.fields else "-"
    cid = str(s.cid) if s.cid else "-"
    if as_json:
        print(json.dumps({"kind": "section", "offset": s.offset, "length": s.length,
                          "cid": None if s.cid is None else cid, "codec": codec,
                          "hash": hash_name, "block_length": s.data_length,
                          "findings": [f.to_dict() for f in s.findings]}))
        return
    status = ",".join(f.code for f in s.findings) or "ok"
    print(f"{s.offset:>10}  {s.length:>8}  {codec:<9} {hash_name:<12} {s.data_length:>8}  "
          f"{cid}  {status}")


def _extract(args: argparse.Namespace) -> int:
    from .. import car
    from ..cbor import Link
    from ..engines import Interrupted, interruptible

    try:
        cids = [Link.from_string(text) for text in args.cid] or None
    except InvalidLinkError as exc:
        return report_usage_error("car extract", str(exc))
    try:
        with interruptible():
            report = car.extract(args.file, args.output, cids=cids, force=args.force,
                                 strict=args.strict)
    except Interrupted as exc:
        print(f"canonkit car extract: {exc}", file=sys.stderr)
        return exc.exit_status
    except OSError as exc:
        return report_os_error("car extract", exc)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return report.exit_status
    print(f"wrote {len(report.written):,} blocks to {report.directory}")
    rows = [_finding_row(report.path, f) for f in report.findings]
    if rows:
        for line in table_lines(("FILE", "OFFSET", "SEVERITY", "CODE", "CID", "DETAIL"), rows):
            print(line)
    for missing in report.missing:
        print(f"canonkit car extract: {missing}: not a verified block of {report.path}",
              file=sys.stderr)
    return report.exit_status
