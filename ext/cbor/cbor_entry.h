/* Vectorcall entry points for the CBOR module functions (decode, check, encode, ...).
 *
 * A module function's common call passes its positional arguments and at most
 * ``profile=``: that call goes straight to a C function of the kernel (``fast``) with
 * the arguments as they are, no keyword parsing and no defaults filled in. Every other
 * call (any other keyword, a wrong argument count) is forwarded unchanged to the full
 * Cython function, which parses and checks everything and raises what it always raised.
 *
 * Each including module has CK_ENTRIES slots; ck_install(slot, ...) makes the builtin
 * function of one. A slot's state is written once, at module import, and only read after.
 */
#ifndef CANONKIT_CBOR_ENTRY_H
#define CANONKIT_CBOR_ENTRY_H

#include <Python.h>

/* the common call: positional arguments (1..max_positional of them) and the profile
 * given by keyword, or NULL when it was not given (the default, "core") */
typedef PyObject *(*ck_fast_fn)(PyObject **args, Py_ssize_t nargs, PyObject *profile);

typedef struct {
    PyObject *full;           /* the Cython function (a strong reference, never released) */
    ck_fast_fn fast;
    Py_ssize_t max_positional;
} ck_entry_spec;

#define CK_ENTRIES 4

static ck_entry_spec ck_specs[CK_ENTRIES];
static PyMethodDef ck_defs[CK_ENTRIES];
static PyObject *ck_profile_keyword; /* the interned str "profile" */

static inline PyObject *ck_dispatch(const ck_entry_spec *spec, PyObject *const *args,
                                    Py_ssize_t nargs, PyObject *kwnames) {
    if (nargs >= 1 && nargs <= spec->max_positional) {
        if (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)
            return spec->fast((PyObject **)args, nargs, NULL);
        /* keyword names of a call site are interned: a pointer compare; a name built at
         * run time that equals "profile" only takes the full path */
        if (PyTuple_GET_SIZE(kwnames) == 1 && PyTuple_GET_ITEM(kwnames, 0) == ck_profile_keyword)
            return spec->fast((PyObject **)args, nargs, args[nargs]);
    }
    return PyObject_Vectorcall(spec->full, args, (size_t)nargs, kwnames);
}

/* The offset argument of a prefix call when it is an exact int in 0..n (the common call),
 * without rich comparisons; -1 for anything else, with no exception set (the caller's
 * full check then reports what is wrong with it). */
static inline Py_ssize_t ck_offset(PyObject *offset, Py_ssize_t n) {
    Py_ssize_t v;
    if (!PyLong_CheckExact(offset))
        return -1;
    v = PyLong_AsSsize_t(offset);
    if (v == -1 && PyErr_Occurred()) { /* out of range: not the common call */
        PyErr_Clear();
        return -1;
    }
    return v <= n ? v : -1;
}

#define CK_SLOT(i)                                                                      \
    static PyObject *ck_entry_##i(PyObject *self, PyObject *const *args, Py_ssize_t nargs, \
                                  PyObject *kwnames) {                                  \
        (void)self;                                                                     \
        return ck_dispatch(&ck_specs[i], args, nargs, kwnames);                         \
    }
CK_SLOT(0)
CK_SLOT(1)
CK_SLOT(2)
CK_SLOT(3)
#undef CK_SLOT

static PyObject *(*const ck_slot_functions[CK_ENTRIES])(PyObject *, PyObject *const *,
                                                         Py_ssize_t, PyObject *) = {
    ck_entry_0, ck_entry_1, ck_entry_2, ck_entry_3};

/* The builtin function of slot ``slot``: named ``name`` (a string that lives as long as
 * the process), documented by ``doc`` (likewise: a text signature line, "--", then the
 * docstring), in module ``module_name``; ``full`` serves every call ``fast`` does not. */
static PyObject *ck_install(int slot, const char *name, const char *doc, PyObject *full,
                            ck_fast_fn fast, Py_ssize_t max_positional,
                            PyObject *module_name) {
    if (slot < 0 || slot >= CK_ENTRIES || ck_specs[slot].full != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cbor entry point slot in use");
        return NULL;
    }
    if (ck_profile_keyword == NULL) {
        ck_profile_keyword = PyUnicode_InternFromString("profile");
        if (ck_profile_keyword == NULL)
            return NULL;
    }
    Py_INCREF(full);
    ck_specs[slot].full = full;
    ck_specs[slot].fast = fast;
    ck_specs[slot].max_positional = max_positional;
    ck_defs[slot].ml_name = name;
    ck_defs[slot].ml_meth = (PyCFunction)(void (*)(void))ck_slot_functions[slot];
    ck_defs[slot].ml_flags = METH_FASTCALL | METH_KEYWORDS;
    ck_defs[slot].ml_doc = doc;
    return PyCFunction_NewEx(&ck_defs[slot], NULL, module_name);
}

#endif
