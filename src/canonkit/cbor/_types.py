"""Value types shared by both CBOR backends (pure Python, never twinned).

``Tag`` and ``Simple`` carry CBOR items without a native Python mapping; ``UNDEFINED`` is
simple value 23; ``FrozenDict`` is what a map used as a map key decodes to (hashable,
immutable, encodes back to the same bytes); ``Link`` is a DAG-CBOR tag-42 CID.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from . import _cid
from ._cid import cid_problem

if TYPE_CHECKING:
    from multiformats import CID

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
# The compiled encoder recurses on the C stack, one or two small frames per level: this
# bound keeps the deepest encode (and the second walk that locates a failure) within a
# default 8 MiB stack, sanitizer builds included; on a smaller stack the encoder stops
# with EncodeDepthExceededError (ext/cbor/cbor_stack.h). Decode is iterative: no bound.
MAX_ENCODE_DEPTH = 4096


def is_tag_number(number: object) -> bool:
    """A valid tag number: an int (not a bool) in 0..2**64-1."""
    return isinstance(number, int) and not isinstance(number, bool) and 0 <= number < 2**64


def is_simple_value(value: object) -> bool:
    """A simple value ``Simple`` may hold: an int (not a bool) in 0..19 or 32..255."""
    return isinstance(value, int) and not isinstance(value, bool) and (
        0 <= value <= 19 or 32 <= value <= 255)


class _Frozen:
    """Refuses attribute assignment and deletion: the encoder writes what a value holds,
    so a value must not change behind its hash (set attributes with object.__setattr__
    in ``__init__``)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")


class Tag(_Frozen):
    """A tagged data item ``Tag(number, value)`` with no native Python mapping."""

    __slots__ = ("number", "value")

    number: int
    value: Any

    def __init__(self, number: int, value: Any) -> None:
        if not is_tag_number(number):
            raise ValueError(f"tag number must be an int in 0..2**64-1, got {number!r}")
        object.__setattr__(self, "number", number)
        object.__setattr__(self, "value", value)

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


class Simple(_Frozen):
    """A simple value other than false/true/null/undefined: 0–19 or 32–255."""

    __slots__ = ("value",)

    value: int

    def __init__(self, value: int) -> None:
        if not is_simple_value(value):
            raise ValueError(f"simple value must be in 0..19 or 32..255, got {value!r}")
        object.__setattr__(self, "value", value)

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


class FrozenDict(_Frozen, Mapping[Any, Any]):
    """An immutable, hashable mapping: what a CBOR map used as a map key decodes to."""

    __slots__ = ("_d", "_hash")

    _d: dict[Any, Any]
    _hash: int | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_d", dict(*args, **kwargs))
        object.__setattr__(self, "_hash", None)

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


# Link.for_block builds a Link around a CID it made itself without revalidating it
_new_object = object.__new__
# for_block's default arguments, compared by identity: the defaults themselves, so a call
# that leaves them out skips the type checks and the key tuple
_DAG_CBOR = "dag-cbor"
_SHA2_256 = "sha2-256"
_ONE = 1  # CPython's one cached 1: ``version is _ONE`` holds for every int 1
_DEFAULT_BLOCK = (_DAG_CBOR, _SHA2_256, 1)
# BLOCK_PREFIXES[_DEFAULT_BLOCK] once make_cid has made such a CID (read without hashing
# the key tuple: for_block's common call)
_default_block: tuple[bytes, Any] | None = None


def _learn_default_block() -> None:
    global _default_block
    if _default_block is None:
        _default_block = _cid.BLOCK_PREFIXES.get(_DEFAULT_BLOCK)


