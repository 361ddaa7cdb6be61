"""The capability table: each compiled capability, its kernels and their twins.

Everything that lists capabilities or kernels derives from this one table:
``canonkit._backend.select`` (which module serves a kernel), ``canonkit.backend()`` (what
it reports), the backend fixtures of tests/conftest.py and the extension list of setup.py.
setup.py reads this file at build time without importing canonkit, so it imports nothing.

A kernel is a compiled module ``canonkit.<capability>.<compiled>``, built from
``ext/<capability>/<compiled>.pyx``, and its pure-Python twin
``canonkit.<capability>.<twin>``, the reference oracle with the same ``__all__``. A
capability runs compiled only when every one of its kernels is (a partial build serves the
twins), so its kernels always agree with each other.
"""

#: capability -> kernel name -> (compiled module, twin module), relative to the capability
KERNELS: dict[str, dict[str, tuple[str, str]]] = {
    "cbor": {"codec": ("_codec", "_codec_py")},
    "fps": {"primitives": ("_primitives", "_primitives_py")},
    "astp": {
        "hasher": ("_hash", "_py.hash"),  # SHA3-256, digests, spine folds, hash sets, §2.1 fields
        "prover": ("_proofs", "_py.proofs"),  # inclusion proofs, tie search
        "reader": ("_segments", "_py.segments"),  # the Episode reader's fast path, leaf hashes
        "scanner": ("_scan", "_py.scan"),  # Episode JSON text -> members + segment table
        "former": ("_formb", "_py.formb"),  # Layer 3 Form B serialization and hash
        "auditor": ("_audit", "_py.audit"),  # §2.3 canonical JSON, §14 audit record hash
        "checker": ("_layer3", "_py.layer3"),  # Layer 3 verify's fast path: what holds
    },
    "objects": {
        "planner": ("_plans", "_plans_py"),  # the fields check of simple kinds
        "addresser": ("_address", "_address_py"),  # addresses, address_object's common case
    },
    "store": {"format": ("_format", "_format_py")},
    # the section walk with SHA-256, the index entry check
    "car": {"sections": ("_sections", "_sections_py")},
}

#: compiled modules that belong to a kernel without being one: built from
#: ext/<capability>/<module>.pyx and imported by the kernel module, which re-exports them
HELPERS: dict[str, tuple[str, ...]] = {
    "cbor": ("_decode",),  # the decoder; ``_codec`` is the whole codec
}


def compiled_modules() -> list[str]:
    """Every compiled module, ``canonkit.<capability>.<module>``, in table order."""
    names = []
    for capability, kernels in KERNELS.items():
        names += [f"canonkit.{capability}.{compiled}" for compiled, _ in kernels.values()]
        names += [f"canonkit.{capability}.{helper}" for helper in HELPERS.get(capability, ())]
    return names
