# Shared by the tree kernels (_astp_hash, _astp_proofs): spine inputs parsed once into one C
# buffer (or borrowed zero-copy from an (n, 32) uint8 array) and node buffers of a tree.

from cpython.mem cimport PyMem_Free, PyMem_Malloc

from canonkit.errors import EmptyTreeError


cdef class _Digests:
    """n digests of 32 raw bytes back to back: borrowed from a C-contiguous (n, 32) uint8
    array (zero-copy) or parsed once into an owned buffer."""
    cdef const uint8_t *ptr
    cdef uint8_t *owned
    cdef Py_ssize_t n
    cdef object keep

    def __dealloc__(self):
        PyMem_Free(self.owned)


cdef _Digests _digests(object inputs):
    """Spine inputs (hex strings, 32-byte values, or an (n, 32) uint8 array)."""
    cdef _Digests d = _Digests.__new__(_Digests)
    cdef const unsigned char[:, ::1] view
    cdef Py_ssize_t i, n
    cdef list items
    if hasattr(inputs, "__array_interface__") or type(inputs).__module__ == "numpy":
        import numpy as np
        arr = np.asarray(inputs)
        if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != 32:
            raise InvalidHashError(
                f"array inputs must be (n, 32) uint8, got {arr.shape} {arr.dtype}")
        if arr.shape[0] == 0:
            raise EmptyTreeError("the root of an empty leaf list is undefined")
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        view = arr
        d.keep = view
        d.ptr = &view[0, 0]
        d.n = view.shape[0]
        return d
    if isinstance(inputs, (str, bytes, bytearray, memoryview)):
        raise InvalidHashError("spine inputs must be a sequence of digests, not one value")
    items = list(inputs)
    n = len(items)
    if n > (<Py_ssize_t>(<size_t>-1 >> 1)) // 64:
        raise MemoryError("too many spine inputs")
    d.owned = <uint8_t *>PyMem_Malloc(32 * n if n else 1)
    if d.owned == NULL:
        raise MemoryError()
    d.ptr = d.owned
    for i in range(n):
        _parse_digest(items[i], d.owned + 32 * i)
    if n == 0:
        raise EmptyTreeError("the root of an empty leaf list is undefined")
    d.n = n
    return d


cdef inline const uint8_t *_first_ptr(bytes first):
    """The sav 1 Episode input's bytes, or NULL (no extra first leaf)."""
    return <const uint8_t *>PyBytes_AS_STRING(first) if first is not None else NULL


cdef bytes _node_raw(const ck_tree_hasher *h, const uint8_t *node):
    cdef uint8_t raw[32]
    if h.size == 64:
        ck_unhex32(node, raw)
        return PyBytes_FromStringAndSize(<char *>raw, 32)
    return PyBytes_FromStringAndSize(<const char *>node, 32)
