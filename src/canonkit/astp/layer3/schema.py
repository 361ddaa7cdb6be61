"""What ASTP.md §19 and CONFORMANCE-LAYER3 fix about Layer 3: node types and their Form B
field orders, the excluded fields, the enumerations and transitions, the seven edges and the
four audit events with their required fields. Data only; the rules live in ``rules``."""
from __future__ import annotations

from canonkit.astp._py.common import (
    AUDIT_FIELDS,
    L3_DATETIME,
    L3_ENUM,
    L3_INT,
    L3_OBJECT,
    L3_TEXT,
    L3_UUID,
)

__all__ = [
    "AUDIT_EVENTS",
    "AUDIT_RECORD_MEMBERS",
    "EXPORT_MEMBERS",
    "FORMAT",
    "JOURNAL_FORMAT",
    "CREATION_EVENTS",
    "EDGES",
    "EDGE_MEMBERS",
    "EDGE_PROPERTIES",
    "EDGE_TYPES",
    "ERROR_TYPES",
    "EXCLUDED",
    "EXECUTION",
    "EXECUTION_STATUSES",
    "FIELD_ORDER",
    "HASH_VECTOR",
    "LAYOUTS",
    "MUTABLE_DECLARATION_FIELDS",
    "NODE_MEMBERS",
    "NODE_TYPES",
    "REQUIRED_FORWARD",
    "RESTATED",
    "SCHEMA_VERSION",
    "SKILL",
    "TERMINAL_STATUSES",
    "TRANSITIONS",
    "WORKFLOW",
    "WORKFLOW_STATUSES",
    "WORKFLOW_VERSION",
    "Layout",
]

#: the export and journal formats
FORMAT = "canonkit-layer3/1"
JOURNAL_FORMAT = "canonkit-layer3-journal/1"
#: the members of a canonkit-layer3/1 export, in the order ``Workspace.export()`` writes them
EXPORT_MEMBERS = ("format", "workspace_id", "episode_id", "chain_key", "cia", "nodes", "edges",
                  "audit")

WORKFLOW = "WorkflowDeclaration"
EXECUTION = "ExecutionNode"
SKILL = "SkillInvocation"
NODE_TYPES = (WORKFLOW, EXECUTION, SKILL)
SCHEMA_VERSION = "3.0.0"     # the reference schema_version of Layer 3 nodes
WORKFLOW_VERSION = "1.0.0"   # the reference default workflow_version

WORKFLOW_STATUSES = ("DECLARED", "IN_PROGRESS", "COMPLETED", "FAILED", "INTERRUPTED")
EXECUTION_STATUSES = ("COMPLETED", "FAILED", "INTERRUPTED")   # also SkillStatus
TERMINAL_STATUSES = frozenset({"COMPLETED", "FAILED", "INTERRUPTED"})
ERROR_TYPES = ("AGENT_ERROR", "TIMEOUT", "DEPENDENCY_FAILURE", "SKILL_ERROR", "UNKNOWN")
EDGE_TYPES = ("SEQUENTIAL", "CONDITIONAL", "PARALLEL")          # PRECEDES.edge_type

#: WF-004: the only permitted workflow status transitions
TRANSITIONS: dict[str, frozenset[str]] = {
    "DECLARED": frozenset({"IN_PROGRESS", "INTERRUPTED"}),
    "IN_PROGRESS": frozenset({"COMPLETED", "FAILED", "INTERRUPTED"}),
    "COMPLETED": frozenset(),
    "FAILED": frozenset(),
    "INTERRUPTED": frozenset(),
}

#: (name, Form B kind, nullable, admitted texts) in preimage order
Layout = tuple[tuple[str, int, bool, "frozenset[str] | None"], ...]

_STATUS = frozenset(EXECUTION_STATUSES)
_ERRORS = frozenset(ERROR_TYPES)

