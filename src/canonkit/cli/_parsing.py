"""How every ``canonkit`` command reads its command line: one parser class for the whole
tree, and the value types its options use.

``CommandParser`` makes every command behave alike: options may stand anywhere among the
positionals (``canonkit store put ST --json FILE`` as well as ``... --json ST FILE``), and
an error is reported by the command it belongs to, with that command's usage (``canonkit
cbor check --wat f`` shows ``cbor check``'s usage, not the top-level one). Every error is
a usage error: argparse exits with status 2 (``_common.EXIT_USAGE``).

The value types say what they expected in words (``--jobs: expected a whole number of at
least 1, got 'two'``), never the name of the Python function that parsed the value.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence


class CommandParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose leaf commands parse intermixed options and positionals
    and refuse unknown arguments themselves. Sub-parsers made by ``add_subparsers`` are of
    the parent's class, so setting it on the top-level parser covers the whole tree."""

    _intermixing = False

    def _has_subcommands(self) -> bool:
        return any(isinstance(a, argparse._SubParsersAction) for a in self._actions)

    def parse_known_args(  # type: ignore[override]
            self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        # a group parser (cbor, store, ...) hands the rest of the line to its sub-command;
        # inside parse_known_intermixed_args this method is its two passes
        if self._intermixing or self._has_subcommands():
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            parsed, extras = super().parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False
        if extras:  # here, so that the message carries this command's usage
            self.error("unrecognized arguments: " + " ".join(extras))
        return parsed, extras


def _whole(text: str, at_least: int | None) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = None
    if value is None or (at_least is not None and value < at_least):
        floor = "" if at_least is None else f" of at least {at_least}"
        raise argparse.ArgumentTypeError(f"expected a whole number{floor}, got {text!r}")
    return value


def integer(text: str) -> int:
    """Any whole number (decimal)."""
    return _whole(text, None)


def non_negative(text: str) -> int:
    """A whole number of at least 0."""
    return _whole(text, 0)


def positive(text: str) -> int:
    """A whole number of at least 1."""
    return _whole(text, 1)


def _real(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None  # no NaN, inf


def fraction(text: str) -> float:
    """A number from 0 to 1."""
    value = _real(text)
    if value is None or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A number of seconds, at least 0."""
    value = _real(text)
    if value is None or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds (at least 0), "
                                         f"got {text!r}")
    return value


#: the value types an option may use (tests/test_cli_parsing.py holds every option to it)
VALUE_TYPES = (integer, non_negative, positive, fraction, seconds)
