"""Shared fixtures.

Backend fixtures (multidict style): tests never import a backend directly. Each
capability of ``canonkit._capabilities`` has a ``<capability>_impl`` fixture parametrized
over ``c`` (its compiled kernel) and ``py`` (its twin); ``c`` is skipped with the import
error as the reason when the extension is not built, and ``tests/test_build.py`` fails CI
when it is not.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from cbor_kernels import cbor_pair, utf8_kernel  # noqa: F401  (fixtures)
from hypothesis import HealthCheck, settings
from services import (  # noqa: F401  (fixtures)
    dask_cluster,
    http_server,
    proxied,
    s3,
    s3_endpoint,
)

from canonkit._capabilities import KERNELS

VECTORS = Path(__file__).parent / "vectors"
REPO = Path(__file__).parent.parent

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# CI: same budgets, but derandomized so a landed change fails or passes reproducibly
settings.register_profile(
    "ci", deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _kernel_module(capability: str, kernel: str, which: str) -> ModuleType:
    compiled, twin = KERNELS[capability][kernel]
    if which == "py":
        return importlib.import_module(f"canonkit.{capability}.{twin}")
    if os.environ.get("CANONKIT_NO_EXTENSIONS") == "1":
        pytest.skip("CANONKIT_NO_EXTENSIONS=1")
    name = f"canonkit.{capability}.{compiled}"
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.skip(f"{name} not built: {exc}")


def _capability_view(capability: str, which: str) -> ModuleType:
    """The whole kernel API of a capability with several kernels (``astp``) as one
    namespace: its kernel modules and ``canonkit.astp._py.common``. The Keccak knobs
    (compiled only) reach every module."""
    modules = [_kernel_module(capability, k, which) for k in KERNELS[capability]]
    common = importlib.import_module("canonkit.astp._py.common")
    view = ModuleType(f"canonkit.{capability} kernels ({which})")
    view.__dict__.update({n: getattr(common, n) for n in common.__all__})
    for module in modules:
        view.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    if which == "c":
        def _set_keccak_lanes(lanes: int, *, portable: bool = False) -> None:
            for module in modules:
                module._set_keccak_lanes(lanes, portable=portable)

        view._set_keccak_lanes = _set_keccak_lanes  # type: ignore[attr-defined]
    return view


def backend_module(capability: str, which: str, kernel: str | None = None) -> ModuleType:
    """One backend of a capability of ``canonkit._capabilities``: ``which`` is "c" or
    "py"; skips the test when the compiled module is unavailable. ``kernel`` names one
    kernel of a capability that has several (``astp``: "hasher", "former", ...); without it
    such a capability is all its kernels as one namespace."""
    kernels = KERNELS[capability]
    if kernel is None and len(kernels) > 1:
        return _capability_view(capability, which)
    return _kernel_module(capability, kernel or next(iter(kernels)), which)


def backend_pair(capability: str, kernel: str | None = None) -> tuple[ModuleType, ModuleType]:
    """(compiled, twin) for differential tests; skips when the compiled one is missing."""
    return backend_module(capability, "c", kernel), backend_module(capability, "py", kernel)


def _impl_fixture(capability: str) -> Any:
    @pytest.fixture(params=["c", "py"], name=f"{capability}_impl")
    def fixture(request: pytest.FixtureRequest) -> ModuleType:
        return backend_module(capability, request.param)

    return fixture


#: one ``<capability>_impl`` fixture per capability of the table
IMPL_FIXTURES = tuple(f"{capability}_impl" for capability in KERNELS)
for _capability in KERNELS:
    globals()[f"_{_capability}_impl"] = _impl_fixture(_capability)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``CANONKIT_TEST_BACKENDS=c`` keeps only the compiled parametrization of the backend
    fixtures (the sanitizer build runs the suite that way, .ci/sanitize); differential
    tests, which use both backends, still run."""
    only = os.environ.get("CANONKIT_TEST_BACKENDS")
    if not only:
        return
    wanted = set(only.split(","))
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        used = {params[f] for f in IMPL_FIXTURES if f in params}
        (drop if used - wanted else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


# --- "Exception ignored" fails the test, in this process and in every child -----------------
# Children (CLI runs, pool and Dask workers) import tests/child_site/sitecustomize.py, first
# on the PYTHONPATH they inherit, which records each one in _UNRAISABLE_DIR; a child forked
# from this process keeps the guard's hook, which records there too. (A test that builds a
# child's environment from nothing leaves the child outside the guard.)
_CHILD_SITE = Path(__file__).parent / "child_site"
_UNRAISABLE_DIR = Path(tempfile.mkdtemp(prefix="canonkit-unraisable-"))
_UNRAISABLE_DIR.chmod(0o1777)  # children run as another user record here too
os.environ["CANONKIT_UNRAISABLE_DIR"] = str(_UNRAISABLE_DIR)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(_CHILD_SITE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
_spec = importlib.util.spec_from_file_location("canonkit_child_site",
                                               _CHILD_SITE / "sitecustomize.py")
assert _spec is not None and _spec.loader is not None
_child_site = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_child_site)


_LATE: list[str] = []  # records found when the test of the child that left them had ended


def _children_unraisable() -> list[str]:
    """The records children left since the last call (then removed)."""
    found = []
    for record in sorted(_UNRAISABLE_DIR.iterdir()):
        found += record.read_text(encoding="utf-8", errors="replace").splitlines()
        record.unlink()
    return found


@pytest.fixture(autouse=True)
def _fail_on_unraisable() -> object:
    """Fail any test during which Python printed 'Exception ignored', here or in a child
    process (fastavro's guard, extended to children)."""
    seen: list[object] = []
    previous = sys.unraisablehook
    main = os.getpid()

    def hook(unraisable: Any) -> None:
        if os.getpid() == main:
            seen.append(unraisable)
        else:  # a forked child: its list would die with it
            _child_site.record(unraisable)

    _LATE.extend(_children_unraisable())  # a child of an earlier test, after that test
    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
    children = _children_unraisable()
    assert not seen, f"Exception ignored during test: {seen!r}"
    assert not children, "Exception ignored in a child process during test:\n" + \
        "\n".join(children)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Children that outlived their test and then printed 'Exception ignored' fail the run."""
    late = _LATE + _children_unraisable()
    shutil.rmtree(_UNRAISABLE_DIR, ignore_errors=True)
    if late:
        sys.stderr.write("Exception ignored in a child process after its test:\n"
                         + "\n".join(late) + "\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
