"""ASTP seal constructions (ASTP.md): field encoding, leaf hashes, spine roots, sets,
structural manifest, Episode roots, context commitment, proofs, chain root, tie search,
G-1, audit records v2, witnesses and anchors, documents and seal reproduction; Layer 3 in
``canonkit.astp.layer3``.

The hot kernels come from the compiled ``canonkit.astp._hash``, ``_proofs``, ``_segments``,
``_scan`` and ``_formb`` when built, else from their pure-Python twins in ``canonkit.astp._py``
(``canonkit.backend()`` says which; ``canonkit.astp._live`` binds them); everything else is
pure Python.
Hashes go in as 64-hex text or 32 bytes and come out as lowercase hex.
"""
from __future__ import annotations

from canonkit._backend import LIVE as _LIVE
from canonkit.astp import _live  # noqa: F401  (selects the kernels first)
from canonkit.astp.audit import AUDIT_FIELDS, ChainVerdict, audit_record_hash, verify_audit_chain
from canonkit.astp.canonical_json import canonical_json, canonical_json_bytes, parse_canonical
from canonkit.astp.chain import verify_proof_chain
from canonkit.astp.content import CONTENT_LAYOUTS, content_hash_v2, public_key_fingerprint
from canonkit.astp.context import (
    context_content_hash,
    context_manifest_hash,
    context_tree_root,
    entry_hash,
    entry_hashes,
    tombstone_hash,
)
from canonkit.astp.documents import EPISODE_FORMAT, PROOF_OF_RECORD, Episode, read_episode
from canonkit.astp.encoding import (
    encode_field,
    encode_fields,
    encode_set,
    hash_fields,
    sha3_256,
    timestamp_ms,
    uuid_text,
)
from canonkit.astp.proofs import (
    InclusionProofV1,
    InclusionProofV2,
    TieSearch,
    expected_siblings,
    inclusion_proof_v1,
    inclusion_proof_v2,
    search_orders,
    verify_inclusion_proof_v1,
    verify_inclusion_proof_v2,
)
from canonkit.astp.reproduce import COMPONENTS, FLAGS, OUTCOMES, Reproduction, reproduce, tie_groups
from canonkit.astp.roots import (
    chain_root,
    episode_root_v1,
    episode_root_v2,
    episode_root_v3,
    leaf_hash_v1,
    leaf_hash_v2,
    merkle_root_v1,
    merkle_root_v2,
    spine_root,
)
from canonkit.astp.seal import (
    FIXED_STATES,
    OPEN_STATES,
    check_write,
    compute_roots,
    compute_seal,
    is_fixed,
    seal_episode,
)
from canonkit.astp.sets import exclusion_hash, signal_manifest_hash, structural_manifest_hash
from canonkit.astp.structural import member_hash
from canonkit.astp.witness import (
    WITNESS_CONDITIONS,
    WitnessVerdict,
    anchor_commitment_v2,
    verify_witness,
    witness_commitment_v2,
    witness_threshold,
)

__all__ = [
                                   "AUDIT_FIELDS",
                                   "COMPONENTS",
                                   "CONTENT_LAYOUTS",
                                   "EPISODE_FORMAT",
                                   "FIXED_STATES",
                                   "FLAGS",
                                   "OPEN_STATES",
                                   "OUTCOMES",
                                   "PROOF_OF_RECORD",
                                   "ChainVerdict",
                                   "Episode",
                                   "InclusionProofV1",
                                   "InclusionProofV2",
                                   "Reproduction",
                                   "TieSearch",
                                   "WITNESS_CONDITIONS",
                                   "WitnessVerdict",
                                   "anchor_commitment_v2",
                                   "audit_record_hash",
                                   "canonical_json",
                                   "canonical_json_bytes",
                                   "chain_root",
                                   "check_write",
                                   "compute_roots",
                                   "compute_seal",
                                   "content_hash_v2",
                                   "context_content_hash",
                                   "context_manifest_hash",
                                   "context_tree_root",
                                   "encode_field",
                                   "encode_fields",
                                   "encode_set",
                                   "entry_hash",
                                   "entry_hashes",
                                   "episode_root_v1",
                                   "episode_root_v2",
                                   "episode_root_v3",
                                   "exclusion_hash",
                                   "expected_siblings",
                                   "hash_fields",
                                   "inclusion_proof_v1",
                                   "inclusion_proof_v2",
                                   "layer3",
                                   "is_fixed",
                                   "leaf_hash_v1",
                                   "leaf_hash_v2",
                                   "member_hash",
                                   "merkle_root_v1",
                                   "merkle_root_v2",
                                   "parse_canonical",
                                   "public_key_fingerprint",
                                   "read_episode",
                                   "reproduce",
                                   "seal_episode",
                                   "search_orders",
                                   "sha3_256",
                                   "signal_manifest_hash",
                                   "spine_root",
                                   "structural_manifest_hash",
                                   "tie_groups",
                                   "timestamp_ms",
                                   "tombstone_hash",
                                   "uuid_text",
                                   "verify_audit_chain",
                                   "verify_inclusion_proof_v1",
                                   "verify_inclusion_proof_v2",
    "verify_proof_chain",
    "verify_witness",
    "witness_commitment_v2",
    "witness_threshold",
]

from canonkit.astp import layer3  # noqa: E402  (after the names it builds on)

#: "compiled" or "python": which kernels are live
__backend__ = _LIVE["astp"]
