"""CIDs: structure, multicodec names, multihashes and the multibase text forms.

Pure Python, shared by both CBOR backends through ``canonkit.cbor.Link`` (and by DAG-JSON).
A binary CID here never carries the ``0x00`` multibase prefix of DAG-CBOR tag 42:

- CIDv0 is the 34-byte sha2-256 multihash ``12 20 <32 bytes>`` (codec dag-pb implied);
- CIDv1 is ``varint(1) varint(codec) varint(hash code) varint(digest length) digest``.

Varints are unsigned LEB128, minimal, at most 9 bytes (the multiformats rule). Names come
from the multicodec table (``_multicodec_table``), loaded on first use only.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from blake3 import blake3 as Blake3

if TYPE_CHECKING:
    from multiformats import CID

__all__ = [
    "BLOCK_PREFIXES",
    "FIXED_LENGTH",
    "HASHES",
    "CIDParts",
    "b32decode",
    "b64decode_unpadded",
    "b64encode_unpadded",
    "b32encode",
    "b58decode",
    "b58encode",
    "cid_from_string",
    "cid_parts",
    "cid_problem",
    "cid_to_string",
    "code_name",
    "codec_code",
    "hash_spec",
    "make_cid",
    "read_varint",
    "require_multiformats",
    "write_varint",
]

CIDV0_CODEC = 0x70  # dag-pb, implied by a CIDv0
SHA2_256 = 0x12


# --- varints -------------------------------------------------------------------------

def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """One unsigned LEB128 varint at ``pos``: (value, end). Minimal, at most 9 bytes."""
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


def write_varint(value: int) -> bytes:
    """The minimal unsigned LEB128 encoding of ``0 <= value < 2**63``."""
    if not 0 <= value < 1 << 63:
        raise ValueError(f"varint value out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# --- structure -----------------------------------------------------------------------

class CIDParts(NamedTuple):
    """The fields of a binary CID; ``multihash`` is ``cid[mh_start:]``."""

    version: int
    codec: int
    hash_code: int
    mh_start: int
    digest_start: int


def cid_parts(cid: bytes) -> CIDParts:
    """The fields of a CID that ``cid_problem`` accepted."""
    if len(cid) == 34 and cid[0] == SHA2_256 and cid[1] == 0x20:
        return CIDParts(0, CIDV0_CODEC, SHA2_256, 0, 2)
    _version, pos = read_varint(cid, 0)
    codec, mh_start = read_varint(cid, pos)
    hash_code, pos = read_varint(cid, mh_start)
    _length, digest_start = read_varint(cid, pos)
    return CIDParts(1, codec, hash_code, mh_start, digest_start)


def cid_problem(cid: bytes) -> str | None:
    """Why ``cid`` (binary CID, no 0x00 multibase prefix) is not a CID, or None.

    CIDv0: the 34-byte sha2-256 multihash ``12 20 <32 bytes>``. CIDv1: varint version 1,
    varint codec, varint multihash code, varint digest length, then exactly that many
    digest bytes. Codecs and hash functions are not checked against a table."""
    n = len(cid)
    if n == 34 and cid[0] == SHA2_256 and cid[1] == 0x20:
        return None
    # the common CIDv1: codec, hash code and digest length one varint byte each (a
    # one-byte varint is always minimal); anything else takes the general walk below
    if (n >= 4 and cid[0] == 1 and cid[1] < 0x80 and cid[2] < 0x80 and cid[3] < 0x80
            and n - 4 == cid[3]):
        return None
    return _walk_problem(cid)


def _walk_problem(cid: bytes) -> str | None:
    """``cid_problem`` of a CID that is not a CIDv0, read varint by varint."""
    try:
        version, pos = read_varint(cid, 0)
        if version != 1:
            return f"CID version {version} (only CIDv0 sha2-256 and CIDv1 are defined)"
        _codec, pos = read_varint(cid, pos)
        _hash_code, pos = read_varint(cid, pos)
        digest_len, pos = read_varint(cid, pos)
    except ValueError as exc:
        return f"bad CID: {exc}"
    if len(cid) - pos != digest_len:
        return f"multihash digest length {digest_len} but {len(cid) - pos} bytes follow"
    return None


# --- multicodec names ----------------------------------------------------------------

_BY_NAME: dict[str, tuple[int, str]] = {}
_CODEC_TAGS = ("ipld", "serialization")  # what a CID's content codec may be


def _table() -> dict[int, tuple[str, str]]:
    from ._multicodec_table import TABLE

    if not _BY_NAME:
        _BY_NAME.update((name, (code, tag)) for code, (name, tag) in TABLE.items())
    return TABLE


def code_name(code: int) -> str:
    """The multicodec table's name for ``code``, or ``0x..`` hex when it has none."""
    entry = _table().get(code)
    return entry[0] if entry is not None else f"0x{code:x}"


