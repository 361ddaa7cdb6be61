/* A kind's check, _fast and _envelope read from their __slots__ storage
 * (ext/objects/_address.pyx): address_object reads the three attributes of a kind on every
 * call, and for a kind whose class stores them in slots and does not customise attribute
 * access, reading the slot is exactly what the attribute access does, without it.
 *
 * ao_slots remembers one class (a strong reference) and where its instances keep each of
 * the three attributes; ao_slot answers NULL, with no exception, whenever the caller must
 * use the attribute access instead: another class, a class that customises attribute
 * access or defines the attribute otherwise, or an empty slot (the access then raises
 * AttributeError, as it would have). */
#ifndef CANONKIT_ADDRESS_SLOTS_H
#define CANONKIT_ADDRESS_SLOTS_H

#include <Python.h>
#include <structmember.h>

#define AO_SLOTS 3

static const char *const ao_slot_names[AO_SLOTS] = {"check", "_fast", "_envelope"};

typedef struct {
    PyObject *type;                /* the class the offsets are for (owned), or NULL */
    Py_ssize_t offset[AO_SLOTS];   /* -1: not a plain slot of that class */
} ao_slots;

/* Learn where instances of `type` keep the three attributes. */
static void ao_slots_learn(ao_slots *s, PyTypeObject *type) {
    int i;
    PyObject *descr;
    PyMemberDef *m;
    Py_INCREF(type);
    Py_XDECREF(s->type);
    s->type = (PyObject *)type;
    for (i = 0; i < AO_SLOTS; i++) {
        s->offset[i] = -1;
        if (type->tp_getattro != PyObject_GenericGetAttr)
            continue;
        descr = PyObject_GetAttrString((PyObject *)type, ao_slot_names[i]);
        if (descr == NULL) {
            PyErr_Clear();
            continue;
        }
        if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            m = ((PyMemberDescrObject *)descr)->d_member;
            if (m->type == T_OBJECT_EX && m->offset > 0 &&
                    (size_t)m->offset + sizeof(PyObject *) <= (size_t)type->tp_basicsize)
                s->offset[i] = m->offset;
        }
        Py_DECREF(descr);
    }
}

/* The attribute `which` of obj (borrowed), or NULL: use the attribute access. */
static inline PyObject *ao_slot(ao_slots *s, PyObject *obj, int which) {
    if ((PyObject *)Py_TYPE(obj) != s->type)
        ao_slots_learn(s, Py_TYPE(obj));
    if (s->offset[which] < 0)
        return NULL;
    return *(PyObject **)((char *)obj + s->offset[which]);
}

static inline void ao_slots_clear(ao_slots *s) {
    Py_CLEAR(s->type);
}

#endif
