"""Which objects an object references, and everything reachable from roots (STORE.md §3).

References are followed by kind: ``commit`` → ``tree``, ``parents``; ``tree`` → each
entry's ``ref``; ``chunk-manifest`` → each chunk; ``conflict`` → ``base``, ``ours``,
``theirs``; any registered kind → every field its schema types as ``objects.REF`` (found
by walking the schema, so the built-in kinds need no special case).

The store does not record kinds: an object is followed as a structured kind when its
bytes decode as one (canonical CBOR, a ``t``/``v`` envelope of a registered kind, a valid
schema). Anything else is a leaf: raw blobs and chunks, and — reported by fsck as
``unfollowed`` — bytes that look like an object of a kind this process has not
registered, or that break their kind's schema.
"""
from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import DecodeError, MissingKindError, ObjectError
from ..objects import REF, decode_object, get_kind
from ..objects.schema import Array, FieldType, Nullable, Record, Tuple
from ._format_py import MAP_HEADS
from .layout import address_of

__all__ = ["MAP_HEADS", "Marker", "may_be_structured", "references", "root_path"]

_MAP_HEADS = MAP_HEADS  # declared with the byte formats: the kernels classify by it too


def may_be_structured(first: int) -> bool:
    """Whether bytes starting with ``first`` may be a structured object (a CBOR map):
    only those can have references, so only those need to be kept to be followed."""
    return first in _MAP_HEADS


def _walk(ftype: FieldType, value: Any) -> Iterator[bytes]:
    if ftype is REF:
        yield value
    elif isinstance(ftype, Nullable):
        if value is not None:
            yield from _walk(ftype.inner, value)
    elif isinstance(ftype, Tuple):
        for item_type, item in zip(ftype.items, value):
            yield from _walk(item_type, item)
    elif isinstance(ftype, Array):
        for item in value:
            yield from _walk(ftype.item, item)
    elif isinstance(ftype, Record):
        for name, item_type in (*ftype.fields.items(), *ftype.optional.items()):
            if name in value:
                yield from _walk(item_type, value[name])


def references(data: bytes | memoryview) -> tuple[list[bytes], str | None]:
    """``(digests referenced, why not followed)``: the second item is None when the bytes
    are a valid structured object or plainly raw, else the reason (fsck's ``unfollowed``)."""
    if len(data) == 0 or data[0] not in _MAP_HEADS:
        return [], None
    try:
        obj = decode_object(data)
    except (DecodeError, MissingKindError):
        return [], None  # not a CBOR map with t and v: raw bytes
    except ObjectError as exc:  # unknown kind or version, schema violation
        return [], f"{exc.code}: {exc}"
    spec = get_kind(obj.kind, obj.version)
    out: list[bytes] = []
    for name, ftype in (*spec.fields.items(), *spec.optional.items()):
        if name in obj.fields:
            out.extend(_walk(ftype, obj.fields[name]))
    return out, None


class Marker:
    """Breadth-first marking over a ``read(digest) -> bytes | None`` function (None:
    missing). ``parent`` remembers how each object was reached, for reporting the path
    from a root to a missing object.

    With ``read_many`` (``digests -> [bytes | None]``), the objects next in the queue are
    read ``BATCH`` at a time (a store in object storage has them fetched concurrently);
    the order of marking, and so every result, is the same."""

    BATCH = 64

    def __init__(self, read: Callable[[bytes], bytes | None],
                 read_many: Callable[[list[bytes]], list[bytes | None]] | None = None
                 ) -> None:
        self.read = read
        self.read_many = read_many
        self._ahead: dict[bytes, bytes | None] = {}
        self.marked: set[bytes] = set()
        self.parent: dict[bytes, bytes | str] = {}  # digest -> referencing digest or root label
        self.unfollowed: dict[bytes, str] = {}

    def mark(self, roots: list[tuple[str, bytes]], *, strict: bool) -> list[bytes]:
        """Mark everything reachable from ``roots`` (``(label, digest)``); returns the
        missing digests reached (with ``strict`` the first one stops the walk)."""
        missing: list[bytes] = []
        queue: deque[bytes] = deque()
        self._ahead = {}  # an object stored meanwhile is read again
        for label, digest in roots:
            if digest not in self.marked:
                self.marked.add(digest)
                self.parent[digest] = label
                queue.append(digest)
        while queue:
            digest = queue.popleft()
            if self.read_many is None:
                data = self.read(digest)
            else:
                if digest not in self._ahead:
                    batch = [digest, *itertools.islice(queue, self.BATCH - 1)]
                    self._ahead = dict(zip(batch, self.read_many(batch)))
                data = self._ahead.pop(digest)
            if data is None:
                missing.append(digest)
                if strict:
                    return missing
                continue
            children, why = references(data)
            if why is not None:
                self.unfollowed[digest] = why
            for child in children:
                if child not in self.marked:
                    self.marked.add(child)
                    self.parent[child] = digest
                    queue.append(child)
        return missing

    def path_to(self, digest: bytes) -> list[str]:
        """``[root label, address, ..., address of digest]``."""
        return root_path(self.parent, digest)


def root_path(parent: dict[bytes, bytes | str], digest: bytes) -> list[str]:
    """How ``digest`` was reached: ``[root label, address, ..., address of digest]``,
    following ``parent`` (digest -> the digest that referenced it, or a root label)."""
    out = [address_of(digest)]
    seen = {digest}
    step: bytes | str | None = parent.get(digest)
    while isinstance(step, bytes) and step not in seen:
        seen.add(step)
        out.append(address_of(step))
        step = parent.get(step)
    out.append(str(step))
    return out[::-1]
