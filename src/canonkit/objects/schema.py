"""Field types and kinds: the schema half of the object model (OBJECTS.md §1).

A ``Kind`` names a ``(t, v)`` pair and lists its fields, each with a field type from this
module. Validation walks the decoded (or to-be-encoded) field map and raises
``SchemaViolationError`` whose ``detail`` is the path of the offending field, written as
the top-level field name followed by ``[i]`` for array items and ``.name`` for map
fields: ``"entries[2].name"``. The path always starts with the field's own name.

Types check exact Python types (``bool`` is not an ``int``; ``str`` subclasses are not
text): the decoder only ever produces exact types, and accepting more on encode would let
two Python values that print alike address differently by surprise.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from typing import TYPE_CHECKING

from .. import _backend
from ..errors import SchemaViolationError

if TYPE_CHECKING:  # the twin is the typed surface
    from . import _plans_py as _plans
else:
    _plans = _backend.select("objects", compiled="canonkit.objects._plans",
                             twin="canonkit.objects._plans_py")

__all__ = [
    "REF",
    "Array",
    "Bool",
    "Bytes",
    "FieldType",
    "Int",
    "Kind",
    "Nullable",
    "Record",
    "Text",
    "Tuple",
    "UInt",
    "violation",
]

_U64 = 2**64
_RESERVED = ("t", "v")  # the envelope's keys; no kind may use them as fields


def violation(path: str, message: str) -> SchemaViolationError:
    """The error for field ``path``: ``detail`` is the path, the message says why."""
    return SchemaViolationError(f"schema violation at field {path!r}: {message}", detail=path)


def _type_name(value: Any) -> str:
    return type(value).__name__


class _Gen:
    """Builds a kind's fast validity predicate as Python source (attrs/msgspec style).

    The predicate returns True when the fields are certainly valid, False when the slow
    path must look (it then either raises the precise violation or accepts, e.g. a
    ``bytearray`` where ``bytes`` is usual). It only ever says True for valid input.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {"M": _MISSING, "_ok": _slow_ok, "_ordered": _ordered}
        self.count = 0

    def var(self) -> str:
        self.count += 1
        return f"x{self.count}"

    def const(self, value: Any) -> str:
        name = f"c{len(self.ns)}"
        self.ns[name] = value
        return name

    def line(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)


_MISSING = object()


def _slow_ok(ftype: FieldType, value: Any) -> bool:
    try:
        ftype.check(value, "")
    except SchemaViolationError:
        return False
    return True


class FieldType:
    """One field's type. ``check(value, path)`` returns None or raises ``violation``.

    Subclasses may also override ``emit`` (the fast predicate's code); the default calls
    ``check``, so a user-defined type needs only ``check``.
    """

    __slots__ = ()
    label = "value"

    def check(self, value: Any, path: str) -> None:
        raise NotImplementedError

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        g.line(indent, f"if not _ok({g.const(self)}, {var}): return False")

    def __repr__(self) -> str:
        return self.label


class UInt(FieldType):
    """An unsigned integer 0 … 2^64−1 (CBOR major type 0)."""

    __slots__ = ()
    label = "uint"

    def check(self, value: Any, path: str) -> None:
        if type(value) is not int:
            raise violation(path, f"expected uint, got {_type_name(value)}")
        if not 0 <= value < _U64:
            raise violation(path, f"expected uint in 0..2**64-1, got {value}")

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        g.line(indent, f"if type({var}) is not int or {var} < 0 or {var} >= {_U64}: "
                       f"return False")


class Int(FieldType):
    """An integer −2^64 … 2^64−1 (CBOR major types 0/1; bignums are not fields)."""

    __slots__ = ()
    label = "int"

    def check(self, value: Any, path: str) -> None:
        if type(value) is not int:
            raise violation(path, f"expected int, got {_type_name(value)}")
        if not -_U64 <= value < _U64:
            raise violation(path, f"expected int in -2**64..2**64-1, got {value}")

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        g.line(indent, f"if type({var}) is not int or {var} < {-_U64} or {var} >= {_U64}: "
                       f"return False")


class Bool(FieldType):
    """``True`` or ``False``."""

    __slots__ = ()
    label = "bool"

    def check(self, value: Any, path: str) -> None:
        if type(value) is not bool:
            raise violation(path, f"expected bool, got {_type_name(value)}")

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        g.line(indent, f"if type({var}) is not bool: return False")


