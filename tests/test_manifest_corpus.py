"""The shipped corpus conformance/amduat/ verifies on every run, on both backends, is in
canonical form, covers every FPS/1 operation, level and refusal code, and is reproduced by
its generator."""
from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO

from canonkit import errors, manifests

CORPUS = REPO / "conformance" / "amduat"
SHIPPED = sorted(CORPUS.glob("*.json"))


def test_corpus_is_present() -> None:
    assert {p.name for p in SHIPPED} == {
        "fixtures.json", "fps.json", "fps_artifacts.json", "fps_negative.json",
        "tgk_edges.json"}


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_manifest_verifies(fps_impl: ModuleType, path: Path) -> None:
    assert manifests.verify(path, fps=fps_impl) == []


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_manifest_is_canonical(path: Path) -> None:
    assert manifests.dumps(manifests.read(path)) == path.read_bytes()


def test_fps_manifest_coverage() -> None:
    cases = manifests.read(CORPUS / "fps.json").document["cases"]
    assert len(cases) >= 40
    covered = {(c["op"], c.get("level", "byte")) for c in cases}
    for op, level in itertools.product(("slice", "splice", "reverse"),
                                       ("bit", "byte", "word", "long")):
        assert (op, level) in covered
    assert any(c["op"] == "concat" for c in cases)
    assert any(c.get("input") == "" for c in cases)  # empty input
    phases = {c["offset"] % 8 for c in cases if c.get("level") == "bit" and "offset" in c}
    assert phases == set(range(8))  # every bit phase
    assert any(len(c.get("input", "")) >= 8192 for c in cases)


def test_negative_manifest_covers_every_error_code() -> None:
    cases = manifests.read(CORPUS / "fps_negative.json").document["cases"]
    fps_codes = {code for code, cls in errors.CODES.items() if issubclass(cls, errors.FPSError)}
    assert {c["error"] for c in cases} == fps_codes


def test_artifact_cases_use_large_inputs() -> None:
    fixtures = manifests.read(CORPUS / "fixtures.json").document["fixtures"]
    sizes = {f["id"]: int(f["size"]) for f in fixtures}
    cases = manifests.read(CORPUS / "fps_artifacts.json").document["cases"]
    assert max(sizes[c["input"]] for c in cases if "input" in c) >= 1 << 20
    assert sum(sizes.values()) < 4 << 20  # committed artifacts stay small


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("regenerate", CORPUS / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generator_reproduces_the_committed_corpus(tmp_path: Path) -> None:
    _generator().main(tmp_path)
    produced = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(CORPUS) for p in CORPUS.rglob("*")
                       if p.is_file() and p.suffix not in (".py", ".md")
                       and "__pycache__" not in p.parts)
    assert produced == committed
    for relative in produced:
        assert (tmp_path / relative).read_bytes() == (CORPUS / relative).read_bytes(), relative