def codec_code(codec: str | int) -> int:
    """The code of a content codec given by table name (tag ipld or serialization) or by
    code (any unsigned integer below 2**63, taken as it is)."""
    from ..errors import UnknownMulticodecError

    if isinstance(codec, int) and not isinstance(codec, bool):
        if 0 <= codec < 1 << 63:
            return codec
        raise UnknownMulticodecError(f"codec code out of range: {codec}", detail=codec)
    if not isinstance(codec, str):
        raise UnknownMulticodecError(
            f"codec must be a multicodec name or code, not {type(codec).__name__}",
            detail=codec)
    _table()
    entry = _BY_NAME.get(codec)
    if entry is None or entry[1] not in _CODEC_TAGS:
        what = "not a content codec" if entry is not None else "not in the multicodec table"
        raise UnknownMulticodecError(f"codec {codec!r}: {what}", detail=codec)
    return entry[0]


# --- multihashes ---------------------------------------------------------------------

Hasher = Callable[[Any], bytes]


def _hashlib(name: str) -> Hasher:
    constructor = getattr(hashlib, name)  # hashlib.sha256 etc.: cheaper than hashlib.new
    return lambda data: constructor(data).digest()


def _blake2(size: int, small: bool = False) -> Hasher:
    if small:
        return lambda data: hashlib.blake2s(data, digest_size=size).digest()
    return lambda data: hashlib.blake2b(data, digest_size=size).digest()


def _blake3(data: Any) -> bytes:
    return bytes(Blake3(data).digest())


def _identity(data: Any) -> bytes:
    return bytes(memoryview(data).cast("B"))


# name -> (multihash code, digest function); the multihash digest is the function's
# full output (BLAKE3 at its default 32 bytes, as the multicodec table says)
HASHES: dict[str, tuple[int, Hasher]] = {
    "identity": (0x00, _identity),
    "sha2-256": (0x12, _hashlib("sha256")),
    "sha2-512": (0x13, _hashlib("sha512")),
    "sha2-384": (0x20, _hashlib("sha384")),
    "sha2-224": (0x1013, _hashlib("sha224")),
    "sha3-512": (0x14, _hashlib("sha3_512")),
    "sha3-384": (0x15, _hashlib("sha3_384")),
    "sha3-256": (0x16, _hashlib("sha3_256")),
    "sha3-224": (0x17, _hashlib("sha3_224")),
    "blake2b-256": (0xB220, _blake2(32)),
    "blake2b-512": (0xB240, _blake2(64)),
    "blake2s-256": (0xB260, _blake2(32, small=True)),
    "blake3": (0x1E, _blake3),
}


# The hashes whose digest has one length, by a constructor of hashlib's interface
# (``constructor(data).digest()``): ``Link.for_block``'s fast path calls it directly.
FIXED_LENGTH: dict[str, Callable[[Any], Any]] = {
    "sha2-256": hashlib.sha256, "sha2-512": hashlib.sha512, "sha2-384": hashlib.sha384,
    "sha2-224": hashlib.sha224, "sha3-512": hashlib.sha3_512, "sha3-384": hashlib.sha3_384,
    "sha3-256": hashlib.sha3_256, "sha3-224": hashlib.sha3_224,
    "blake2b-256": functools.partial(hashlib.blake2b, digest_size=32),
    "blake2b-512": hashlib.blake2b,
    "blake2s-256": hashlib.blake2s,
    "blake3": Blake3,
}

# (codec name, hash name, version) -> (the CID's bytes before the digest, the hash's
# FIXED_LENGTH constructor), written by ``make_cid`` once it has built (and so checked)
# such a CID: later blocks with the same arguments need one hash and one concatenation.
# Only exact str names and int versions are keys (``True`` is not the codec 1).
BLOCK_PREFIXES: dict[tuple[str, str, int], tuple[bytes, Callable[[Any], Any]]] = {}


def hash_spec(name: str) -> tuple[int, Hasher]:
    """(code, digest function) of a hash function canonkit computes, by table name."""
    from ..errors import UnknownMulticodecError, UnsupportedHashError

    spec = HASHES.get(name) if isinstance(name, str) else None
    if spec is not None:
        return spec
    _table()
    entry = _BY_NAME.get(name) if isinstance(name, str) else None
    if entry is None or entry[1] != "multihash":
        raise UnknownMulticodecError(f"hash {name!r} is not a multihash in the multicodec "
                                     "table", detail=name)
    raise UnsupportedHashError(
        f"canonkit does not compute {name!r}; it computes " + ", ".join(HASHES), detail=name)