class Text(FieldType):
    """A text string; optionally non-empty and free of some characters."""

    __slots__ = ("forbid", "non_empty")

    def __init__(self, *, non_empty: bool = False, forbid: str = "") -> None:
        self.non_empty = non_empty
        self.forbid = forbid

    @property
    def label(self) -> str:  # type: ignore[override]
        return "text"

    def check(self, value: Any, path: str) -> None:
        if type(value) is not str:
            raise violation(path, f"expected text, got {_type_name(value)}")
        if self.non_empty and not value:
            raise violation(path, "must not be empty")
        for ch in self.forbid:
            if ch in value:
                raise violation(path, f"must not contain {ch!r}")

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        cond = f"type({var}) is not str"
        if self.non_empty:
            cond += f" or not {var}"
        for ch in self.forbid:
            cond += f" or {ch!r} in {var}"
        g.line(indent, f"if {cond}: return False")


class Bytes(FieldType):
    """A byte string, optionally of an exact size. Encoding also accepts ``bytearray``
    and ``memoryview`` (the codec takes any buffer); decoding yields ``bytes``."""

    __slots__ = ("size",)

    def __init__(self, size: int | None = None) -> None:
        self.size = size

    @property
    def label(self) -> str:  # type: ignore[override]
        return "bytes" if self.size is None else f"bytes({self.size})"

    def check(self, value: Any, path: str) -> None:
        if type(value) is bytes:
            n = len(value)
        elif isinstance(value, (bytearray, memoryview)):
            n = memoryview(value).nbytes
        else:
            raise violation(path, f"expected {self.label}, got {_type_name(value)}")
        if self.size is not None and n != self.size:
            raise violation(path, f"expected {self.label}, got {n} bytes")

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        size = "" if self.size is None else f" or len({var}) != {self.size}"
        g.line(indent, f"if type({var}) is not bytes{size}: return False")


REF = Bytes(32)
"""A reference to another object: its 32 raw BLAKE3 digest bytes (never hex text)."""


class Nullable(FieldType):
    """``None`` or a value of the inner type."""

    __slots__ = ("inner",)

    def __init__(self, inner: FieldType) -> None:
        self.inner = inner

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"{self.inner.label} or null"

    def check(self, value: Any, path: str) -> None:
        if value is not None:
            self.inner.check(value, path)

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        g.line(indent, f"if {var} is not None:")
        self.inner.emit(g, var, indent + 1)


class Tuple(FieldType):
    """A fixed-length array whose items have the given types, e.g. ``[ref, size]``."""

    __slots__ = ("items",)

    def __init__(self, *items: FieldType) -> None:
        self.items = items

    @property
    def label(self) -> str:  # type: ignore[override]
        return "[" + ", ".join(t.label for t in self.items) + "]"

    def check(self, value: Any, path: str) -> None:
        if type(value) is not list and type(value) is not tuple:
            raise violation(path, f"expected array {self.label}, got {_type_name(value)}")
        if len(value) != len(self.items):
            raise violation(path, f"expected {len(self.items)} items, got {len(value)}")
        for i, (item_type, item) in enumerate(zip(self.items, value)):
            item_type.check(item, f"{path}[{i}]")

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        g.line(indent, f"if (type({var}) is not list and type({var}) is not tuple) "
                       f"or len({var}) != {len(self.items)}: return False")
        for i, item_type in enumerate(self.items):
            item = g.var()
            g.line(indent, f"{item} = {var}[{i}]")
            item_type.emit(g, item, indent)


def _order_key(value: Any) -> bytes:
    # Sorting by the UTF-8 bytes of text (not by code points: they differ for surrogate
    # pairs vs. BMP characters above U+E000) and by raw bytes for byte strings.
    return value.encode("utf-8", "surrogatepass") if type(value) is str else bytes(value)


