"""Check a corpus directory exactly as OBJECTS.md §2 says, failing closed.

Every problem becomes a ``Failure(path, reason, detail)`` record; nothing escapes as an
exception (an unreadable file, a malformed entry, even a bug in an encoder under test is
reported as a failure of the thing being checked). ``path`` is a file relative to the
corpus directory, with ``#name`` appended for one vector or case
(``"vectors.json#blob_hello"``). ``reason`` is one of ``REASONS``: stable codes for
programs; ``detail`` is for people.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import errors
from ..cbor._types import PROFILES
from .._files import decimal_uint64, loads_json, open_regular, read_regular
from ..errors import FileTooLargeError, JSONInputError
from ..objects import BUILTIN_KINDS, ObjectCodec, address
from ..objects.hashing import PREFIX
from .fixtures import NEGATIVE_CLASSES, OBJECT_FIXTURES, REQUIREMENTS
from .forms import FORM_REASONS, check_forms
from .layout import (
    MANIFEST,
    MANIFEST_SCHEMA,
    NEGATIVE,
    NEGATIVE_SCHEMA,
    VECTOR_FILES,
    VECTORS,
    VECTORS_SCHEMA,
    version_of,
)

__all__ = ["REASONS", "Failure", "Report", "check", "compare_reports"]

REASONS: dict[str, str] = {
    # files and the manifest's inventory
    "file_missing": "a required or listed file does not exist",
    "file_unreadable": "a file exists but cannot be read",
    "file_unlisted": "a file in the directory is not listed in the manifest",
    "bad_path": "a listed path is absolute, escapes the directory, or is a symlink",
    "size_mismatch": "a file's size differs from the manifest",
    "digest_mismatch": "a file's SHA-256 differs from the manifest",
    "invalid_json": "a file is not UTF-8 JSON (or repeats a key)",
    "unknown_schema": "a file's schema string is not the one this checker reads",
    "bad_field": "a field is missing, unexpected, of the wrong type or malformed",
    "unknown_digest": "the manifest names a digest other than sha256",
    "version_mismatch": "format_version differs from the version directory's name",
    "unsorted": "entries are not in the required order",
    "duplicate_name": "two entries share a name (or a path)",
    # manifest <-> vectors
    "vector_missing": "the manifest lists a vector the file does not contain",
    "vector_unlisted": "a file contains a vector the manifest does not list",
    "family_mismatch": "the manifest's family differs from the vector's kind or class",
    "unknown_requirement": "the manifest names a requirement id that is not defined",
    # object vectors
    "kind_not_covered": "a canonkit kind has no vector",
    "unknown_kind": "a vector's kind is not registered",
    "no_fixture": "no live fixture definition has the vector's name",
    "kind_mismatch": "the vector's kind differs from its fixture or its decoded envelope",
    "encode_failed": "the encoder refused the fixture's fields",
    "encode_mismatch": "the fixture's fields encode to different bytes",
    "address_mismatch": "BLAKE3 of the bytes differs from the vector's address",
    "decode_failed": "the vector's bytes do not decode as an object of its kind",
    "roundtrip_mismatch": "decoding and re-encoding changes the bytes",
    # negative cases
    "class_not_covered": "one of the nine classes of CBOR.md §2 has no case",
    "unknown_class": "a case's class is not a CBOR decode error code",
    "negative_accepted": "the decoder accepted an input it must reject",
    "wrong_class": "the decoder rejected the input with a different class",
    # the checker itself
    "unexpected_error": "the check itself failed; reported so that nothing passes silently",
    "backends_disagree": "two backends reported different failures for the same corpus",
    **FORM_REASONS,  # physical forms (forms.py)
}

MAX_JSON_BYTES = 64 << 20  # a corpus JSON file larger than this is refused, not read

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_HEX = re.compile(r"(?:[0-9a-f]{2})*")
_SHA256 = re.compile(r"[0-9a-f]{64}")

VECTOR_KEYS = ("name", "kind", "description", "address", "hex")
CASE_KEYS = ("name", "class", "description", "hex")
FILE_KEYS = ("path", "bytes", "sha256")
LISTED_KEYS = ("file", "name", "family", "requirements")


@dataclass(frozen=True, order=True)
class Failure:
    """One problem: where (``path``), what (``reason``, a key of ``REASONS``), details."""

    path: str
    reason: str
    detail: str = ""


@dataclass
class Report:
    """The result of checking one corpus directory with one CBOR backend."""

    directory: str
    backend: str
    failures: list[Failure] = field(default_factory=list)
    files: int = 0
    vectors: int = 0
    cases: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory, "backend": self.backend, "ok": self.ok,
                "files": self.files, "vectors": self.vectors, "cases": self.cases,
                "failures": [asdict(f) for f in self.failures]}


def check(directory: str | os.PathLike[str], *, cbor: ModuleType | None = None,
          format_version: int | None = None) -> Report:
    """Check the corpus in ``directory`` (e.g. ``conformance/v1``) with the CBOR backend
    module ``cbor`` (default: the live one). ``format_version`` is the version the
    manifest must declare; by default it is read from a directory named ``v<N>``."""
    if cbor is None:
        from .. import cbor as live

        cbor = live
    root = Path(directory)
    expected = format_version if format_version is not None else version_of(root.name)
    run = _Run(root, cbor, expected)
    try:
        run.all()
    except Exception as exc:  # noqa: BLE001 -- fail closed: a checker bug is a failure
        run.fail(".", "unexpected_error", f"{type(exc).__name__}: {exc}")
    report = Report(str(root), getattr(cbor, "__name__", repr(cbor)),
                    failures=list(dict.fromkeys(run.failures)),
                    files=run.files, vectors=run.vectors, cases=run.cases)
    return report


def compare_reports(reports: Mapping[str, Report]) -> list[Failure]:
    """A ``backends_disagree`` failure for every (path, reason) that not all backends
    report. Details (messages for people) are not compared."""
    sets = {name: {(f.path, f.reason) for f in r.failures} for name, r in reports.items()}
    union: set[tuple[str, str]] = set().union(*sets.values())
    out = []
    for path, reason in sorted(union):
        missing = [name for name, s in sets.items() if (path, reason) not in s]
        if missing:
            out.append(Failure(path, "backends_disagree",
                               f"{reason} not reported by {', '.join(missing)}"))
    return out


def _first_difference(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first difference at byte {i}: expected {y:02x}, got {x:02x}"
    return f"lengths differ: got {len(a)} bytes, expected {len(b)}"


class _Run:
    """One check of one directory with one backend; collects failures."""

    def __init__(self, root: Path, cbor: ModuleType, expected_version: int | None) -> None:
        self.root = root
        self.cbor = cbor
        self.codec = ObjectCodec(cbor)
        self.expected_version = expected_version
        self.failures: list[Failure] = []
        self.files = self.vectors = self.cases = 0
        self.listed_files: set[str] = set()

    def fail(self, path: str, reason: str, detail: str = "") -> None:
        self.failures.append(Failure(path, reason, detail))

    # -- files -----------------------------------------------------------------------

    def locate(self, rel: str) -> Path | None:
        """The file ``rel`` if it is a regular file inside the corpus (no symlink on the
        way); otherwise reports why and returns None."""
        path = self.root / rel
        try:
            if path.is_symlink() or any((self.root / p).is_symlink()
                                        for p in Path(rel).parents if str(p) != "."):
                self.fail(rel, "bad_path", "is or passes through a symlink")
                return None
            path.lstat()
        except (FileNotFoundError, NotADirectoryError):
            self.fail(rel, "file_missing")
            return None
        except OSError as exc:  # a directory on the way that may not be searched
            self.unreadable(rel, exc)
            return None
        return path

    def unreadable(self, rel: str, exc: Exception) -> None:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.fail(rel, "file_unreadable", f"{type(exc).__name__}: {detail}")

    def read(self, rel: str) -> bytes | None:
        """A corpus JSON file's bytes: a regular file (a FIFO or device is refused, never
        opened blocking) of at most ``MAX_JSON_BYTES`` (never an unbounded read)."""
        path = self.locate(rel)
        if path is None:
            return None
        try:
            return read_regular(path, max_bytes=MAX_JSON_BYTES)
        except (OSError, FileTooLargeError) as exc:
            self.unreadable(rel, exc)
            return None

    def measure(self, rel: str) -> tuple[int, str] | None:
        """(size, sha256 hex) of a listed regular file, streamed in 1 MiB blocks."""
        path = self.locate(rel)
        if path is None:
            return None
        digest = hashlib.sha256()
        size = 0
        try:
            with open_regular(path) as fh:
                while block := fh.read(1 << 20):
                    digest.update(block)
                    size += len(block)
        except OSError as exc:
            self.unreadable(rel, exc)
            return None
        return size, digest.hexdigest()

    def load(self, rel: str, schema: str) -> dict[str, Any] | None:
        data = self.read(rel)
        if data is None:
            return None
        try:
            doc = loads_json(data, source=rel)
        except JSONInputError as exc:
            self.fail(rel, "invalid_json", f"{exc.code}: {exc}")
            return None
        if not isinstance(doc, dict):
            self.fail(rel, "unknown_schema", f"top level is {type(doc).__name__}, not an object")
            return None
        if doc.get("schema") != schema:
            self.fail(rel, "unknown_schema", f"{doc.get('schema')!r}, expected {schema!r}")
            return None
        return doc

    def fields_of(self, doc: dict[str, Any], rel: str, keys: tuple[str, ...]) -> bool:
        """True if ``doc`` has exactly ``keys``; reports each missing or extra key."""
        ok = True
        for key in keys:
            if key not in doc:
                self.fail(rel, "bad_field", f"missing field {key!r}")
                ok = False
        for key in doc:
            if key not in keys:
                self.fail(rel, "bad_field", f"unexpected field {key!r}")
                ok = False
        return ok

    def entries(self, doc: dict[str, Any], rel: str, list_key: str,
                keys: tuple[str, ...], text_keys: tuple[str, ...]) -> list[dict[str, Any]]:
        """The well-formed entries of ``doc[list_key]`` with valid, sorted, unique names;
        every malformed entry is reported and skipped."""
        items = doc.get(list_key)
        if not isinstance(items, list):
            self.fail(rel, "bad_field", f"{list_key!r} is not an array")
            return []
        good: list[dict[str, Any]] = []
        previous: str | None = None
        seen: set[str] = set()
        for i, entry in enumerate(items):
            where = f"{rel}#{entry.get('name')}" if isinstance(entry, dict) and isinstance(
                entry.get("name"), str) else f"{rel}#[{i}]"
            if not isinstance(entry, dict):
                self.fail(where, "bad_field", f"{list_key}[{i}] is not an object")
                continue
            if not self.fields_of(entry, where, keys):
                continue
            wrong = [k for k in text_keys if not isinstance(entry[k], str)]
            if wrong:
                self.fail(where, "bad_field", f"{', '.join(wrong)} must be text")
                continue
            name = entry["name"]
            if not _NAME.fullmatch(name):
                self.fail(where, "bad_field", f"name {name!r} is not [A-Za-z0-9][A-Za-z0-9_.-]*")
                continue
            if name in seen:
                self.fail(where, "duplicate_name", f"{name!r} appears more than once")
                continue
            if previous is not None and name < previous:
                self.fail(where, "unsorted", f"{name!r} comes after {previous!r}")
            seen.add(name)
            previous = name
            good.append(entry)
        return good

    def hex_bytes(self, entry: dict[str, Any], where: str) -> bytes | None:
        """The bytes of ``entry["hex"]``, or None once reported as not lowercase hex pairs."""
        text = entry["hex"]
        if not _HEX.fullmatch(text):
            self.fail(where, "bad_field", "hex must be lowercase hex digits in pairs")
            return None
        return bytes.fromhex(text)

    def each(self, rel: str, good: list[dict[str, Any]],
             check: Callable[[dict[str, Any], str], None]) -> None:
        """``check(entry, where)`` for every entry of ``rel``; an unexpected exception is
        that entry's failure, never the end of the run."""
        for entry in good:
            where = f"{rel}#{entry['name']}"
            try:
                check(entry, where)
            except Exception as exc:  # noqa: BLE001 -- reported as a failure
                self.fail(where, "unexpected_error", f"{type(exc).__name__}: {exc}")

    # -- the whole directory ---------------------------------------------------------

    def all(self) -> None:
        manifest = self.load(MANIFEST, MANIFEST_SCHEMA)
        if manifest is not None:
            self.manifest_files(manifest)
        found: dict[tuple[str, str], str] = {}  # (file, name) -> family
        vectors = self.load(VECTORS, VECTORS_SCHEMA)
        if vectors is not None:
            good = self.object_vectors(vectors)
            for entry in good:
                found[(VECTORS, entry["name"])] = entry["kind"]
            check_forms(self, good)  # the store's physical forms, if the corpus has them
        negative = self.load(NEGATIVE, NEGATIVE_SCHEMA)
        if negative is not None:
            for entry in self.negative_cases(negative):
                found[(NEGATIVE, entry["name"])] = entry["class"]
        if manifest is not None:
            self.manifest_vectors(manifest, found,
                                  complete={VECTORS: vectors is not None,
                                            NEGATIVE: negative is not None})
        self.unlisted_files(manifest is not None)

    # -- manifest.json ---------------------------------------------------------------

    def manifest_files(self, manifest: dict[str, Any]) -> None:
        self.fields_of(manifest, MANIFEST,
                       ("schema", "format_version", "digest", "files", "vectors"))
        version = manifest.get("format_version")
        if type(version) is not int or version < 1:
            self.fail(MANIFEST, "bad_field", f"format_version {version!r} is not a positive int")
        elif self.expected_version is not None and version != self.expected_version:
            self.fail(MANIFEST, "version_mismatch",
                      f"format_version {version}, directory is v{self.expected_version}")
        if "digest" in manifest and manifest["digest"] != "sha256":
            self.fail(MANIFEST, "unknown_digest", repr(manifest["digest"]))
        files = manifest.get("files")
        if not isinstance(files, list):
            self.fail(MANIFEST, "bad_field", "'files' is not an array")
            return
        previous: str | None = None
        for i, entry in enumerate(files):
            if not isinstance(entry, dict) or not all(
                    isinstance(entry.get(k), str) for k in FILE_KEYS):
                self.fail(f"{MANIFEST}#files[{i}]", "bad_field",
                          "an entry needs text path, bytes and sha256")
                continue
            if not self.fields_of(entry, f"{MANIFEST}#files[{i}]", FILE_KEYS):
                continue
            rel = entry["path"]
            if rel in self.listed_files:
                self.fail(rel, "duplicate_name", "listed more than once in the manifest")
                continue
            self.listed_files.add(rel)
            if previous is not None and rel < previous:
                self.fail(rel, "unsorted", f"listed after {previous!r}")
            previous = rel
            try:  # one bad entry is that file's failure, never the end of the check
                self.listed_file(rel, entry["bytes"], entry["sha256"])
            except Exception as exc:  # noqa: BLE001 -- reported as a failure
                self.fail(rel, "unexpected_error", f"{type(exc).__name__}: {exc}")

    def listed_file(self, rel: str, size: str, sha256: str) -> None:
        parts = rel.split("/")
        if (not rel or rel.startswith("/") or "\\" in rel or "\x00" in rel or rel == MANIFEST
                or any(p in ("", ".", "..") for p in parts)):
            self.fail(rel or "<empty>", "bad_path", "must be a relative path inside the corpus "
                                                    "(and not the manifest itself)")
            return
        expected = decimal_uint64(size)  # bounded before int(): 5000 digits cost nothing
        if expected is None:
            shown = size if len(size) <= 40 else f"{size[:20]}... ({len(size)} characters)"
            self.fail(rel, "bad_field", f"bytes {shown!r} is not a decimal string below 2**64")
            return
        if not _SHA256.fullmatch(sha256):
            self.fail(rel, "bad_field", f"sha256 {sha256!r} is not 64 lowercase hex digits")
            return
        measured = self.measure(rel)
        if measured is None:
            return
        self.files += 1
        actual_size, actual = measured
        if actual_size != expected:
            self.fail(rel, "size_mismatch", f"{actual_size} bytes, manifest says {size}")
        if actual != sha256:
            self.fail(rel, "digest_mismatch", f"sha256 {actual}, manifest says {sha256}")

    def unlisted_files(self, have_manifest: bool) -> None:
        if not have_manifest:
            return  # the missing manifest is already the failure
        def unreadable_directory(exc: OSError) -> None:  # never skipped silently
            where = Path(exc.filename or self.root)
            rel = where.relative_to(self.root).as_posix() if where != self.root else "."
            self.unreadable(rel, exc)

        for dirpath, dirnames, filenames in os.walk(self.root, onerror=unreadable_directory):
            dirnames.sort()
            for name in dirnames:  # os.walk does not descend into these: report them
                if (Path(dirpath) / name).is_symlink():
                    rel = (Path(dirpath) / name).relative_to(self.root).as_posix()
                    self.fail(rel, "bad_path", "a symlinked directory inside the corpus")
            for name in sorted(filenames):
                rel = (Path(dirpath) / name).relative_to(self.root).as_posix()
                if rel != MANIFEST and rel not in self.listed_files:
                    self.fail(rel, "file_unlisted", "not in manifest.json")

    def manifest_vectors(self, manifest: dict[str, Any], found: dict[tuple[str, str], str],
                         complete: dict[str, bool]) -> None:
        listed = manifest.get("vectors")
        if not isinstance(listed, list):
            self.fail(MANIFEST, "bad_field", "'vectors' is not an array")
            return
        seen: set[tuple[str, str]] = set()
        previous: tuple[str, str] | None = None
        for i, entry in enumerate(listed):
            where = f"{MANIFEST}#vectors[{i}]"
            if not isinstance(entry, dict) or not self.fields_of(entry, where, LISTED_KEYS):
                if not isinstance(entry, dict):
                    self.fail(where, "bad_field", "not an object")
                continue
            file, name, family, reqs = (entry[k] for k in LISTED_KEYS)
            if not (isinstance(file, str) and isinstance(name, str) and isinstance(family, str)
                    and isinstance(reqs, list) and all(isinstance(r, str) for r in reqs)):
                self.fail(where, "bad_field", "file, name, family must be text; "
                                              "requirements an array of text")
                continue
            key = (file, name)
            here = f"{file}#{name}"
            if key in seen:
                self.fail(here, "duplicate_name", "listed more than once in the manifest")
                continue
            if previous is not None and key < previous:
                self.fail(here, "unsorted", "manifest vectors must be sorted by (file, name)")
            seen.add(key)
            previous = key
            if reqs != sorted(set(reqs)):
                self.fail(here, "bad_field", "requirements must be sorted and unique")
            for req in reqs:
                if req not in REQUIREMENTS:
                    self.fail(here, "unknown_requirement", req)
            if file not in VECTOR_FILES:
                self.fail(here, "vector_missing", f"{file!r} is not a vector file")
            elif key not in found:
                if complete.get(file, False):
                    self.fail(here, "vector_missing", f"listed, but {file} has no {name!r}")
            elif found[key] != family:
                self.fail(here, "family_mismatch",
                          f"manifest says {family!r}, the vector is {found[key]!r}")
        for key in sorted(found):
            if key not in seen:
                self.fail(f"{key[0]}#{key[1]}", "vector_unlisted", "not in manifest.json")

    # -- vectors.json ----------------------------------------------------------------

    def object_vectors(self, doc: dict[str, Any]) -> list[dict[str, Any]]:
        self.fields_of(doc, VECTORS, ("schema", "vectors"))
        good = self.entries(doc, VECTORS, "vectors", VECTOR_KEYS, VECTOR_KEYS)
        fixtures = {f.name: f for f in OBJECT_FIXTURES}
        self.each(VECTORS, good, lambda entry, where: self.object_vector(entry, where, fixtures))
        kinds = {entry["kind"] for entry in good}
        for kind in BUILTIN_KINDS:
            if kind.name not in kinds:
                self.fail(VECTORS, "kind_not_covered", kind.name)
        return good

    def object_vector(self, entry: dict[str, Any], where: str,
                      fixtures: Mapping[str, Any]) -> None:
        self.vectors += 1
        kind = entry["kind"]
        data = self.hex_bytes(entry, where)
        if data is None:
            return
        if not (entry["address"].startswith(PREFIX) and len(entry["address"]) == 71
                and _SHA256.fullmatch(entry["address"][len(PREFIX):])):
            self.fail(where, "bad_field", f"address {entry['address']!r} is not "
                                          f"blake3: + 64 lowercase hex digits")
        elif address(data) != entry["address"]:
            self.fail(where, "address_mismatch", f"BLAKE3 gives {address(data)}")
        if not any(k.name == kind for k in _registered()):
            self.fail(where, "unknown_kind", kind)
            return
        fixture = fixtures.get(entry["name"])
        if fixture is None:
            self.fail(where, "no_fixture", "cannot check encode-identically")
        elif fixture.kind != kind:
            self.fail(where, "kind_mismatch", f"fixture is {fixture.kind!r}")
        else:
            self.compare(where, "encode", data, lambda: self.codec.encode_object(
                fixture.kind, fixture.fields, version=fixture.version))
        try:
            obj = self.codec.decode_object(data, kind=kind)
        except Exception as exc:  # noqa: BLE001 -- reported as a failure
            self.fail(where, "decode_failed", _describe(exc))
            return
        if obj.kind != kind:
            self.fail(where, "kind_mismatch", f"decodes as {obj.kind!r}")
            return
        self.compare(where, "roundtrip", data, lambda: self.codec.encode_object(
            obj.kind, obj.fields, version=obj.version))

    def compare(self, where: str, what: str, expected: bytes,
                produce: Callable[[], bytes]) -> None:
        try:
            got = produce()
        except Exception as exc:  # noqa: BLE001 -- reported as a failure
            self.fail(where, "encode_failed" if what == "encode" else "roundtrip_mismatch",
                      _describe(exc))
            return
        if got != expected:
            self.fail(where, f"{what}_mismatch", _first_difference(got, expected))

    # -- negative.json ---------------------------------------------------------------

    def negative_cases(self, doc: dict[str, Any]) -> list[dict[str, Any]]:
        self.fields_of(doc, NEGATIVE, ("schema", "profile", "cases"))
        profile = doc.get("profile")
        if profile not in PROFILES:
            self.fail(NEGATIVE, "bad_field", f"profile {profile!r} is not one of {PROFILES}")
            return []
        good = self.entries(doc, NEGATIVE, "cases", CASE_KEYS, CASE_KEYS)
        self.each(NEGATIVE, good, lambda entry, where: self.negative_case(entry, where, profile))
        classes = {entry["class"] for entry in good}
        for cls in NEGATIVE_CLASSES:
            if cls not in classes:
                self.fail(NEGATIVE, "class_not_covered", cls)
        return good

    def negative_case(self, entry: dict[str, Any], where: str, profile: str) -> None:
        self.cases += 1
        cls = entry["class"]
        data = self.hex_bytes(entry, where)
        if data is None:
            return
        known = errors.CODES.get(cls)
        if known is None or not issubclass(known, errors.DecodeError):
            self.fail(where, "unknown_class", cls)
            return
        try:
            self.cbor.decode(data, profile=profile)
        except errors.CanonkitError as exc:
            if exc.code != cls:
                self.fail(where, "wrong_class", f"expected {cls}, got {exc.code}")
        except Exception as exc:  # noqa: BLE001 -- a generic error is never the class
            self.fail(where, "wrong_class", f"expected {cls}, got {_describe(exc)}")
        else:
            self.fail(where, "negative_accepted", f"expected {cls}")


def _registered() -> list[Any]:
    from ..objects import registered_kinds

    return registered_kinds()


def _describe(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    return f"{code or type(exc).__name__}: {exc}"
