"""canonkit.car.verify on CAR files made here: clean files of both versions and both index
formats, then one broken rule at a time, each found with its code and file offset — on
the compiled kernel and on its twin (the ``car`` fixture)."""
from __future__ import annotations

import struct
from pathlib import Path
from types import ModuleType

import pytest
from car_files import (
    PRAGMA,
    Link,
    car,
    carv2,
    dag,
    entries,
    header,
    identity,
    index_sorted,
    mh_cid,
    mh_index,
    raw,
    sample_blocks,
    section,
    varint,
    write,
)

from canonkit import cbor

__all__ = ["car"]


def codes(report: object) -> list[tuple[str, int]]:
    return [(f.code, f.offset) for f in report.findings]  # type: ignore[attr-defined]


def v1(blocks: list[tuple[Link, bytes]], roots: list[Link] | None = None) -> bytes:
    roots = [blocks[0][0]] if roots is None else roots
    return header({"roots": roots, "version": 1}) + b"".join(section(c, d) for c, d in blocks)


# --- clean files -----------------------------------------------------------------------

def test_a_carv1_of_every_hash_function_verifies(car: ModuleType, tmp_path: Path) -> None:
    blocks = sample_blocks()
    roots = [blocks[0][0], blocks[2][0], blocks[5][0]]
    path = write(tmp_path / "a.car", car.encode(roots, blocks))
    report = car.verify(path)
    assert report.ok and report.findings == [] and report.exit_status == 0
    assert report.version == 1 and report.roots == [str(r) for r in roots]
    assert report.blocks == report.verified == len(blocks)
    assert report.block_bytes == sum(len(d) for _, d in blocks)
    assert report.codecs == {"raw": 5, "dag-cbor": 2}
    assert report.hashes == {"identity": 1, "sha2-256": 3, "sha2-512": 1, "blake3": 1,
                             "blake2b-256": 1}
    assert report.index_format is None and report.data_offset is None


@pytest.mark.parametrize("index", ["car-index-sorted", "car-multihash-index-sorted"])
@pytest.mark.parametrize("fully_indexed", [False, True])
def test_a_carv2_with_either_index_and_padding_verifies(car: ModuleType, tmp_path: Path,
                                                        index: str, fully_indexed: bool) -> None:
    blocks = sample_blocks()
    data = car.encode([blocks[0][0]], blocks, version=2, index=index, data_padding=13,
                      index_padding=5, fully_indexed=fully_indexed)
    report = car.verify(write(tmp_path / "a.car", data))
    assert report.ok and report.findings == [], report.findings
    assert (report.version, report.data_offset, report.index_format) == (2, 64, index)
    assert report.fully_indexed is fully_indexed and report.index_checked
    # identity CIDs are indexed only in a fully indexed file
    assert report.index_entries == len(blocks) - (0 if fully_indexed else 1)
    assert report.characteristics == ("80" if fully_indexed else "00") + "00" * 15


def test_a_carv2_without_index_verifies(car: ModuleType, tmp_path: Path) -> None:
    blocks = sample_blocks()[:3]
    report = car.verify(write(tmp_path / "a.car", car.encode([blocks[0][0]], blocks,
                                                              version=2, index=None)))
    assert report.ok and report.findings == [] and report.index_offset is None
    assert not report.index_checked and report.blocks == 3


def test_several_roots_and_an_identity_root_need_no_block(car: ModuleType,
                                                          tmp_path: Path) -> None:
    a, b = dag({"a": 1}), raw(b"b")
    inline = identity(b"only in the CID")[0]
    report = car.verify(write(tmp_path / "a.car", v1([a, b], roots=[a[0], b[0], inline])))
    assert report.ok and report.findings == [] and len(report.roots) == 3


def test_identity_cids_are_verified_against_their_block(car: ModuleType,
                                                        tmp_path: Path) -> None:
    good = identity(b"same")
    wrong = (good[0], b"diff")
    data = v1([good, wrong])
    report = car.verify(write(tmp_path / "a.car", data))
    second = len(data) - len(section(*wrong))
    assert codes(report) == [("car_digest_mismatch", second)]
    assert report.findings[0].cid == str(good[0]) and report.verified == 1
    assert "identity CID" in report.findings[0].detail