class Link:
    """A DAG-CBOR link (tag 42): a CID. ``cid_bytes`` is the binary CID *without* the
    0x00 multibase prefix that tag 42 content carries. Never inferred from plain ``bytes``.

    The constructor validates the CID structure (CIDv0 or CIDv1, see ``cid_problem``) and
    raises ``InvalidLinkError`` otherwise. ``str(link)`` is the canonical multibase string
    (base32 ``b...`` for CIDv1, base58btc ``Qm...`` for CIDv0); ``Link.from_string``
    parses it back (also ``B...`` upper base32 and ``z...`` base58btc).
    ``Link.for_block(data)`` is the CID of an encoded block; ``codec``, ``hash_function``,
    ``multihash`` and ``digest`` take a CID apart (names from the multicodec table).
    """

    __slots__ = ("cid_bytes",)

    cid_bytes: bytes

    def __init__(self, cid_bytes: bytes | bytearray | memoryview) -> None:
        cid = cid_bytes if type(cid_bytes) is bytes else bytes(cid_bytes)
        problem = cid_problem(cid)
        if problem is not None:
            from ..errors import InvalidLinkError

            raise InvalidLinkError(problem, detail=cid.hex())
        _set_cid(self, cid)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Link is immutable")

    @classmethod
    def for_block(cls, data: Any, codec: str | int = _DAG_CBOR, hash: str = _SHA2_256,
                  *, version: int = 1) -> Link:
        """The CID of the encoded block ``data`` (any buffer): the multihash of its bytes
        under ``hash`` (``"sha2-256"``, ``"blake3"``, ... — see ``canonkit.cbor._cid.HASHES``)
        tagged with the content ``codec`` (a multicodec name such as ``"dag-cbor"`` or
        ``"raw"``, or a code). ``version=0`` makes a CIDv0 (dag-pb with sha2-256 only).
        Raises ``UnknownMulticodecError`` or ``UnsupportedHashError``."""
        if codec is _DAG_CBOR and hash is _SHA2_256 and version is _ONE and cls is Link:
            known = _default_block  # the defaults: the common call, once they were seen
        elif cls is Link and type(codec) is str and type(hash) is str and type(version) is int:
            known = _cid.BLOCK_PREFIXES.get((codec, hash, version))
        else:
            known = None
        if known is not None:  # arguments seen before: the CID is valid by construction
            link = _new_object(Link)
            _set_cid(link, known[0] + known[1](data).digest())
            return link
        link = cls(_cid.make_cid(data, codec, hash, version))
        _learn_default_block()
        return link

    @classmethod
    def from_string(cls, text: str) -> Link:
        """Parse a multibase CID string: ``Qm...`` (CIDv0), ``b``/``B`` (base32),
        ``z`` (base58btc). Raises ``InvalidLinkError``."""
        from ..errors import InvalidLinkError

        try:
            cid = _cid.cid_from_string(text)
        except ValueError as exc:
            raise InvalidLinkError(f"cannot parse CID string {text!r}: {exc}",
                                   detail=text) from None
        return cls(cid)

    @classmethod
    def from_multiformats(cls, cid: CID) -> Link:
        """The link for a ``multiformats.CID`` (same CID bytes)."""
        return cls(bytes(cid))

    def to_multiformats(self) -> CID:
        """This CID as a ``multiformats.CID`` (base32 for CIDv1, as ``str(link)``).
        Needs the optional ``multiformats`` package (extra ``canonkit[multiformats]``);
        raises ``MissingDependencyError`` without it."""
        cid = _cid.require_multiformats().decode(self.cid_bytes)
        return cid if self.version == 0 else cid.set(base="base32")

    @property
    def version(self) -> int:
        """0 for a CIDv0, 1 for a CIDv1."""
        return 0 if self.cid_bytes[0] == 0x12 else 1

    @property
    def codec_code(self) -> int:
        """The content codec's multicodec code (0x70 dag-pb for a CIDv0)."""
        return _cid.cid_parts(self.cid_bytes).codec

    @property
    def codec(self) -> str:
        """The content codec's multicodec name (``"dag-cbor"``, ``"raw"``, ...), or the
        code as ``"0x..."`` when the table has no name for it."""
        return _cid.code_name(self.codec_code)

    @property
    def hash_code(self) -> int:
        """The multihash function code (0x12 for sha2-256)."""
        return _cid.cid_parts(self.cid_bytes).hash_code

    @property
    def hash_function(self) -> str:
        """The multihash function's multicodec name (``"sha2-256"``, ``"blake3"``, ...),
        or the code as ``"0x..."`` when the table has no name for it."""
        return _cid.code_name(self.hash_code)

    @property
    def multihash(self) -> bytes:
        """The multihash: ``varint(hash code) varint(length) digest``."""
        return self.cid_bytes[_cid.cid_parts(self.cid_bytes).mh_start:]

    @property
    def digest(self) -> bytes:
        """The hash digest alone."""
        return self.cid_bytes[_cid.cid_parts(self.cid_bytes).digest_start:]

    def __str__(self) -> str:
        return _cid.cid_to_string(self.cid_bytes)

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


# the slot's own setter: what object.__setattr__ ends at, without its name lookup
_set_cid = Link.__dict__["cid_bytes"].__set__
