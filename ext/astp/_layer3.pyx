"""Compiled ASTP Layer 3 verification kernel: the fast path of
``canonkit.astp.layer3.verify``, reading the nodes, audit records and edges of an export in
which the verifier would find nothing, with the verifier's own bookkeeping for them.

The rules the verifier applies (``canonkit.astp.layer3.rules``) run here in C for values of
the exact JSON types; a value of any other type goes to the rule itself, exactly as the
twin ``canonkit.astp._py.layer3`` asks it, so the two read the same things (the
differential tests hold them to that, and the verifier with either to the verifier with a
kernel that reads nothing). Form B and the audit record hash are the compiled Form B and
audit kernels. The Layer 3 tables are read from ``canonkit.astp.layer3.schema`` at the
first call (``canonkit.astp.layer3`` binds the kernels as it loads). Twin:
docs/astp-kernel-api.md.
"""
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_SetItem, PyDict_Size
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.object cimport Py_EQ, PyObject_RichCompareBool
from cpython.ref cimport PyObject
from cpython.set cimport PySet_Contains
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.math cimport copysign

from collections.abc import Mapping

from canonkit.astp._audit import audit_record_digest as _digest
from canonkit.astp._formb import form_b_hash as _form_b_hash
from canonkit.astp._py.common import same_json as _same_json

include "astp_kernel.pxi"
include "astp_hex_text.pxi"


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)

__all__ = ["clean_edges", "clean_events", "clean_nodes", "clean_records", "edge_shapes",
           "missing_edges", "note_step", "unmatched_nodes"]


# --- the tables (``schema``), and the rules for values of other types -------------------------

cdef bint _loaded = False
cdef object _rules, _delta_value
cdef str WORKFLOW, EXECUTION, SKILL, PRECEDES
cdef str S_COMPLETED = "COMPLETED", S_DECLARED = "DECLARED", S_IN_PROGRESS = "IN_PROGRESS"
cdef str WORKFLOW_DECLARED = "WORKFLOW_DECLARED", EXECUTION_RECORDED = "EXECUTION_RECORDED"
cdef str SKILL_INVOKED = "SKILL_INVOKED"
cdef dict _LAYOUTS, _NODE_MEMBERS, _BEYOND_LAYOUT, _AUDIT_EVENTS, _CREATION_EVENTS, _REQUIRED, _RESTATED
cdef dict _EDGES, _EDGE_PROPERTIES, _TRANSITIONS
cdef frozenset _WORKFLOW_STATUSES, _EXECUTION_STATUSES, _ERROR_TYPES, _TERMINAL
cdef frozenset _RECORD_MEMBERS, _EDGE_MEMBERS, _EDGE_TYPES, _NODE_TYPES
#: the creation event of a node that has none, as the verifier reads it
cdef object _UNKNOWN = ("", {}, -1)


cdef int _load() except -1:
    global _loaded, _rules, _delta_value, WORKFLOW, EXECUTION, SKILL, PRECEDES, _LAYOUTS
    global _NODE_MEMBERS, _BEYOND_LAYOUT, _AUDIT_EVENTS, _CREATION_EVENTS, _REQUIRED, _RESTATED, _EDGES
    global _EDGE_PROPERTIES, _TRANSITIONS, _WORKFLOW_STATUSES, _EXECUTION_STATUSES
    global _ERROR_TYPES, _TERMINAL, _RECORD_MEMBERS, _EDGE_MEMBERS, _EDGE_TYPES, _NODE_TYPES
    from canonkit.astp.layer3 import rules, schema
    from canonkit.astp.layer3.events import delta_value
    _rules, _delta_value = rules, delta_value
    WORKFLOW, EXECUTION, SKILL = schema.WORKFLOW, schema.EXECUTION, schema.SKILL
    PRECEDES = "PRECEDES"
    _NODE_TYPES = frozenset(schema.NODE_TYPES)
    _LAYOUTS = {t: tuple(layout) for t, layout in schema.LAYOUTS.items()}
    _NODE_MEMBERS = dict(schema.NODE_MEMBERS)
    _BEYOND_LAYOUT = {t: tuple(sorted(members - set(schema.FIELD_ORDER[t])))
                      for t, members in schema.NODE_MEMBERS.items()}
    _AUDIT_EVENTS = dict(schema.AUDIT_EVENTS)
    _CREATION_EVENTS = dict(schema.CREATION_EVENTS)
    _REQUIRED = dict(schema.REQUIRED_FORWARD)
    _RESTATED = {event: tuple(fields.items()) for event, fields in schema.RESTATED.items()}
    _EDGES = dict(schema.EDGES)
    _EDGE_PROPERTIES = dict(schema.EDGE_PROPERTIES)
    _TRANSITIONS = dict(schema.TRANSITIONS)
    _WORKFLOW_STATUSES = frozenset(schema.WORKFLOW_STATUSES)
    _EXECUTION_STATUSES = frozenset(schema.EXECUTION_STATUSES)
    _ERROR_TYPES = frozenset(schema.ERROR_TYPES)
    _TERMINAL = frozenset(schema.TERMINAL_STATUSES)
    _RECORD_MEMBERS = frozenset(schema.AUDIT_RECORD_MEMBERS)
    _EDGE_MEMBERS = frozenset(schema.EDGE_MEMBERS)
    _EDGE_TYPES = frozenset(schema.EDGE_TYPES)
    _loaded = True
    return 0


