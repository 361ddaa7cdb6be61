"""The live ASTP kernels, bound once for every module of ``canonkit.astp``.

Each is the compiled ``canonkit.astp._<kernel>`` or its twin in ``canonkit.astp._py``, as
``canonkit._backend.select`` chooses for the whole capability (the kernels are compiled
together or not at all; ``canonkit.backend()["astp"]`` says which). Callers use them by
attribute at call time (``hasher.spine_root(...)``); the twins are the typed surface.

| name | compiled | twin | job |
|---|---|---|---|
| ``hasher`` | ``_hash`` | ``_py.hash`` | SHA3-256, digests, spine folds, hash sets, §2.1 fields |
| ``prover`` | ``_proofs`` | ``_py.proofs`` | inclusion proofs, tie search |
| ``reader`` | ``_segments`` | ``_py.segments`` | the Episode reader's fast path, leaf hashes |
| ``scanner`` | ``_scan`` | ``_py.scan`` | an Episode document's JSON text in one pass |
| ``former`` | ``_formb`` | ``_py.formb`` | Layer 3 Form B serialization and hash |
| ``auditor`` | ``_audit`` | ``_py.audit`` | §2.3 canonical JSON, §14 audit record hash |
| ``checker`` | ``_layer3`` | ``_py.layer3`` | Layer 3 ``verify``'s fast path: what holds |
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from canonkit._backend import select

__all__ = ["auditor", "checker", "former", "hasher", "prover", "reader", "scanner"]

if TYPE_CHECKING:
    from canonkit.astp._py import audit as auditor
    from canonkit.astp._py import formb as former
    from canonkit.astp._py import layer3 as checker
    from canonkit.astp._py import hash as hasher
    from canonkit.astp._py import proofs as prover
    from canonkit.astp._py import scan as scanner
    from canonkit.astp._py import segments as reader
else:
    hasher = select("astp", compiled="canonkit.astp._hash", twin="canonkit.astp._py.hash")
    prover = select("astp", compiled="canonkit.astp._proofs", twin="canonkit.astp._py.proofs")
    reader = select("astp", compiled="canonkit.astp._segments",
                    twin="canonkit.astp._py.segments")
    scanner = select("astp", compiled="canonkit.astp._scan", twin="canonkit.astp._py.scan")
    former = select("astp", compiled="canonkit.astp._formb", twin="canonkit.astp._py.formb")
    auditor = select("astp", compiled="canonkit.astp._audit", twin="canonkit.astp._py.audit")
    checker = select("astp", compiled="canonkit.astp._layer3", twin="canonkit.astp._py.layer3")
