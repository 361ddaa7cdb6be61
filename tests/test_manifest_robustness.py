"""Robustness: arbitrary bytes either parse or raise ManifestError; arbitrary JSON under
every schema verifies to a list of Problems with known reasons — never an exception."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import REPO
from hypothesis import example, given, settings
from hypothesis import strategies as st

from canonkit import manifests
from canonkit.errors import ManifestError

CORPUS = REPO / "conformance" / "amduat"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
    | st.text(max_size=12) | st.sampled_from(["00", "AB", "0x1", "bit", "word", "slice",
                                             "concat", "ERR_RANGE", "artifacts/empty.bin",
                                             "../x", "0001" + "00" * 32]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELDS = ["id", "op", "input", "inputs", "insert", "offset", "length", "level", "output",
          "cid_sha256", "error", "artifact", "size", "sha256", "notes", "type", "from", "to",
          "payload", "output_size"]
entries = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=8)


@settings(max_examples=150)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_parse_or_raise_manifest_error(raw: bytes) -> None:
    try:
        manifests.loads(raw)
    except ManifestError:
        pass


@settings(max_examples=150)
@given(st.sampled_from(sorted(manifests.SCHEMAS)), st.lists(entries | json_values, max_size=5),
       st.dictionaries(st.sampled_from(["fixtures", "extra"]), json_values, max_size=2))
@example("canonkit.conformance.fps_artifacts.v0", [], {"fixtures": "artifacts/empty.bin"})
@example("amduat.conformance.fixtures.v0",
         [{"id": "a", "artifact": "artifacts/hello.txt", "size": "9" * 5000, "sha256": "00"}], {})
def test_arbitrary_entries_verify_to_problems(schema: str, items: list[Any],
                                              top: dict[str, Any]) -> None:
    array = manifests.SCHEMAS[schema].array
    document = {"schema": schema, array: items, **top}
    manifest = manifests.Manifest(document, base=CORPUS)
    problems = manifests.verify_manifest(manifest)
    assert all(p.reason in manifests.REASONS for p in problems)


@settings(max_examples=80)
@given(st.sampled_from(["fps.json", "fps_negative.json", "fixtures.json", "tgk_edges.json",
                        "fps_artifacts.json"]),
       st.integers(0, 10**6), st.sampled_from(FIELDS), json_values)
def test_one_mutated_field_is_caught_or_harmless(name: str, index: int, field: str,
                                                 value: Any) -> None:
    path = CORPUS / name
    document = json.loads(path.read_text())
    array = manifests.SCHEMAS[document["schema"]].array
    entry = document[array][index % len(document[array])]
    before = entry.get(field, "<absent>")
    entry[field] = value
    problems = manifests.verify_manifest(manifests.Manifest(document, base=Path(CORPUS)))
    assert all(p.reason in manifests.REASONS for p in problems)
    if before == "<absent>" and field not in ("notes", "level"):
        # a field the entry did not have is either a stray field or changes the op's
        # argument set; either way verification must not pass silently
        assert problems or _harmless_addition(document["schema"], entry, field)


def _harmless_addition(schema: str, entry: dict[str, Any], field: str) -> bool:
    """Adding a field can only be harmless where the schema allows it for that entry."""
    if schema == "canonkit.conformance.fps_negative.v0":
        return field in ("input", "inputs", "insert", "offset", "length", "level")
    return False
