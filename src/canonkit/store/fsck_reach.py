"""fsck's reachability pass: from the refs, over the references the units returned
(STORE.md §4), run once in the parent after every unit.

fsck runs on a live store: a writer may put objects and set refs, a repack may move
objects into a new pack and delete their old forms, while fsck reads. So that no such
writer makes fsck report an error it would not find in a consistent view:

- the refs are read before anything else (``fsck``): a writer puts an object before the
  ref that names it, so every ref read names an object already stored;
- an object the units did not find is looked up again before it is called missing
  (``Store.get``, which re-reads the list of packs): a repack that published it in a new
  pack and removed its old form meanwhile is no error. Objects found so are verified and
  followed like the others;
- an object still missing is reported only if the ref it was reached from still holds
  the address it held when fsck read it: a ref that moved (and a gc that then collected
  what only the old value reached) is no error either.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from ..errors import CorruptObjectError, MissingObjectError, StoreError
from .findings import CODES, Finding, FsckReport, collector_paused, finding
from .layout import address_of, loose_path
from .mark import references, root_path

if TYPE_CHECKING:
    from .store import Store

__all__ = ["Graph", "Places", "reachability"]


class Places:
    """Where each intact object was found: its first place (None: its own loose path) and
    any further ones (duplicates). The units' digests are taken in as they come (one
    blob per unit) and indexed once, when first asked: a unit of 16384 entries costs one
    dictionary update, not a Python step per object."""

    def __init__(self) -> None:
        self._parts: list[tuple[bytes, str | None]] = []
        self._first: dict[bytes, str | None] = {}
        self._more: dict[bytes, list[str]] = {}

    def add(self, digests: bytes | bytearray, rel: str | None) -> None:
        if digests:
            self._parts.append((bytes(digests), rel))

    def _index(self) -> None:
        """Take in the parts added since the last call, in the order they were added."""
        first, more = self._first, self._more
        for blob, rel in self._parts:
            keys = [blob[i:i + 32] for i in range(0, len(blob), 32)]
            fresh = dict.fromkeys(keys, rel)
            if len(fresh) == len(keys) and first.keys().isdisjoint(fresh):
                first.update(fresh)  # the common case: no object stored twice
                continue
            for digest in keys:
                if digest in first:
                    more.setdefault(digest, []).append(rel or loose_path(digest))
                else:
                    first[digest] = rel
        self._parts = []

    @property
    def first(self) -> dict[bytes, str | None]:
        """Each object's first place (None: its own loose path)."""
        if self._parts:
            self._index()
        return self._first

    @property
    def more(self) -> dict[bytes, list[str]]:
        """The further places of the objects stored more than once."""
        if self._parts:
            self._index()
        return self._more

    def __contains__(self, digest: object) -> bool:
        return digest in self.first

    def __len__(self) -> int:
        return len(self.first)

    def all(self, digest: bytes) -> list[str]:
        """Every place, sorted (so the first is the same however the work was split)."""
        first, more = self.first, self._more
        here = [first[digest] or loose_path(digest)]
        return sorted(here + more[digest]) if digest in more else here


class Graph:
    """What the units found: the intact objects' places, the corrupt ones, the references
    of the structured ones and why some were not followed."""

    def __init__(self) -> None:
        self.where = Places()
        self.corrupt: set[bytes] = set()
        self.edges: dict[bytes, list[bytes]] = {}
        self.unfollowed: dict[bytes, tuple[str, str]] = {}


def _located(store: Store, digest: bytes) -> str | None:
    """Where ``get`` found an object: its pack's path, or None (its loose path)."""
    for pf in store.packs.snapshot():
        if store.packs.offset(pf, digest) >= 0:
            return pf.pack_rel
    return None


def _recheck(store: Store, digests: list[bytes], graph: Graph, out: list[Finding]
             ) -> list[bytes]:
    """Look for objects the units did not find, as they are now; returns those found
    (added to ``graph``, with their references). One that is now found corrupt in every
    form is corrupt (not missing), and a finding unless its file's problem is one
    already."""
    found: list[bytes] = []
    for digest in digests:
        address = address_of(digest)
        try:
            data = store.get(address)
        except MissingObjectError:
            continue
        except CorruptObjectError as exc:  # reported already, unless it is news
            graph.corrupt.add(digest)
            path = exc.path or loose_path(digest)
            code = str(exc.detail) if exc.detail in CODES else "unreadable"
            if not any(f.path == path and f.code == code for f in out):
                out.append(finding(path, exc.offset, code, address, str(exc)))
            continue
        rel = _located(store, digest)
        graph.where.add(digest, rel)
        children, why = references(data)
        if children:
            graph.edges[digest] = children
        if why is not None:
            graph.unfollowed.setdefault(digest, (rel or loose_path(digest), why))
        found.append(digest)
    return found


