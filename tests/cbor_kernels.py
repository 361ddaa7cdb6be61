"""Fixtures for the tests of the compiled CBOR validator's kernels (``conftest.py``
imports them): the codec pair with the decoder module that holds the kernels' test hooks,
and each UTF-8 kernel in turn."""
from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

# the UTF-8 kernels of ext/cbor/cbor_utf8.h, narrowest first (``_decode._utf8_kernels()``
# names those this CPU runs)
UTF8_KERNELS = ("scalar", "sse4.1", "avx2", "avx512")


@pytest.fixture(scope="module")
def cbor_pair() -> tuple[ModuleType, ModuleType, ModuleType]:
    """(compiled codec, twin, compiled decoder module: the kernels' test hooks)."""
    from conftest import backend_pair

    c, py = backend_pair("cbor")
    return c, py, importlib.import_module("canonkit.cbor._decode")


@pytest.fixture(params=UTF8_KERNELS)
def utf8_kernel(request: pytest.FixtureRequest, cbor_pair: Any) -> Iterator[str]:
    """Each UTF-8 kernel in use in turn (skipped when this CPU does not run it); the
    validator's first pass takes its AVX-512 build with the AVX-512 kernel."""
    dec = cbor_pair[2]
    if request.param not in dec._utf8_kernels():
        pytest.skip(f"this CPU does not run the {request.param} kernel")
    previous = dec._utf8_kernel(request.param)
    try:
        yield request.param
    finally:
        dec._utf8_kernel(previous)
