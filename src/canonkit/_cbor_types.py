"""Value types shared by both CBOR backends (pure Python, never twinned).

``Tag`` and ``Simple`` carry CBOR items without a native Python mapping; ``UNDEFINED`` is
simple value 23; ``FrozenDict`` is what a map used as a map key decodes to (hashable,
immutable, encodes back to the same bytes); ``Link`` is a DAG-CBOR tag-42 CID.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MAX_ENCODE_DEPTH",
    "PROFILES",
    "UNDEFINED",
    "FrozenDict",
    "Link",
    "Simple",
    "Tag",
    "UndefinedType",
    "cid_problem",
    "is_simple_value",
    "is_tag_number",
]

PROFILES = ("core", "dcbor", "dag-cbor")
DEFAULT_MAX_DEPTH = 512  # every real document fits; configurable per call
# The compiled encoder recurses on the C stack, one small frame per level: this bound
# keeps the deepest encode within a few MiB of stack (decode is iterative: no bound).
MAX_ENCODE_DEPTH = 10_000


def is_tag_number(number: object) -> bool:
    """A valid tag number: an int (not a bool) in 0..2**64-1."""
    return isinstance(number, int) and not isinstance(number, bool) and 0 <= number < 2**64


def is_simple_value(value: object) -> bool:
    """A simple value ``Simple`` may hold: an int (not a bool) in 0..19 or 32..255."""
    return isinstance(value, int) and not isinstance(value, bool) and (
        0 <= value <= 19 or 32 <= value <= 255)


class Tag:
    """A tagged data item ``Tag(number, value)`` with no native Python mapping."""

    __slots__ = ("number", "value")

    number: int
    value: Any

    def __init__(self, number: int, value: Any) -> None:
        if not is_tag_number(number):
            raise ValueError(f"tag number must be an int in 0..2**64-1, got {number!r}")
        object.__setattr__(self, "number", number)
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Tag is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Tag is immutable")

    def __reduce__(self) -> Any:
        return (Tag, (self.number, self.value))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tag):
            return NotImplemented
        return self.number == other.number and self.value == other.value

    def __hash__(self) -> int:
        return hash((Tag, self.number, self.value))

    def __repr__(self) -> str:
        return f"Tag({self.number}, {self.value!r})"


class Simple:
    """A simple value other than false/true/null/undefined: 0–19 or 32–255."""

    __slots__ = ("value",)

    value: int

    def __init__(self, value: int) -> None:
        if not is_simple_value(value):
            raise ValueError(f"simple value must be in 0..19 or 32..255, got {value!r}")
        object.__setattr__(self, "value", value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Simple is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Simple is immutable")

    def __reduce__(self) -> Any:
        return (Simple, (self.value,))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Simple):
            return NotImplemented
        return self.value == other.value

    def __hash__(self) -> int:
        return hash((Simple, self.value))

    def __repr__(self) -> str:
        return f"Simple({self.value})"


class UndefinedType:
    """The CBOR ``undefined`` simple value (23); use the singleton ``UNDEFINED``."""

    __slots__ = ()
    _instance: UndefinedType | None = None

    def __new__(cls) -> UndefinedType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED = UndefinedType()


class FrozenDict(Mapping[Any, Any]):
    """An immutable, hashable mapping: what a CBOR map used as a map key decodes to."""

    __slots__ = ("_d", "_hash")

    _d: dict[Any, Any]
    _hash: int | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_d", dict(*args, **kwargs))
        object.__setattr__(self, "_hash", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenDict is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("FrozenDict is immutable")

    def __reduce__(self) -> Any:
        return (FrozenDict, (self._d,))

    def __getitem__(self, key: Any) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(frozenset(self._d.items())))
        return self._hash  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._d) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._d!r})"


_B32_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """One unsigned LEB128 varint (multiformats rules: minimal, at most 9 bytes)."""
    value = 0
    for i in range(9):
        if pos + i >= len(data):
            raise ValueError("varint runs past the end")
        byte = data[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if byte == 0 and i > 0:
                raise ValueError("varint is not minimally encoded")
            return value, pos + i + 1
    raise ValueError("varint longer than 9 bytes")


def cid_problem(cid: bytes) -> str | None:
    """Why ``cid`` (binary CID, no 0x00 multibase prefix) is not a CID, or None.

    CIDv0: the 34-byte sha2-256 multihash ``12 20 <32 bytes>``. CIDv1: varint version 1,
    varint codec, varint multihash code, varint digest length, then exactly that many
    digest bytes. Codecs and hash functions are not checked against a table."""
    if len(cid) == 34 and cid[0] == 0x12 and cid[1] == 0x20:
        return None
    try:
        version, pos = _read_varint(cid, 0)
        if version != 1:
            return f"CID version {version} (only CIDv0 sha2-256 and CIDv1 are defined)"
        _codec, pos = _read_varint(cid, pos)
        _hash_code, pos = _read_varint(cid, pos)
        digest_len, pos = _read_varint(cid, pos)
    except ValueError as exc:
        return f"bad CID: {exc}"
    if len(cid) - pos != digest_len:
        return f"multihash digest length {digest_len} but {len(cid) - pos} bytes follow"
    return None


def _b32encode(data: bytes) -> str:
    bits = int.from_bytes(data, "big") << ((5 - len(data) * 8 % 5) % 5)
    count = (len(data) * 8 + 4) // 5
    return "".join(_B32_ALPHABET[(bits >> (5 * (count - 1 - i))) & 31] for i in range(count))


def _b32decode(text: str) -> bytes:
    bits = 0
    for ch in text:
        index = _B32_ALPHABET.find(ch)
        if index < 0:
            raise ValueError(f"not a base32 character: {ch!r}")
        bits = bits << 5 | index
    extra = len(text) * 5 % 8
    if bits & ((1 << extra) - 1):
        raise ValueError("non-zero padding bits in base32")
    return (bits >> extra).to_bytes(len(text) * 5 // 8, "big")


def _b58encode(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = _B58_ALPHABET[digit] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def _b58decode(text: str) -> bytes:
    number = 0
    for ch in text:
        index = _B58_ALPHABET.find(ch)
        if index < 0:
            raise ValueError(f"not a base58 character: {ch!r}")
        number = number * 58 + index
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return b"\0" * zeros + body


class Link:
    """A DAG-CBOR link (tag 42): a CID. ``cid_bytes`` is the binary CID *without* the
    0x00 multibase prefix that tag 42 content carries. Never inferred from plain ``bytes``.

    The constructor validates the CID structure (CIDv0 or CIDv1, see ``cid_problem``) and
    raises ``InvalidLinkError`` otherwise. ``str(link)`` is the canonical multibase string
    (base32 ``b...`` for CIDv1, base58btc ``Qm...`` for CIDv0); ``Link.from_string``
    parses it back (also ``B...`` upper base32 and ``z...`` base58btc).
    """

    __slots__ = ("cid_bytes",)

    cid_bytes: bytes

    def __init__(self, cid_bytes: bytes | bytearray | memoryview) -> None:
        cid = bytes(cid_bytes)
        problem = cid_problem(cid)
        if problem is not None:
            from .errors import InvalidLinkError

            raise InvalidLinkError(problem, detail=cid.hex())
        object.__setattr__(self, "cid_bytes", cid)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Link is immutable")

    @property
    def version(self) -> int:
        """0 for a CIDv0, 1 for a CIDv1."""
        return 0 if self.cid_bytes[0] == 0x12 else 1

    @classmethod
    def from_string(cls, text: str) -> Link:
        """Parse a multibase CID string: ``Qm...`` (CIDv0), ``b``/``B`` (base32),
        ``z`` (base58btc). Raises ``InvalidLinkError``."""
        from .errors import InvalidLinkError

        try:
            if len(text) == 46 and text.startswith("Qm"):
                cid = _b58decode(text)
            elif text[:1] == "b":
                cid = _b32decode(text[1:])
            elif text[:1] == "B":
                cid = _b32decode(text[1:].lower())
            elif text[:1] == "z":
                cid = _b58decode(text[1:])
            else:
                raise ValueError("unknown multibase prefix (expected Qm, b, B or z)")
        except ValueError as exc:
            raise InvalidLinkError(f"cannot parse CID string {text!r}: {exc}",
                                   detail=text) from None
        return cls(cid)

    def __str__(self) -> str:
        if self.version == 0:
            return _b58encode(self.cid_bytes)
        return "b" + _b32encode(self.cid_bytes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Link):
            return NotImplemented
        return self.cid_bytes == other.cid_bytes

    def __hash__(self) -> int:
        return hash((Link, self.cid_bytes))

    def __repr__(self) -> str:
        return f"Link({str(self)!r})"

    def __reduce__(self) -> Any:
        return (Link, (self.cid_bytes,))
