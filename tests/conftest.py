"""Shared fixtures.

Backend fixtures (multidict style): tests never import a backend directly. Each
``<name>_impl`` fixture is parametrized over ``c`` (``canonkit._<name>``) and ``py``
(``canonkit._<name>_py``); ``c`` is skipped with the import error as the reason when the
extension is not built, and ``tests/test_build.py`` fails CI when it is not.
"""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

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


#: the ASTP kernels: compiled modules, each with its twin, plus shared pure Python
ASTP_KERNELS = ("astp_hash", "astp_proofs", "astp_fields", "astp_segments", "astp_formb")


def _astp_view(which: str) -> ModuleType:
    """The whole ASTP kernel API of one backend as one namespace: the kernel modules and
    ``canonkit._astp_common``. The Keccak knobs (compiled only) reach every module."""
    modules = [backend_module(name, which) for name in ASTP_KERNELS]
    common = importlib.import_module("canonkit._astp_common")
    view = ModuleType(f"canonkit.astp kernels ({which})")
    view.__dict__.update({n: getattr(common, n) for n in common.__all__})
    for module in modules:
        view.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    if which == "c":
        def _set_keccak_lanes(lanes: int, *, portable: bool = False) -> None:
            for module in modules:
                module._set_keccak_lanes(lanes, portable=portable)

        view._set_keccak_lanes = _set_keccak_lanes  # type: ignore[attr-defined]
    return view


def backend_module(name: str, which: str) -> ModuleType:
    """``which`` is "c" or "py"; skips the test when the compiled module is unavailable.
    ``"astp"`` is the ASTP kernels together (``_astp_view``)."""
    if name == "astp":
        return _astp_view(which)
    if which == "py":
        return importlib.import_module(f"canonkit._{name}_py")
    if os.environ.get("CANONKIT_NO_EXTENSIONS") == "1":
        pytest.skip("CANONKIT_NO_EXTENSIONS=1")
    try:
        return importlib.import_module(f"canonkit._{name}")
    except ImportError as exc:
        pytest.skip(f"canonkit._{name} not built: {exc}")


def backend_pair(name: str) -> tuple[ModuleType, ModuleType]:
    """(compiled, twin) for differential tests; skips when the compiled one is missing."""
    return backend_module(name, "c"), backend_module(name, "py")


@pytest.fixture(params=["c", "py"])
def cbor_impl(request: pytest.FixtureRequest) -> ModuleType:
    return backend_module("cbor", request.param)


@pytest.fixture(params=["c", "py"])
def fps_impl(request: pytest.FixtureRequest) -> ModuleType:
    return backend_module("fps", request.param)


@pytest.fixture(params=["c", "py"])
def astp_impl(request: pytest.FixtureRequest) -> ModuleType:
    return backend_module("astp", request.param)


@pytest.fixture(params=["c", "py"])
def store_impl(request: pytest.FixtureRequest) -> ModuleType:
    return backend_module("store", request.param)


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
        used = {params[f] for f in ("cbor_impl", "fps_impl", "astp_impl", "store_impl") if f in params}
        (drop if used - wanted else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _fail_on_unraisable() -> object:
    """Fail any test during which Python printed 'Exception ignored' (fastavro's guard)."""
    seen: list[object] = []
    previous = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        yield
    finally:
        sys.unraisablehook = previous
    assert not seen, f"Exception ignored during test: {seen!r}"
