"""``canonkit cbor encode | decode | check``: JSON → CBOR, CBOR → JSON (or diagnostic
notation) and strict validation, under an explicit profile."""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Any, NoReturn

from .._cbor_types import PROFILES
from ..errors import CanonkitError
from ._cbor_json import JSONFormError, from_json, to_json
from ._common import EXIT_FAILURES, EXIT_OK, report_os_error, worst

__all__ = ["register"]

_JSON_FORM_HELP = (
    "Values JSON cannot hold use one-key objects: {\"$bytes\": \"<hex>\"}, "
    "{\"$float\": \"NaN\"|\"Infinity\"|\"-Infinity\"|\"0x<binary64 hex>\"}, "
    "{\"$tag\": N, \"value\": V}, {\"$simple\": N}, {\"$undefined\": true}, "
    "{\"$link\": \"<CID>\"}, {\"$map\": [[K, V], ...]} (non-text keys). "
    "`cbor encode` of `cbor decode` output gives back the same bytes."
)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def _write_atomically(path: str, data: bytes) -> None:
    """All bytes or none: write a temporary file beside ``path``, then rename it."""
    if path == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".canonkit-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _reject_constant(name: str) -> NoReturn:
    raise JSONFormError(f"JSON has no {name}; write {{\"$float\": \"{name}\"}}")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise JSONFormError(f"duplicate JSON object key {key!r}")
        seen.add(key)
    return dict(pairs)


def _fail(command: str, message: str) -> int:
    print(f"canonkit cbor {command}: {message}", file=sys.stderr)
    return 1


def _describe(exc: CanonkitError) -> str:
    what = exc.detail if isinstance(exc.detail, str) else str(exc)
    if exc.offset is None:
        return f"{exc.code}: {what}"
    return f"{exc.code} at offset {exc.offset}: {what}"


def _encode(args: argparse.Namespace) -> int:
    from .. import cbor

    try:
        text = _read(args.file).decode("utf-8")
        document = json.loads(text, parse_constant=_reject_constant,
                              object_pairs_hook=_no_duplicate_keys)
        data = cbor.encode(from_json(document), profile=args.profile)
    except OSError as exc:
        return report_os_error("cbor encode", exc)
    except UnicodeDecodeError as exc:
        return _fail("encode", f"input is not UTF-8 JSON: {exc}")
    except (json.JSONDecodeError, JSONFormError) as exc:
        return _fail("encode", f"bad JSON input: {exc}")
    except CanonkitError as exc:
        return _fail("encode", _describe(exc))
    try:
        _write_atomically(args.output, data)
    except OSError as exc:
        return report_os_error("cbor encode", exc)
    return 0


def _decode(args: argparse.Namespace) -> int:
    from .. import cbor

    try:
        data = _read(args.file)
        if args.diag:
            text = cbor.diagnose(data)
        else:
            value = cbor.decode(data, profile=args.profile)
            text = json.dumps(to_json(value), ensure_ascii=False, indent=args.indent,
                              allow_nan=False)
    except OSError as exc:
        return report_os_error("cbor decode", exc)
    except CanonkitError as exc:
        return _fail("decode", _describe(exc))
    sys.stdout.write(text + "\n")
    return 0


def _check(args: argparse.Namespace) -> int:
    from .. import cbor

    decoder = cbor.Decoder(profile=args.profile)
    statuses = []
    for path in args.files:
        try:
            decoder.decode(_read(path))
        except OSError as exc:  # not a check result: the run is incomplete
            statuses.append(report_os_error("cbor check", exc))
        except CanonkitError as exc:
            print(f"{path}: {_describe(exc)}")
            statuses.append(EXIT_FAILURES)
        else:
            print(f"{path}: ok")
            statuses.append(EXIT_OK)
    return worst(statuses)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cbor", help="deterministic CBOR: encode, decode, check",
        description="Deterministic CBOR under the profiles " + ", ".join(PROFILES) + ".")
    commands = parser.add_subparsers(dest="cbor_command", metavar="SUBCOMMAND", required=True)

    def profile_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--profile", choices=PROFILES, default="core",
                       help="rule set (default: core)")

    enc = commands.add_parser(
        "encode", help="JSON → CBOR",
        description="Read a JSON document and write its deterministic CBOR encoding. "
        + _JSON_FORM_HELP)
    enc.add_argument("file", nargs="?", default="-", metavar="FILE",
                     help="JSON input file, - for stdin (default)")
    enc.add_argument("-o", "--output", default="-", metavar="OUT",
                     help="CBOR output file, - for stdout (default); written atomically")
    profile_option(enc)
    enc.set_defaults(func=_encode)

    dec = commands.add_parser(
        "decode", help="CBOR → JSON (or diagnostic notation)",
        description="Strictly decode one CBOR item and print it as JSON. " + _JSON_FORM_HELP)
    dec.add_argument("file", nargs="?", default="-", metavar="FILE",
                     help="CBOR input file, - for stdin (default)")
    profile_option(dec)
    dec.add_argument("--diag", action="store_true",
                     help="print RFC 8949 diagnostic notation of any well-formed item "
                     "instead (no profile check)")
    dec.add_argument("--indent", type=int, default=None, metavar="N",
                     help="pretty-print the JSON with N spaces")
    dec.set_defaults(func=_decode)

    chk = commands.add_parser(
        "check", help="strictly validate CBOR files",
        description="Print 'FILE: ok' or 'FILE: <code> at offset N: <message>' per file "
        "(the first violation); exit status 1 if any file fails, 2 if any cannot be read.")
    chk.add_argument("files", nargs="+", metavar="FILE", help="CBOR files (- for stdin)")
    profile_option(chk)
    chk.set_defaults(func=_check)
