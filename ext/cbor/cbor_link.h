/* Link objects (canonkit.cbor.Link: one slot, cid_bytes) made and read by the CBOR kernels
 * without calling into Python: the decoder builds a Link as object.__new__ would
 * (tp_alloc) and fills its slot; the encoder reads the slot of an exact Link. Both use the
 * offset the slot's member descriptor names, found once per module by ck_link_setup;
 * while it is -1 (the class is not laid out as expected) ck_new_link and ck_link_cid
 * return NULL without an exception and the caller goes through the class instead.
 */
#ifndef CANONKIT_CBOR_LINK_H
#define CANONKIT_CBOR_LINK_H

#include <Python.h>
#include <structmember.h>

static Py_ssize_t ck_link_offset = -1;

static inline void ck_link_setup(PyObject *link_type, PyObject *slot) {
    PyMemberDef *m;
    if (!PyType_Check(link_type) || !PyObject_TypeCheck(slot, &PyMemberDescr_Type))
        return;
    m = ((PyMemberDescrObject *)slot)->d_member;
    if (m->type == T_OBJECT_EX && ((PyTypeObject *)link_type)->tp_itemsize == 0 &&
            m->offset > 0 && (size_t)m->offset + sizeof(PyObject *) <=
            (size_t)((PyTypeObject *)link_type)->tp_basicsize)
        ck_link_offset = m->offset;
}

/* A new Link of the n CID bytes at s (already checked by cd_cid_ok), or NULL: with an
 * exception set when allocation failed, without one when ck_link_setup found no slot. */
static inline PyObject *ck_new_link(PyObject *link_type, const unsigned char *s, Py_ssize_t n) {
    PyTypeObject *type = (PyTypeObject *)link_type;
    PyObject *cid, *link;
    if (ck_link_offset < 0)
        return NULL;
    cid = PyBytes_FromStringAndSize((const char *)s, n);
    if (cid == NULL)
        return NULL;
    link = type->tp_alloc(type, 0);
    if (link == NULL) {
        Py_DECREF(cid);
        return NULL;
    }
    *(PyObject **)((char *)link + ck_link_offset) = cid;
    return link;
}

/* The cid_bytes of an instance of exactly the Link class (borrowed), or NULL without an
 * exception when the offset is not known or the slot is empty. */
static inline PyObject *ck_link_cid(PyObject *link) {
    if (ck_link_offset < 0)
        return NULL;
    return *(PyObject **)((char *)link + ck_link_offset);
}

#endif
