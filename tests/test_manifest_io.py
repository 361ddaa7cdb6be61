"""Reading (what raises ManifestError), canonical writing, ReferenceBytes and the
fixtures.v0 builder."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import REPO

from canonkit import manifests
from canonkit.errors import ManifestError
from canonkit.manifests.refbytes import Reference, parse_reference

CORPUS = REPO / "conformance" / "amduat"


@pytest.mark.parametrize("raw", [b"\xff{}", b"{", b"[]", b'{"a": NaN}', b"", b"\xef\xbb\xbf{}"])
def test_unreadable_input_raises_manifest_error(raw: bytes) -> None:
    with pytest.raises(ManifestError):
        manifests.loads(raw)


def test_missing_file_raises_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError):
        manifests.read(tmp_path / "nope.json")


def test_writer_emits_canonical_form() -> None:
    messy = {
        "cases": [
            {"cid_sha256": "AA" * 32, "output": "AB", "input": "CD", "level": "byte",
             "op": "reverse", "id": "b"},
            {"op": "concat", "id": "a", "inputs": ["0A"], "output": "0a",
             "cid_sha256": "bb" * 32},
        ],
        "schema": "amduat.conformance.fps.v0",
    }
    text = manifests.dumps(messy).decode()
    document = json.loads(text)
    assert list(document) == ["schema", "cases"]
    assert [c["id"] for c in document["cases"]] == ["a", "b"]
    assert list(document["cases"][1]) == ["id", "op", "input", "level", "output", "cid_sha256"]
    assert document["cases"][1]["output"] == "ab" and document["cases"][0]["inputs"] == ["0a"]
    assert text.endswith("}\n")
    again = manifests.loads(text.encode())
    assert manifests.dumps(again) == text.encode()


def test_writer_turns_sizes_into_decimal_strings() -> None:
    doc = {"schema": "amduat.conformance.fixtures.v0",
           "fixtures": [{"id": "x", "artifact": "x", "size": 12, "sha256": "00" * 32}]}
    assert json.loads(manifests.dumps(doc))["fixtures"][0]["size"] == "12"


def test_writer_keeps_negative_case_arguments_verbatim() -> None:
    doc = {"schema": "canonkit.conformance.fps_negative.v0",
           "cases": [{"id": "x", "op": "reverse", "input": "ABCD", "error": "ERR_ARG_INVALID"}]}
    assert json.loads(manifests.dumps(doc))["cases"][0]["input"] == "ABCD"


@pytest.mark.parametrize("doc", [
    {"schema": "nope", "cases": []},
    {"schema": "amduat.conformance.fps.v0", "cases": [{"op": "concat"}]},
    {"schema": "amduat.conformance.fps.v0", "cases": {}},
])
def test_writer_refuses_what_it_cannot_order(doc: dict[str, object]) -> None:
    with pytest.raises(ManifestError):
        manifests.dumps(doc)


def test_reference_bytes() -> None:
    digest = bytes(range(32))
    assert parse_reference(b"\x00\x01" + digest) == Reference(1, digest)
    assert parse_reference(b"\x12\x34ab").to_bytes() == b"\x12\x34ab"
    for bad in (b"", b"\x00", b"\x00\x00" + digest, b"\x00\x01" + digest[:-1], b"\x77\x77a"):
        with pytest.raises(ValueError):
            parse_reference(bad)


def test_build_fixtures_round_trips(tmp_path: Path) -> None:
    (tmp_path / "data" / "sub").mkdir(parents=True)
    (tmp_path / "data" / "a.bin").write_bytes(b"abc")
    (tmp_path / "data" / "sub" / "b.bin").write_bytes(b"")
    out = tmp_path / "fixtures.json"
    manifest = manifests.build_fixtures(tmp_path / "data", out)
    manifests.write(manifest, out)
    assert manifests.verify(out) == []
    fixtures = manifests.read(out).document["fixtures"]
    assert [(f["id"], f["artifact"], f["size"]) for f in fixtures] == [
        ("a.bin", "data/a.bin", "3"), ("sub/b.bin", "data/sub/b.bin", "0")]


def test_build_fixtures_skips_its_own_manifest(tmp_path: Path) -> None:
    (tmp_path / "x.bin").write_bytes(b"x")
    (tmp_path / "fixtures.json").write_text("{}")
    manifest = manifests.build_fixtures(tmp_path, tmp_path / "fixtures.json")
    assert [f["id"] for f in manifest.document["fixtures"]] == ["x.bin"]


def test_build_fixtures_refuses_directory_outside(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "m").mkdir()
    with pytest.raises(ManifestError):
        manifests.build_fixtures(tmp_path / "data", tmp_path / "m" / "fixtures.json")


def test_entries_without_usable_ids_are_reported_once() -> None:
    cid = "bbf044c85b5c8d51f7d9352bdf1ba29be581cc5a82e6f390006735237bf5111a"  # of b"\0"
    case = {"op": "concat", "inputs": ["00"], "output": "00", "cid_sha256": cid}
    doc = {"schema": "amduat.conformance.fps.v0",
           "cases": [dict(case), {"id": 5, **case}, 7, {"id": "z", **case, "output": []}]}
    problems = [(p.case, p.reason) for p in manifests.verify_manifest(manifests.Manifest(doc))]
    assert problems == [("#1", "wrong_type"), ("#0", "missing_field"),
                        ("#2", "wrong_type"), ("z", "wrong_type")]


@pytest.mark.parametrize(("doc", "expected"), [
    ({"schema": "amduat.conformance.fps.v0"}, [(None, "missing_field")]),
    ({"schema": "amduat.conformance.fps.v0", "cases": {}}, [(None, "wrong_type")]),
    ({"schema": 3, "cases": []}, [(None, "unknown_schema")]),
    ({"schema": "canonkit.conformance.fps_artifacts.v0", "cases": []},
     [(None, "missing_field")]),
    ({"schema": "canonkit.conformance.fps_artifacts.v0", "fixtures": "../x.json",
      "cases": []}, [(None, "artifact_escapes")]),
    ({"schema": "canonkit.conformance.fps_artifacts.v0", "fixtures": "README.md",
      "cases": []}, [(None, "unreadable")]),
    ({"schema": "canonkit.conformance.fps_artifacts.v0", "fixtures": "fps.json",
      "cases": []}, [("fixtures", "unknown_schema")]),
])
def test_manifest_level_problems(doc: dict[str, object],
                                 expected: list[tuple[str | None, str]]) -> None:
    manifest = manifests.Manifest(doc, base=CORPUS)  # type: ignore[arg-type]
    problems = manifests.verify_manifest(manifest)
    assert [(p.case, p.reason) for p in problems] == expected


def test_a_long_integer_is_read_but_never_written(tmp_path: Path) -> None:
    path = tmp_path / "fps.json"
    path.write_text('{"schema": "amduat.conformance.fps.v0", "cases": [{"id": "a", '
                    '"op": "slice", "input": "00", "offset": ' + "1" * 5000 + ', '
                    '"length": 0, "output": "", "cid_sha256": "' + "0" * 64 + '"}]}')
    manifest = manifests.read(path)
    with pytest.raises(ManifestError, match="5000 digits"):
        manifests.dumps(manifest)