cdef void _untrack(object value, int depth):
    """Leaves the containers of a value read from JSON text to reference counting alone:
    a tree holds no cycle, and the verifier keeps it (and the tuples naming it) to the end
    without changing it, so the collector need never walk it — nor, through it, the
    export the collections it would trigger would walk as well."""
    cdef type t = type(value)
    cdef Py_ssize_t i, pos = 0
    cdef PyObject *key
    cdef PyObject *item
    if depth > 600:
        return
    if t is dict:
        PyObject_GC_UnTrack(<void *>value)
        while PyDict_Next(value, &pos, &key, &item):
            _untrack(<object>item, depth + 1)
    elif t is list:
        PyObject_GC_UnTrack(<void *>value)
        for i in range(PyList_GET_SIZE(value)):
            _untrack(<object>PyList_GET_ITEM(value, i), depth + 1)


cdef inline object _kept(tuple value):
    """A tuple the verifier keeps (of text, numbers and untracked values), untracked."""
    PyObject_GC_UnTrack(<void *>value)
    return value


cdef inline int _ready() except -1:
    if not _loaded:
        _load()
    return 0


cdef bint _holds(object check, tuple args):
    """Whether a rule of ``rules`` passes; any exception is a doubt (the twin's ``_holds``)."""
    try:
        check(*args)
    except Exception:
        return False
    return True


cdef inline object _get(dict d, object key):
    """``d.get(key)`` as a borrowed-then-owned reference (None when absent)."""
    cdef PyObject *ref = PyDict_GetItem(d, key)
    return None if ref == NULL else <object>ref


cdef inline bint _has(dict d, object key):
    return PyDict_GetItem(d, key) != NULL


cdef inline bint _eq(object a, object b) except -1:
    return PyObject_RichCompareBool(a, b, Py_EQ)


cdef bint _keys_within(dict d, frozenset allowed) except -1:
    """``d.keys() <= allowed``."""
    cdef Py_ssize_t pos = 0
    cdef PyObject *key
    cdef PyObject *value
    while PyDict_Next(d, &pos, &key, &value):
        if not PySet_Contains(allowed, <object>key):
            return False
    return True


cdef inline bint _word(object value):
    """An exact ``int`` within 64 bits (far inside the strict reader's digit bound)."""
    cdef int overflow = 0
    PyLong_AsLongLongAndOverflow(value, &overflow)
    return overflow == 0


cdef bint _same(object a, object b) except -1:
    """``same_json`` (``canonkit.astp._py.common``) for exact JSON types in C; anything else
    through it."""
    cdef type t = type(a)
    cdef Py_ssize_t i, n, pos = 0
    cdef PyObject *key
    cdef PyObject *value
    cdef PyObject *other
    cdef double x, y
    if t is not type(b):
        return False
    if t is str or t is int or a is None or t is bool:
        return _eq(a, b)
    if t is dict:
        if PyDict_Size(a) != PyDict_Size(b):
            return False
        while PyDict_Next(a, &pos, &key, &value):
            other = PyDict_GetItem(b, <object>key)
            if other == NULL or not _same(<object>value, <object>other):
                return False
        return True
    if t is list:
        n = PyList_GET_SIZE(a)
        if n != PyList_GET_SIZE(b):
            return False
        for i in range(n):
            if not _same(<object>PyList_GET_ITEM(a, i), <object>PyList_GET_ITEM(b, i)):
                return False
        return True
    if t is float:
        x, y = <double>a, <double>b
        if x != x:
            return y != y
        return x == y and copysign(1.0, x) == copysign(1.0, y)
    return bool(_same_json(a, b))


