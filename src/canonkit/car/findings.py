"""What ``canonkit.car.verify`` reports: finding codes and severities, the findings, the
report (docs/car.md, "Findings").

Every finding is ``{severity, code, offset, cid, detail}``: ``offset`` is a byte offset in
the file (a section's first byte for a block's findings, an index entry's first byte for
an entry's), ``cid`` the block's CID where there is one. Codes never change meaning. A
finding of severity ``error`` is a broken rule and fails the check; each such code is also
the code of an exception class in ``canonkit.errors`` (what the raising readers raise). A
``warning`` is something the specifications leave open or only recommend; it is reported
and does not fail the check.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..cbor._cid import cid_to_string, code_name
from ..errors import CODES as ERROR_CODES
from ..errors import CARError
from .format import parse_cid

__all__ = ["CODES", "EXIT_CLEAN", "EXIT_FINDINGS", "Finding", "Report", "finding",
           "from_problem"]

EXIT_CLEAN, EXIT_FINDINGS = 0, 1

CODES: dict[str, tuple[str, str]] = {
    # the header(s)
    "car_header_length": ("error", "the header's length varint is malformed, zero, over "
                                   "32 MiB or runs past the end"),
    "car_header_invalid": ("error", "the header is not one strict DAG-CBOR data item"),
    "car_header_schema": ("error", "the header is not a map of exactly version and roots, "
                                   "nor the exact CARv2 pragma"),
    "car_roots_invalid": ("error", "the header's roots are not an array of CIDs"),
    "car_unsupported_version": ("error", "the version is neither 1 nor the CARv2 pragma's 2; "
                                         "a CARv2 payload's is not 1"),
    "car_no_roots": ("warning", "the header's roots array is empty"),
    "car_root_missing": ("warning", "a root (not an identity CID) is not a block of the data"),
    # the CARv2 header
    "car_v2_header_truncated": ("error", "the file ends inside the 40-byte CARv2 header"),
    "car_data_offset": ("error", "the data offset points inside the pragma and header or past "
                                 "the end of the file"),
    "car_data_size": ("error", "the data payload is empty or ends past the end of the file"),
    "car_index_offset": ("error", "the index offset points inside the header or data payload, "
                                  "or at or past the end of the file"),
    "car_characteristics": ("warning", "a reserved characteristics bit is set"),
    "car_nonzero_padding": ("warning", "padding before the payload, before the index or after "
                                       "the payload holds bytes other than zero"),
    # sections and blocks
    "car_section_length": ("error", "a section's length varint is malformed or cut off: the "
                                    "rest of the data cannot be walked"),
    "car_section_truncated": ("error", "a section's length runs past the end of the data: the "
                                       "rest cannot be walked"),
    "car_zero_length_section": ("error", "zero-length sections (null padding inside the data)"),
    "car_cid_invalid": ("error", "a section does not start with a valid CID that fits in it"),
    "car_digest_mismatch": ("error", "a block's recomputed digest differs from its CID's"),
    "car_unknown_multihash": ("error", "a CID names a hash function canonkit does not compute: "
                                       "the block is not verified"),
    "car_digest_length": ("error", "a CID's digest is longer than its hash function's output"),
    "car_short_digest": ("warning", "a CID's digest is truncated: only its bytes are checked"),
    "car_strict_decode": ("error", "a dag-cbor block is not strict DAG-CBOR (--strict)"),
    "car_no_blocks": ("warning", "the data holds no block"),
    # the CARv2 index
    "car_unknown_index": ("error", "the index format is neither car-index-sorted nor "
                                   "car-multihash-index-sorted: it is not checked"),
    "car_index_truncated": ("error", "the index ends inside its format code, a bucket header or "
                                     "a bucket"),
    "car_index_malformed": ("error", "a negative bucket count, a width below 8, a bucket length "
                                     "not a multiple of its width, or bytes after the last bucket"),
    "car_index_unsorted": ("error", "buckets or the digests within a bucket are not ascending"),
    "car_index_bad_offset": ("error", "an entry's offset is not the start of a section"),
    "car_index_mismatch": ("error", "an entry's digest, digest length or hash code differs from "
                                    "its section's CID"),
    "car_index_missing": ("error", "a block the index must list is not listed"),
    "car_index_duplicate": ("error", "two entries point at the same section"),
    "car_index_identity": ("warning", "an identity CID is indexed though the file is not marked "
                                      "fully indexed"),
}


class Finding(NamedTuple):
    """One problem or observation; reports list them by offset, then code."""

    offset: int
    code: str
    cid: str | None
    detail: str
    severity: str

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "offset": self.offset,
                "cid": self.cid, "detail": self.detail}

    def error(self) -> CARError:
        """The exception of this finding's code (an error finding only)."""
        cls = ERROR_CODES[self.code]
        return cls(f"{self.detail} at offset {self.offset}"
                   + (f" (block {self.cid})" if self.cid else ""),
                   offset=self.offset, detail=self.cid)  # type: ignore[return-value]


