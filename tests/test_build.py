"""Guard: with CANONKIT_REQUIRE_EXTENSIONS=1 (CI), every compiled module of the capability
table must be built and live; otherwise a missing extension would silently turn the 'c'
tests into skips. The table and ext/ name the same modules."""
import importlib
import os

import pytest

import canonkit
from canonkit._capabilities import compiled_modules
from conftest import REPO

EXTENSIONS = compiled_modules()
REQUIRED = os.environ.get("CANONKIT_REQUIRE_EXTENSIONS") == "1"


@pytest.mark.skipif(not REQUIRED, reason="CANONKIT_REQUIRE_EXTENSIONS is not set")
@pytest.mark.parametrize("name", EXTENSIONS)
def test_extension_is_built(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None and not module.__file__.endswith(".py")


@pytest.mark.skipif(not REQUIRED, reason="CANONKIT_REQUIRE_EXTENSIONS is not set")
def test_backends_are_compiled() -> None:
    live = canonkit.backend()
    assert live, "no capability reported"
    assert set(live.values()) == {"compiled"}, live


def test_backend_reports_known_values() -> None:
    assert set(canonkit.backend().values()) <= {"compiled", "python"}


def test_every_extension_source_is_a_table_entry() -> None:
    sources = {".".join(["canonkit", *p.relative_to(REPO / "ext").with_suffix("").parts])
               for p in (REPO / "ext").glob("*/_*.pyx")}
    assert sources == set(EXTENSIONS)