# --- sections and blocks ---------------------------------------------------------------

def test_a_changed_byte_is_a_digest_mismatch_at_its_section(car: ModuleType,
                                                             tmp_path: Path) -> None:
    blocks = [dag({"a": 1}), raw(b"hello world"), raw(b"third")]
    data = bytearray(v1(blocks))
    at = data.index(b"hello world")
    data[at] ^= 1
    report = car.verify(write(tmp_path / "a.car", bytes(data)))
    start = len(header({"roots": [blocks[0][0]], "version": 1})) + len(section(*blocks[0]))
    assert codes(report) == [("car_digest_mismatch", start)]
    finding = report.findings[0]
    assert finding.cid == str(blocks[1][0]) and finding.severity == "error"
    assert "sha2-256 of the 11-byte block is" in finding.detail
    assert blocks[1][0].digest.hex() in finding.detail
    assert report.verified == 2 and not report.ok and report.exit_status == 1


def test_an_unknown_multihash_is_a_finding_never_a_pass(car: ModuleType,
                                                        tmp_path: Path) -> None:
    sha1 = mh_cid(0x11, bytes(20))           # in the table, not computed
    murmur = mh_cid(0x22, bytes(8))          # murmur3-x64-64
    made_up = mh_cid(0x7FFF_FFFF, b"\x01")  # in no table at all
    data = header({"roots": [dag({})[0]], "version": 1}) + b"".join(
        section(c, b"data") for c in (sha1, murmur, made_up))
    report = car.verify(write(tmp_path / "a.car", data))
    assert [f.code for f in report.findings] == ["car_root_missing"] + \
        ["car_unknown_multihash"] * 3
    assert report.verified == 0 and not report.ok
    assert "sha1 (0x11)" in report.findings[1].detail
    assert "0x7fffffff" in report.findings[3].detail


def test_digests_longer_than_the_function_and_truncated_digests(car: ModuleType,
                                                                tmp_path: Path) -> None:
    import hashlib

    block = b"some block"
    full = hashlib.sha256(block).digest()
    too_long = mh_cid(0x12, full + bytes(8))
    truncated = mh_cid(0x12, full[:20])
    blake3_xof = Link.for_block(block, "raw", "blake3").cid_bytes
    from blake3 import blake3

    long_blake3 = mh_cid(0x1E, blake3(block).digest(length=64))
    data = header({"roots": [Link(truncated)], "version": 1}) + b"".join(
        section(c, block) for c in (too_long, truncated, blake3_xof, long_blake3))
    report = car.verify(write(tmp_path / "a.car", data))
    assert [(f.code, f.severity) for f in report.findings] == [
        ("car_digest_length", "error"), ("car_short_digest", "warning")]
    assert report.verified == 3  # the truncated digest matches as far as it goes


def test_a_truncated_last_section_keeps_the_blocks_before_it(car: ModuleType,
                                                             tmp_path: Path) -> None:
    blocks = [dag({"a": 1}), raw(b"second"), raw(b"the last one")]
    data = v1(blocks)
    cut = data[:-5]
    report = car.verify(write(tmp_path / "a.car", cut))
    last = len(data) - len(section(*blocks[2]))
    assert codes(report) == [("car_section_truncated", last)]
    assert report.blocks == report.verified == 2
    length = len(blocks[2][0].cid_bytes) + len(blocks[2][1])
    assert f"declares {length} bytes but {length - 5} remain" in report.findings[0].detail


