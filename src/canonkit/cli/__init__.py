"""The ``canonkit`` console script. Each command group lives in its own module of this
package and exposes ``register(subparsers)``, which adds its parser and sets
``func(args) -> int`` (the exit status).

The failure policy is enforced here, once for every command (the table is in
``_common``): an I/O error a command did not handle ends in ``canonkit COMMAND: PATH:
reason`` and status 2, a missing optional package names its extra with status 2; an
unexpected exception prints its traceback and gives 2, never the
1 that means "checked and found failures"; Ctrl-C gives 130; a closed stdout
(``| head``) ends quietly with 141. Commands that go on after a failure (several inputs)
combine their statuses with ``_common.worst``.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from .._version import __version__
from ..errors import MissingDependencyError
from ._common import (
    EXIT_COULD_NOT_RUN,
    EXIT_INTERRUPTED,
    EXIT_STATUS_EPILOG,
    EXIT_STDOUT_CLOSED,
    report_os_error,
    report_usage_error,
    silence_stdout,
    stdout_reader_gone,
)
from ._parsing import CommandParser

COMMAND_MODULES = ("cbor", "fps", "manifest", "conformance", "reverify", "store", "astp", "car")


def build_parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="canonkit",
        description="Deterministic CBOR, FPS/1, ASTP seals and corpus re-verification.",
        epilog=EXIT_STATUS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"canonkit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        qualified = f"{__name__}.{name}"
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:  # a real import error inside the module
                raise
            continue
        module.register(sub)
    return parser


def command_name(args: argparse.Namespace) -> str:
    """``cbor check``, ``reverify``, ...: the words that select the command run."""
    words = [args.command]
    action = getattr(args, f"{args.command}_command", None)
    if isinstance(action, str):
        words.append(action)
    return " ".join(words)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError as exc:
        if stdout_reader_gone():  # `canonkit ... | head`: not the command's failure
            silence_stdout()
            return EXIT_STDOUT_CLOSED
        return report_os_error(command_name(args), exc)
    except OSError as exc:
        return report_os_error(command_name(args), exc)
    except MissingDependencyError as exc:  # the message names the extra to install
        return report_usage_error(command_name(args), str(exc))
    except KeyboardInterrupt:
        print(f"canonkit {command_name(args)}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception:  # a bug: keep the traceback for the report, but never exit 1
        traceback.print_exc()
        print(f"canonkit {command_name(args)}: internal error (the traceback above is a bug "
              "report)", file=sys.stderr)
        return EXIT_COULD_NOT_RUN


if __name__ == "__main__":
    sys.exit(main())
