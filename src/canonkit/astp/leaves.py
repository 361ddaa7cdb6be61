"""ASTP.md §4 leaf hashes (kernels): ``hash_version`` 2 and the retained 4.x version 1."""
from __future__ import annotations

from canonkit.astp._kernel import K

__all__ = ["leaf_hash_v1", "leaf_hash_v2"]

leaf_hash_v1 = K.leaf_hash_v1
leaf_hash_v2 = K.leaf_hash_v2
