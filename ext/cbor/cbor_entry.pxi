# The module functions' vectorcall entry points (cbor_entry.h), installed over the Cython
# functions of the same name. Included textually by both CBOR extensions.

cdef extern from "cbor_entry.h":
    ctypedef PyObject *(*ck_fast_fn)(PyObject **, Py_ssize_t, PyObject *) except NULL
    object ck_install(int, const char *, const char *, object, ck_fast_fn, Py_ssize_t, object)
    Py_ssize_t ck_offset(PyObject *, Py_ssize_t) noexcept

# the names and docstrings the builtin functions point into, kept for the process's life
cdef list _entry_texts = []


cdef int install_entry(dict module, int slot, str name, str signature, ck_fast_fn fast,
                       Py_ssize_t most_positional) except -1:
    """Replace ``module[name]`` (a Cython function) by a builtin function that sends the
    common call (1..most_positional positional arguments, at most ``profile=``) to
    ``fast`` and every other call to the Cython function."""
    full = module[name]
    doc = full.__doc__ or ""
    if doc.startswith(name + "("):  # Cython's own signature line: the text signature says it
        doc = doc.partition("\n")[2]
    texts = (name.encode(), f"{name}{signature}\n--\n\n{doc}".encode())
    _entry_texts.append(texts)
    module[name] = ck_install(slot, texts[0], texts[1], full, fast, most_positional,
                              module["__name__"])
    return 0
