"""DAG-JSON against the IPLD codec fixtures (tests/vectors/ipld-codec-fixtures): every
fixture both ways — DAG-CBOR bytes → value → DAG-JSON bytes and back — with the CIDs equal
to the file names, on both CBOR backends, plus the negative fixtures."""
from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from canonkit.cbor import dag_json
from canonkit import errors
from canonkit.cbor._types import Link

ROOT = Path(__file__).parent / "vectors" / "ipld-codec-fixtures"
FIXTURES = sorted(p for p in (ROOT / "fixtures").iterdir() if p.is_dir())


def _forms(fixture: Path) -> tuple[Path, Path]:
    (cbor_file,) = fixture.glob("*.dag-cbor")
    (json_file,) = fixture.glob("*.dag-json")
    return cbor_file, json_file


def test_every_fixture_is_here() -> None:
    assert len(FIXTURES) == 128


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_fixture_both_ways(fixture: Path, cbor_impl: ModuleType) -> None:
    cbor_file, json_file = _forms(fixture)
    cbor_bytes, json_bytes = cbor_file.read_bytes(), json_file.read_bytes()
    # the file names are the CIDs of their bytes
    assert str(Link.for_block(cbor_bytes, "dag-cbor")) == cbor_file.stem
    assert str(Link.for_block(json_bytes, "dag-json")) == json_file.stem

    from_cbor = cbor_impl.decode(cbor_bytes, profile="dag-cbor")
    from_json = dag_json.decode(json_bytes)
    assert from_json == from_cbor
    # DAG-CBOR -> DAG-JSON: the fixture's bytes, hence its CID
    written = dag_json.encode(from_cbor)
    assert written == json_bytes
    assert str(Link.for_block(written, "dag-json")) == json_file.stem
    # DAG-JSON -> DAG-CBOR: the fixture's bytes, hence its CID
    back = cbor_impl.encode(from_json, profile="dag-cbor")
    assert back == cbor_bytes
    assert str(Link.for_block(back, "dag-cbor")) == cbor_file.stem
    # lenient decoding of canonical input is the same value
    assert dag_json.decode(json_bytes, strict=False) == from_json


@pytest.mark.parametrize("fixture", FIXTURES[:40], ids=[p.name for p in FIXTURES[:40]])
def test_fixture_reformatted_reads_leniently_only(fixture: Path) -> None:
    _, json_file = _forms(fixture)
    canonical = json_file.read_bytes()
    value = dag_json.decode(canonical)
    # the same document with whitespace, reversed keys and ASCII escapes
    loose = json.dumps(json.loads(canonical, object_pairs_hook=lambda p: dict(reversed(p))),
                       indent=1, ensure_ascii=True).encode()
    assert dag_json.decode(loose, strict=False) == value
    if loose != canonical:
        with pytest.raises(errors.DecodeError):
            dag_json.decode(loose)


def _negative(codec: str) -> list[dict[str, str]]:
    cases = []
    for path in sorted((ROOT / "negative-fixtures" / codec / "decode").glob("*.json")):
        cases.extend(json.loads(path.read_text("utf-8")))
    return cases


@pytest.mark.parametrize("case", _negative("dag-json"), ids=lambda c: c["name"])
@pytest.mark.parametrize("strict", [True, False])
def test_negative_dag_json(case: dict[str, str], strict: bool) -> None:
    with pytest.raises(errors.DuplicateMapKeyError):
        dag_json.decode(bytes.fromhex(case["hex"]), strict=strict)


@pytest.mark.parametrize("case", _negative("dag-cbor"), ids=lambda c: c["name"])
def test_negative_dag_cbor(case: dict[str, str], cbor_impl: ModuleType) -> None:
    with pytest.raises(errors.DecodeError):
        cbor_impl.decode(bytes.fromhex(case["hex"]), profile="dag-cbor")
