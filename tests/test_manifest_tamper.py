"""Every kind of drift in a copy of the shipped corpus is caught, with the case id and
the stable reason code (verification fails closed)."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from canonkit import manifests

CORPUS = REPO / "conformance" / "amduat"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    copy = tmp_path / "amduat"
    shutil.copytree(CORPUS, copy, ignore=shutil.ignore_patterns("*.py", "*.md", "__pycache__"))
    return copy


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``change`` to the JSON document and write it back as-is (not canonicalised)."""
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2))


def found(path: Path) -> set[tuple[str | None, str]]:
    return {(p.case, p.reason) for p in manifests.verify(path)}


def entry(document: dict[str, Any], ident: str, array: str = "cases") -> dict[str, Any]:
    return next(e for e in document[array] if e["id"] == ident)


# --- four tampers: each must be caught ------------------------------------------------

def test_changed_artifact_byte_is_caught(corpus: Path) -> None:
    artifact = corpus / "artifacts" / "input-1mib.bin"
    data = bytearray(artifact.read_bytes())
    data[12345] ^= 0x01
    artifact.write_bytes(bytes(data))
    assert found(corpus / "fixtures.json") == {("input-1mib.bin", "digest_mismatch")}
    large = found(corpus / "fps_artifacts.json")
    assert ("fixtures:input-1mib.bin", "digest_mismatch") in large
    # a case on a fixture that failed its own check is not run (nothing read or built)
    assert ("large-reverse-bit", "fixture_unverified") in large
    assert not {reason for _, reason in large} & {"wrong_cid", "wrong_output"}


def test_changed_size_is_caught(corpus: Path) -> None:
    edit(corpus / "fixtures.json",
         lambda d: entry(d, "hello.txt", "fixtures").update(size="15"))
    assert found(corpus / "fixtures.json") == {("hello.txt", "size_mismatch")}


def test_swapped_ids_are_caught(corpus: Path) -> None:
    def swap(document: dict[str, Any]) -> None:
        cases = document["cases"]
        cases[3], cases[4] = cases[4], cases[3]

    edit(corpus / "fps.json", swap)
    problems = found(corpus / "fps.json")
    assert {reason for _, reason in problems} == {"unsorted_ids"}


def test_stray_field_is_caught(corpus: Path) -> None:
    edit(corpus / "fps.json", lambda d: d["cases"][0].update(comment="hi"))
    first = json.loads((corpus / "fps.json").read_text())["cases"][0]["id"]
    assert found(corpus / "fps.json") == {(first, "unexpected_field")}
    edit(corpus / "tgk_edges.json", lambda d: d.update(version=2))
    assert found(corpus / "tgk_edges.json") == {(None, "unexpected_field")}


# --- every other reason ----------------------------------------------------------------

def test_duplicate_id(corpus: Path) -> None:
    edit(corpus / "fixtures.json",
         lambda d: d["fixtures"].insert(1, dict(d["fixtures"][0])))
    assert found(corpus / "fixtures.json") == {("empty.bin", "duplicate_id")}


def test_wrong_output_and_wrong_cid(corpus: Path) -> None:
    edit(corpus / "fps.json", lambda d: entry(d, "spec-slice-byte").update(output="234568"))
    assert found(corpus / "fps.json") == {("spec-slice-byte", "wrong_output")}
    edit(corpus / "fps.json", lambda d: entry(d, "spec-slice-byte").update(output="234567",
                                                                            cid_sha256="0" * 64))
    assert found(corpus / "fps.json") == {("spec-slice-byte", "wrong_cid")}


def test_uppercase_and_malformed_hex(corpus: Path) -> None:
    edit(corpus / "fps.json", lambda d: entry(d, "spec-concat").update(output="01234567".upper()
                                                                        .replace("0", "A")))
    edit(corpus / "fps.json", lambda d: entry(d, "spec-reverse-bit").update(input="0x01"))
    assert found(corpus / "fps.json") == {("spec-concat", "uppercase_hex"),
                                          ("spec-reverse-bit", "malformed_hex")}


def test_wrong_field_types(corpus: Path) -> None:
    edit(corpus / "fixtures.json", lambda d: entry(d, "hello.txt", "fixtures").update(size=14))
    edit(corpus / "fps.json", lambda d: entry(d, "spec-slice-bit").update(offset="4"))
    edit(corpus / "fps.json", lambda d: entry(d, "spec-slice-byte").update(length=True))
    assert found(corpus / "fixtures.json") == {("hello.txt", "wrong_type")}
    assert found(corpus / "fps.json") == {("spec-slice-bit", "wrong_type"),
                                          ("spec-slice-byte", "wrong_type")}


def test_missing_field_and_invalid_values(corpus: Path) -> None:
    edit(corpus / "fps.json", lambda d: entry(d, "spec-reverse-long").pop("level"))
    edit(corpus / "fps.json", lambda d: entry(d, "spec-reverse-word").update(level="nibble"))
    edit(corpus / "fps.json", lambda d: entry(d, "spec-concat").update(op="merge"))
    edit(corpus / "fixtures.json", lambda d: entry(d, "hello.txt", "fixtures").update(size="014"))
    assert found(corpus / "fps.json") == {("spec-reverse-long", "missing_field"),
                                          ("spec-reverse-word", "invalid_value"),
                                          ("spec-concat", "invalid_value")}
    assert found(corpus / "fixtures.json") == {("hello.txt", "invalid_value")}


