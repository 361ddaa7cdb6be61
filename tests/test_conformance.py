"""The frozen corpus conformance/v1 passes on every run, with both backends, and is exactly
what the fixture definitions record; every fixture is what it claims to be."""
from __future__ import annotations

import json
from types import ModuleType

import pytest
from conftest import REPO, backend_pair

from canonkit import conformance, errors, objects
from canonkit.conformance import fixtures
from canonkit.conformance.layout import build_corpus
from canonkit.objects import ObjectCodec

V1 = REPO / "conformance" / "v1"
HELLO_ADDRESS = "blake3:4321fae3f39665682914de5dec718fd33c3be477b162546057f7b321e961dfd3"


def test_frozen_corpus_passes(cbor_impl: ModuleType) -> None:
    report = conformance.check(V1, cbor=cbor_impl)
    assert report.failures == []
    assert report.ok
    forms = 2 * len(fixtures.OBJECT_FIXTURES) + 2  # loose + DEFLATE each, one pack + index
    assert (report.files, report.vectors, report.cases) == (
        2 + forms, len(fixtures.OBJECT_FIXTURES), len(fixtures.NEGATIVE_FIXTURES))


def test_both_backends_agree_on_the_frozen_corpus() -> None:
    c, py = backend_pair("cbor")
    reports, disagreements = conformance.check_backends(str(V1), {"c": c, "py": py})
    assert disagreements == [] and all(r.ok for r in reports.values())


def test_corpus_is_exactly_what_the_fixtures_record(cbor_impl: ModuleType) -> None:
    """Frozen: today's encoder and fixture definitions reproduce every byte of v1."""
    files = build_corpus(1, ObjectCodec(cbor_impl))
    on_disk = {p.relative_to(V1).as_posix(): p.read_bytes() for p in V1.rglob("*")
               if p.is_file()}
    assert on_disk.keys() == files.keys()
    for name, data in files.items():
        assert on_disk[name] == data, name
    # LF only (.gitattributes: -text); the forms are binary
    assert b"\r" not in b"".join(v for k, v in on_disk.items() if k.endswith(".json"))


def test_seed_vector_blob_hello() -> None:
    doc = json.loads((V1 / "vectors.json").read_bytes())
    (hello,) = [v for v in doc["vectors"] if v["name"] == "blob_hello"]
    assert hello == {"name": "blob_hello", "kind": "blob", "description": "a small text file",
                     "address": HELLO_ADDRESS, "hex": "68656c6c6f20746f76696f0a"}


def test_coverage_of_kinds_and_classes() -> None:
    vectors = json.loads((V1 / "vectors.json").read_bytes())["vectors"]
    assert {k.name for k in objects.BUILTIN_KINDS} <= {v["kind"] for v in vectors}
    cases = json.loads((V1 / "negative.json").read_bytes())["cases"]
    for cls in fixtures.NEGATIVE_CLASSES:
        count = sum(1 for c in cases if c["class"] == cls)
        # empty_input has exactly one possible input (zero bytes); every other class >= 2
        assert count == 1 if cls == "empty_input" else count >= 2, cls


@pytest.mark.parametrize("case", fixtures.NEGATIVE_FIXTURES, ids=lambda f: f.name)
def test_each_negative_case_has_exactly_one_violation(cbor_impl: ModuleType,
                                                      case: fixtures.NegativeFixture) -> None:
    """Rejected with exactly its class; and fixing that one violation (``repaired``) gives
    an input the decoder accepts and re-encodes to itself."""
    bad = bytes.fromhex(case.hex)
    with pytest.raises(errors.DecodeError) as info:
        cbor_impl.decode(bad, profile="core")
    assert info.value.code == case.cls
    if case.repaired is None:
        assert case.cls in ("empty_input", "truncated")
        return
    fixed = bytes.fromhex(case.repaired)
    assert cbor_impl.encode(cbor_impl.decode(fixed, profile="core"), profile="core") == fixed


def test_fixture_references_are_digests_of_the_named_vectors() -> None:
    by_name = {f.name: f for f in fixtures.OBJECT_FIXTURES}
    for const, name in [("D_BLOB_HELLO", "blob_hello"), ("D_BLOB_EMPTY", "blob_empty"),
                        ("D_BLOB_BINARY", "blob_binary"), ("D_CHUNK_HELLO_0", "chunk_hello_0"),
                        ("D_CHUNK_HELLO_1", "chunk_hello_1"), ("D_TREE_HELLO", "tree_hello"),
                        ("D_COMMIT_ROOT", "commit_root"),
                        ("D_COMMIT_SECOND", "commit_second")]:
        f = by_name[name]
        data = objects.encode_object(f.kind, f.fields, version=f.version)
        assert getattr(fixtures, const) == objects.digest_of(data), const
    hello = by_name["chunk_hello_0"].fields + by_name["chunk_hello_1"].fields
    assert hello == by_name["blob_hello"].fields


def test_manifest_lists_requirements_that_exist() -> None:
    manifest = json.loads((V1 / "manifest.json").read_bytes())
    used = {r for v in manifest["vectors"] for r in v["requirements"]}
    assert used <= set(fixtures.REQUIREMENTS)
    assert used == set(fixtures.REQUIREMENTS)  # every defined requirement is exercised


def test_reasons_are_documented() -> None:
    doc = (REPO / "docs" / "objects.md").read_text(encoding="utf-8")
    for reason in conformance.REASONS:
        assert f"`{reason}`" in doc, reason