# --- the rules in C (each falls back to the rule itself for other types) ----------------------

cdef bint _execution_errors_hold(dict node) except -1:
    """``rules.check_execution_errors`` passes (EX-003)."""
    cdef object status = _get(node, "status"), error_type = _get(node, "error_type")
    if type(status) is not str or (error_type is not None and type(error_type) is not str):
        return _holds(_rules.check_execution_errors, (node,))
    if status == S_COMPLETED:
        if error_type is not None or _get(node, "error_detail") is not None:
            return False
    elif PySet_Contains(_EXECUTION_STATUSES, status):
        if error_type is None:
            return False
    else:
        return False
    return error_type is None or PySet_Contains(_ERROR_TYPES, error_type)


cdef bint _edge_properties_hold(str name, object properties, object subject) except -1:
    """``rules.check_edge_properties`` passes (L3-008)."""
    cdef tuple wanted
    cdef object edge_type, gap
    if type(properties) is not dict:
        return _holds(_rules.check_edge_properties, (name, properties, subject))
    wanted = <tuple>_EDGE_PROPERTIES[name]
    if PyDict_Size(properties) != PyTuple_GET_SIZE(wanted):
        return False
    for key in wanted:
        if not _has(properties, key):
            return False
    if name != PRECEDES:
        return True
    edge_type = (<dict>properties)["edge_type"]
    gap = (<dict>properties)["sequence_gap"]
    if type(edge_type) is not str or not PySet_Contains(_EDGE_TYPES, edge_type):
        return False
    return type(gap) is int and gap > 0


cdef bint _precedes_holds(dict earlier, object before, dict node) except -1:
    """``rules.check_precedes`` passes (L3-007)."""
    cdef object first, then
    if not _eq(_get(earlier, "node_type"), EXECUTION) or not _eq(
            _get(earlier, "workflow_id"), _get(node, "workflow_id")):
        return False
    first, then = _get(earlier, "sequence_index"), _get(node, "sequence_index")
    return type(first) is int and type(then) is int and then > first


# --- nodes ------------------------------------------------------------------------------------

def clean_nodes(items, Py_ssize_t start, ledger) -> int:
    """Reads ``items[start:]`` while each node holds, storing it in ``ledger.nodes`` and an
    ExecutionNode's step in ``ledger.steps`` (or ``ledger.collisions``); the index of the
    first node it did not read (the twin says what holds)."""
    cdef Py_ssize_t i, n = len(items)
    cdef dict nodes = ledger.nodes, steps = ledger.steps
    cdef list collisions = ledger.collisions
    cdef object node, node_id
    _ready()
    for i in range(start, n):
        node = items[i]
        if not _node_holds(node, nodes):
            return i
        node_id = (<dict>node)["node_id"]
        nodes[node_id] = node
        if _eq((<dict>node)["node_type"], EXECUTION):
            _note_step(steps, collisions, node_id, node)
    return n


def note_step(ledger, node_id, node) -> None:
    """Files an ExecutionNode by (``workflow_id`` text, integer ``sequence_index``): in
    ``ledger.steps`` when it is the first there, else in ``ledger.collisions``."""
    _note_step(ledger.steps, ledger.collisions, node_id, node)


cdef int _note_step(dict steps, list collisions, object node_id, object node) except -1:
    cdef object workflow_id, index, key
    cdef PyObject *first
    if type(node) is dict:
        workflow_id, index = _get(node, "workflow_id"), _get(node, "sequence_index")
    else:
        workflow_id, index = node.get("workflow_id"), node.get("sequence_index")
    if not isinstance(workflow_id, str) or type(index) is not int:
        return 0
    key = (workflow_id, index)
    first = PyDict_GetItem(steps, key)
    if first != NULL:
        collisions.append((<object>first, node_id))
    else:
        steps[_kept(key)] = node_id
    return 0


