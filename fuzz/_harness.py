"""What every fuzz target shares: how a call's outcome is compared between the compiled
backend and its pure-Python twin, and how a target runs under atheris.

A *finding* is any exception that escapes a target's ``one_input``: an exception that
is not a ``CanonkitError`` (a crash in waiting: ``RecursionError``, ``SystemError``,
``OverflowError``...), or a :class:`Mismatch` — the two backends disagree (a different
value, or a different error class, code or offset), or an accepted input does not
re-encode to itself.

Targets import canonkit inside ``instrumented()`` so that, when run as a fuzzer, the
Python code (the twins and facades) is coverage-instrumented; the compiled extensions are
exercised but not instrumented. Imported by the test suite, the same targets run plainly.
"""
from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("canonkit") is None:  # a checkout without PYTHONPATH=src
    sys.path.append(str(REPO / "src"))

# A target started as a program (``python fuzz/fuzz_x.py ...``) is fuzzing; imported by
# the tests it is not.
FUZZING = Path(getattr(sys.modules["__main__"], "__file__", None) or "/").resolve().parent \
    == Path(__file__).resolve().parent


class Mismatch(AssertionError):
    """The compiled backend and the twin disagree, or a round trip changed the bytes."""


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Coverage-instrument the imports inside (atheris), when fuzzing."""
    if FUZZING:
        import atheris

        with atheris.instrument_imports(include=["canonkit"]):
            yield
    else:
        yield


def outcome(call: Callable[[], Any], allowed: type[BaseException] | None = None) -> tuple[Any, ...]:
    """``("value", result)`` or ``("error", class name, code, offset)`` for a
    ``CanonkitError`` (or ``allowed``); any other exception propagates: it is a finding."""
    from canonkit.errors import CanonkitError

    try:
        return ("value", call())
    except CanonkitError as exc:
        return ("error", type(exc).__name__, exc.code, exc.offset)
    except Exception as exc:
        if allowed is not None and isinstance(exc, allowed):
            return ("error", type(exc).__name__, None, None)
        raise


def shape(value: Any, depth: int = 0) -> Any:
    """A comparable, hashable picture of a decoded value: the type at every level, floats
    by their bits (NaN payloads and -0.0 count), mappings in their order."""
    if depth > 10_000:
        raise Mismatch("value nested deeper than the harness compares")
    kind = type(value).__name__
    if isinstance(value, float):
        return (kind, math.copysign(1.0, value), value.hex() if not math.isnan(value)
                else ("nan", __import__("struct").pack(">d", value)))
    if isinstance(value, Mapping):  # dict, FrozenDict
        return (kind, tuple((shape(k, depth + 1), shape(v, depth + 1))
                            for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (kind, tuple(shape(v, depth + 1) for v in value))
    if kind == "Tag":
        return (kind, value.number, shape(value.value, depth + 1))
    return (kind, repr(value))  # int, str, bytes, bool, None, Simple, Undefined, Link


def same(what: str, compiled: tuple[Any, ...], twin: tuple[Any, ...]) -> None:
    """Raise Mismatch unless the two outcomes agree (values compared by ``shape``)."""
    if compiled[0] == "value" and twin[0] == "value":
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20_000))  # decoded values nest up to max_depth
        try:
            if shape(compiled[1]) == shape(twin[1]):
                return
        finally:
            sys.setrecursionlimit(limit)
    elif compiled == twin:
        return
    raise Mismatch(f"{what}: compiled gave {_show(compiled)}, twin gave {_show(twin)}")


def _show(result: tuple[Any, ...]) -> str:
    text = repr(result)
    return text if len(text) < 300 else text[:300] + "..."


def pair(capability: str) -> tuple[Any, Any]:
    """(compiled, twin) modules of a one-kernel capability of ``canonkit._capabilities``;
    the compiled one must be built unless ``CANONKIT_FUZZ_TWIN_ONLY=1`` (then the twin is
    compared with itself)."""
    import importlib

    from canonkit._capabilities import KERNELS

    ((compiled, twin_name),) = KERNELS[capability].values()
    twin = importlib.import_module(f"canonkit.{capability}.{twin_name}")
    if os.environ.get("CANONKIT_FUZZ_TWIN_ONLY") == "1":
        return twin, twin
    return importlib.import_module(f"canonkit.{capability}.{compiled}"), twin


def run(one_input: Callable[[bytes], None],
        custom_mutator: Callable[[bytes, int, int], bytes] | None = None) -> None:
    """Fuzz ``one_input`` with atheris (libFuzzer's arguments: ``-runs=N -seed=S CORPUS``),
    with ``custom_mutator(data, max_size, seed)`` when given."""
    import atheris

    if custom_mutator is None:
        atheris.Setup(sys.argv, one_input)
    else:
        atheris.Setup(sys.argv, one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()
