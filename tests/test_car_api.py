"""canonkit.car's readers and writers: blocks() raises the error class of the first
problem, sections() lists each section with its findings, extract() writes verified
blocks complete or not at all, encode()/write() make files verify() accepts — and the
public fixtures of the IPLD specifications and go-car read as their authors describe."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from car_files import dag, raw, sample_blocks, section, write
from conftest import VECTORS
from hypothesis import given, settings
from hypothesis import strategies as st

from canonkit import car, errors
from canonkit.cbor import Link

CAR_VECTORS = VECTORS / "car"


def v1(blocks: list[tuple[Link, bytes]]) -> bytes:
    return car.encode([blocks[0][0]], blocks)


# --- the error classes -----------------------------------------------------------------

def test_every_error_finding_has_its_registered_class() -> None:
    error_codes = {code for code, (severity, _) in car.CODES.items() if severity == "error"}
    registered = {code for code in errors.CODES if code.startswith("car_")}
    assert error_codes == registered
    for code in error_codes:
        cls = errors.CODES[code]
        assert issubclass(cls, errors.CARError) and issubclass(cls, ValueError)
    for code, (severity, _) in car.CODES.items():
        assert severity in ("error", "warning")
        if severity == "warning":
            assert code not in errors.CODES


# --- blocks() --------------------------------------------------------------------------

def test_blocks_yields_every_block_in_file_order(tmp_path: Path) -> None:
    blocks = sample_blocks()
    path = write(tmp_path / "a.car", car.encode([blocks[0][0]], blocks, version=2))
    got = list(car.blocks(path))
    assert [(b.cid, b.data) for b in got] == blocks
    assert got[0].offset == 51 + len(car.encode([blocks[0][0]], []))


@pytest.mark.parametrize(("mutate", "cls"), [
    (lambda d: d[:-3], errors.CarSectionTruncatedError),
    (lambda d: d.replace(b"second", b"sec0nd"), errors.CarDigestMismatchError),
    (lambda d: b"\x00" + d, errors.CarHeaderLengthError),
])
def test_blocks_raises_the_class_of_the_first_error(tmp_path: Path, mutate: object,
                                                    cls: type[errors.CARError]) -> None:
    blocks = [dag({"a": 1}), raw(b"second"), raw(b"third")]
    path = write(tmp_path / "a.car", mutate(v1(blocks)))  # type: ignore[operator]
    seen = []
    with pytest.raises(cls) as caught:
        for block in car.blocks(path):
            seen.append(block.cid)
    assert caught.value.offset is not None and caught.value.code == cls.code
    assert seen == [b[0] for b in blocks][:len(seen)]


def test_blocks_with_strict_refuses_a_loose_dag_cbor_block(tmp_path: Path) -> None:
    loose = bytes.fromhex("a2616202616101")
    cid = Link.for_block(loose)
    path = write(tmp_path / "a.car", car.encode([cid], [(cid, loose)]))
    assert [b.data for b in car.blocks(path)] == [loose]
    with pytest.raises(errors.CarStrictDecodeError) as caught:
        list(car.blocks(path, strict=True))
    assert caught.value.detail == str(cid)


def test_sections_are_the_same_whatever_the_buffer_size(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import canonkit.car.window as window

    blocks = sample_blocks()
    data = bytearray(car.encode([blocks[0][0]], blocks) + b"\x00\x00\x05\x01")
    data[150] ^= 1
    path = write(tmp_path / "a.car", bytes(data))

    def listing() -> list[object]:
        with car.open_car(path) as opened:
            return list(opened.sections(strict=True))

    whole = listing()
    assert any(isinstance(item, car.Finding) for item in whole)
    for chunk in (1, 5, 333):
        monkeypatch.setattr(window, "CHUNK", chunk)
        assert listing() == whole


def test_sections_lists_findings_in_their_place(tmp_path: Path) -> None:
    a, b = dag({"a": 1}), raw(b"b")
    data = v1([a]) + b"\x00\x00" + section(b[0], b"not b")
    path = write(tmp_path / "a.car", data)
    with car.open_car(path) as opened:
        assert opened.version == 1 and opened.roots == [a[0]]
        items = list(opened.sections())
    assert [type(i).__name__ for i in items] == ["Section", "Finding", "Section"]
    assert items[1].code == "car_zero_length_section" and "2 zero-length" in items[1].detail
    assert [f.code for f in items[2].findings] == ["car_digest_mismatch"]
    assert items[0].findings == [] and items[0].data == a[1]


# --- extract() -------------------------------------------------------------------------

def test_extract_writes_each_verified_block_once(tmp_path: Path) -> None:
    blocks = sample_blocks()
    broken = (raw(b"broken")[0], b"not it")
    data = car.encode([blocks[0][0]], [*blocks, blocks[1], broken])
    path = write(tmp_path / "a.car", data)
    report = car.extract(path, tmp_path / "out")
    assert report.written == [str(c) for c, _ in blocks]
    assert [f.code for f in report.findings] == ["car_digest_mismatch"] and not report.ok
    for cid, block in blocks:
        assert (tmp_path / "out" / str(cid)).read_bytes() == block
    assert not (tmp_path / "out" / str(broken[0])).exists()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(report.written)


def test_extract_selected_cids_and_a_missing_one(tmp_path: Path) -> None:
    blocks = sample_blocks()
    path = write(tmp_path / "a.car", car.encode([blocks[0][0]], blocks))
    absent = raw(b"absent")[0]
    report = car.extract(path, tmp_path / "out", cids=[blocks[2][0], str(absent)])
    assert report.written == [str(blocks[2][0])] and report.missing == [str(absent)]
    assert report.exit_status == 1


def test_extract_refuses_an_existing_target_before_writing_anything(tmp_path: Path) -> None:
    blocks = sample_blocks()
    path = write(tmp_path / "a.car", car.encode([blocks[0][0]], blocks))
    out = tmp_path / "out"
    out.mkdir()
    (out / str(blocks[-1][0])).write_bytes(b"old")
    with pytest.raises(errors.OutputPathError, match="exists"):
        car.extract(path, out)
    assert sorted(p.name for p in out.iterdir()) == [str(blocks[-1][0])]
    report = car.extract(path, out, force=True)
    assert report.ok and (out / str(blocks[-1][0])).read_bytes() == blocks[-1][1]


# --- encode() and write() --------------------------------------------------------------

def test_encode_lays_out_a_carv2_as_the_specification_says() -> None:
    blocks = [raw(b"one"), raw(b"two")]
    data = car.encode([blocks[0][0]], blocks, version=2, index="car-index-sorted",
                      data_padding=3, index_padding=2)
    payload = car.encode([blocks[0][0]], blocks)
    assert data[:11] == car.PRAGMA and data[11:27] == bytes(16)
    assert struct.unpack("<QQQ", data[27:51]) == (54, len(payload), 54 + len(payload) + 2)
    assert data[54:54 + len(payload)] == payload
    index = data[54 + len(payload) + 2:]
    assert index[:2] == b"\x80\x08" and struct.unpack("<iIQ", index[2:18]) == (1, 40, 80)
    offsets = [len(car.encode([blocks[0][0]], []))]
    offsets.append(offsets[0] + len(section(*blocks[0])))
    expected = sorted((c.digest, o) for (c, _), o in zip(blocks, offsets))
    assert index[18:] == b"".join(d + struct.pack("<Q", o) for d, o in expected)


def test_encode_refuses_what_it_cannot_write() -> None:
    with pytest.raises(ValueError, match="version"):
        car.encode([], [], version=3)
    with pytest.raises(ValueError, match="index must be"):
        car.encode([], [], version=2, index="car-index-unsorted")
    with pytest.raises(ValueError, match="negative"):
        car.encode([], [], version=2, data_padding=-1)


def test_write_is_atomic_and_refuses_to_replace_when_told(tmp_path: Path) -> None:
    blocks = [raw(b"one")]
    target = tmp_path / "a.car"
    car.write(target, [blocks[0][0]], blocks, version=2)
    assert car.verify(target).ok
    with pytest.raises(errors.OutputPathError):
        car.write(target, [blocks[0][0]], blocks, replace=False)
    assert [p.name for p in tmp_path.iterdir()] == ["a.car"]


@given(st.lists(st.binary(max_size=64), max_size=8),
       st.sampled_from([None, "car-index-sorted", "car-multihash-index-sorted"]),
       st.booleans(), st.integers(0, 5), st.integers(0, 5), st.integers(1, 2))
@settings(max_examples=60)
def test_whatever_encode_writes_verifies(tmp_path_factory: pytest.TempPathFactory,
                                         datas: list[bytes], index: str | None, fully: bool,
                                         data_padding: int, index_padding: int,
                                         version: int) -> None:
    hashes = ["sha2-256", "blake2b-256", "blake3", "identity", "sha3-256"]
    blocks = [(Link.for_block(d, "raw", hashes[i % len(hashes)]), d)
              for i, d in enumerate(datas)]
    roots = [blocks[0][0]] if blocks else []
    data = car.encode(roots, blocks, version=version, index=index, fully_indexed=fully,
                      data_padding=data_padding, index_padding=index_padding)
    path = tmp_path_factory.mktemp("car") / "a.car"
    path.write_bytes(data)
    report = car.verify(path, strict=True)
    expected = {"car_no_roots", "car_no_blocks"} if not blocks else set()
    assert set(report.counts) == expected, report.findings
    assert report.verified == len(blocks)
    if version == 2 and index:
        assert report.index_entries == sum(1 for c, _ in blocks
                                           if fully or c.hash_function != "identity")


# --- public fixtures -------------------------------------------------------------------

def test_the_carv1_fixture_of_the_specification() -> None:
    layout = json.loads((CAR_VECTORS / "carv1-basic.json").read_bytes())
    path = CAR_VECTORS / "carv1-basic.car"
    report = car.verify(path, strict=True)
    assert report.ok and report.findings == [] and report.version == 1
    assert report.roots == [r["/"] for r in layout["header"]["roots"]]
    with car.open_car(path) as opened:
        sections = list(opened.sections())
    assert [(s.offset, s.length, str(s.cid), s.data_offset, s.data_length)
            for s in sections] == [
        (b["offset"], b["length"], b["cid"]["/"], b["blockOffset"], b["blockLength"])
        for b in layout["blocks"]]


def test_the_carv2_fixture_has_an_index_without_its_format_code() -> None:
    layout = json.loads((CAR_VECTORS / "carv2-basic.json").read_bytes())
    report = car.verify(CAR_VECTORS / "carv2-basic.car")
    head = layout["header"]
    assert (report.data_offset, report.data_size, report.index_offset) == (
        head["dataOffset"], head["dataSize"], head["indexOffset"])
    assert report.blocks == report.verified == len(layout["blocks"])
    # the index starts with the bucket count (01 00 00 00), not the varint 0x0400: the
    # fixture predates the format code, so its index is of no known format
    assert [(f.code, f.offset) for f in report.findings] == [
        ("car_unknown_index", head["indexOffset"])]


def test_go_cars_multihash_index_checks_out() -> None:
    path = CAR_VECTORS / "go-car-sample-wrapped-v2.car"
    report = car.verify(path)
    assert report.ok and report.findings == []
    assert report.index_format == "car-multihash-index-sorted"
    assert (report.blocks, report.index_entries) == (1049, 1043)  # identity CIDs unindexed
    assert report.hashes == {"identity": 6, "blake2b-256": 1043}
    # Filecoin chain data: 140 of its dag-cbor blocks hold text strings that are not UTF-8
    strict = car.verify(path, strict=True)
    assert strict.counts == {"car_strict_decode": 140}
    assert all("(invalid_utf8)" in f.detail for f in strict.findings)


@pytest.mark.parametrize("fully_indexed", [False, True])
def test_go_cars_sorted_index_checks_out(tmp_path: Path, fully_indexed: bool) -> None:
    wrapped = (CAR_VECTORS / "go-car-sample-wrapped-v2.car").read_bytes()
    data_offset, data_size, _ = struct.unpack("<QQQ", wrapped[27:51])
    payload = wrapped[data_offset:data_offset + data_size]
    index = (CAR_VECTORS / "go-car-sample-index.carindex").read_bytes()
    characteristics = bytes([0x80 if fully_indexed else 0]) + bytes(15)
    head = car.PRAGMA + characteristics + struct.pack("<QQQ", 51, len(payload),
                                                      51 + len(payload))
    report = car.verify(write(tmp_path / "a.car", head + payload + index))
    assert report.index_format == "car-index-sorted" and report.index_entries == 1049
    # go-car wrote the identity CIDs into this index: a warning unless fully indexed
    assert report.counts == ({} if fully_indexed else {"car_index_identity": 6})
    assert report.ok


def test_verify_reads_the_same_file_or_refuses(tmp_path: Path) -> None:
    """A file replaced between the header and the walk is refused, never blended."""
    import canonkit.car.verifier as verifier

    blocks = [dag({"a": 1}), raw(b"b" * 1000)]
    path = write(tmp_path / "a.car", v1(blocks))
    original = verifier.walk

    def shrink_first(handle: object, *args: object, **kwargs: object) -> None:
        with open(path, "r+b") as f:
            f.truncate(100)
        original(handle, *args, **kwargs)  # type: ignore[arg-type]

    verifier.walk = shrink_first  # type: ignore[assignment]
    try:
        with pytest.raises(errors.FileChangedError):
            car.verify(path)
    finally:
        verifier.walk = original

