"""``canonkit store init|put|get|ref|repack|gc|fsck|unlock|import`` (STORE.md).

Every action takes the store first: a directory, or a prefix of object storage
(``s3://bucket/prefix``: STORE.md §7). Data goes to stdout (``--json`` where it
is data: addresses, refs, statistics, the fsck report); messages and progress bars go to
stderr (bars only on a terminal). Exit status as every command: 0 done and clean, 1 fsck
found errors (or an object read back corrupt, or an imported vector's address differs),
2 could not run (not a store, the lock is held or stale, a missing object or input, a
usage error); an import's vectors.json that is not a vectors file is bad data, 1; SIGINT/SIGTERM stop a repack or gc cleanly (the lock released, partial
files removed, fsck's workers stopped) with 128 + the signal (130, 143).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CanonkitError, CorruptObjectError, ManifestError, StoreError
from ._common import (
    EXIT_FAILURES,
    EXIT_OK,
    report_usage_error,
    table_lines,
)
from ._parsing import positive, seconds

if TYPE_CHECKING:
    from ..store import Store

_DESCRIPTION = "A content-addressed object store: put and get objects, refs, repack, gc, fsck."


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("store", help="a content-addressed object store",
                                   description=_DESCRIPTION)
    sub = parser.add_subparsers(dest="store_command", metavar="ACTION", required=True)

    def action(name: str, help_text: str, func: Callable[[argparse.Namespace], int]
               ) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=help_text,
                                                    description=help_text)
        p.add_argument("store", metavar="STORE",
                       help="the store: a directory, or an s3://, gs:// or az:// prefix")
        p.set_defaults(func=func)
        return p

    p = action("init", "create a store in a new or empty directory", _init)
    p = action("put", "store files (or stdin) and print their addresses", _put)
    p.add_argument("files", nargs="*", metavar="FILE", help="files to store; none or '-': "
                                                            "stdin")
    p.add_argument("--form", choices=("loose", "deflate"), default="loose",
                   help="physical form of new objects (default: loose)")
    p.add_argument("--json", action="store_true", help="one JSON object per file")
    p = action("get", "write an object's bytes to stdout or a file", _get)
    p.add_argument("address", metavar="ADDRESS", help="blake3:<64 hex>")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write to FILE (complete or not at all) instead of stdout")
    p.add_argument("--no-verify", action="store_true",
                   help="skip the BLAKE3 check of the bytes read")
    p = action("ref", "list refs, show one, set one (compare-and-swap with --expect) or "
                      "delete one", _ref)
    p.add_argument("name", nargs="?", metavar="NAME", help="a ref name (without refs/)")
    p.add_argument("address", nargs="?", metavar="ADDRESS", help="set NAME to ADDRESS")
    p.add_argument("--expect", metavar="ADDRESS",
                   help="only if NAME holds ADDRESS now ('none': only if it does not exist)")
    p.add_argument("--delete", action="store_true", help="delete NAME")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = action("repack", "pack loose objects (and merge packs) into one new pack", _repack)
    p.add_argument("--deflate", choices=("auto", "always", "never"), default="auto",
                   help="DEFLATE entries: where it saves an eighth or more (auto, the "
                        "default), always, never")
    p.add_argument("--no-merge", action="store_true",
                   help="pack loose objects only; leave existing packs alone")
    _grace(p)
    _common_flags(p)
    p = action("gc", "delete unreachable objects older than the grace period", _gc)
    p.add_argument("--root", action="append", default=[], metavar="ADDRESS",
                   help="keep what ADDRESS reaches too (repeatable)")
    _grace(p)
    _common_flags(p)
    p = action("fsck", "check every byte of the store; exit 1 if anything is wrong", _fsck)
    p.add_argument("--jobs", type=positive, default=1, metavar="N",
                   help="worker processes (default 1: in this process)")
    p.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="local process pool (default) or Dask")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address (default with --engine dask: a LocalCluster)")
    p.add_argument("--all", action="store_true",
                   help="list info findings too (the table shows errors and warnings, and "
                        "counts the rest)")
    p.add_argument("--html", metavar="FILE",
                   help="write a self-contained HTML report: what was checked, findings by "
                        "code, every finding (outside the store; complete or not at all)")
    _common_flags(p)
    p = action("unlock", "remove a stale store lock (--force: any lock)", _unlock)
    p.add_argument("--force", action="store_true",
                   help="remove the lock even if its holder may still run")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = action("import", "put every vector of a conformance corpus", _import)
    p.add_argument("corpus", metavar="CORPUS_DIR", type=Path,
                   help="a corpus version directory holding vectors.json (conformance/v1)")
    p.add_argument("--form", choices=("loose", "deflate"), default="loose",
                   help="physical form of new objects (default: loose)")
    p.add_argument("--json", action="store_true", help="one JSON object per vector")


def _grace(p: argparse.ArgumentParser) -> None:
    p.add_argument("--grace", type=seconds, default=3600.0, metavar="SECONDS",
                   help="never delete what is younger than this (default 3600; 0 removes "
                        "every leftover and unreachable object at once)")


def _common_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _name(args: argparse.Namespace) -> str:
    return f"store {args.store_command}"


def _run(args: argparse.Namespace, body: Callable[[], int]) -> int:
    """Run an action: store errors are "could not run" (2) with their message, except a
    corrupt object read back (1); SIGINT, SIGTERM and SIGHUP end it cleanly (the lock
    released, temporaries removed, workers stopped) with 128 + the signal."""
    from ..engines import Interrupted, interruptible

    try:
        with interruptible():
            return body()
    except Interrupted as exc:
        print(f"canonkit {_name(args)}: {exc}", file=sys.stderr)
        return exc.exit_status
    except (CorruptObjectError, ManifestError) as exc:  # bad data read: an object, vectors.json
        print(f"canonkit {_name(args)}: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    except (StoreError, CanonkitError, ValueError) as exc:
        return report_usage_error(_name(args), str(exc))


def _open(args: argparse.Namespace) -> Store:
    from ..store import Store

    return Store(args.store)


def _store_dirs(args: argparse.Namespace) -> list[str]:
    """The store as a directory an output must stay out of (none for a URL: a store in
    object storage is never a local path)."""
    from .._files.urls import is_url

    return [] if is_url(args.store) else [args.store]


def _print_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _init(args: argparse.Namespace) -> int:
    def body() -> int:
        from ..store import Store

        store = Store.init(args.store)
        print(f"initialized an empty canonkit store in {store.root}", file=sys.stderr)
        return EXIT_OK

    return _run(args, body)


def _put(args: argparse.Namespace) -> int:
    def body() -> int:
        from .._files import read_regular

        store = _open(args)
        for name in args.files or ["-"]:
            # a named file through the input door: a FIFO or a device is refused at once,
            # never read until it ends (or memory does)
            data = sys.stdin.buffer.read() if name == "-" else read_regular(name)
            address = store.put(data, form=args.form)
            if args.json:
                _print_json({"file": name, "address": address, "bytes": len(data)})
            else:
                print(address if name == "-" else f"{address}  {name}", flush=True)
        return EXIT_OK

    return _run(args, body)


def _get(args: argparse.Namespace) -> int:
    def body() -> int:
        from .._files import validate_output_path, write_atomic

        if args.output:  # before the read: a device, a directory or the store is refused
            validate_output_path(args.output, input_dirs=_store_dirs(args))
        store = _open(args)
        data = store.get(args.address, verify=not args.no_verify, copy=False)
        if args.output:  # the output door: complete or not at all, links written through
            write_atomic(args.output, data, input_dirs=_store_dirs(args))
        else:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        return EXIT_OK

    return _run(args, body)


def _ref(args: argparse.Namespace) -> int:
    def body() -> int:
        store = _open(args)
        expect = None if args.expect is None else (
            store.ABSENT if args.expect == "none" else args.expect)
        if args.name is None:
            if args.address or args.delete or args.expect:
                return report_usage_error(_name(args), "NAME is needed")
            refs = store.refs()
            if args.json:
                _print_json(refs)
            else:
                for name, address in refs.items():
                    print(f"{address}  {name}")
            return EXIT_OK
        if args.delete:
            if args.address:
                return report_usage_error(_name(args), "--delete takes no ADDRESS")
            existed = store.delete_ref(args.name, expect=expect)
            if args.json:
                _print_json({"name": args.name, "deleted": existed})
            return EXIT_OK if existed else report_usage_error(
                _name(args), f"no ref {args.name!r}")
        if args.address:
            store.set_ref(args.name, args.address, expect=expect)
            if args.json:
                _print_json({"name": args.name, "address": args.address})
            return EXIT_OK
        if args.expect:
            return report_usage_error(_name(args), "--expect needs an ADDRESS to set")
        target = store.ref(args.name)
        if target is None:
            return report_usage_error(_name(args), f"no ref {args.name!r}")
        if args.json:
            _print_json({"name": args.name, "address": target})
        else:
            print(target)
        return EXIT_OK

    return _run(args, body)


def _stats(args: argparse.Namespace, stats: Any) -> None:
    if args.json:
        _print_json(stats.to_dict())
    else:
        print(stats)


def _progress(args: argparse.Namespace) -> bool | None:
    return False if args.no_progress else None


def _repack(args: argparse.Namespace) -> int:
    def body() -> int:
        stats = _open(args).repack(deflate=args.deflate, merge=not args.no_merge,
                                   grace_seconds=args.grace, progress=_progress(args))
        _stats(args, stats)
        return EXIT_OK

    return _run(args, body)


def _gc(args: argparse.Namespace) -> int:
    def body() -> int:
        stats = _open(args).gc(roots=args.root, grace_seconds=args.grace,
                               progress=_progress(args))
        _stats(args, stats)
        return EXIT_OK

    return _run(args, body)


def _fsck(args: argparse.Namespace) -> int:
    def body() -> int:
        if args.scheduler is not None and args.engine != "dask":
            return report_usage_error(_name(args), "--scheduler needs --engine dask")
        if args.html is not None:  # before the work: a device or a path in the store is refused
            from ..htmlreport import check_output

            check_output(args.html, input_dirs=_store_dirs(args))
        report = _open(args).fsck(jobs=args.jobs, engine=args.engine,
                                  scheduler=args.scheduler, progress=_progress(args))
        if args.html is not None:  # found errors or not: the page says which
            from ..htmlreport import render_fsck, write_html

            write_html(args.html, render_fsck(report, args.store), input_dirs=_store_dirs(args))
        if args.json:
            _print_json(report.to_dict())
            return report.exit_status
        shown = [f for f in report.findings if args.all or f.severity != "info"]
        if shown:
            rows = [(f.severity, f.code, f.path + ("" if f.offset is None else f"@{f.offset}"),
                     f.address or "", f.detail) for f in shown]
            print("\n".join(table_lines(("severity", "code", "path", "address", "detail"),
                                        rows)))
        counts = ", ".join(f"{n} {code}" for code, n in report.counts().items()) or "nothing"
        print(f"{'clean' if report.ok else 'ERRORS'}: {report.objects} objects "
              f"({report.loose_files} loose files, {report.pack_entries} pack entries in "
              f"{report.packs} packs), {report.reachable} reachable from {report.refs} refs; "
              f"{report.logical_bytes} bytes verified in {report.seconds:.2f} s; findings: "
              f"{counts}")
        return report.exit_status

    return _run(args, body)


def _unlock(args: argparse.Namespace) -> int:
    def body() -> int:
        info = _open(args).break_lock(force=args.force)
        if args.json:
            _print_json(None if info is None else info.to_dict())
        elif info is None:
            print("the store is not locked", file=sys.stderr)
        else:
            print(f"removed the lock of {info.describe()}", file=sys.stderr)
        return EXIT_OK

    return _run(args, body)


def _import(args: argparse.Namespace) -> int:
    def body() -> int:
        from ..store.corpus import import_corpus

        store = _open(args)
        status = EXIT_OK
        for name, address, expected in import_corpus(store, args.corpus, form=args.form,
                                                     progress=None):
            ok = address == expected
            status = status if ok else EXIT_FAILURES
            if args.json:
                _print_json({"name": name, "address": address, "expected": expected,
                             "ok": ok})
            elif not ok:
                print(f"{name}: stored as {address}, the corpus says {expected}",
                      file=sys.stderr)
            else:
                print(f"{address}  {name}")
        return status

    return _run(args, body)