def _still_holds(store: Store, label: str, digest: bytes) -> bool:
    """Whether the root ``label`` ("ref NAME") still names ``digest`` (other roots always
    do)."""
    if not label.startswith("ref "):
        return True
    try:
        now = store.ref(label[4:])
    except (StoreError, OSError):
        return False  # unreadable now: the next fsck reports it
    return now == address_of(digest)


def reachability(store: Store, refs: list[tuple[str, str, bytes]], graph: Graph,
                 out: list[Finding], report: FsckReport) -> None:
    """The reachability findings (``missing_object``, ``ref_target_missing``,
    ``unreachable``, ``duplicate_object``, ``dangling_reference``, ``unfollowed``)."""
    with collector_paused():
        _reachability(store, refs, graph, out, report)


def _reachability(store: Store, refs: list[tuple[str, str, bytes]], graph: Graph,
                  out: list[Finding], report: FsckReport) -> None:
    where, corrupt, edges = graph.where, graph.corrupt, graph.edges
    parent: dict[bytes, bytes | str] = {}
    root_of: dict[str, bytes] = {}
    queue: deque[bytes] = deque()
    pending: list[bytes] = []

    def reach(digest: bytes, via: bytes | str) -> None:
        parent[digest] = via
        if digest in where:
            queue.append(digest)
        elif digest not in corrupt:
            pending.append(digest)

    for name, _, digest in refs:
        root_of[f"ref {name}"] = digest
        if digest not in parent:
            reach(digest, f"ref {name}")
    missing: list[bytes] = []
    while True:
        while queue:
            digest = queue.popleft()
            for child in edges.get(digest, ()):
                if child not in parent:
                    reach(child, digest)
        if not pending:
            break
        asked, pending = pending, []
        found = set(_recheck(store, asked, graph, out))
        missing += [d for d in asked if d not in found and d not in corrupt]
        queue.extend(d for d in asked if d in found)
    lost = set(missing)
    for name, rel, digest in refs:  # every ref at a missing object, each its own finding
        if digest in lost and _still_holds(store, f"ref {name}", digest):
            out.append(finding(rel, None, "ref_target_missing", address_of(digest),
                               f"ref {name} points at an object that is not stored"))
    for digest in missing:
        via = parent[digest]
        if isinstance(via, str):
            continue  # a ref's target: above
        path = root_path(parent, digest)
        if not _still_holds(store, path[0], root_of.get(path[0], digest)):
            continue  # the ref moved while fsck ran: no consistent view misses this
        out.append(finding(where.all(via)[0], None, "missing_object", address_of(digest),
                           f"referenced by a reachable object; path from the root: "
                           f"{' -> '.join(path)}"))
    first = where.first
    reachable = {d for d in parent if d in first}
    report.reachable = len(reachable)
    more = where.more
    for digest in more:  # stored more than once (rare): every place reported
        rels = where.all(digest)
        out.append(finding(rels[0], None, "duplicate_object", address_of(digest),
                           f"also stored at {', '.join(rels[1:])}"))
    # one finding per unreachable object: built as tuples of their final fields, no
    # Python call per object beyond the hex of its address
    make, info = tuple.__new__, CODES["unreachable"][0]
    unreached = [d for d in first if d not in reachable]
    out.extend(make(Finding, (where.all(d)[0] if d in more else first[d] or loose_path(d),
                              None, "unreachable", "blake3:" + d.hex(), "no ref reaches it",
                              info))
               for d in unreached)
    for digest in edges.keys() - reachable:
        if digest not in first:
            continue  # references of an object not stored intact are not followed
        rel = where.all(digest)[0]
        for child in edges[digest]:
            if child not in first and child not in corrupt:
                out.append(finding(rel, None, "dangling_reference", address_of(child),
                                   f"the unreachable object {address_of(digest)} "
                                   f"references it"))
    for digest, (rel, why) in graph.unfollowed.items():
        out.append(finding(rel, None, "unfollowed", address_of(digest), why))
