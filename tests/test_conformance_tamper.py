"""Tamper tests on a copy of conformance/v1: each kind of drift is caught with the right
path and reason, on both backends. Where a change also breaks the manifest's digest of
the file, the test checks both: the digest drift, and — after re-sealing the manifest —
the content check on its own."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO, backend_module

from canonkit import conformance
from canonkit.conformance.layout import dump_json, file_entry

V1 = REPO / "conformance" / "v1"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    target = tmp_path / "v1"
    shutil.copytree(V1, target)
    return target


def edit(path: Path, change: Callable[[Any], None]) -> None:
    doc = json.loads(path.read_bytes())
    change(doc)
    path.write_bytes(dump_json(doc))


def reseal(corpus: Path) -> None:
    """Recompute the manifest's file entries, as if whoever tampered also updated it."""
    def change(doc: Any) -> None:
        doc["files"] = [file_entry(e["path"], (corpus / e["path"]).read_bytes())
                        for e in doc["files"]]
    edit(corpus / "manifest.json", change)


def found(corpus: Path, cbor: ModuleType) -> set[tuple[str, str]]:
    """The failures, without those of the physical forms under forms/: a changed vector
    changes what its forms must hold, and tests/test_conformance_forms.py checks those."""
    report = conformance.check(corpus, cbor=cbor)
    assert not report.ok
    return {(f.path, f.reason) for f in report.failures if not f.path.startswith("forms/")}


def vector(doc: Any, name: str) -> dict[str, Any]:
    (entry,) = [v for v in doc.get("vectors", doc.get("cases", [])) if v["name"] == name]
    return entry  # type: ignore[no-any-return]


def test_untampered_copy_passes(corpus: Path, cbor_impl: ModuleType) -> None:
    assert conformance.check(corpus, cbor=cbor_impl).failures == []


