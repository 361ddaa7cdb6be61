"""The two doors every file canonkit touches goes through (docs/robustness.md):

- :mod:`canonkit._files.inputs` — the input door: regular files only, identities, size
  bounds, confined paths, compressed streams with their ends checked, strict JSON
  (:mod:`.strict_json`), JSON lines;
- :mod:`canonkit._files.outputs` — the output door: the one atomic writer and the checks
  of an output path.

The names of both are re-exported here for the callers that import ``canonkit._files``.
"""
from __future__ import annotations

from .inputs import (
    MAX_INTEGER_DIGITS,
    UINT64_LIMIT,
    Expect,
    Identity,
    InputStream,
    JSONLines,
    LongInteger,
    check_regular,
    check_unchanged,
    decimal_uint64,
    describe_kind,
    loads_json,
    loads_json_noting_duplicates,
    open_input,
    open_regular,
    open_stream,
    read_json,
    read_regular,
    resolve_within,
)
from .outputs import (
    AtomicWriter,
    fsync_directory,
    validate_output_path,
    write_atomic,
    write_exclusive,
)

__all__ = ["MAX_INTEGER_DIGITS", "UINT64_LIMIT", "AtomicWriter", "Expect", "Identity",
           "InputStream", "JSONLines", "LongInteger", "check_regular", "check_unchanged",
           "decimal_uint64", "describe_kind", "fsync_directory", "loads_json",
           "loads_json_noting_duplicates", "open_input", "open_regular", "open_stream",
           "read_json", "read_regular", "resolve_within", "validate_output_path",
           "write_atomic", "write_exclusive"]
