"""Value types shared by both CBOR backends (pure Python, never twinned).

``Tag`` and ``Simple`` carry CBOR items without a native Python mapping; ``UNDEFINED`` is
simple value 23; ``FrozenDict`` is what a map used as a map key decodes to (hashable,
immutable, encodes back to the same bytes); ``Link`` is a DAG-CBOR tag-42 CID.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["DEFAULT_MAX_DEPTH", "PROFILES", "FrozenDict", "Link", "Simple", "Tag",
           "UNDEFINED", "UndefinedType"]

PROFILES = ("core", "dcbor", "dag-cbor")
DEFAULT_MAX_DEPTH = 512  # every real document fits; configurable per call


class Tag:
    """A tagged data item ``Tag(number, value)`` with no native Python mapping."""

    __slots__ = ("number", "value")

    def __init__(self, number: int, value: Any) -> None:
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number < 2**64:
            raise ValueError(f"tag number must be an int in 0..2**64-1, got {number!r}")
        self.number = number
        self.value = value

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

    def __init__(self, value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or not (
            0 <= value <= 19 or 32 <= value <= 255
        ):
            raise ValueError(f"simple value must be in 0..19 or 32..255, got {value!r}")
        self.value = value

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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._d = dict(*args, **kwargs)
        self._hash: int | None = None

    def __getitem__(self, key: Any) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._d.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping):
            return dict(self._d) == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._d!r})"


class Link:
    """A DAG-CBOR link (tag 42): a CID, stored as its binary form without the 0x00
    multibase prefix. Never inferred from plain ``bytes``.

    (Validation of the CID structure and the base32 string form are added with the
    dag-cbor profile.)
    """

    __slots__ = ("cid_bytes",)

    def __init__(self, cid_bytes: bytes) -> None:
        self.cid_bytes = bytes(cid_bytes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Link):
            return NotImplemented
        return self.cid_bytes == other.cid_bytes

    def __hash__(self) -> int:
        return hash((Link, self.cid_bytes))

    def __repr__(self) -> str:
        return f"Link({self.cid_bytes.hex()!r})"