def test_one_byte_of_a_vector(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        v = vector(doc, "commit_root")
        v["hex"] = v["hex"][:-2] + ("00" if v["hex"][-2:] != "00" else "01")
    edit(corpus / "vectors.json", change)
    assert ("vectors.json", "digest_mismatch") in found(corpus, cbor_impl)
    reseal(corpus)
    # the last byte is the empty "parents" array (80): now the integer 0
    assert found(corpus, cbor_impl) == {("vectors.json#commit_root", "encode_mismatch"),
                                        ("vectors.json#commit_root", "address_mismatch"),
                                        ("vectors.json#commit_root", "decode_failed")}


def test_one_byte_of_a_raw_vector(corpus: Path, cbor_impl: ModuleType) -> None:
    edit(corpus / "vectors.json",
         lambda doc: vector(doc, "blob_hello").update(hex="68656c6c6f20746f76696f0b"))
    reseal(corpus)
    assert found(corpus, cbor_impl) == {("vectors.json#blob_hello", "encode_mismatch"),
                                        ("vectors.json#blob_hello", "address_mismatch")}


def test_a_byte_that_breaks_decoding(corpus: Path, cbor_impl: ModuleType) -> None:
    # first byte a6 -> a7: the map claims one more pair than it has
    edit(corpus / "vectors.json", lambda doc: vector(doc, "conflict_add_add").update(
        hex="a7" + vector(doc, "conflict_add_add")["hex"][2:]))
    reseal(corpus)
    assert found(corpus, cbor_impl) == {
        ("vectors.json#conflict_add_add", "encode_mismatch"),
        ("vectors.json#conflict_add_add", "address_mismatch"),
        ("vectors.json#conflict_add_add", "decode_failed")}


def test_a_digest_in_the_vectors(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        v = vector(doc, "tree_hello")
        v["address"] = v["address"][:-1] + ("0" if v["address"][-1] != "0" else "1")
    edit(corpus / "vectors.json", change)
    reseal(corpus)
    assert found(corpus, cbor_impl) == {("vectors.json#tree_hello", "address_mismatch")}


def test_a_digest_in_the_manifest(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        (entry,) = [e for e in doc["files"] if e["path"] == "negative.json"]
        entry["sha256"] = ("0" if entry["sha256"][0] != "0" else "1") + entry["sha256"][1:]
    edit(corpus / "manifest.json", change)
    assert found(corpus, cbor_impl) == {("negative.json", "digest_mismatch")}


def test_a_size_in_the_manifest(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        (entry,) = [e for e in doc["files"] if e["path"] == "vectors.json"]
        entry.update(bytes=str(int(entry["bytes"]) + 1))
    edit(corpus / "manifest.json", change)
    assert found(corpus, cbor_impl) == {("vectors.json", "size_mismatch")}


@pytest.mark.parametrize("name", ["vectors.json", "negative.json", "manifest.json"])
def test_a_deleted_file(corpus: Path, cbor_impl: ModuleType, name: str) -> None:
    (corpus / name).unlink()
    assert (name, "file_missing") in found(corpus, cbor_impl)


def test_a_stray_file(corpus: Path, cbor_impl: ModuleType) -> None:
    (corpus / "notes.txt").write_bytes(b"hi\n")
    (corpus / "sub").mkdir()
    (corpus / "sub" / ".hidden").write_bytes(b"")
    assert found(corpus, cbor_impl) == {("notes.txt", "file_unlisted"),
                                        ("sub/.hidden", "file_unlisted")}


def test_reordered_vectors(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        doc["vectors"][0], doc["vectors"][1] = doc["vectors"][1], doc["vectors"][0]
    edit(corpus / "vectors.json", change)
    reseal(corpus)
    assert found(corpus, cbor_impl) == {("vectors.json#blob_binary", "unsorted")}


def test_reordered_negative_cases(corpus: Path, cbor_impl: ModuleType) -> None:
    edit(corpus / "negative.json", lambda doc: doc["cases"].reverse())
    reseal(corpus)
    names = [c["name"] for c in json.loads((V1 / "negative.json").read_bytes())["cases"]]
    # reversed: every case after the (new) first one sorts before its predecessor
    assert found(corpus, cbor_impl) == {(f"negative.json#{n}", "unsorted") for n in names[:-1]}


def test_a_duplicated_name(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        copy = dict(vector(doc, "tree_empty"))
        doc["vectors"].insert(doc["vectors"].index(vector(doc, "tree_empty")), copy)
    edit(corpus / "vectors.json", change)
    reseal(corpus)
    assert found(corpus, cbor_impl) == {("vectors.json#tree_empty", "duplicate_name")}


def test_a_duplicated_manifest_entry(corpus: Path, cbor_impl: ModuleType) -> None:
    edit(corpus / "manifest.json", lambda doc: doc["vectors"].insert(0, doc["vectors"][0]))
    assert found(corpus, cbor_impl) == {
        (f"{e['file']}#{e['name']}", "duplicate_name")
        for e in [json.loads((V1 / "manifest.json").read_bytes())["vectors"][0]]}


@pytest.mark.parametrize("name", ["vectors.json", "negative.json", "manifest.json"])
def test_an_unknown_schema(corpus: Path, cbor_impl: ModuleType, name: str) -> None:
    edit(corpus / name, lambda doc: doc.update(schema=doc["schema"].replace(".v1", ".v9")))
    if name != "manifest.json":
        reseal(corpus)
    assert (name, "unknown_schema") in found(corpus, cbor_impl)


def test_a_vector_listed_but_absent_and_present_but_unlisted(corpus: Path,
                                                             cbor_impl: ModuleType) -> None:
    def rename(doc: Any) -> None:
        vector(doc, "chunk_hello_1")["name"] = "chunk_hello_2"
    edit(corpus / "vectors.json", rename)
    reseal(corpus)
    assert found(corpus, cbor_impl) == {
        ("vectors.json#chunk_hello_1", "vector_missing"),
        ("vectors.json#chunk_hello_2", "vector_unlisted"),
        ("vectors.json#chunk_hello_2", "no_fixture")}


def test_a_removed_case_is_listed_but_absent(corpus: Path, cbor_impl: ModuleType) -> None:
    edit(corpus / "negative.json", lambda doc: doc["cases"].remove(
        vector(doc, "trailing_data_map")))
    reseal(corpus)
    assert found(corpus, cbor_impl) == {("negative.json#trailing_data_map", "vector_missing")}


def test_family_and_requirement_drift(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        for e in doc["vectors"]:
            if e["name"] == "commit_root":
                e["family"] = "tree"
            if e["name"] == "blob_empty":
                e["requirements"] = sorted(e["requirements"] + ["REQ-NOPE"])
    edit(corpus / "manifest.json", change)
    assert found(corpus, cbor_impl) == {("vectors.json#commit_root", "family_mismatch"),
                                        ("vectors.json#blob_empty", "unknown_requirement")}


def test_a_negative_case_with_the_wrong_class(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        vector(doc, "truncated_head")["class"] = "trailing_data"
        vector(doc, "trailing_data_second_item")["hex"] = "00"  # now valid: accepted
        vector(doc, "duplicate_map_key_int")["class"] = "no_such_class"
    edit(corpus / "negative.json", change)
    reseal(corpus)
    assert found(corpus, cbor_impl) == {
        ("negative.json#truncated_head", "wrong_class"),
        ("negative.json#truncated_head", "family_mismatch"),
        ("negative.json#trailing_data_second_item", "negative_accepted"),
        ("negative.json#duplicate_map_key_int", "unknown_class"),
        ("negative.json#duplicate_map_key_int", "family_mismatch")}


@pytest.mark.parametrize(("file", "array", "field", "family", "reason"), [
    ("negative.json", "cases", "class", "invalid_utf8", "class_not_covered"),
    ("vectors.json", "vectors", "kind", "conflict", "kind_not_covered"),
], ids=["a_class_without_cases", "a_kind_without_vectors"])
def test_a_family_without_entries(corpus: Path, cbor_impl: ModuleType, file: str, array: str,
                                  field: str, family: str, reason: str) -> None:
    edit(corpus / file, lambda doc: doc.update(
        {array: [e for e in doc[array] if e[field] != family]}))
    edit(corpus / "manifest.json", lambda doc: doc.update(
        vectors=[v for v in doc["vectors"] if v["family"] != family]))
    reseal(corpus)
    assert found(corpus, cbor_impl) == {(file, reason)}


def test_format_version_and_digest_drift(corpus: Path, cbor_impl: ModuleType) -> None:
    edit(corpus / "manifest.json", lambda doc: doc.update(format_version=2, digest="md5"))
    assert found(corpus, cbor_impl) == {("manifest.json", "version_mismatch"),
                                        ("manifest.json", "unknown_digest")}


@pytest.mark.parametrize("content", [b"{", b"\xff\xfe", b'{"schema": 1, "schema": 2}',
                                     b'{"x": NaN}', b"[" * 100_000 + b"]" * 100_000])
def test_files_that_are_not_json(corpus: Path, cbor_impl: ModuleType, content: bytes) -> None:
    (corpus / "vectors.json").write_bytes(content)
    reseal(corpus)
    assert found(corpus, cbor_impl) == {("vectors.json", "invalid_json")}


def test_an_unreadable_file_is_a_failure(corpus: Path, cbor_impl: ModuleType) -> None:
    (corpus / "negative.json").unlink()
    (corpus / "negative.json").mkdir()  # reading a directory fails on every platform
    assert ("negative.json", "file_unreadable") in found(corpus, cbor_impl)


def test_paths_that_escape_the_corpus(corpus: Path, cbor_impl: ModuleType) -> None:
    outside = corpus.parent / "outside.json"
    outside.write_bytes(b"{}")
    edit(corpus / "manifest.json", lambda doc: doc["files"].append(
        file_entry("../outside.json", outside.read_bytes())))
    assert ("../outside.json", "bad_path") in found(corpus, cbor_impl)


def test_a_symlinked_file(corpus: Path, cbor_impl: ModuleType) -> None:
    real = corpus.parent / "real-negative.json"
    os.replace(corpus / "negative.json", real)
    (corpus / "negative.json").symlink_to(real)
    assert ("negative.json", "bad_path") in found(corpus, cbor_impl)


def test_malformed_entries_are_reported_not_raised(corpus: Path, cbor_impl: ModuleType) -> None:
    def change(doc: Any) -> None:
        doc["vectors"][0]["hex"] = 5
        doc["vectors"][1]["extra"] = "x"
        del doc["vectors"][2]["address"]
        doc["vectors"][3]["hex"] = "ABC"
        doc["vectors"].append(["not", "an", "object"])
    edit(corpus / "vectors.json", change)
    reseal(corpus)
    reasons = found(corpus, cbor_impl)
    assert ("vectors.json#blob_binary", "bad_field") in reasons
    assert ("vectors.json#blob_empty", "bad_field") in reasons
    assert ("vectors.json#blob_hello", "bad_field") in reasons
    assert ("vectors.json#chunk_hello_0", "bad_field") in reasons
    assert ("vectors.json#[16]", "bad_field") in reasons


def test_a_broken_backend_is_reported_not_raised(corpus: Path) -> None:
    class Broken:
        __name__ = "broken"

        @staticmethod
        def encode(obj: Any, *, profile: str) -> bytes:
            raise RuntimeError("boom")

        @staticmethod
        def decode(data: bytes, *, profile: str) -> Any:
            raise MemoryError("no")

    report = conformance.check(corpus, cbor=Broken)  # type: ignore[arg-type]
    reasons = {f.reason for f in report.failures}
    assert {"encode_failed", "decode_failed", "wrong_class"} <= reasons


def test_disagreeing_backends_are_reported(corpus: Path) -> None:
    twin = backend_module("cbor", "py")

    class Lax:
        __name__ = "lax"
        encode = staticmethod(twin.encode)

        @staticmethod
        def decode(data: bytes, *, profile: str) -> Any:
            if data == b"\x00\x00":
                return 0  # accepts trailing data
            return twin.decode(data, profile=profile)

    _, disagreements = conformance.check_backends(str(corpus), {"py": twin, "lax": Lax})
    assert [(f.path, f.reason) for f in disagreements] == [
        ("negative.json#trailing_data_second_item", "backends_disagree")]


def test_a_path_through_a_symlinked_directory(corpus: Path, cbor_impl: ModuleType) -> None:
    outside = corpus.parent / "elsewhere"
    outside.mkdir()
    (outside / "x.json").write_bytes(b"{}")
    (corpus / "linked").symlink_to(outside, target_is_directory=True)
    edit(corpus / "manifest.json", lambda doc: doc["files"].append(
        file_entry("linked/x.json", b"{}")))
    assert {("linked/x.json", "bad_path"), ("linked", "bad_path")} <= found(corpus, cbor_impl)


def test_an_oversized_json_file_is_refused_not_read(corpus: Path, cbor_impl: ModuleType,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.conformance import checker

    monkeypatch.setattr(checker, "MAX_JSON_BYTES", 1000)
    assert ("vectors.json", "file_unreadable") in found(corpus, cbor_impl)