cdef bint _node_holds(object node, dict nodes) except -1:
    cdef object node_type, node_id, stored, status, layout
    cdef PyObject *beyond
    cdef Py_ssize_t members, k
    if type(node) is not dict:
        return False
    node_type, node_id = _get(node, "node_type"), _get(node, "node_id")
    if type(node_type) is not str or type(node_id) is not str or _has(nodes, node_id):
        return False
    beyond = PyDict_GetItem(_BEYOND_LAYOUT, node_type)
    if beyond == NULL:
        return False
    layout = _LAYOUTS[node_type]
    try:
        computed = _form_b_hash(layout, node)
    except Exception:
        return False
    # only its own members: Form B found every layout field, so the node holds nothing
    # else when its size is theirs and those of the other members it holds
    members = PyTuple_GET_SIZE(layout)
    for k in range(PyTuple_GET_SIZE(<tuple>beyond)):
        members += _has(node, <object>PyTuple_GET_ITEM(<tuple>beyond, k))
    if PyDict_Size(node) != members:
        return False
    stored = _get(node, "content_hash")
    if type(stored) is not str or not _eq(stored, computed):
        return False
    if node_type == EXECUTION:
        return _execution_errors_hold(node)
    if node_type == SKILL:
        if _get(node, "registry_id") is None:
            return True
        return _holds(_rules.check_registry_id, (node,))
    status = _get(node, "status")
    return type(status) is str and PySet_Contains(_WORKFLOW_STATUSES, status)


def unmatched_nodes(dict nodes, set matched) -> list:
    """The ids of the nodes (in order) not in ``matched``."""
    cdef list out = []
    cdef Py_ssize_t pos = 0
    cdef PyObject *key
    cdef PyObject *value
    while PyDict_Next(nodes, &pos, &key, &value):
        if not PySet_Contains(matched, <object>key):
            out.append(<object>key)
    return out


cdef bint _matches(object node, str delta_type, dict forward) except -1:
    """Whether a node matches its creation event (the twin's ``_matches``)."""
    cdef tuple restated
    cdef object value, key, name
    cdef PyObject *ref
    cdef Py_ssize_t k
    if type(node) is not dict or not _eq(
            (<tuple>_CREATION_EVENTS[delta_type])[0], _get(node, "node_type")):
        return False
    restated = <tuple>_RESTATED[delta_type]
    for k in range(PyTuple_GET_SIZE(restated)):
        key = (<tuple>PyTuple_GET_ITEM(restated, k))[0]
        name = (<tuple>PyTuple_GET_ITEM(restated, k))[1]
        ref = PyDict_GetItem(forward, key)
        if ref == NULL:
            continue        # the verifier reports it as CIA-004
        value = _get(node, name)
        try:
            if not (type(value) is str and PyUnicode_IS_ASCII(value) or value is None
                    or value is True or value is False or type(value) is int and _word(value)):
                value = _delta_value(value)     # what delta_value leaves as it is, kept
            if not _eq(<object>ref, value):
                return False
        except Exception:
            return False
    return True


# --- the audit chain --------------------------------------------------------------------------

cdef class _Ledger:
    """The verifier's bookkeeping that events touch, read once per call."""
    cdef object cia, workflow_type
    cdef dict nodes, created, audited_edges, workflows
    cdef set matched

    def __init__(self, ledger):
        self.cia = ledger.cia
        self.nodes = ledger.nodes
        self.created = ledger.created
        self.audited_edges = ledger.audited_edges
        self.workflows = ledger.workflows
        self.workflow_type = ledger.Workflow
        self.matched = ledger.matched