def test_zero_length_sections_are_found_and_walked_past(car: ModuleType,
                                                        tmp_path: Path) -> None:
    a, b = dag({"a": 1}), raw(b"after the zeros")
    head = header({"roots": [a[0]], "version": 1}) + section(*a)
    data = head + b"\x00" + section(*b) + b"\x00" * 7
    report = car.verify(write(tmp_path / "a.car", data))
    assert codes(report) == [("car_zero_length_section", len(head)),
                             ("car_zero_length_section", len(data) - 7)]
    assert report.findings[0].detail == "a zero-length section (null padding)"
    assert "7 zero-length sections in a row" in report.findings[1].detail
    assert report.blocks == report.verified == 2


@pytest.mark.parametrize(("length", "kind"), [
    (b"\xff" * 9 + b"\x01", "is longer than 9 bytes"),
    (b"\x81\x00", "is not minimally encoded"),
])
def test_a_malformed_section_length_stops_the_walk(car: ModuleType, tmp_path: Path,
                                                   length: bytes, kind: str) -> None:
    a = dag({"a": 1})
    head = header({"roots": [a[0]], "version": 1}) + section(*a)
    report = car.verify(write(tmp_path / "a.car", head + length + section(*raw(b"x"))))
    assert codes(report) == [("car_section_length", len(head))]
    assert kind in report.findings[0].detail and report.blocks == 1


def test_a_length_varint_cut_by_the_end_of_the_file(car: ModuleType, tmp_path: Path) -> None:
    a = dag({"a": 1})
    head = header({"roots": [a[0]], "version": 1}) + section(*a)
    report = car.verify(write(tmp_path / "a.car", head + b"\x80\x80"))
    assert codes(report) == [("car_section_length", len(head))]
    assert "runs past the end" in report.findings[0].detail