class Array(FieldType):
    """A variable-length array of one item type.

    ``order_by``: the name of a field of the (map) items, or ``"self"`` for the items
    themselves; the items must then be strictly increasing by the UTF-8 / raw bytes of
    that value — sorted and unique.
    """

    __slots__ = ("item", "order_by")

    def __init__(self, item: FieldType, *, order_by: str | None = None) -> None:
        self.item = item
        self.order_by = order_by

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"array of {self.item.label}"

    def check(self, value: Any, path: str) -> None:
        if type(value) is not list and type(value) is not tuple:
            raise violation(path, f"expected {self.label}, got {_type_name(value)}")
        check_item = self.item.check
        for i, item in enumerate(value):
            check_item(item, f"{path}[{i}]")
        if self.order_by is not None and len(value) > 1:
            self._check_order(value, path)

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        g.line(indent, f"if type({var}) is not list and type({var}) is not tuple: return False")
        item = g.var()
        g.line(indent, f"for {item} in {var}:")
        self.item.emit(g, item, indent + 1)
        if self.order_by is not None:
            g.line(indent, f"if not _ordered({var}, {self.order_by!r}): return False")

    def _check_order(self, value: Sequence[Any], path: str) -> None:
        by = self.order_by
        previous: bytes | None = None
        for i, item in enumerate(value):
            key = _order_key(item if by == "self" else item[by])
            if previous is not None and key <= previous:
                where = f"{path}[{i}]" if by == "self" else f"{path}[{i}].{by}"
                what = "duplicates" if key == previous else "sorts before"
                raise violation(where, f"{what} the previous item (must be sorted by "
                                       f"UTF-8 bytes and unique)")
            previous = key


def _check_map(value: Any, path: str, required: Mapping[str, FieldType],
               optional: Mapping[str, FieldType]) -> None:
    """Shared by ``Record`` (nested maps) and ``Kind`` (the top-level field map)."""
    prefix = f"{path}." if path else ""
    if not isinstance(value, Mapping):
        raise violation(path or "<fields>", f"expected a map, got {_type_name(value)}")
    for name, ftype in required.items():
        if name not in value:
            raise violation(prefix + name, f"required {ftype.label} field is missing")
        ftype.check(value[name], prefix + name)
    extra = len(value) - len(required)
    if extra:
        for name in value:
            if name in required:
                continue
            opt_type = optional.get(name) if type(name) is str else None
            if opt_type is None:
                raise violation(prefix + str(name), "unexpected field")
            opt_type.check(value[name], prefix + name)


def _ordered(items: Sequence[Any], by: str) -> bool:
    previous: bytes | None = None
    try:
        for item in items:
            key = _order_key(item if by == "self" else item[by])
            if previous is not None and key <= previous:
                return False
            previous = key
    except Exception:  # noqa: BLE001 -- the predicate never raises; the slow path explains
        return False
    return True


def _emit_map(g: _Gen, var: str, indent: int, required: Mapping[str, FieldType],
              optional: Mapping[str, FieldType]) -> None:
    if not optional:
        g.line(indent, f"if len({var}) != {len(required)}: return False")
    for name, ftype in required.items():
        value = g.var()  # a missing key raises KeyError: the predicate says False
        g.line(indent, f"{value} = {var}[{name!r}]")
        ftype.emit(g, value, indent)
    if optional:
        present = g.var()
        g.line(indent, f"{present} = {len(required)}")
        for name, ftype in optional.items():
            value = g.var()
            g.line(indent, f"{value} = {var}.get({name!r}, M)")
            g.line(indent, f"if {value} is not M:")
            g.line(indent + 1, f"{present} += 1")
            ftype.emit(g, value, indent + 1)
        g.line(indent, f"if len({var}) != {present}: return False")


def _compile_fast(name: str, required: Mapping[str, FieldType],
                  optional: Mapping[str, FieldType]) -> Callable[[Any], bool]:
    g = _Gen()
    # builtins bound as defaults: local loads instead of global+builtin lookups
    g.line(0, "def fast(f, type=type, len=len, bytes=bytes, str=str, int=int, list=list, "
              "tuple=tuple, dict=dict, bool=bool):")
    g.line(1, "if type(f) is not dict: return False")
    g.line(1, "try:")
    _emit_map(g, "f", 2, required, optional)
    g.line(1, "except KeyError:")
    g.line(2, "return False")
    g.line(1, "return True")
    # our own generated source: field names enter only as repr() literals
    source = "\n".join(g.lines)
    exec(compile(source, f"<canonkit kind {name}>", "exec"), g.ns)  # noqa: S102
    return g.ns["fast"]  # type: ignore[no-any-return]


def _never(fields: Any) -> bool:
    return False


def _simple_op(ftype: FieldType) -> tuple[int, int] | None:
    """(op, arg) of a field type the compiled fields check knows, else None. Exact
    classes only: a subclass may check more."""
    kind = type(ftype)
    if kind is Bytes:
        size = ftype.size  # type: ignore[attr-defined]
        return (_plans.BYTES, 0) if size is None else (_plans.BYTES_SIZED, size)
    if kind is Text and not ftype.forbid:  # type: ignore[attr-defined]
        return (_plans.TEXT_NON_EMPTY if ftype.non_empty  # type: ignore[attr-defined]
                else _plans.TEXT, 0)
    if kind is UInt:
        return _plans.UINT, 0
    if kind is Int:
        return _plans.INT, 0
    if kind is Bool:
        return _plans.BOOL, 0
    return None