def test_refused_operation_in_a_positive_case(corpus: Path) -> None:
    edit(corpus / "fps.json", lambda d: entry(d, "spec-slice-byte").update(offset=7))
    assert found(corpus / "fps.json") == {("spec-slice-byte", "operation_refused")}


def test_missing_artifact(corpus: Path) -> None:
    (corpus / "artifacts" / "hello.txt").unlink()
    assert found(corpus / "fixtures.json") == {("hello.txt", "missing_artifact")}


@pytest.mark.parametrize("artifact", ["../fps.json", "/etc/hostname", "artifacts/../../x",
                                      "artifacts\\hello.txt", "", "C:/x"])
def test_artifact_escaping_the_directory(corpus: Path, artifact: str) -> None:
    edit(corpus / "fixtures.json",
         lambda d: entry(d, "hello.txt", "fixtures").update(artifact=artifact))
    assert found(corpus / "fixtures.json") == {("hello.txt", "artifact_escapes")}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlink_escaping_the_directory(corpus: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"hello, amduat\n")
    (corpus / "artifacts" / "hello.txt").unlink()
    (corpus / "artifacts" / "hello.txt").symlink_to(outside)
    assert found(corpus / "fixtures.json") == {("hello.txt", "artifact_escapes")}


def test_unknown_schema(corpus: Path) -> None:
    edit(corpus / "fps.json", lambda d: d.update(schema="amduat.conformance.fps.v9"))
    assert found(corpus / "fps.json") == {(None, "unknown_schema")}
    edit(corpus / "fps.json", lambda d: d.pop("schema"))
    assert found(corpus / "fps.json") == {(None, "unknown_schema")}


def test_duplicate_json_key(corpus: Path) -> None:
    path = corpus / "tgk_edges.json"
    path.write_text(path.read_text().replace('"type": 1,', '"type": 1, "type": 1,', 1))
    assert found(path) == {(None, "duplicate_key")}


def test_negative_case_drift(corpus: Path) -> None:
    path = corpus / "fps_negative.json"
    edit(path, lambda d: entry(d, "range-slice-bit-past-end").update(error="ERR_ARITY"))
    edit(path, lambda d: entry(d, "misaligned-slice-7-bits").update(length=8))
    edit(path, lambda d: entry(d, "arity-concat-empty").update(error="ERR_NOPE"))
    assert found(path) == {("range-slice-bit-past-end", "wrong_error"),
                           ("misaligned-slice-7-bits", "not_refused"),
                           ("arity-concat-empty", "invalid_value")}


@pytest.mark.parametrize(("ref", "reason"), [
    ("0000" + "00" * 32, "invalid_reference"),   # hash_id 0 is reserved
    ("0001" + "00" * 31, "invalid_reference"),   # HASH-ASL1-256 needs 32 bytes
    ("8001" + "00", "invalid_reference"),        # opaque digest shorter than 2 bytes
    ("01", "invalid_reference"),                 # no room for a hash_id
    ("0001" + "AB" * 32, "uppercase_hex"),
    ("0001" + "0" * 63, "malformed_hex"),
])
def test_bad_reference_bytes(corpus: Path, ref: str, reason: str) -> None:
    edit(corpus / "tgk_edges.json", lambda d: entry(d, "edge-2-fan-in", "edges")["to"].append(ref))
    assert found(corpus / "tgk_edges.json") == {("edge-2-fan-in", reason)}


def test_large_case_output_size(corpus: Path) -> None:
    edit(corpus / "fps_artifacts.json",
         lambda d: entry(d, "large-concat").update(output_size="1"))
    edit(corpus / "fps_artifacts.json",
         lambda d: entry(d, "large-reverse-bit").update(input="no-such-fixture"))
    assert found(corpus / "fps_artifacts.json") == {("large-concat", "size_mismatch"),
                                                    ("large-reverse-bit", "missing_artifact")}
    details = {p.case: p.detail for p in manifests.verify(corpus / "fps_artifacts.json")}
    assert "'no-such-fixture'" in details["large-reverse-bit"]


def test_every_reason_code_is_documented() -> None:
    used = {"unreadable", "unknown_schema", "duplicate_key", "missing_field",
            "unexpected_field", "wrong_type", "invalid_value", "uppercase_hex",
            "malformed_hex", "invalid_reference", "unsorted_ids", "duplicate_id",
            "artifact_escapes", "missing_artifact", "size_mismatch", "digest_mismatch",
            "fixture_unverified",
            "operation_refused", "wrong_output", "wrong_cid", "wrong_error", "not_refused"}
    assert set(manifests.REASONS) == used


@pytest.mark.parametrize("size", ["9" * 5000, str(2**64), "-1", "1.0", " 1"])
def test_sizes_outside_the_domain(corpus: Path, size: str) -> None:
    edit(corpus / "fixtures.json", lambda d: entry(d, "hello.txt", "fixtures").update(size=size))
    assert found(corpus / "fixtures.json") == {("hello.txt", "invalid_value")}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_symlink_loop_is_a_missing_artifact(corpus: Path) -> None:
    loop = corpus / "artifacts" / "loop"
    loop.symlink_to(loop)
    edit(corpus / "fixtures.json",
         lambda d: entry(d, "hello.txt", "fixtures").update(artifact="artifacts/loop"))
    assert found(corpus / "fixtures.json") == {("hello.txt", "missing_artifact")}
