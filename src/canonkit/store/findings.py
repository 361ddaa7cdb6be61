"""fsck's findings: stable codes, severities, the report (STORE.md §4).

Every finding is ``{severity, code, path, address?, offset?, detail}``; ``path`` is
relative to the store root, ``offset`` a byte offset in that file. Codes never change
meaning; docs/store.md lists them. ``FsckReport.ok`` is True when no finding is an error.
"""
from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

__all__ = ["CODES", "EXIT_CLEAN", "EXIT_ERRORS", "EXIT_USAGE", "FORMS", "Finding",
           "FsckReport", "SEVERITIES", "collector_paused", "finding", "sorted_findings"]

SEVERITIES = ("error", "warning", "info")
#: the keys of ``FsckReport.forms``
FORMS = ("loose", "loose_deflate", "packed", "packed_deflate")
EXIT_CLEAN, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2

CODES: dict[str, tuple[str, str]] = {
    # physical forms: loose files and pack entries
    "bad_magic": ("error", "a loose file, pack or index does not start with its magic"),
    "bad_version": ("error", "a pack or index has a version other than 1"),
    "bad_form": ("error", "a form byte is neither 0x00 (raw) nor 0x01 (DEFLATE)"),
    "truncated": ("error", "a file or entry ends before its header says it does"),
    "trailing_bytes": ("error", "bytes follow the end of a payload or zlib stream"),
    "length_mismatch": ("error", "the decoded length differs from the declared length"),
    "deflate_invalid": ("error", "a payload is not one zlib stream without a preset "
                                 "dictionary"),
    "digest_mismatch": ("error", "BLAKE3 of the logical bytes differs from the file name or "
                                 "index digest"),
    # packs and indexes
    "bad_offset": ("error", "an index offset is outside the pack or not at an entry start"),
    "pack_count": ("error", "a pack's header count differs from the entries it holds"),
    "pack_trailer": ("error", "a pack's trailer is not BLAKE3 of its preceding bytes"),
    "pack_name": ("error", "a pack's file name is not the hex of its trailer"),
    "pack_missing": ("error", "an index is published but its pack file is missing"),
    "index_fanout": ("error", "an index's fan-out is not monotone or not consistent with "
                              "its digests"),
    "index_unsorted": ("error", "an index's digests are not strictly ascending"),
    "index_checksum": ("error", "an index's checksum is not BLAKE3 of its preceding bytes"),
    "index_pack_mismatch": ("error", "an index names a different pack trailer than its "
                                     "pack's"),
    "index_count": ("error", "an index's count differs from its pack's count"),
    "index_unlisted_entry": ("error", "a pack entry is not listed by the index"),
    "index_duplicate_offset": ("error", "two index digests point at one pack entry"),
    # refs and reachability
    "ref_bad_name": ("error", "a file under refs/ is not named by a valid ref name"),
    "ref_bad_content": ("error", "a ref file does not hold exactly blake3:<64 hex> and LF"),
    "ref_target_missing": ("error", "a ref points at an object that is not stored"),
    "missing_object": ("error", "an object referenced by a reachable object is not stored"),
    # the filesystem
    "symlink": ("error", "a symlink inside the store (never followed)"),
    "unreadable": ("error", "a store file cannot be read"),
    "unexpected_file": ("warning", "a file or directory the store layout does not define"),
    "stale_lock": ("warning", "the store lock's holder is gone; break it explicitly"),
    # informational
    "lock_held": ("info", "a repack or gc holds the store lock"),
    "tmp_leftover": ("info", "an entry in tmp/ (work in progress, or left by a crash)"),
    "unpublished_pack": ("info", "a pack without its index: never read, removed by the "
                                 "next repack or gc after the grace period"),
    "unreachable": ("info", "an object no ref reaches (gc deletes it after the grace "
                            "period)"),
    "duplicate_object": ("info", "an object stored in more than one place"),
    "unfollowed": ("info", "an object that looks structured but whose kind is not "
                           "registered or whose schema does not hold: its references are "
                           "not followed"),
    "dangling_reference": ("info", "an unreachable object references an object that is not "
                                   "stored"),
}


class Finding(NamedTuple):
    """One problem or observation. Reports sort by ``sort_key`` (path, offset, code, ...)
    so they are identical however the work was split. Build them with ``finding``,
    which fills in the code's severity."""

    path: str
    offset: int | None
    code: str
    address: str | None
    detail: str
    severity: str

    def sort_key(self) -> tuple[str, int, str, str, str]:
        return (self.path, -1 if self.offset is None else self.offset, self.code,
                self.address or "", self.detail)

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "code": self.code, "path": self.path,
                "address": self.address, "offset": self.offset, "detail": self.detail}


def finding(path: str, offset: int | None, code: str, address: str | None = None,
            detail: str = "") -> Finding:
    """A finding with its code's severity (``CODES``)."""
    return Finding(path, offset, code, address, detail, CODES[code][0])


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused (if it was running): findings are tuples, which
    it tracks, so building 10^5 of them would set off collections that walk them all again
    and again; they hold no reference cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """``sorted(set(findings), key=Finding.sort_key)``, deduplicated in the order given
    rather than through a set: a report of many findings made in order (one per
    unreachable object, pack by pack, in digest order) is then sorted in about one pass
    instead of from a hash order."""
    with collector_paused():
        return sorted(dict.fromkeys(findings), key=Finding.sort_key)


@dataclass
class FsckReport:
    """What fsck found: ``findings`` (sorted), ``ok`` when none is an error, and what
    was checked."""

    findings: list[Finding] = field(default_factory=list)
    objects: int = 0           # distinct addresses with at least one intact form
    loose_files: int = 0
    packs: int = 0
    pack_entries: int = 0
    refs: int = 0
    reachable: int = 0
    logical_bytes: int = 0     # bytes hashed to verify objects
    seconds: float = 0.0
    engine: str = "local"
    jobs: int = 1
    #: the intact objects the units checked, by where and how each is stored (FORMS):
    #: ``{"objects": n, "bytes": logical bytes}``; an object stored twice counts twice
    forms: dict[str, dict[str, int]] = field(
        default_factory=lambda: {k: {"objects": 0, "bytes": 0} for k in FORMS})
    #: seconds per phase: "plan" (refs, layout, pack structure), "check" (the units),
    #: "reachability" (refs reported, the reachability pass)
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def exit_status(self) -> int:
        return EXIT_CLEAN if self.ok else EXIT_ERRORS

    def counts(self) -> dict[str, int]:
        """Findings per code, in code order."""
        return dict(sorted(Counter(f.code for f in self.findings).items()))

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "findings"}
        out["ok"] = self.ok
        out["counts"] = self.counts()
        out["findings"] = [f.to_dict() for f in self.findings]
        return out