def _field_op(ftype: FieldType) -> tuple[int, int] | None:
    flags = 0
    if type(ftype) is Nullable:
        flags, ftype = _plans.NULLABLE, ftype.inner
    if type(ftype) is Array and ftype.order_by is None:
        flags, ftype = flags | _plans.ARRAY, ftype.item
    simple = _simple_op(ftype)
    return None if simple is None else (flags | simple[0], simple[1])


def _plan(required: Mapping[str, FieldType],
          optional: Mapping[str, FieldType]) -> tuple[tuple[str, int, int], ...] | None:
    """The plan of the compiled fields check (see ``canonkit.objects._plans_py``), or None when
    a field is optional or of a type it does not know (the generated predicate serves)."""
    if optional:
        return None
    plan = []
    for name, ftype in required.items():
        op = _field_op(ftype)
        if op is None:
            return None
        plan.append((name, *op))
    return tuple(plan)


class Record(FieldType):
    """A map with text keys: required fields, optional fields, nothing else."""

    __slots__ = ("fields", "optional")

    def __init__(self, fields: Mapping[str, FieldType],
                 optional: Mapping[str, FieldType] | None = None) -> None:
        self.fields = dict(fields)
        self.optional = dict(optional or {})

    @property
    def label(self) -> str:  # type: ignore[override]
        return "map"

    def check(self, value: Any, path: str) -> None:
        if type(value) is not dict:
            raise violation(path, f"expected map, got {_type_name(value)}")
        _check_map(value, path, self.fields, self.optional)

    def emit(self, g: _Gen, var: str, indent: int) -> None:
        g.line(indent, f"if type({var}) is not dict: return False")
        _emit_map(g, var, indent, self.fields, self.optional)


class Kind:
    """The schema of one ``(t, v)`` pair.

    ``raw`` kinds (``blob``, ``chunk``) have no envelope: their content is raw bytes.
    ``check`` is an optional cross-field rule ``check(fields)`` raising ``violation``.
    """

    __slots__ = ("_envelope", "_fast", "check", "fields", "name", "optional", "raw", "version")

    def __init__(self, name: str, version: int = 1, *,
                 fields: Mapping[str, FieldType] | None = None,
                 optional: Mapping[str, FieldType] | None = None,
                 check: Callable[[Mapping[str, Any]], None] | None = None,
                 raw: bool = False) -> None:
        if type(name) is not str or not name or not all(
                c.isascii() and (c.isalnum() or c in "-_.") for c in name):
            raise ValueError(f"kind name must be non-empty ASCII [A-Za-z0-9._-], got {name!r}")
        if type(version) is not int or not 0 <= version < _U64:
            raise ValueError(f"kind version must be a uint, got {version!r}")
        if raw and (fields or optional or check):
            raise ValueError("a raw kind has no fields")
        self.name = name
        self.version = version
        self.raw = raw
        self.fields = dict(fields or {})
        self.optional = dict(optional or {})
        self.check = check
        for field in (*self.fields, *self.optional):
            if type(field) is not str or field in _RESERVED:
                raise ValueError(f"invalid field name {field!r} (t and v are the envelope)")
            if field in self.fields and field in self.optional:
                raise ValueError(f"field {field!r} is both required and optional")
        # the t/v pairs every encoding of this kind starts from (never mutated)
        self._envelope: dict[str, Any] = {"t": name, "v": version}
        plan = None if raw else _plan(self.fields, self.optional)
        if plan is not None:
            self._fast: Callable[[Any], bool] = _plans.FieldsCheck(plan).match
        else:
            self._fast = _never if raw else _compile_fast(name, self.fields, self.optional)

    def validate(self, fields: Any) -> None:
        """Raise ``SchemaViolationError`` (detail = field path) unless ``fields`` fits."""
        if self.raw:
            if not isinstance(fields, (bytes, bytearray, memoryview)):
                raise violation("<content>", f"raw kind {self.name!r} takes bytes, "
                                             f"got {_type_name(fields)}")
            return
        if not self._fast(fields):
            _check_map(fields, "", self.fields, self.optional)
        if self.check is not None:
            self.check(fields)

    def __repr__(self) -> str:
        return f"Kind({self.name!r}, {self.version}{', raw=True' if self.raw else ''})"