def finding(offset: int, code: str, detail: str, cid: bytes | None = None) -> Finding:
    """A finding with its code's severity; ``cid`` as binary (no multibase prefix)."""
    return Finding(offset, code, cid_to_string(cid) if cid else None, detail, CODES[code][0])


def _name(code: int) -> str:
    return code_name(code)


_VARINT = {"cut": "runs past the end", "overlong": "is longer than 9 bytes",
           "non_minimal": "is not minimally encoded"}


def _expected_digest(cid: bytes) -> bytes:
    fields = parse_cid(cid, 0, len(cid))
    return cid[fields.digest_start:fields.digest_start + fields.digest_length]


def _detail(code: str, cid: bytes | None, info: tuple[Any, ...]) -> str:
    """The words for a kernel problem's ``info`` (see ``_sections_py``)."""
    if code == "car_section_length":
        return (f"the section's length varint {_VARINT[info[0]]}; the rest of the data "
                "cannot be walked")
    if code == "car_section_truncated":
        return (f"the section declares {info[0]} bytes but {info[1]} remain in the data "
                "(a truncated last section?); the rest cannot be walked")
    if code == "car_zero_length_section":
        count = info[0]
        return ("a zero-length section (null padding)" if count == 1 else
                f"{count} zero-length sections in a row (null padding, {count} bytes)")
    if code == "car_cid_invalid":
        reason, value = info
        if reason == "version":
            return (f"CID version {value}: a CIDv1 starts with varint 1, a CIDv0 with "
                    "12 20")
        if reason == "varint":
            return f"a varint of the CID {_VARINT[value]} of the section"
        return f"the CID's {value}-byte digest runs past the end of the section"
    if code == "car_digest_mismatch":
        if info[0] == "identity":
            return (f"identity CID: its {info[1]}-byte digest is not the {info[2]}-byte "
                    "block")
        expected = _expected_digest(cid) if cid else b""
        return (f"{_name(info[0])} of the {info[2]}-byte block is {info[1].hex()}, the CID "
                f"holds {expected.hex()}")
    if code == "car_unknown_multihash":
        return (f"multihash {_name(info[0])} (0x{info[0]:x}) is not a hash function canonkit "
                "computes: the block is not verified")
    if code == "car_digest_length":
        return (f"the CID's {_name(info[0])} digest has {info[1]} bytes, more than the "
                f"function's {info[2]}")
    if code == "car_short_digest":
        return (f"the CID's {_name(info[0])} digest is truncated to {info[1]} of {info[2]} "
                "bytes: only those are checked")
    if code == "car_strict_decode":
        return f"not strict DAG-CBOR ({info[0]}): {info[2]}, offsets within the block"
    if code == "car_index_unsorted":
        return "the entry's digest sorts before the previous entry's of its bucket"
    if code == "car_index_bad_offset":
        return f"the entry's offset {info[0]} is not the start of a section of the data payload"
    if code == "car_index_duplicate":
        return f"a second entry for the section at data-payload offset {info[0]}"
    if code == "car_index_identity":
        return ("an identity CID is indexed, but the file is not marked fully indexed "
                f"(the section at data-payload offset {info[0]})")
    if code == "car_index_mismatch":
        if info[0] == "code":
            return (f"the bucket is for multihash {_name(info[1])}, the section's CID uses "
                    f"{_name(info[2])}")
        if info[0] == "length":
            return (f"the entry's digest has {info[1]} bytes, the section's CID's "
                    f"{info[2]}")
        return f"the entry's digest {info[1].hex()} is not the section's {info[2].hex()}"
    if code == "car_index_missing":
        return "the block is not listed by the index"
    raise ValueError(f"no kernel problem has the code {code!r}")