def clean_records(records, episode_id, workspace_id, ledger) -> tuple:
    """One pass over the chain: each record's link and hash checked and its event replayed,
    as long as both hold. ``(forwards, stop)``: the forward deltas as read when the whole
    chain holds, else None; and the index of the first record whose event it did not
    replay (the twin says what holds)."""
    cdef list forwards = []
    cdef object record, previous = None, prior, stored, sequence, forward, key, session
    cdef Py_ssize_t i = 0, stop = -1
    cdef tuple digest
    cdef _Ledger book
    _ready()
    if type(episode_id) is not str or type(workspace_id) is not str or not workspace_id:
        return None, 0
    book = _Ledger(ledger)
    for record in records:
        if type(record) is not dict or not _keys_within(record, _RECORD_MEMBERS):
            return None, (i if stop < 0 else stop)
        sequence, stored = _get(record, "delta_sequence"), _get(record, "record_hash")
        prior, key = _get(record, "prior_audit_hash"), _get(record, "chain_key")
        session = _get(record, "session_id")
        if (type(sequence) is not int or sequence != i + 1 or not _lower_hex(stored, 64)
                or type(key) is not str or not _eq(key, episode_id)
                or type(session) is not str or not _eq(session, workspace_id)
                or prior is not previous and (type(prior) is not str or previous is None
                                              or not _eq(prior, previous))):
            return None, (i if stop < 0 else stop)
        try:
            digest = _digest(record)
        except Exception:
            return None, (i if stop < 0 else stop)
        if not _eq(<object>PyTuple_GET_ITEM(digest, 0), stored):
            return None, (i if stop < 0 else stop)
        forward = <object>PyTuple_GET_ITEM(digest, 1)
        _untrack(forward, 0)
        previous = stored
        if stop < 0 and not _event(i, record, forward, book):
            stop = i
        forwards.append(None if stop < 0 else forward)
        i += 1
    return forwards, (i if stop < 0 else stop)


def clean_events(records, forwards, Py_ssize_t start, ledger) -> int:
    """Replays ``records[start:]`` while each event holds, keeping the ledger as the
    verifier keeps it; the index of the first record it did not replay (the twin says what
    holds)."""
    cdef Py_ssize_t i, n = len(records)
    cdef _Ledger book
    _ready()
    if start >= n:
        return n
    book = _Ledger(ledger)
    for i in range(start, n):
        if not _event(i, records[i], forwards[i], book):
            return i
    return n


cdef bint _event(Py_ssize_t i, object record, object forward, _Ledger book) except -1:
    """Replays record i's event if it holds; whether it did (a record of no event holds)."""
    cdef object delta_type
    cdef list edges
    if type(record) is not dict:
        return False
    delta_type = _get(record, "delta_type")
    if not isinstance(delta_type, str):
        return True
    if type(delta_type) is not str:
        return False
    if not _has(_AUDIT_EVENTS, delta_type):
        return True
    if type(_get(record, "forward_delta")) is not str or type(forward) is not dict:
        return False
    edges = []
    if not _event_holds(delta_type, forward, book, edges):
        return False
    _replay(i, delta_type, forward, book, edges)
    return True


cdef bint _recorded_edges(dict forward, list out) except -1:
    """The edges a creation event recorded into ``out`` as ((name, from, to), edge); False
    when one is of a shape left to the verifier."""
    cdef object edges = _get(forward, "edges")
    cdef object edge, name, source, target
    cdef Py_ssize_t i
    if type(edges) is not list:
        return True
    for i in range(PyList_GET_SIZE(edges)):
        edge = <object>PyList_GET_ITEM(edges, i)
        if type(edge) is not dict:
            if isinstance(edge, Mapping):
                return False
            continue
        name, source, target = _get(edge, "name"), _get(edge, "from"), _get(edge, "to")
        if type(name) is str and type(source) is str and type(target) is str:
            out.append(((name, source, target), edge))
        elif isinstance(name, str) or isinstance(source, str) or isinstance(target, str):
            return False
    return True