def make_cid(data: Any, codec: str | int, hash_name: str, version: int) -> bytes:
    """The binary CID of the block ``data`` (any buffer)."""
    from ..errors import UnknownMulticodecError

    code = codec_code(codec)
    hash_code, digest_of = hash_spec(hash_name)
    digest = digest_of(data)
    multihash = write_varint(hash_code) + write_varint(len(digest)) + digest
    cid = None
    if version == 1:
        cid = b"\x01" + write_varint(code) + multihash
    elif version == 0 and code == CIDV0_CODEC and hash_code == SHA2_256:
        cid = multihash
    if cid is not None:
        if (type(codec) is str and type(hash_name) is str and type(version) is int
                and hash_name in FIXED_LENGTH):
            BLOCK_PREFIXES[(codec, hash_name, version)] = (cid[:-len(digest)],
                                                           FIXED_LENGTH[hash_name])
        return cid
    if version == 0:
        raise UnknownMulticodecError(
            "a CIDv0 is always dag-pb with sha2-256; use version=1", detail=(codec, hash_name))
    raise UnknownMulticodecError(f"CID version must be 0 or 1, got {version!r}",
                                 detail=version)


# --- multibase text forms ------------------------------------------------------------

_B32_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b32encode(data: bytes) -> str:
    """RFC 4648 base32, lowercase, no padding."""
    bits = int.from_bytes(data, "big") << ((5 - len(data) * 8 % 5) % 5)
    count = (len(data) * 8 + 4) // 5
    return "".join(_B32_ALPHABET[(bits >> (5 * (count - 1 - i))) & 31] for i in range(count))


def _digits(text: str, alphabet: str, base: str) -> Iterator[int]:
    for ch in text:
        index = alphabet.find(ch)
        if index < 0:
            raise ValueError(f"not a {base} character: {ch!r}")
        yield index


def b32decode(text: str) -> bytes:
    """Inverse of ``b32encode``; refuses other characters and non-zero padding bits."""
    bits = 0
    for digit in _digits(text, _B32_ALPHABET, "base32"):
        bits = bits << 5 | digit
    extra = len(text) * 5 % 8
    if extra >= 5:  # 1, 3 or 6 characters left over cannot come from whole bytes
        raise ValueError("impossible base32 length")
    if bits & ((1 << extra) - 1):
        raise ValueError("non-zero padding bits in base32")
    return (bits >> extra).to_bytes(len(text) * 5 // 8, "big")


def b58encode(data: bytes) -> str:
    """Bitcoin base58 (leading zero bytes as ``1``)."""
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, digit = divmod(number, 58)
        out = _B58_ALPHABET[digit] + out
    return "1" * (len(data) - len(data.lstrip(b"\0"))) + out


def b58decode(text: str) -> bytes:
    """Inverse of ``b58encode``."""
    number = 0
    for digit in _digits(text, _B58_ALPHABET, "base58"):
        number = number * 58 + digit
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return b"\0" * zeros + body


_BASE64 = re.compile(r"[A-Za-z0-9+/]*")


def b64encode_unpadded(data: Any) -> str:
    """RFC 4648 §4 base64 (standard alphabet) without padding: DAG-JSON's bytes form."""
    return base64.b64encode(data).rstrip(b"=").decode("ascii")


def b64decode_unpadded(text: str) -> bytes:
    """Inverse of ``b64encode_unpadded``; refuses padding, other characters, impossible
    lengths and non-zero unused bits (so every byte string has one spelling)."""
    if len(text) % 4 == 1 or not _BASE64.fullmatch(text):
        raise ValueError("not unpadded standard base64")
    data = base64.b64decode(text + "=" * (-len(text) % 4))
    if b64encode_unpadded(data) != text:
        raise ValueError("base64 with non-zero unused bits")
    return data


def cid_to_string(cid: bytes) -> str:
    """The canonical text form: base58btc ``Qm...`` for CIDv0, base32 ``b...`` for CIDv1."""
    if len(cid) == 34 and cid[0] == SHA2_256:
        return b58encode(cid)
    return "b" + b32encode(cid)


def cid_from_string(text: str) -> bytes:
    """The binary CID of ``Qm...`` (CIDv0), ``b``/``B`` (base32) or ``z`` (base58btc)
    text; raises ValueError."""
    if len(text) == 46 and text.startswith("Qm"):
        return b58decode(text)
    if text[:1] == "b":
        return b32decode(text[1:])
    if text[:1] == "B":
        return b32decode(text[1:].lower())
    if text[:1] == "z":
        return b58decode(text[1:])
    raise ValueError("unknown multibase prefix (expected Qm, b, B or z)")


# --- multiformats interop ------------------------------------------------------------

def require_multiformats() -> type[CID]:
    """The ``multiformats.CID`` class, or MissingDependencyError naming the extra."""
    try:
        from multiformats import CID
    except ImportError:
        from ..errors import MissingDependencyError

        raise MissingDependencyError(
            "converting to multiformats.CID needs the optional package 'multiformats': "
            "pip install 'canonkit[multiformats]'", detail="multiformats") from None
    return CID
