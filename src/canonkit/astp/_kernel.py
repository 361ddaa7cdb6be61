"""The live ASTP kernels: four compiled modules, each with its pure-Python twin.

| kernel | compiled | twin | job |
|---|---|---|---|
| ``hasher`` | ``canonkit._astp_hash`` | ``_astp_hash_py`` | SHA3-256, digests, spine folds, hash sets |
| ``prover`` | ``canonkit._astp_proofs`` | ``_astp_proofs_py`` | inclusion proofs, tie search |
| ``encoder`` | ``canonkit._astp_fields`` | ``_astp_fields_py`` | §2.1 field encoding |
| ``reader`` | ``canonkit._astp_segments`` | ``_astp_segments_py`` | the Episode reader's fast path, leaf hashes |
| ``former`` | ``canonkit._astp_formb`` | ``_astp_formb_py`` | Layer 3 Form B serialization and hash |

Every module of ``canonkit.astp`` takes its kernels from here, by attribute at call time
(``hasher.spine_root(...)``). The kernels are compiled together or not at all: if one
compiled module is missing, or does not expose its whole kernel API (a partial build during
development), all the twins serve, and ``canonkit.backend()["astp"]`` says ``"python"``
with the reason recorded.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from canonkit import _backend

__all__ = ["KERNELS", "encoder", "former", "hasher", "prover", "reader"]

#: kernel name -> module name without the ``canonkit.`` package and the ``_py`` suffix
KERNELS = {"hasher": "_astp_hash", "prover": "_astp_proofs", "encoder": "_astp_fields",
           "reader": "_astp_segments", "former": "_astp_formb"}


def _twins() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(f"canonkit.{m}_py") for m in KERNELS.values())


def _select() -> tuple[ModuleType, ...]:
    if _backend.NO_EXTENSIONS:
        _backend.WHY_NOT_COMPILED["astp"] = "CANONKIT_NO_EXTENSIONS=1"
    else:
        compiled = []
        reasons = []
        for name in KERNELS.values():
            try:
                module = importlib.import_module(f"canonkit.{name}")
            except ImportError as exc:
                reasons.append(f"canonkit.{name}: {exc}")
                continue
            twin = importlib.import_module(f"canonkit.{name}_py")
            missing = [n for n in twin.__all__ if not hasattr(module, n)]
            if missing:
                reasons.append(f"canonkit.{name} lacks {', '.join(missing)}")
            compiled.append(module)
        if not reasons:
            _backend.LIVE["astp"] = "compiled"
            return tuple(compiled)
        _backend.fall_back("astp", "; ".join(reasons))  # warns: not asked for
        return _twins()
    _backend.LIVE["astp"] = "python"
    return _twins()


if TYPE_CHECKING:  # the twins are the typed surface; both backends share their API
    from canonkit import _astp_fields_py as encoder
    from canonkit import _astp_formb_py as former
    from canonkit import _astp_hash_py as hasher
    from canonkit import _astp_proofs_py as prover
    from canonkit import _astp_segments_py as reader
else:
    hasher, prover, encoder, reader, former = _select()