cdef bint _event_holds(str delta_type, dict forward, _Ledger book, list edges) except -1:
    cdef tuple event = <tuple>_AUDIT_EVENTS[delta_type]
    cdef tuple required = <tuple>_REQUIRED[delta_type]
    cdef object identifier = _get(forward, "cia_identifier"), node_id, workflow_id, state
    cdef object transition, final, status
    cdef PyObject *ref
    cdef PyObject *creation
    cdef Py_ssize_t k
    if identifier is None or (book.cia and not _eq(identifier, book.cia[event[0]])):
        return False
    for k in range(PyTuple_GET_SIZE(required)):
        entry = <tuple>PyTuple_GET_ITEM(required, k)
        ref = PyDict_GetItem(forward, entry[0])
        if ref == NULL or (<object>ref is None and not entry[1]):
            return False
    creation = PyDict_GetItem(_CREATION_EVENTS, delta_type)
    if creation != NULL:
        node_id = _get(forward, (<tuple>creation)[1])
        if (type(node_id) is not str or _has(book.created, node_id)
                or not _recorded_edges(forward, edges)):
            return False
    if delta_type == WORKFLOW_DECLARED or delta_type == SKILL_INVOKED:
        return True
    workflow_id = _get(forward, "workflow_id")
    if type(workflow_id) is not str:
        return False
    ref = PyDict_GetItem(book.workflows, workflow_id)
    if ref == NULL or <object>ref is None:
        return False
    state = <object>ref
    status = state.status
    if delta_type == EXECUTION_RECORDED:
        transition = _get(forward, "workflow_transition")
        if _eq(status, S_DECLARED):
            return (type(transition) is dict
                    and _eq(_get(transition, "from"), S_DECLARED)
                    and _eq(_get(transition, "to"), S_IN_PROGRESS)
                    and _eq(_get(transition, "workflow_id"), workflow_id))
        return not PySet_Contains(_TERMINAL, status) and transition is None
    final = _get(forward, "final_status")     # WORKFLOW_CLOSED
    if type(final) is not str or not PySet_Contains(_TERMINAL, final):
        return False
    if type(status) is str:     # rules.check_transition
        ref = PyDict_GetItem(_TRANSITIONS, status)
        return ref != NULL and PySet_Contains(<object>ref, final)
    return _holds(_rules.check_transition, (status, final))


cdef int _replay(Py_ssize_t i, str delta_type, dict forward, _Ledger book,
                 list edges) except -1:
    """The bookkeeping of an event that holds (``edges``: its recorded edges)."""
    cdef PyObject *creation = PyDict_GetItem(_CREATION_EVENTS, delta_type)
    cdef object workflow_id = _get(forward, "workflow_id"), state, node_id
    cdef Py_ssize_t k
    if creation != NULL:
        node_id = forward[(<tuple>creation)[1]]
        for k in range(PyList_GET_SIZE(edges)):
            entry = <tuple>PyList_GET_ITEM(edges, k)
            PyDict_SetItem(book.audited_edges, _kept(<tuple>entry[0]), entry[1])
        if _matches(_get(book.nodes, node_id), delta_type, forward):
            book.matched.add(node_id)
            book.created[node_id] = _kept((delta_type, None, i))
        else:
            book.created[node_id] = _kept((delta_type, forward, i))
    if delta_type == WORKFLOW_DECLARED:
        book.workflows[workflow_id] = book.workflow_type(_get(forward, "declared_at"))
        return 0
    if delta_type == SKILL_INVOKED:
        return 0
    state = book.workflows[workflow_id]
    if delta_type == EXECUTION_RECORDED:
        if _eq(state.status, S_DECLARED):
            state.status = S_IN_PROGRESS
            state.status_updated_at = _get(<dict>forward["workflow_transition"],
                                           "status_updated_at")
        state.executions += 1
        return 0
    state.status = forward["final_status"]
    state.status_updated_at = _get(forward, "status_updated_at")
    state.error_detail = _get(forward, "error_detail")
    return 0


# --- edges ------------------------------------------------------------------------------------

