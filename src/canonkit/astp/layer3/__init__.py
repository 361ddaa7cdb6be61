"""ASTP Layer 3 (workflow and execution DAG; ASTP.md §19, CONFORMANCE-LAYER3 1.1.0):
Form B content hashes, the state machine and rules, a writer-side ``Workspace`` that emits
audit records v2 before each write, the ``canonkit-layer3/1`` export and a verifier that
trusts nothing in it, and the Level 2 conformance declaration. Layer 3 is kept apart from
the Spine: nothing here enters a Layer 1/2 preimage. See docs/astp-layer3.md.
"""
from __future__ import annotations

import json
from importlib import resources
from typing import Any

from canonkit.astp.layer3.hashing import (
    content_hash,
    execution_node_hash,
    form_b,
    skill_invocation_hash,
    workflow_declaration_hash,
)
from canonkit.astp.layer3.rules import (
    check_declaration_update,
    check_execution_errors,
    check_immutable,
    check_registry_id,
    check_retry,
    check_transition,
)
from canonkit.astp.layer3.schema import EDGES, EXCLUDED, FIELD_ORDER, NODE_TYPES, TRANSITIONS
from canonkit.astp.layer3.verify import WORKFLOW_STATES, Finding, Layer3Report, verify
from canonkit.astp.layer3.workspace import FORMAT, Workspace
from canonkit.errors import Layer3GovernanceError

__all__ = [
    "CONFORMANCE_DECLARATION",
    "EDGES",
    "EXCLUDED",
    "FIELD_ORDER",
    "FORMAT",
    "NODE_TYPES",
    "TRANSITIONS",
    "WORKFLOW_STATES",
    "Finding",
    "Layer3GovernanceError",
    "Layer3Report",
    "Workspace",
    "check_declaration_update",
    "check_execution_errors",
    "check_immutable",
    "check_registry_id",
    "check_retry",
    "check_transition",
    "content_hash",
    "execution_node_hash",
    "form_b",
    "skill_invocation_hash",
    "verify",
    "workflow_declaration_hash",
]

#: The Level 2 ConformanceDeclaration (W-L3-3), shipped as ``conformance_declaration.json``
CONFORMANCE_DECLARATION: dict[str, Any] = json.loads(
    resources.files(__package__).joinpath("conformance_declaration.json").read_text("utf-8"))
