"""Guard: with CANONKIT_REQUIRE_EXTENSIONS=1 (CI), every extension in ext/ must be built
and live; otherwise a missing extension would silently turn the 'c' tests into skips."""
import importlib
import os

import pytest

import canonkit
from conftest import REPO

# ext/_<name>.pyx builds canonkit._<name>; ext/<capability>/_<kernel>.pyx builds
# canonkit.<capability>._<kernel>
EXTENSIONS = sorted([p.stem for p in (REPO / "ext").glob("_*.pyx")]
                    + [f"{p.parent.name}.{p.stem}" for p in (REPO / "ext").glob("*/_*.pyx")])
REQUIRED = os.environ.get("CANONKIT_REQUIRE_EXTENSIONS") == "1"


@pytest.mark.skipif(not REQUIRED, reason="CANONKIT_REQUIRE_EXTENSIONS is not set")
@pytest.mark.parametrize("name", EXTENSIONS)
def test_extension_is_built(name: str) -> None:
    module = importlib.import_module(f"canonkit.{name}")
    assert module.__file__ is not None and not module.__file__.endswith(".py")


@pytest.mark.skipif(not REQUIRED, reason="CANONKIT_REQUIRE_EXTENSIONS is not set")
def test_backends_are_compiled() -> None:
    live = canonkit.backend()
    assert live, "no capability reported"
    assert set(live.values()) == {"compiled"}, live


def test_backend_reports_known_values() -> None:
    assert set(canonkit.backend().values()) <= {"compiled", "python"}