def clean_edges(items, Py_ssize_t start, dict exported, ledger) -> int:
    """Reads ``items[start:]`` while each edge holds, keeping each in ``exported`` by
    (name, from, to), and in ``ledger.shaped`` when it also joins the right nodes the right
    way; the index of the first edge it did not read (the twin says what holds)."""
    cdef Py_ssize_t i, n = len(items)
    cdef object edge, name, source, target, key, properties
    cdef dict audited_edges = ledger.audited_edges, nodes = ledger.nodes
    cdef dict created = ledger.created
    cdef set shaped = ledger.shaped
    cdef PyObject *audited
    _ready()
    for i in range(start, n):
        edge = items[i]
        if type(edge) is not dict:
            return i
        name, source, target = _get(edge, "name"), _get(edge, "from"), _get(edge, "to")
        if type(name) is not str or type(source) is not str or type(target) is not str:
            return i
        if not _has(_EDGES, name) or not _keys_within(edge, _EDGE_MEMBERS):
            return i
        key = _kept((name, source, target))
        if _has(exported, key):
            return i
        audited = PyDict_GetItem(audited_edges, key)
        if audited == NULL or type(<object>audited) is not dict:
            return i
        properties = _get(edge, "properties")
        if not _edge_properties_hold(name, properties, target if name == PRECEDES else source):
            return i
        if not _same(properties, _get(<dict>audited, "properties")):
            return i
        PyDict_SetItem(exported, key, edge)
        if _shape_holds(name, source, target, edge, nodes, created):
            shaped.add(key)
    return n


cdef bint _shape_holds(str name, str source, str target, object edge, dict nodes,
                       dict created) except -1:
    cdef tuple shape = <tuple>_EDGES[name]
    cdef object from_type = shape[0], to_type = shape[1], via = shape[2]
    cdef object node = _get(nodes, source), other, properties
    if type(node) is not dict or not _eq(_get(node, "node_type"), from_type):
        return False
    if via is not None:
        if not _eq(_get(node, via), target):
            return False
        if not PySet_Contains(_NODE_TYPES, to_type):
            return True     # an Episode, Intention or Mandate: not in the export
        other = _get(nodes, target)
        return type(other) is dict and _eq(_get(other, "node_type"), to_type)
    other = _get(nodes, target)
    if type(other) is not dict or not _eq(_get(other, "node_type"), to_type):
        return False
    if name == PRECEDES:
        if not _precedes_holds(node, source, other):
            return False
        properties = _get(edge, "properties") if type(edge) is dict else edge.get("properties")
        if type(properties) is dict:
            if type(_get(properties, "sequence_gap")) is not int:
                return True
            # rules.check_sequence_gap: the gap is the later sequence_index minus the earlier
            return _eq(properties["sequence_gap"],
                       (<dict>other)["sequence_index"] - (<dict>node)["sequence_index"])
        if isinstance(properties, Mapping) and type(properties.get("sequence_gap")) is int:
            return _holds(_rules.check_sequence_gap, (node, other, properties))
        return True
    return _eq(_get(node, "execution_node_id"), _get(other, "execution_node_id")) and (
        (<tuple>created.get(source, _UNKNOWN))[2] < (<tuple>created.get(target, _UNKNOWN))[2])


def edge_shapes(dict exported, set shaped, dict outgoing) -> list:
    """Files every exported edge in ``outgoing`` (name -> the nodes it leaves) and gives the
    (name, from, to) of those (in order) not in ``shaped``."""
    cdef list out = []
    cdef Py_ssize_t pos = 0
    cdef PyObject *key
    cdef PyObject *edge
    cdef PyObject *ref
    cdef tuple k
    cdef set sources
    while PyDict_Next(exported, &pos, &key, &edge):
        k = <tuple>key
        ref = PyDict_GetItem(outgoing, k[0])
        if ref == NULL:
            sources = set()
            outgoing[k[0]] = sources
        else:
            sources = <set>ref
        sources.add(k[1])
        if not PySet_Contains(shaped, k):
            out.append(k)
    return out


def missing_edges(nodes, dict outgoing) -> list:
    """The ids of the nodes (in order) that lack an edge their type requires (or their
    field names), or carry one their field does not name."""
    cdef list out = []
    cdef object node_type, via, required, from_type
    cdef PyObject *ref
    cdef bint present, wanted
    _ready()
    for node_id, node in nodes.items():
        node_type = _get(node, "node_type") if type(node) is dict else node.get("node_type")
        for name, shape in _EDGES.items():
            from_type, via, required = (<tuple>shape)[0], (<tuple>shape)[2], (<tuple>shape)[3]
            if via is None or not _eq(node_type, from_type):
                continue
            ref = PyDict_GetItem(outgoing, name)
            present = ref != NULL and PySet_Contains(<object>ref, node_id)
            wanted = bool(required) or (
                (_get(node, via) if type(node) is dict else node.get(via)) is not None)
            if present != wanted:
                out.append(node_id)
                break
    return out
