"""The live fixture definitions the corpus is recorded from and checked against.

Each object fixture is a kind plus its fields as plain Python values; **encode
identically** means: these fields, through the encoder under test, give exactly the
vector's ``hex``. Values are literals (references are written out as hex, not computed
through an encoder), so the definitions do not depend on the code they test.

Frozen corpora never change (OBJECTS.md §2): fixtures can be added for new kinds, but an
existing fixture's name, fields and description stay as recorded in ``conformance/v1``.

Each negative case carries ``repaired``: the same input with its one violation fixed,
which decodes and re-encodes to itself. The tests use it to prove every case contains
exactly one violation. ``None`` where no repair exists (empty input) or would be absurd
(a 2^63-byte string).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NEGATIVE_CLASSES",
    "NEGATIVE_FIXTURES",
    "OBJECT_FIXTURES",
    "REQUIREMENTS",
    "NegativeFixture",
    "ObjectFixture",
]

REQUIREMENTS: dict[str, str] = {
    "REQ-OBJ-ENCODE": "the fixture's fields through the encoder give exactly the vector's bytes",
    "REQ-OBJ-ADDRESS": "BLAKE3-256 of the bytes gives exactly the vector's address",
    "REQ-OBJ-ROUNDTRIP": "decoding the bytes and re-encoding reproduces them",
    "REQ-OBJ-RAW": "blob and chunk are addressed as raw bytes, without an envelope",
    "REQ-OBJ-ENVELOPE": "a structured object is one core CBOR map with t (text) and v (uint)",
    "REQ-OBJ-REF": "references are the 32 raw digest bytes of the referenced object",
    "REQ-OBJ-TREE-ORDER": "tree entries are sorted by the UTF-8 bytes of their names",
    "REQ-OBJ-KEY-ORDER": "map keys are in bytewise order of their encodings (not length-first)",
    "REQ-OBJ-NULL": "absent conflict sides are CBOR null",
    "REQ-CBOR-REJECT": "the input is rejected with exactly its class, never accepted",
    "REQ-CBOR-FIRST-VIOLATION": "the reported class is the first violation in a left-to-right pass",
    "REQ-CBOR-NO-PREALLOC": "a length larger than the input fails as truncated without allocating it",
}

# CBOR.md §2: the nine classes every corpus covers.
NEGATIVE_CLASSES = (
    "empty_input", "non_shortest_integer", "indefinite_length", "unsorted_map_keys",
    "duplicate_map_key", "invalid_utf8", "trailing_data", "float_outside_profile", "truncated",
)

_OBJ = ("REQ-OBJ-ADDRESS", "REQ-OBJ-ENCODE", "REQ-OBJ-ROUNDTRIP")


@dataclass(frozen=True)
class ObjectFixture:
    name: str
    kind: str
    description: str
    fields: Any  # bytes for raw kinds, a field map otherwise
    version: int = 1
    requirements: tuple[str, ...] = field(default=())

    def all_requirements(self) -> list[str]:
        return sorted({*_OBJ, *self.requirements})


@dataclass(frozen=True)
class NegativeFixture:
    name: str
    cls: str
    description: str
    hex: str
    repaired: str | None
    requirements: tuple[str, ...] = field(default=())

    def all_requirements(self) -> list[str]:
        return sorted({"REQ-CBOR-REJECT", *self.requirements})


def _h(text: str) -> bytes:
    return bytes.fromhex(text)


# Digests of other fixtures (their ``address`` without the prefix), written out so the
# definitions stay independent of the encoder; tests/test_conformance_fixtures.py checks
# that each equals the digest of the vector it names.
D_BLOB_HELLO = _h("4321fae3f39665682914de5dec718fd33c3be477b162546057f7b321e961dfd3")
D_CHUNK_HELLO_0 = _h("955ddfbf1efade57480fbf6019f3ab768198a04a85e5bae4cf2d1ee04f03e18b")
D_CHUNK_HELLO_1 = _h("e0d0e912621d9561574b8ff4e3779fc18ecad411cca28859a5c94250d3fe413e")
D_TREE_HELLO = _h("62efe2b846b8f049e814bf20396e255d1545cc2cd14ac7ca2b07d8d6423bb5f4")
D_COMMIT_ROOT = _h("10ef39de1e570c782214d0675caa59bedbb515c65df22055db5542ba1074869d")
D_COMMIT_SECOND = _h("f65406dc152b9af1057de96f4e9bdf475f48367c5298fa128b788387e39bee50")
D_BLOB_BINARY = _h("4a495ba42461748eca8fdad618f976aa726cc2903de9fcb40735a786ac1c196b")
D_BLOB_EMPTY = _h("af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262")

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_TREE = 0o040000

OBJECT_FIXTURES: tuple[ObjectFixture, ...] = (
    ObjectFixture("blob_hello", "blob", "a small text file", b"hello tovio\n",
                  requirements=("REQ-OBJ-RAW",)),
    ObjectFixture("blob_empty", "blob", "the empty file", b"",
                  requirements=("REQ-OBJ-RAW",)),
    ObjectFixture("blob_binary", "blob", "every byte value 0x00..0xff once, in order",
                  bytes(range(256)), requirements=("REQ-OBJ-RAW",)),
    ObjectFixture("chunk_hello_0", "chunk", "first chunk of blob_hello: 'hello '",
                  b"hello ", requirements=("REQ-OBJ-RAW",)),
    ObjectFixture("chunk_hello_1", "chunk", "second chunk of blob_hello: 'tovio\\n'",
                  b"tovio\n", requirements=("REQ-OBJ-RAW",)),
    ObjectFixture("chunk_manifest_hello", "chunk-manifest",
                  "blob_hello as two chunks: [ref, size] pairs in content order",
                  {"size": 12, "chunks": [[D_CHUNK_HELLO_0, 6], [D_CHUNK_HELLO_1, 6]]},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-REF")),
    ObjectFixture("chunk_manifest_empty", "chunk-manifest", "zero chunks, zero bytes",
                  {"size": 0, "chunks": []}, requirements=("REQ-OBJ-ENVELOPE",)),
    ObjectFixture("tree_empty", "tree", "a tree without entries", {"entries": []},
                  requirements=("REQ-OBJ-ENVELOPE",)),
    ObjectFixture("tree_hello", "tree", "one file entry referencing blob_hello",
                  {"entries": [{"name": "hello.txt", "mode": MODE_FILE, "ref": D_BLOB_HELLO}]},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-REF")),
    ObjectFixture("tree_utf8_order", "tree",
                  "entries sorted by UTF-8 bytes: uppercase before lowercase, 'é' (c3 a9) "
                  "after 'z', a subtree and an executable",
                  {"entries": [
                      {"name": "README", "mode": MODE_FILE, "ref": D_BLOB_EMPTY},
                      {"name": "bin", "mode": MODE_EXEC, "ref": D_BLOB_BINARY},
                      {"name": "docs", "mode": MODE_TREE, "ref": D_TREE_HELLO},
                      {"name": "hello.txt", "mode": MODE_FILE, "ref": D_BLOB_HELLO},
                      {"name": "z", "mode": MODE_FILE, "ref": D_BLOB_EMPTY},
                      {"name": "\u00e9t\u00e9.txt", "mode": MODE_FILE, "ref": D_BLOB_HELLO},
                  ]},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-REF", "REQ-OBJ-TREE-ORDER")),
    ObjectFixture("commit_root", "commit", "a root commit of tree_hello (no parents)",
                  {"tree": D_TREE_HELLO, "parents": [],
                   "author": "Ada Lovelace <ada@example.org>", "time": 1767225600000,
                   "message": "initial import\n"},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-REF", "REQ-OBJ-KEY-ORDER")),
    ObjectFixture("commit_second", "commit",
                  "one parent (commit_root), a timestamp before the epoch (negative int)",
                  {"tree": D_TREE_HELLO, "parents": [D_COMMIT_ROOT],
                   "author": "Grace Hopper <grace@example.org>", "time": -86400000,
                   "message": "backdated\n\nbody with a blank line\n"},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-REF")),
    ObjectFixture("commit_merge", "commit",
                  "two parents in order, non-ASCII author and message, 64-bit time",
                  {"tree": D_TREE_HELLO, "parents": [D_COMMIT_SECOND, D_COMMIT_ROOT],
                   "author": "Ren\u00e9 Descartes <rene@example.org>",
                   "time": 4102444800000, "message": "merge: cogito \u2192 sum\n"},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-REF")),
    ObjectFixture("conflict_modify", "conflict", "both sides changed a file",
                  {"path": "hello.txt", "base": D_BLOB_EMPTY, "ours": D_BLOB_HELLO,
                   "theirs": D_BLOB_BINARY},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-REF")),
    ObjectFixture("conflict_add_add", "conflict", "both sides added a file: base is null",
                  {"path": "docs/new.txt", "base": None, "ours": D_BLOB_HELLO,
                   "theirs": D_BLOB_EMPTY},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-NULL")),
    ObjectFixture("conflict_modify_delete", "conflict",
                  "ours changed, theirs deleted: theirs is null",
                  {"path": "\u00e9t\u00e9.txt", "base": D_BLOB_HELLO, "ours": D_BLOB_BINARY,
                   "theirs": None},
                  requirements=("REQ-OBJ-ENVELOPE", "REQ-OBJ-NULL")),
)

_FIRST = ("REQ-CBOR-FIRST-VIOLATION",)

NEGATIVE_FIXTURES: tuple[NegativeFixture, ...] = (
    # empty_input has exactly one possible input, so this class has one case.
    NegativeFixture("empty_input", "empty_input", "zero bytes", "", None),
    NegativeFixture("non_shortest_integer_value", "non_shortest_integer",
                    "{\"t\": 23, \"v\": 1} with 23 in two bytes (18 17)",
                    "a261741817617601", "a2617417617601", _FIRST),
    NegativeFixture("non_shortest_integer_text_length", "non_shortest_integer",
                    "{\"t\": \"a\"} with the text length 1 in two bytes (78 01)",
                    "a16174780161", "a161746161"),
    NegativeFixture("non_shortest_integer_map_count", "non_shortest_integer",
                    "{\"t\": 1} with the map count 1 in two bytes (b8 01)",
                    "b801617401", "a1617401"),
    NegativeFixture("non_shortest_integer_tag", "non_shortest_integer",
                    "tag 1 (epoch time) 0 with the tag number in two bytes (d8 01)",
                    "d80100", "c100"),
    NegativeFixture("indefinite_length_map", "indefinite_length",
                    "{\"t\": 1, \"v\": 15} as an indefinite-length map (bf ... ff)",
                    "bf61740161760fff", "a261740161760f"),
    NegativeFixture("indefinite_length_bytes", "indefinite_length",
                    "an indefinite-length byte string of one chunk (5f 41 00 ff)",
                    "5f4100ff", "4100"),
    NegativeFixture("indefinite_length_stray_break", "indefinite_length",
                    "{\"t\": <break>}: a stray break byte where the value belongs",
                    "a16174ff", "a1617401"),
    NegativeFixture("unsorted_map_keys_text", "unsorted_map_keys",
                    "{\"v\": 1, \"t\": 1}: \"v\" before \"t\"",
                    "a2617601617401", "a2617401617601"),
    NegativeFixture("unsorted_map_keys_length_first", "unsorted_map_keys",
                    "{-1: 0, 100: 0}: length-first (RFC 7049) order, but 18 64 sorts "
                    "before 20 bytewise",
                    "a22000186400", "a21864002000", ("REQ-OBJ-KEY-ORDER",)),
    NegativeFixture("unsorted_map_keys_nested", "unsorted_map_keys",
                    "[{\"b\": 1, \"a\": 2}]: unsorted keys inside an array",
                    "81a2616201616102", "81a2616102616201"),
    NegativeFixture("duplicate_map_key_text", "duplicate_map_key",
                    "{\"t\": 1, \"t\": 2}", "a2617401617402", "a2617401617602"),
    NegativeFixture("duplicate_map_key_int", "duplicate_map_key",
                    "{1: 0, 1: 0}: integer keys", "a201000100", "a201000200"),
    NegativeFixture("invalid_utf8_value", "invalid_utf8",
                    "{\"t\": c3 28}: a lead byte followed by a non-continuation byte",
                    "a1617462c328", "a1617462c3a9"),
    NegativeFixture("invalid_utf8_key", "invalid_utf8",
                    "{c3 28: 1}: the invalid text is a map key", "a162c32801", "a162c3a901"),
    NegativeFixture("invalid_utf8_surrogate", "invalid_utf8",
                    "the UTF-8 form of the lone surrogate U+D800 (ed a0 80)",
                    "63eda080", "63e0a080"),
    NegativeFixture("invalid_utf8_overlong", "invalid_utf8",
                    "an overlong two-byte encoding of '/' (c0 af)", "62c0af", "622f2f"),
    NegativeFixture("trailing_data_map", "trailing_data",
                    "{\"t\": 1} followed by one more byte", "a161740100", "a1617401"),
    NegativeFixture("trailing_data_second_item", "trailing_data",
                    "two top-level items: 0 0", "0000", "00"),
    NegativeFixture("float_outside_profile_single", "float_outside_profile",
                    "{\"t\": 1.0} with 1.0 as binary32 (fa 3f800000); shortest is f9 3c00",
                    "a16174fa3f800000", "a16174f93c00"),
    NegativeFixture("float_outside_profile_double", "float_outside_profile",
                    "1.0 as binary64 (fb 3ff0...)", "fb3ff0000000000000", "f93c00"),
    NegativeFixture("float_outside_profile_nan", "float_outside_profile",
                    "the plain NaN as binary64 (fb 7ff8...); shortest is f9 7e00",
                    "fb7ff8000000000000", "f97e00"),
    NegativeFixture("truncated_text", "truncated",
                    "{\"t\": 1, \"v\": \"blob\"} cut inside the 4-byte text",
                    "a2617401617664626c6f", "a2617401617664626c6f62"),
    NegativeFixture("truncated_head", "truncated",
                    "a uint16 head (19) with one of its two argument bytes", "1901", "190100"),
    NegativeFixture("truncated_huge_length", "truncated",
                    "a byte string claiming 2^63 bytes, none present",
                    "5b8000000000000000", None, ("REQ-CBOR-NO-PREALLOC",)),
)
