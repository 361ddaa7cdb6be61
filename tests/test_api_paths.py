"""Every public name of docs/api.md imports from the path the page gives it: the modules
of each section, and each documented name as an attribute of its section's module."""
from __future__ import annotations

import importlib
import re

import pytest

from conftest import REPO

PAGE = REPO / "docs" / "api.md"
# what the page documented when the capabilities became packages: each must stay
MODULES = ("canonkit", "canonkit.astp", "canonkit.cbor", "canonkit.cbor_tags",
           "canonkit.conformance", "canonkit.dag_json", "canonkit.engines", "canonkit.errors",
           "canonkit.fps", "canonkit.manifests", "canonkit.objects", "canonkit.reverify",
           "canonkit.store")


def _documented() -> list[tuple[str, str]]:
    """(section module, qualified name) for every entry of the page."""
    entries = []
    module = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        section = re.match(r"## `(canonkit[\w.]*)`", line)
        if section:
            module = section.group(1)
            continue
        entry = re.match(r"- (?:\*\*class |module )?`(canonkit[\w.]*)", line)
        if entry and module is not None:
            entries.append((module, entry.group(1)))
    return entries


DOCUMENTED = _documented()


def test_the_page_documents_every_public_module() -> None:
    sections = {module for module, _ in DOCUMENTED}
    assert set(MODULES) <= sections
    assert len(DOCUMENTED) > 300


@pytest.mark.parametrize("module", MODULES)
def test_each_documented_module_exports_what_its_section_lists(module: str) -> None:
    listed = {name[len(module) + 1:] for section, name in DOCUMENTED if section == module}
    assert listed == set(importlib.import_module(module).__all__)


@pytest.mark.parametrize(("module", "name"), DOCUMENTED, ids=[n for _, n in DOCUMENTED])
def test_each_documented_name_imports_from_its_path(module: str, name: str) -> None:
    assert name.startswith(module + "."), name
    attribute = name[len(module) + 1:]
    value = importlib.import_module(module)
    for part in attribute.split("."):  # a class's documented methods: Class.method
        value = getattr(value, part)
    exec(f"from {module} import {attribute.split('.')[0]}", {})
