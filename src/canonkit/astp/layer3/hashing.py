"""Layer 3 content hashes in Form B (ASTP.md §19.2): SHA3-256 over the node's preimage
fields, in the order of WF-001 / EX-001 / SK-001, as compact field-ordered JSON.

Fields are a mapping as parsed from JSON (UUIDs and instants as text already in their §19.2
form) or with ``uuid.UUID``/``datetime`` values. Every preimage field must be present (null
where nullable); excluded fields and any other keys are ignored; nothing is defaulted.
Refusals raise ``InvalidFieldError`` with the field name as ``detail``. The serialization
runs in the compiled Form B kernel when built, else in its twin.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from canonkit.astp._live import former
from canonkit.astp.layer3.schema import EXECUTION, LAYOUTS, SKILL, WORKFLOW
from canonkit.errors import InvalidFieldError

__all__ = [
    "content_hash",
    "execution_node_hash",
    "form_b",
    "skill_invocation_hash",
    "workflow_declaration_hash",
]

_WORKFLOW = LAYOUTS[WORKFLOW]
_EXECUTION = LAYOUTS[EXECUTION]
_SKILL = LAYOUTS[SKILL]


def _layout(node_type: str) -> Any:
    try:
        return LAYOUTS[node_type]
    except (KeyError, TypeError):
        raise InvalidFieldError(f"unknown Layer 3 node type {node_type!r}",
                                detail="node_type") from None


def form_b(node_type: str, fields: Mapping[str, Any]) -> bytes:
    """The exact Form B preimage of a node of ``node_type``."""
    return former.form_b(_layout(node_type), fields)


def content_hash(node_type: str, fields: Mapping[str, Any]) -> str:
    """``hex(SHA3-256(form_b(node_type, fields)))``."""
    return former.form_b_hash(_layout(node_type), fields)


def workflow_declaration_hash(fields: Mapping[str, Any]) -> str:
    """Content hash of a WorkflowDeclaration (``status``, ``status_updated_at``,
    ``error_detail`` never take part: WF-003)."""
    return former.form_b_hash(_WORKFLOW, fields)


def execution_node_hash(fields: Mapping[str, Any]) -> str:
    """Content hash of an ExecutionNode (``status`` takes part: EX-002)."""
    return former.form_b_hash(_EXECUTION, fields)


def skill_invocation_hash(fields: Mapping[str, Any]) -> str:
    """Content hash of a SkillInvocation (``registry_id`` never takes part: SK-002)."""
    return former.form_b_hash(_SKILL, fields)
