"""The ``canonkit`` console script. Each command group lives in its own module of this
package and exposes ``register(subparsers)``, which adds its parser and sets
``func(args) -> int`` (the exit status)."""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .. import __version__

COMMAND_MODULES = ("cbor", "fps", "manifest", "conformance", "reverify")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="canonkit",
        description="Deterministic CBOR, FPS/1, ASTP seals and corpus re-verification.",
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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `canonkit ... | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