LAYOUTS: dict[str, Layout] = {
    WORKFLOW: (
        ("node_id", L3_UUID, False, None),
        ("node_type", L3_ENUM, False, frozenset({WORKFLOW})),
        ("schema_version", L3_TEXT, False, None),
        ("episode_id", L3_UUID, False, None),
        ("intention_id", L3_UUID, True, None),
        ("mandate_id", L3_UUID, True, None),
        ("workflow_name", L3_TEXT, False, None),
        ("workflow_version", L3_TEXT, False, None),
        ("declared_by", L3_TEXT, False, None),
        ("declared_at", L3_DATETIME, False, None),
        ("input_context", L3_OBJECT, False, None),
        ("expected_outputs", L3_OBJECT, True, None),
        ("timeout_ms", L3_INT, True, None),
    ),
    EXECUTION: (
        ("node_id", L3_UUID, False, None),
        ("node_type", L3_ENUM, False, frozenset({EXECUTION})),
        ("schema_version", L3_TEXT, False, None),
        ("workflow_id", L3_UUID, False, None),
        ("episode_id", L3_UUID, False, None),
        ("sequence_index", L3_INT, False, None),
        ("step_name", L3_TEXT, False, None),
        ("agent_id", L3_TEXT, False, None),
        ("executed_at", L3_DATETIME, False, None),
        ("duration_ms", L3_INT, True, None),
        ("input_state", L3_OBJECT, False, None),
        ("output_state", L3_OBJECT, True, None),
        ("status", L3_ENUM, False, _STATUS),
        ("error_detail", L3_OBJECT, True, None),
        ("error_type", L3_ENUM, True, _ERRORS),
    ),
    SKILL: (
        ("node_id", L3_UUID, False, None),
        ("node_type", L3_ENUM, False, frozenset({SKILL})),
        ("schema_version", L3_TEXT, False, None),
        ("execution_node_id", L3_UUID, False, None),
        ("workflow_id", L3_UUID, False, None),
        ("episode_id", L3_UUID, False, None),
        ("skill_id", L3_TEXT, False, None),
        ("skill_source", L3_TEXT, False, None),
        ("skill_version", L3_TEXT, False, None),
        ("invoked_by", L3_TEXT, False, None),
        ("invoked_at", L3_DATETIME, False, None),
        ("duration_ms", L3_INT, True, None),
        ("input_parameters", L3_OBJECT, False, None),
        ("output_result", L3_OBJECT, True, None),
        ("status", L3_ENUM, False, _STATUS),
        ("error_detail", L3_OBJECT, True, None),
    ),
}

#: WF-001, EX-001, SK-001: the preimage fields of each node type, in order
FIELD_ORDER: dict[str, tuple[str, ...]] = {t: tuple(f[0] for f in LAYOUTS[t]) for t in NODE_TYPES}
#: fields a stored node carries that never enter its content hash
EXCLUDED: dict[str, tuple[str, ...]] = {
    WORKFLOW: ("status", "status_updated_at", "error_detail", "content_hash"),
    EXECUTION: ("content_hash",),
    SKILL: ("registry_id", "content_hash"),
}
#: L3-I4: the only fields of a WorkflowDeclaration that may change after it is written
MUTABLE_DECLARATION_FIELDS = ("status", "status_updated_at", "error_detail")
#: the vector that names each node type's content hash
HASH_VECTOR = {WORKFLOW: "WF-001", EXECUTION: "EX-001", SKILL: "SK-001"}

#: L3-007: edge name -> (from node type, to: a node type or the referenced kind, the field of
#: the from-node naming the target, required)
EDGES: dict[str, tuple[str, str, str | None, bool]] = {
    "DECLARED_WITHIN": (WORKFLOW, "Episode", "episode_id", True),
    "SERVES_INTENTION": (WORKFLOW, "Intention", "intention_id", False),
    "SPAWNED_BY_MANDATE": (WORKFLOW, "Mandate", "mandate_id", False),
    "EXECUTES_WITHIN": (EXECUTION, WORKFLOW, "workflow_id", True),
    "PRECEDES": (EXECUTION, EXECUTION, None, False),
    "INVOKED_WITHIN": (SKILL, EXECUTION, "execution_node_id", True),
    "SKILL_PRECEDES": (SKILL, SKILL, None, False),
}

