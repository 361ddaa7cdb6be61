"""Layer 3 (workflow and execution records, docs/astp-layer3.md) inside re-verification.

An Episode document may carry a ``layer3`` member: a ``canonkit-layer3/1`` export, or the
name of a file holding one, resolved against the directory of the file the Episode was
read from — only a file there or below it is read (for an Episode read from object
storage, an object under its prefix); a name leading anywhere else (``..``,
an absolute path, a symlink pointing out) is refused as an L3-003 finding naming it. The export is verified against its Episode (``canonkit.astp.layer3.verify`` with
the Episode, so spine isolation is checked too) and the result becomes the report line's
``components["layer3"]``: ``"ok"``, ``"failed"`` (the line then lists ``layer3_findings``)
or ``"absent"``. The Episode's outcome never depends on it (Layer 3 is kept apart from the
Spine); the component is written only when the Episode carries a ``layer3`` member or the
run requires Layer 3, so the report lines of corpora without Layer 3 stay as they were.
"""
from __future__ import annotations

import os
from typing import Any, NamedTuple

from ..errors import CanonkitError, PathOutsideError

OK = "ok"
FAILED = "failed"
ABSENT = "absent"
#: the order of the summary row
STATES = (OK, FAILED, ABSENT)
# the vector of an export that cannot be read as a canonkit-layer3/1 document (the one the
# verifier itself gives a document that is not an export)
_UNREADABLE = "L3-003"
# a verifier that trips over a shape it did not anticipate still yields a failed Layer 3,
# never a crash of a million-Episode run
_SHAPE_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError)


class Layer3Result(NamedTuple):
    """``state`` is one of ``STATES``; ``findings`` (``{vector, node_id, field, detail}``
    each) is non-empty exactly when the state is ``"failed"``."""

    state: str
    findings: list[dict[str, Any]] | None = None


_ABSENT = Layer3Result(ABSENT)
# exports named by path this process has tried to read: a unit of work that read one
# depends on a file the journal does not key on (units.verify_unit, journal.py). Only
# ever grows, so a count taken around a unit covers at least that unit's reads.
_named_reads = 0


def named_reads() -> int:
    """How many Layer 3 exports named by path this process has tried to read."""
    return _named_reads


def note_named_read() -> None:
    """Count one Layer 3 export named by path read (or looked up) here."""
    global _named_reads
    _named_reads += 1


def _failure(detail: str, field: str | None = "layer3") -> Layer3Result:
    return Layer3Result(FAILED, [{"vector": _UNREADABLE, "node_id": None, "field": field,
                                  "detail": detail}])


def _load(name: str, origin: str | None) -> Any:
    """The export named by a ``layer3`` path, read as a regular file of strict JSON; only
    a file beside the Episode's file or below its directory may be named
    (``PathOutsideError`` for ``..``, an absolute path, a symlink leading elsewhere)."""
    from .._files import read_json, resolve_within
    from .._files.urls import is_url
    from .sources import MAX_DOCUMENT_BYTES

    if origin is not None and is_url(origin):
        return _load_beside_object(name, origin, MAX_DOCUMENT_BYTES)
    base = os.path.dirname(origin) if origin else ""
    return read_json(resolve_within(base, name), max_bytes=MAX_DOCUMENT_BYTES)


def _load_beside_object(name: str, origin: str, max_bytes: int) -> Any:
    """The export ``name`` under the prefix of the object ``origin`` (a URL), read by the
    same strict reader; a name that is absolute, a URL, or holds an empty, ``.`` or
    ``..`` segment would leave that prefix (``PathOutsideError``)."""
    from .._files import loads_json, remote
    from .._files.urls import is_url, parse_url

    parts = name.split("/")
    if is_url(name) or "\x00" in name or any(p in ("", ".", "..") for p in parts):
        raise PathOutsideError(f"{name!r}: only an object under the prefix of "
                               f"{origin.rsplit('/', 1)[0]}/ may be named", detail=name)
    url = parse_url(origin.rsplit("/", 1)[0] + "/" + name)
    data = remote.read_object(remote.head(url), max_bytes=max_bytes)
    return loads_json(data, source=str(url))


def check(member: Any, episode: Any, origin: str | None) -> Layer3Result:
    """The Layer 3 result of an Episode whose ``layer3`` member is ``member`` (None: no
    Layer 3). ``episode`` is the Episode (document or ``Episode``) the export belongs to;
    ``origin`` the file the Episode was read from (a path member is resolved beside it)."""
    from ..astp.layer3 import verify

    if member is None:
        return _ABSENT
    if isinstance(member, str):
        note_named_read()
        if not member:
            return _failure("the layer3 member names no file")
        try:
            member = _load(member, origin)
        except PathOutsideError as exc:  # never read: outside the Episode's directory
            return _failure(f"refused the Layer 3 export path {member!r} ({exc.code}): {exc}")
        except CanonkitError as exc:  # not a regular file, too large, not strict JSON
            return _failure(f"cannot read the Layer 3 export {member!r} ({exc.code}): {exc}")
        except OSError as exc:
            return _failure(f"cannot read the Layer 3 export {member!r}: "
                            f"{type(exc).__name__}: {exc.strerror or exc}")
        except UnicodeDecodeError as exc:
            return _failure(f"cannot read the Layer 3 export {member!r}: {exc}")
    try:
        report = verify(member, episode=episode)
    except (CanonkitError, *_SHAPE_ERRORS) as exc:
        return _failure(f"the Layer 3 export could not be verified "
                        f"({type(exc).__name__}: {exc})", field=None)
    if report.ok:
        return Layer3Result(OK)
    return Layer3Result(FAILED, [f.to_json() for f in report.findings])
