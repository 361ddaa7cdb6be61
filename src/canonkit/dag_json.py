"""DAG-JSON (docs/links-and-dag-json.md): the JSON codec of the IPLD data model that
``cbor.decode(..., profile="dag-cbor")`` produces — ``None``, ``bool``, ``int`` in
−2^64…2^64−1, finite ``float``, ``str``, ``bytes``, ``list``, ``dict`` with text keys and
``Link`` — so ``dag_json.encode(cbor.decode(b, profile="dag-cbor"))`` and back round-trip.

The same module as ``canonkit.cbor.dag_json``, where the codec lives (see its docstring):
this name is kept importable and re-exports every public name.
"""
from __future__ import annotations

from .cbor.dag_json import *  # noqa: F403
from .cbor.dag_json import __all__ as __all__
