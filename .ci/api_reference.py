"""Generate docs/api.md, the API reference, from the docstrings of canonkit's public modules.

    python .ci/api_reference.py            # rewrite docs/api.md
    python .ci/api_reference.py --check    # exit 1 if docs/api.md is out of date (CI, tests)

Public modules are canonkit itself and every module or package directly under it whose
name does not start with "_" (the CLI excepted: `canonkit --help` documents it); public
names are each module's ``__all__``. The page is generated with CANONKIT_NO_EXTENSIONS=1,
so signatures come from the pure-Python twins — the typed surface; the compiled backends
have the same API — and the page does not depend on what was built.
"""
from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "api.md"
SKIP_MODULES = {"canonkit.cli"}
WIDTH = 100          # the page's lines are wrapped to this width (a long name stays whole)
LONGEST_VALUE = 70   # a default or constant longer than this is shown cut, ending "..."

HEADER = """\
# API reference

Every public name of canonkit's modules (each module's `__all__`), with its signature and
the first paragraph of its docstring; the capability pages in [the docs index](README.md)
explain how they fit together. Signatures are those of the pure-Python twins, the typed
surface: the compiled backends have the same API.

This page is generated from the docstrings by `python .ci/api_reference.py`;
`tests/test_docs.py` fails when it is out of date.
"""


def summary(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):  # dataclass boilerplate
        return ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def stable_repr(value: Any) -> str:
    """repr that does not change between runs: set members sorted (their order follows
    hash randomization), functions and classes by name (not by address)."""
    if isinstance(value, (set, frozenset)):
        inner = ", ".join(sorted(map(stable_repr, value)))
        return f"{type(value).__name__}({{{inner}}})" if value else f"{type(value).__name__}()"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{stable_repr(k)}: {stable_repr(v)}"
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(stable_repr, value)) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(map(stable_repr, value)) + ("," if len(value) == 1 else "") + ")"
    if inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value):
        return value.__qualname__
    return repr(value)


def shorten(text: str) -> str:
    return text if len(text) <= LONGEST_VALUE else text[:LONGEST_VALUE - 3] + "..."


def wrap(line: str) -> list[str]:
    """A list entry of the page as lines of at most ``WIDTH`` characters, continued under
    its text (a code span may break at a space: Markdown reads the break as one). A break
    is never put where the next line would start with a list marker."""
    if len(line) <= WIDTH:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    width = WIDTH
    while True:
        lines = textwrap.wrap(line, width=width, subsequent_indent=indent,
                              break_long_words=False, break_on_hyphens=False)
        if not any(l.split(None, 1)[0] in ("-", "*", "+") or l.split(None, 1)[0][:-1].isdigit()
                   and l.split(None, 1)[0][-1:] in ".)" for l in lines[1:]):
            return lines
        width -= 1


def annotation(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return ""
    return value if isinstance(value, str) else inspect.formatannotation(value)


def signature(obj: Any) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return "(...)"
    parts: list[str] = []
    kinds = [p.kind for p in sig.parameters.values()]
    for i, p in enumerate(sig.parameters.values()):
        if p.kind is p.KEYWORD_ONLY and inspect.Parameter.VAR_POSITIONAL not in kinds[:i] \
                and (i == 0 or kinds[i - 1] is not p.KEYWORD_ONLY):
            parts.append("*")
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.annotation is not p.empty:
            text += f": {annotation(p.annotation)}"
        if p.default is not p.empty:
            value = shorten(repr(p.default))
            text += f" = {value}" if p.annotation is not p.empty else f"={value}"
        parts.append(text)
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(kinds)
                                            or kinds[i + 1] is not p.POSITIONAL_ONLY):
            parts.append("/")
    result = f"({', '.join(parts)})"
    if sig.return_annotation is not sig.empty:
        result += f" -> {annotation(sig.return_annotation)}"
    return result


def unbound(sig: str) -> str:
    """A method's signature without its ``self``/``cls`` parameter."""
    for first in ("self", "cls"):
        if sig.startswith(f"({first}, "):
            return "(" + sig[len(first) + 3:]
        if sig.startswith(f"({first})"):
            return "()" + sig[len(first) + 2:]
    return sig


def members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties defined by ``cls`` itself, by name."""
    out = []
    for name, value in sorted(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            out.append((name, value))
    return out


def document_class(qualified: str, cls: type) -> list[str]:
    bases = ", ".join(b.__name__ for b in cls.__bases__ if b is not object)
    head = f"class `{qualified}`" + (f"({bases})" if bases else "")
    if isinstance(getattr(cls, "code", None), str) and issubclass(cls, BaseException):
        head += f", code `{cls.code}`"
    lines = [f"- **{head}** — {summary(cls)}".rstrip(" —")]
    for name, member in members(cls):
        if isinstance(member, property):
            text = f"  - `.{name}` (property) — {summary(member)}"
        elif name == "__init__":
            text = f"  - `{cls.__name__}{unbound(signature(member))}`"
        else:
            text = f"  - `.{name}{unbound(signature(member))}` — {summary(member)}"
        lines.append(text.rstrip(" —"))
    return lines


def document_module(name: str) -> list[str]:
    module = importlib.import_module(name)
    lines = [f"## `{name}`", "", summary(module), ""]
    for public in sorted(getattr(module, "__all__", [])):
        obj = getattr(module, public)
        qualified = f"{name}.{public}"
        if inspect.ismodule(obj):
            lines.append(f"- module `{qualified}` — {summary(obj)}".rstrip(" —"))
        elif inspect.isclass(obj):
            lines.extend(document_class(qualified, obj))
        elif callable(obj) and typing.get_origin(obj) is None:  # not an alias like Literal[...]
            lines.append(f"- `{qualified}{signature(obj)}` — {summary(obj)}".rstrip(" —"))
        else:
            lines.append(f"- `{qualified} = {shorten(stable_repr(obj))}`")
    return [*lines, ""]


def public_modules() -> list[str]:
    import canonkit

    names = ["canonkit"]
    for info in pkgutil.iter_modules(canonkit.__path__):
        qualified = f"canonkit.{info.name}"
        if not info.name.startswith("_") and qualified not in SKIP_MODULES:
            names.append(qualified)
    return sorted(names)


def render() -> str:
    modules = public_modules()
    toc = [f"- [`{m}`](#{m.replace('.', '')})" for m in modules]
    body = [wrapped for m in modules for line in document_module(m) for wrapped in wrap(line)]
    return "\n".join([HEADER, *toc, "", *body]).rstrip() + "\n"


def main() -> int:
    if os.environ.get("CANONKIT_NO_EXTENSIONS") != "1":  # generate from the twins
        env = {**os.environ, "CANONKIT_NO_EXTENSIONS": "1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"),
                                                          env.get("PYTHONPATH")]))
        return subprocess.run([sys.executable, __file__, *sys.argv[1:]], env=env).returncode
    text = render()
    if "--check" in sys.argv[1:]:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE.relative_to(REPO)} is out of date: run python .ci/api_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