#: L3-008: the properties canonkit-layer3/1 records on each edge (the other six carry none)
EDGE_PROPERTIES: dict[str, tuple[str, ...]] = {
    name: ("edge_type", "sequence_gap") if name == "PRECEDES" else () for name in EDGES}
#: the members of an exported edge object
EDGE_MEMBERS = frozenset({"name", "from", "to", "properties"})
#: the members of an exported node of each type: its preimage and excluded fields
NODE_MEMBERS: dict[str, frozenset[str]] = {
    t: frozenset(FIELD_ORDER[t]) | frozenset(EXCLUDED[t]) for t in NODE_TYPES}

#: CIA-004: delta_type -> (node type it writes, required forward fields; "?" = may be null)
AUDIT_EVENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "WORKFLOW_DECLARED": (WORKFLOW, (
        "workflow_id", "episode_id", "intention_id?", "mandate_id?", "declared_by", "declared_at",
        "content_hash", "cia_identifier")),
    "EXECUTION_RECORDED": (EXECUTION, (
        "execution_node_id", "workflow_id", "episode_id", "sequence_index", "agent_id", "status",
        "executed_at", "content_hash", "cia_identifier")),
    "SKILL_INVOKED": (SKILL, (
        "skill_invocation_id", "execution_node_id", "workflow_id", "episode_id", "skill_id",
        "skill_source", "invoked_by", "invoked_at", "status", "content_hash", "cia_identifier")),
    "WORKFLOW_CLOSED": (WORKFLOW, (
        "workflow_id", "final_status", "status_updated_at", "error_detail?", "cia_identifier")),
}
#: creation event of each node type and the forward field holding the new node's id
CREATION_EVENTS: dict[str, tuple[str, str]] = {
    "WORKFLOW_DECLARED": (WORKFLOW, "workflow_id"),
    "EXECUTION_RECORDED": (EXECUTION, "execution_node_id"),
    "SKILL_INVOKED": (SKILL, "skill_invocation_id"),
}
#: CIA-004: each event's required forward fields but the CIA's own, as (name, whether it may
#: be null)
REQUIRED_FORWARD: dict[str, tuple[tuple[str, bool], ...]] = {
    event: tuple((name.rstrip("?"), name.endswith("?")) for name in required
                 if name.rstrip("?") != "cia_identifier")
    for event, (_, required) in AUDIT_EVENTS.items()}
#: creation-event forward field -> the node field it restates
RESTATED: dict[str, dict[str, str]] = {
    "WORKFLOW_DECLARED": {"episode_id": "episode_id", "intention_id": "intention_id",
                          "mandate_id": "mandate_id", "declared_by": "declared_by",
                          "declared_at": "declared_at", "content_hash": "content_hash"},
    "EXECUTION_RECORDED": {"workflow_id": "workflow_id", "episode_id": "episode_id",
                           "sequence_index": "sequence_index", "agent_id": "agent_id",
                           "status": "status", "executed_at": "executed_at",
                           "content_hash": "content_hash"},
    "SKILL_INVOKED": {"execution_node_id": "execution_node_id", "workflow_id": "workflow_id",
                      "episode_id": "episode_id", "skill_id": "skill_id",
                      "skill_source": "skill_source", "invoked_by": "invoked_by",
                      "invoked_at": "invoked_at", "status": "status",
                      "content_hash": "content_hash"},
}
#: the members of an audit record v2 (§14): its hashed fields and its hash
AUDIT_RECORD_MEMBERS = frozenset(name for name, _ in AUDIT_FIELDS) | {"record_hash"}