def from_problem(problem: tuple[str, int, bytes | None, tuple[Any, ...]]) -> Finding:
    """The finding of a kernel problem tuple ``(code, offset, cid, info)``."""
    code, offset, cid, info = problem
    return finding(offset, code, _detail(code, cid, info), cid)


@dataclass
class Report:
    """What ``verify`` found in one CAR file, and what it looked at.

    ``findings`` are sorted by offset then code; at most ``limit`` per code are kept,
    ``counts`` has them all. ``ok`` when no finding is an error."""

    path: str
    version: int | None = None
    roots: list[str] = field(default_factory=list)
    characteristics: str | None = None     # CARv2: the 16 bytes as hex
    fully_indexed: bool = False
    data_offset: int | None = None         # CARv2 only
    data_size: int | None = None
    index_offset: int | None = None        # CARv2 with an index
    index_format: str | None = None
    index_checked: bool = False            # False: no index, or the data could not be walked
    index_entries: int = 0
    blocks: int = 0
    block_bytes: int = 0
    verified: int = 0                      # blocks whose digest matched
    codecs: dict[str, int] = field(default_factory=dict)
    hashes: dict[str, int] = field(default_factory=dict)
    strict: bool = False
    size: int = 0                          # the file's size
    findings: list[Finding] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    limit: int = 1000

    def add(self, found: Finding | Iterable[Finding]) -> None:
        """Add findings, keeping at most ``limit`` per code (all are counted)."""
        for one in [found] if isinstance(found, Finding) else found:
            seen = self.counts.get(one.code, 0)
            self.counts[one.code] = seen + 1
            if seen < self.limit:
                self.findings.append(one)

    def add_counts(self, counts: dict[str, int]) -> None:
        """Count findings a kernel found beyond what it kept (its per-code counts)."""
        for code, count in counts.items():
            self.counts[code] = self.counts.get(code, 0) + count

    def finish(self) -> None:
        self.findings.sort(key=lambda f: (f.offset, f.code, f.cid or "", f.detail))
        self.counts = dict(sorted(self.counts.items()))

    @property
    def ok(self) -> bool:
        return not any(CODES[code][0] == "error" for code in self.counts)

    @property
    def exit_status(self) -> int:
        return EXIT_CLEAN if self.ok else EXIT_FINDINGS

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "ok": self.ok, "version": self.version,
                "roots": self.roots, "characteristics": self.characteristics,
                "fully_indexed": self.fully_indexed, "data_offset": self.data_offset,
                "data_size": self.data_size, "index_offset": self.index_offset,
                "index_format": self.index_format, "index_checked": self.index_checked,
                "index_entries": self.index_entries,
                "blocks": self.blocks, "block_bytes": self.block_bytes,
                "verified": self.verified, "codecs": self.codecs, "hashes": self.hashes,
                "strict": self.strict, "size": self.size, "counts": self.counts,
                "findings": [f.to_dict() for f in self.findings]}
