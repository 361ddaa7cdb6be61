"""Every module of canonkit imports alone, in a fresh interpreter, on both backends (the
compiled kernels and the twins): an import circle that only works when some other module
happens to be imported first fails here (multidict's test_circular_imports). The import
graph itself has no module-level circle and no module takes a name from a package above
it (only submodules: a name defined in a package's ``__init__`` is the package's facade,
not something its own modules build on).

Each module is imported in its own process, forked from a parent that has imported no
canonkit module, so the suite pays one interpreter start per backend, not per module."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import canonkit

PACKAGE = Path(canonkit.__file__).parent
# the entry point of ``python -m canonkit`` runs the command line when imported
ENTRY_POINTS = {"canonkit.__main__"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).parts)
    for suffix in sorted(EXTENSION_SUFFIXES, key=len, reverse=True):
        if parts[-1].endswith(suffix):
            parts[-1] = parts[-1][: -len(suffix)]
            break
    else:
        parts[-1] = parts[-1].removesuffix(".py")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(compiled: bool) -> list[str]:
    names = {_module_name(p) for p in PACKAGE.rglob("*.py")}
    if compiled:
        # An in-place build for another interpreter leaves its files beside this one's
        # (``_codec.cpython-310-….so`` next to ``_codec.cpython-311-….so``); the generic
        # ``.so`` suffix matches them too, but the name left after it still has a dot:
        # this interpreter never imports that file.
        names |= {_module_name(p) for suffix in EXTENSION_SUFFIXES
                  for p in PACKAGE.rglob(f"*{suffix}")
                  if "." not in p.name.removesuffix(suffix)}
    return sorted(names - ENTRY_POINTS)


# Imports nothing of canonkit, then forks one child per module (a few at a time); each
# child imports its module and exits 0, or writes its traceback and exits 1.
_FORKER = r"""
import json, os, sys, tempfile, traceback

modules = json.loads(sys.argv[1])
jobs = max(2, 2 * (os.cpu_count() or 1))
assert not [m for m in sys.modules if m == "canonkit" or m.startswith("canonkit.")]
out = tempfile.mkdtemp()
running, failed = {}, {}
pending = list(modules)
while pending or running:
    while pending and len(running) < jobs:
        name = pending.pop()
        pid = os.fork()
        if pid == 0:
            try:
                __import__(name)
            except BaseException:
                with open(os.path.join(out, name), "w") as f:
                    f.write(traceback.format_exc())
                os._exit(1)
            os._exit(0)
        running[pid] = name
    pid, status = os.wait()
    name = running.pop(pid)
    if status:
        path = os.path.join(out, name)
        failed[name] = open(path).read() if os.path.exists(path) else f"status {status}"
print(json.dumps(failed))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks one process per module")
@pytest.mark.parametrize("backend", ["compiled", "twins"])
def test_every_module_imports_alone(backend: str) -> None:
    env = dict(os.environ)
    env.pop("CANONKIT_NO_EXTENSIONS", None)
    if backend == "twins":
        env["CANONKIT_NO_EXTENSIONS"] = "1"
    elif os.environ.get("CANONKIT_NO_EXTENSIONS") == "1":
        pytest.skip("CANONKIT_NO_EXTENSIONS=1: no compiled modules to import")
    modules = _modules(compiled=backend == "compiled")
    assert "canonkit.cbor" in modules and "canonkit.store.store" in modules
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _FORKER, json.dumps(modules)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    failed = json.loads(proc.stdout)
    assert not failed, "\n".join(f"--- import {m} alone:\n{tb}" for m, tb in failed.items())


# --- the import graph, read from the source --------------------------------------------

def _sources() -> dict[str, tuple[Path, bool]]:
    return {_module_name(p): (p, p.name == "__init__.py") for p in PACKAGE.rglob("*.py")}


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: not those inside functions, nor
    under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.dump(node.test):
                    walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)
                for handler in node.handlers:
                    walk(handler.body)
                walk(node.orelse)
                walk(node.finalbody)

    walk(tree.body)
    return found


def _target(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _graph() -> tuple[dict[str, set[str]], list[str]]:
    """module -> the canonkit modules it imports at module level; and the upward imports
    anywhere in a module, functions included (a name that is not a submodule, taken from a
    package the module is inside)."""
    sources = _sources()
    graph: dict[str, set[str]] = {m: set() for m in sources}
    upward = []
    for module, (path, is_package) in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _target(module, is_package, node)
                if module.startswith(target + ".") and sources.get(target, (None, False))[1]:
                    upward += [f"{module}: from {target} import {a.name}" for a in node.names
                               if f"{target}.{a.name}" not in sources]
        for node in _module_level_imports(tree):
            if isinstance(node, ast.Import):
                graph[module] |= {a.name for a in node.names if a.name in sources}
                continue
            target = _target(module, is_package, node)
            if target not in sources:
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}"
                if child in sources:
                    graph[module].add(child)
                    continue
                graph[module].add(target)
        graph[module].discard(module)
    return graph, upward


def test_no_module_level_import_circle() -> None:
    graph, _ = _graph()
    circles = []
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                circles.append(" -> ".join(path[path.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not circles, "module-level import circles:\n" + "\n".join(circles)


def test_no_module_imports_a_name_from_a_package_above_it() -> None:
    _, upward = _graph()
    assert not upward, "\n".join(upward)