def test_a_huge_declared_section_length_allocates_nothing(car: ModuleType,
                                                          tmp_path: Path) -> None:
    import tracemalloc

    a = dag({"a": 1})
    head = header({"roots": [a[0]], "version": 1}) + section(*a)
    path = write(tmp_path / "a.car", head + varint((1 << 62) + 5) + b"\x01\x55")
    tracemalloc.start()
    try:
        report = car.verify(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert codes(report) == [("car_section_truncated", len(head))]
    assert peak < 1 << 20


@pytest.mark.parametrize(("cid", "words"), [
    (b"\x02\x55\x12\x20" + bytes(32), "CID version 2"),
    (b"\x01\x55\x12\xff", "a varint of the CID runs past the end of the section"),
    (b"\x01\x55\x12\x80\x00", "is not minimally encoded"),
    (b"\x01\x55\x12\x40" + bytes(8), "64-byte digest runs past the end of the section"),
    (b"\x12\x20" + bytes(10), "32-byte digest runs past"),
])
def test_a_section_without_a_valid_cid_is_skipped(car: ModuleType, tmp_path: Path,
                                                  cid: bytes, words: str) -> None:
    a, b = dag({"a": 1}), raw(b"after")
    head = header({"roots": [a[0]], "version": 1}) + section(*a)
    bad = varint(len(cid)) + cid
    report = car.verify(write(tmp_path / "a.car", head + bad + section(*b)))
    assert codes(report) == [("car_cid_invalid", len(head))]
    assert words in report.findings[0].detail
    assert report.blocks == report.verified == 2


def test_strict_decodes_every_dag_cbor_block_and_names_its_cid(car: ModuleType,
                                                                tmp_path: Path) -> None:
    loose = bytes.fromhex("a2616202616101")  # {"b": 2, "a": 1}: keys out of order
    cid = Link.for_block(loose, "dag-cbor")
    not_cbor_raw = raw(b"\xff\xff not cbor, but raw")
    blocks = [dag({"a": 1}), (cid, loose), not_cbor_raw]
    path = write(tmp_path / "a.car", v1(blocks))
    assert car.verify(path).ok
    report = car.verify(path, strict=True)
    start = len(header({"roots": [blocks[0][0]], "version": 1})) + len(section(*blocks[0]))
    assert codes(report) == [("car_strict_decode", start)]
    assert report.findings[0].cid == str(cid) and report.strict
    assert "unsorted_map_keys" in report.findings[0].detail


def test_a_root_that_is_not_a_block_and_a_file_without_blocks(car: ModuleType,
                                                               tmp_path: Path) -> None:
    absent = dag({"absent": True})[0]
    only = header({"roots": [absent], "version": 1})
    report = car.verify(write(tmp_path / "a.car", only))
    assert [(f.code, f.severity) for f in report.findings] == [
        ("car_no_blocks", "warning"), ("car_root_missing", "warning")]
    assert report.ok  # the specification leaves both open


def test_findings_are_kept_up_to_the_limit_and_all_counted(car: ModuleType,
                                                           tmp_path: Path) -> None:
    good = raw(b"x")
    wrong = [(good[0], b"y%d" % i) for i in range(30)]
    path = write(tmp_path / "a.car", v1([good, *wrong]))
    report = car.verify(path, limit=10)
    assert len(report.findings) == 10 and report.counts == {"car_digest_mismatch": 30}


def test_the_walk_gives_the_same_report_whatever_the_buffer_size(
        car: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    blocks = sample_blocks()
    data = bytearray(car.encode([blocks[0][0]], blocks, version=2,
                                index="car-multihash-index-sorted"))
    data[200] ^= 0x40
    path = write(tmp_path / "a.car", bytes(data))
    whole = car.verify(path)
    verifier = importlib.import_module(car.__name__ + ".verifier")
    for chunk in (1, 7, 64, 4096):
        monkeypatch.setattr(verifier, "CHUNK", chunk)
        report = car.verify(path)
        assert (report.findings, report.counts, report.blocks) == (
            whole.findings, whole.counts, whole.blocks)


# --- headers ---------------------------------------------------------------------------

X = section(*raw(b"x"))


@pytest.mark.parametrize(("data", "code", "offset", "words"), [
    (b"", "car_header_length", 0, "the file is empty"),
    (b"\xff" * 10, "car_header_length", 0, "longer than 9 bytes"),
    (b"\x00" + X, "car_header_length", 0, "length is zero"),
    (b"\x20\xa1", "car_header_length", 0, "declares 32 bytes but 1 remain"),
    (varint((32 << 20) + 1), "car_header_length", 0, "over the 32 MiB limit"),
    (b"\x07" + bytes.fromhex("a2616202616101") + X, "car_header_invalid", 5,
     "unsorted_map_keys"),
    (b"\x01\xff" + X, "car_header_invalid", 1, "not strict DAG-CBOR"),
    (header([1, 2]) + X, "car_header_schema", 0, "is list, not a map"),
    (header({"roots": []}) + X, "car_header_schema", 0, "no integer version"),
    (header({"roots": [], "version": True}) + X, "car_header_schema", 0, "is bool"),
    (header({"roots": [], "version": 3}) + X, "car_unsupported_version", 0, "version 3"),
    (header({"roots": [], "version": 2}) + X, "car_header_schema", 0,
     "exactly the CARv2 pragma"),
])
def test_header_problems_that_end_the_check(car: ModuleType, tmp_path: Path, data: bytes,
                                            code: str, offset: int, words: str) -> None:
    report = car.verify(write(tmp_path / "a.car", data))
    assert codes(report) == [(code, offset)]
    assert words in report.findings[0].detail
    assert report.blocks == 0 and not report.ok


@pytest.mark.parametrize(("value", "found"), [
    ({"version": 1}, [("car_header_schema", "the header has no roots")]),
    ({"roots": [], "version": 1, "extra": 1},
     [("car_header_schema", "'extra'"), ("car_no_roots", "empty")]),
    ({"roots": "bafy", "version": 1}, [("car_roots_invalid", "str, not an array")]),
    ({"roots": [b"\x01\x55\x00\x00"], "version": 1},
     [("car_roots_invalid", "root 0 is bytes, not a CID")]),
])
def test_header_problems_that_leave_the_sections_walkable(car: ModuleType, tmp_path: Path,
                                                          value: dict[str, object],
                                                          found: list[tuple[str, str]]) -> None:
    report = car.verify(write(tmp_path / "a.car", header(value) + section(*raw(b"x"))))
    assert [f.code for f in report.findings] == [code for code, _ in found]
    for f, (_, words) in zip(report.findings, found):
        assert words in f.detail
    assert report.blocks == report.verified == 1


# --- the CARv2 header ------------------------------------------------------------------

def payload(blocks: list[tuple[Link, bytes]] | None = None) -> bytes:
    return v1(blocks or [dag({"a": 1}), raw(b"b")])


@pytest.mark.parametrize(("data", "code", "offset", "words"), [
    (PRAGMA + bytes(20), "car_v2_header_truncated", 11, "the file has 31 bytes"),
    (carv2(payload(), data_offset=40), "car_data_offset", 27, "inside the pragma"),
    (carv2(payload(), data_offset=10_000), "car_data_offset", 27, "past the end"),
    (carv2(payload(), data_size=0), "car_data_size", 35, "the data size is zero"),
])
def test_carv2_header_problems_that_end_the_check(car: ModuleType, tmp_path: Path,
                                                  data: bytes, code: str, offset: int,
                                                  words: str) -> None:
    report = car.verify(write(tmp_path / "a.car", data))
    assert codes(report) == [(code, offset)] and words in report.findings[0].detail
    assert report.version == 2 and report.blocks == 0


def test_a_data_size_past_the_end_is_walked_to_the_end_of_the_file(
        car: ModuleType, tmp_path: Path) -> None:
    body = payload()
    report = car.verify(write(tmp_path / "a.car", carv2(body, data_size=len(body) + 100)))
    assert codes(report) == [("car_data_size", 35)]
    assert "past the end of the file" in report.findings[0].detail
    assert report.blocks == report.verified == 2


@pytest.mark.parametrize(("index_offset", "words"), [(60, "inside the header or the data"),
                                                    (1 << 40, "past the end of the file")])
def test_an_index_offset_outside_the_index_is_not_followed(car: ModuleType, tmp_path: Path,
                                                           index_offset: int,
                                                           words: str) -> None:
    blocks = [dag({"a": 1}), raw(b"b")]
    good = car.encode([blocks[0][0]], blocks, version=2, index="car-index-sorted")
    data = good[:43] + struct.pack("<Q", index_offset) + good[51:]
    report = car.verify(write(tmp_path / "a.car", data))
    assert codes(report) == [("car_index_offset", 43)] and words in report.findings[0].detail
    assert report.blocks == 2 and not report.index_checked


def test_padding_that_is_not_zero_and_reserved_characteristics_are_warnings(
        car: ModuleType, tmp_path: Path) -> None:
    body = payload()
    data = carv2(body, data_padding=4, padding_byte=7, characteristics=b"\x01" + bytes(15))
    report = car.verify(write(tmp_path / "a.car", data + b"\x00\x09"))
    assert [(f.code, f.offset, f.severity) for f in report.findings] == [
        ("car_characteristics", 11, "warning"), ("car_nonzero_padding", 51, "warning"),
        ("car_nonzero_padding", 55 + len(body) + 1, "warning")]
    assert report.ok and report.blocks == 2


def test_a_payload_header_must_be_version_1(car: ModuleType, tmp_path: Path) -> None:
    body = header({"roots": [], "version": 2}) + section(*raw(b"x"))
    report = car.verify(write(tmp_path / "a.car", carv2(body)))
    assert codes(report) == [("car_unsupported_version", 51)]
    assert "the data payload's header has version 2" in report.findings[0].detail


# --- the index -------------------------------------------------------------------------

BLOCKS = [dag({"a": 1}), raw(b"second block"), raw(b"third", "blake3"), identity(b"id")]


def layout() -> tuple[bytes, list[int]]:
    """The payload of BLOCKS and each section's offset in it."""
    body = v1(BLOCKS)
    offsets, at = [], len(header({"roots": [BLOCKS[0][0]], "version": 1}))
    for c, d in BLOCKS:
        offsets.append(at)
        at += len(section(c, d))
    return body, offsets


def sorted_entries(indexes: list[int]) -> list[tuple[bytes, int]]:
    body, offsets = layout()
    return sorted((BLOCKS[i][0].digest, offsets[i]) for i in indexes)


def check_index(car: ModuleType, tmp_path: Path, index: bytes, **options: object) -> object:
    body, _ = layout()
    return car.verify(write(tmp_path / "a.car", carv2(body, index=index, **options)))


def test_an_index_written_here_checks_out(car: ModuleType, tmp_path: Path) -> None:
    sha = sorted_entries([0, 1])
    index = mh_index([(0x12, [(40, entries(*sha))]),
                      (0x1E, [(40, entries(*sorted_entries([2])))])])
    report = check_index(car, tmp_path, index)
    assert report.ok and report.findings == [] and report.index_entries == 3


def test_index_entries_that_point_at_the_wrong_place(car: ModuleType, tmp_path: Path) -> None:
    body, offsets = layout()
    good = sorted_entries([0, 1, 2])
    bad = [(good[0][0], offsets[1] + 3),     # inside a block
           (good[1][0], len(body) + 1000),   # past the payload
           good[2]]
    report = check_index(car, tmp_path, index_sorted([(40, entries(*bad))]))
    start = 51 + len(body) + 2 + 4 + 12
    assert [(f.code, f.offset) for f in report.findings if f.code != "car_index_missing"] == [
        ("car_index_bad_offset", start), ("car_index_bad_offset", start + 40)]
    assert sorted(f.code for f in report.findings).count("car_index_missing") == 2


def test_index_entries_whose_digest_or_code_differ(car: ModuleType, tmp_path: Path) -> None:
    body, offsets = layout()
    sha_entries = sorted_entries([0, 1])
    wrong_digest = [(bytes(32), sha_entries[0][1]), sha_entries[1]]
    index = mh_index([(0x12, [(40, entries(*sorted(wrong_digest)))]),
                      (0x13, [(40, entries(*sorted_entries([2])))])])  # blake3 filed as sha2-512
    report = check_index(car, tmp_path, index)
    found = [(f.code, f.detail) for f in report.findings]
    assert ("car_index_mismatch", "the bucket is for multihash sha2-512, the section's CID uses "
            "blake3") in found
    digest_mismatch = [f for f in report.findings if "is not the section's" in f.detail]
    pointed_at = BLOCKS[offsets.index(sha_entries[0][1])][0]
    assert len(digest_mismatch) == 1 and digest_mismatch[0].cid == str(pointed_at)


def test_entries_out_of_order_twice_listed_or_missing(car: ModuleType, tmp_path: Path) -> None:
    e = sorted_entries([0, 1, 2])
    report = check_index(car, tmp_path, index_sorted([(40, entries(e[1], e[0], e[0]))]))
    found = sorted(f.code for f in report.findings)
    assert found == ["car_index_duplicate", "car_index_missing", "car_index_unsorted"]
    missing = [f for f in report.findings if f.code == "car_index_missing"][0]
    body, offsets = layout()
    third = [i for i in range(3) if BLOCKS[i][0].digest == e[2][0]][0]
    assert missing.offset == 51 + offsets[third] and missing.cid == str(BLOCKS[third][0])


def test_identity_cids_and_the_fully_indexed_characteristic(car: ModuleType,
                                                            tmp_path: Path) -> None:
    body, offsets = layout()
    with_identity = sorted_entries([0, 1, 2])
    listed = index_sorted([(10, entries((BLOCKS[3][0].digest, offsets[3]))),
                           (40, entries(*with_identity))])
    report = check_index(car, tmp_path, listed)
    assert [(f.code, f.severity) for f in report.findings] == [("car_index_identity", "warning")]
    unlisted = index_sorted([(40, entries(*with_identity))])
    fully = b"\x80" + bytes(15)
    report = check_index(car, tmp_path, unlisted, characteristics=fully)
    assert [f.code for f in report.findings] == ["car_index_missing"]
    assert report.findings[0].offset == 51 + offsets[3]
    assert check_index(car, tmp_path, listed, characteristics=fully).findings == []


def test_buckets_out_of_order(car: ModuleType, tmp_path: Path) -> None:
    body, offsets = layout()
    index = index_sorted([(40, entries(*sorted_entries([0, 1, 2]))),
                          (10, entries((BLOCKS[3][0].digest, offsets[3])))])
    index_b = mh_index([(0x1E, [(40, entries(*sorted_entries([2])))]),
                        (0x12, [(40, entries(*sorted_entries([0, 1])))])])
    fully = b"\x80" + bytes(15)
    assert [f.code for f in check_index(car, tmp_path, index, characteristics=fully)
            .findings] == ["car_index_unsorted"]
    assert [f.code for f in check_index(car, tmp_path, index_b).findings] == [
        "car_index_unsorted"]


@pytest.mark.parametrize(("index", "code", "words"), [
    (varint(0x0402) + bytes(4), "car_unknown_index", "index format 0x402"),
    (b"\x80", "car_index_truncated", "format code varint runs past the end"),
    (varint(0x0400) + b"\x01\x00", "car_index_truncated", "inside the bucket count"),
    (varint(0x0400) + struct.pack("<i", -1), "car_index_malformed", "negative"),
    (varint(0x0400) + struct.pack("<i", 0x7FFF_FFFF) + struct.pack("<IQ", 40, 0),
     "car_index_truncated", "inside a bucket header"),
    (varint(0x0400) + struct.pack("<i", 1) + struct.pack("<IQ", 40, 1 << 60),
     "car_index_truncated", "declares 1152921504606846976 bytes"),
    (varint(0x0400) + struct.pack("<i", 1) + struct.pack("<IQ", 4, 8) + bytes(8),
     "car_index_malformed", "width 4"),
    (varint(0x0400) + struct.pack("<i", 1) + struct.pack("<IQ", 40, 41) + bytes(41),
     "car_index_malformed", "not a whole number of 40-byte entries"),
    (varint(0x0400) + struct.pack("<i", 0) + b"\x00\x00\x00", "car_index_malformed",
     "3 bytes follow the last bucket"),
    (varint(0x0401) + struct.pack("<i", 1) + struct.pack("<Q", 0x12) + struct.pack("<i", -5),
     "car_index_malformed", "negative"),
    # an empty bucket may declare any width: nothing is allocated for it
    (varint(0x0400) + struct.pack("<i", 1) + struct.pack("<IQ", 2**32 - 1, 0),
     "car_index_missing", "not listed"),
])
def test_hostile_index_structures(car: ModuleType, tmp_path: Path, index: bytes, code: str,
                                  words: str) -> None:
    import tracemalloc

    tracemalloc.start()
    try:
        report = check_index(car, tmp_path, index)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    found = [f for f in report.findings if f.code == code]
    assert found and words in found[0].detail, report.findings
    assert not report.ok and peak < 2 << 20, peak


def test_index_entries_pointing_outside_the_file_allocate_nothing(car: ModuleType,
                                                                  tmp_path: Path) -> None:
    import tracemalloc

    far = [(i.to_bytes(32, "big"), (1 << 63) - i) for i in range(2000)]
    index = index_sorted([(40, entries(*far))])
    path = write(tmp_path / "a.car", carv2(layout()[0], index=index))
    tracemalloc.start()
    try:
        report = car.verify(path, limit=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.counts["car_index_bad_offset"] == 2000
    assert len([f for f in report.findings if f.code == "car_index_bad_offset"]) == 5
    assert peak < 2 << 20


def test_an_index_is_not_held_to_data_that_could_not_be_walked(car: ModuleType,
                                                                tmp_path: Path) -> None:
    body, _ = layout()
    broken = body[:-2]
    index = index_sorted([(40, entries(*sorted_entries([0, 1, 2])))])
    report = car.verify(write(tmp_path / "a.car", carv2(broken, index=index)))
    assert [f.code for f in report.findings] == ["car_section_truncated"]
    assert not report.index_checked
