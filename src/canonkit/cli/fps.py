"""``canonkit fps run OP``: one FPS/1 operation from the command line."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .._files import read_regular, validate_output_path, write_atomic
from ..errors import FPSArgumentError, FPSArityError, FPSError, FPSLevelError
from ._common import EXIT_FAILURES, EXIT_USAGE, report_os_error
from ._parsing import integer

_USAGE_ERRORS = (FPSArgumentError, FPSArityError, FPSLevelError)
OPERATIONS = ("slice", "concat", "reverse", "splice")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "fps", help="FPS/1 primitives",
        description="FPS/1 primitives (slice, concat, reverse, splice) over hex or files.")
    sub = parser.add_subparsers(dest="fps_command", metavar="ACTION", required=True)
    run = sub.add_parser(
        "run", help="run one operation",
        description="Run one FPS/1 operation and print its output (hex) and cid_sha256. "
                    "Byte arguments are lowercase hex, or @PATH to read a file. A refusal "
                    "prints its ERR_* code on stderr: status 1 when the input's bytes refuse "
                    "the operands (ERR_RANGE, ERR_LENGTH_MISALIGNED), 2 when the arguments "
                    "themselves are wrong (ERR_ARG_INVALID: malformed hex, a missing or "
                    "negative operand; ERR_LEVEL_INVALID; ERR_ARITY).",
        epilog="example: canonkit fps run slice --input 0123456789abcdef "
               "--offset 4 --length 16 --level bit")
    # optional here only so that ``--inputs 00 ff concat`` works: --inputs takes every
    # word after it, and an operation's name is never hex or @PATH (run_op takes it back)
    run.add_argument("op", nargs="?", choices=OPERATIONS)
    run.add_argument("--input", metavar="HEX|@PATH", help="input of slice/reverse/splice")
    run.add_argument("--inputs", nargs="*", metavar="HEX|@PATH",
                     help="inputs of concat (the operation may come before or after them)")
    run.add_argument("--insert", metavar="HEX|@PATH", help="insert of splice")
    run.add_argument("--offset", type=integer, help="offset in units of the level")
    run.add_argument("--length", type=integer, help="length in units of the level")
    run.add_argument("--level", help="bit, byte, word or long (required by reverse; "
                     "slice/splice default: byte)")
    run.add_argument("-o", "--output", type=Path, metavar="PATH",
                     help="write the raw output bytes to PATH instead of printing hex")
    run.add_argument("--json", action="store_true",
                     help="print the call as an amduat.conformance.fps.v0 case")
    # the usage argparse writes, but with the operation shown as required (it is: run_op)
    choice = "{" + ",".join(OPERATIONS) + "}"
    run.usage = (run.format_usage().removeprefix("usage: ").rstrip("\n")
                 .replace(f"[{choice}]", choice))
    run.set_defaults(func=run_op, run_parser=run)


def _load(value: Any) -> Any:
    from ..manifests.fps_exec import decode_hex

    if isinstance(value, str) and value.startswith("@"):
        return read_regular(value[1:])
    return decode_hex(value)


def _operation_from_inputs(args: argparse.Namespace) -> None:
    """The operation, when ``--inputs`` took it along with the inputs after it."""
    if args.op is not None:
        return
    named = [word for word in args.inputs or [] if word in OPERATIONS]
    if len(named) != 1:
        args.run_parser.error("the following arguments are required: op "
                              f"(one of {', '.join(OPERATIONS)})")
    args.op = named[0]
    args.inputs.remove(named[0])


def run_op(args: argparse.Namespace) -> int:
    from .. import fps
    from ..manifests.fps_exec import execute

    _operation_from_inputs(args)
    if args.op == "reverse" and args.level is None:  # FPS.md: reverse has no default level
        args.run_parser.error("reverse needs --level (bit, byte, word or long)")
    fields = {name: getattr(args, name)
              for name in ("input", "inputs", "insert", "offset", "length", "level")
              if getattr(args, name) is not None}
    named = [args.input, args.insert, *(args.inputs or [])]
    files = [v[1:] for v in named if isinstance(v, str) and v.startswith("@")]
    try:
        if args.output is not None:  # before the work: never computed to be thrown away
            validate_output_path(args.output, inputs=files)
        output = execute(fps, args.op, fields, load=_load)
    except FPSError as exc:  # FPS.md's ERR_* code first, whichever status it gets
        print(f"{exc.code}: {exc}", file=sys.stderr)
        # the arguments as written (malformed hex, a missing, negative or unknown operand
        # or level) are a usage error; a range or length the input bytes refuse is data
        return EXIT_USAGE if isinstance(exc, _USAGE_ERRORS) else EXIT_FAILURES
    except OSError as exc:
        return report_os_error("fps run", exc)
    cid = fps.cid_sha256(output)
    if args.output is not None:
        try:
            write_atomic(args.output, output, inputs=files)
        except OSError as exc:
            return report_os_error("fps run", exc)
    if args.json:
        case = {"op": args.op, **fields, "output": output.hex(), "cid_sha256": cid}
        if args.output is not None:
            case["output"] = f"@{args.output}"
        print(json.dumps(case, indent=2))
    else:
        shown = f"{len(output)} bytes -> {args.output}" if args.output else output.hex()
        print(f"output      {shown}")
        print(f"cid_sha256  {cid}")
    return 0
