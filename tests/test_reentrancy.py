"""Objects that own C state against their own callbacks: a ``Decoder``'s hooks, an
``Encoder``'s ``default`` and a binary file's ``read`` may call the object again, but
re-initialising it while one of its calls runs raises ``InUseError`` on both backends (the
compiled objects hold the hooks by borrowed pointers meanwhile) — never a crash. The
incremental SHA3-256 hasher is initialised once; a tie search refuses to be used again
while one of its calls rewrites its tree, and a call that fails midway leaves no level
stale."""
from __future__ import annotations

import gc
import io
import os
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO, backend_module

from canonkit import errors
from canonkit.cbor.tags import Tag


def _tagged(cbor_impl: ModuleType, count: int = 20) -> bytes:
    return bytes(cbor_impl.encode([Tag(100, i) for i in range(count)]))


def test_decoder_init_from_its_tag_hook_raises(cbor_impl: ModuleType) -> None:
    decoder: Any = None

    def hook(tag: Any) -> Any:
        decoder.__init__(tag_hook=lambda t: "replaced")
        return tag

    original = lambda t: hook(t)  # noqa: E731
    decoder = cbor_impl.Decoder(tag_hook=original)
    with pytest.raises(errors.InUseError) as info:
        decoder.decode(_tagged(cbor_impl))
    assert info.value.code == "object_in_use"
    assert decoder.tag_hook is original   # the settings of the running call were kept


def test_decoder_init_from_its_object_hook_raises_on_every_entry_point(
        cbor_impl: ModuleType) -> None:
    decoder: Any = None

    def hook(value: Any) -> Any:
        decoder.__init__(profile="dcbor")
        return value

    decoder = cbor_impl.Decoder(object_hook=lambda m: hook(m))
    data = bytes(cbor_impl.encode([{"a": 1}, {"b": 2}]))
    for call in (lambda: decoder.decode(data), lambda: decoder.decode_prefix(data),
                 lambda: decoder.load(io.BytesIO(data)),
                 lambda: list(decoder.iter_sequence(data + data))):
        with pytest.raises(errors.InUseError):
            call()
    assert decoder.profile == "core"


def test_decoder_init_from_the_read_of_its_file_raises(cbor_impl: ModuleType) -> None:
    decoder = cbor_impl.Decoder()

    class Reinitialising(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            decoder.__init__(max_size=1)
            return super().read(size)

    with pytest.raises(errors.InUseError):
        decoder.load(Reinitialising(b"\x01"))


def test_a_hook_may_use_its_own_decoder_and_it_can_be_reinitialised_afterwards(
        cbor_impl: ModuleType) -> None:
    decoder: Any = None

    def hook(tag: Any) -> Any:
        return decoder.decode(bytes(cbor_impl.encode(tag.value)))  # nested call: fine

    decoder = cbor_impl.Decoder(tag_hook=lambda t: hook(t))
    assert decoder.decode(_tagged(cbor_impl, 3)) == [0, 1, 2]

    def failing(tag: Any) -> Any:
        raise KeyError("hook failed")

    decoder.__init__(tag_hook=failing)
    with pytest.raises(KeyError):
        decoder.decode(_tagged(cbor_impl, 1))
    decoder.__init__(profile="dcbor")     # no call is running any more
    assert decoder.profile == "dcbor" and decoder.tag_hook is None


def test_encoder_init_from_its_default_raises_on_every_entry_point(
        cbor_impl: ModuleType) -> None:
    encoder: Any = None

    class Custom:
        pass

    def default(value: Any) -> Any:
        encoder.__init__(profile="dcbor", default=None)
        return 1

    encoder = cbor_impl.Encoder(default=lambda v: default(v))
    for call in (lambda: encoder.encode([Custom()] * 10),
                 lambda: encoder.encode_into([Custom()], bytearray(), 0),
                 lambda: encoder.encode_merged({"a": Custom()}, {"b": 2})):
        with pytest.raises(errors.InUseError):
            call()
    assert encoder.profile == "core" and encoder.default is not None

    def nested(value: Any) -> Any:
        return {"inner": encoder.encode(1)}  # the encoder used again from its hook: fine

    encoder.__init__(default=nested)
    assert cbor_impl.decode(encoder.encode(Custom())) == {"inner": b"\x01"}


def test_a_failed_reinit_keeps_the_previous_settings(cbor_impl: ModuleType) -> None:
    hook = lambda t: "hooked"  # noqa: E731
    decoder = cbor_impl.Decoder(tag_hook=hook)
    with pytest.raises(errors.CanonkitError):
        decoder.__init__(profile="no-such-profile", tag_hook=None)
    del hook
    gc.collect()
    assert decoder.decode(_tagged(cbor_impl, 1)) == ["hooked"]


# The scenario that used to free a running hook: run apart, a crash would kill the suite.
_CRASHING = textwrap.dedent("""
    import gc, sys
    from canonkit import errors
    from canonkit.cbor.tags import Tag
    from canonkit import cbor
    decoder = encoder = None
    def tag_hook(tag):
        decoder.__init__(tag_hook=lambda t: t)
        gc.collect()
        return [0] * 100
    def default(value):
        encoder.__init__(default=None)
        gc.collect()
        return 1
    decoder = cbor.Decoder(tag_hook=lambda t: tag_hook(t))
    encoder = cbor.Encoder(default=lambda v: default(v))
    refused = 0
    for call in (lambda: decoder.decode(cbor.encode([Tag(100, 1)] * 50)),
                 lambda: encoder.encode([object()] * 10)):
        try:
            call()
        except errors.InUseError:
            refused += 1
    print(refused)
""")


@pytest.mark.parametrize("backend", ["c", "py"])
def test_reinitialising_from_a_hook_never_crashes_the_process(backend: str) -> None:
    backend_module("cbor", backend)  # skips when the compiled module is not built
    env = {**os.environ, "CANONKIT_NO_EXTENSIONS": "1" if backend == "py" else "0"}
    env.setdefault("PYTHONPATH", str(REPO / "src"))   # a sanitized build keeps its own
    proc = subprocess.run([sys.executable, "-c", _CRASHING], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.split() == ["2"]


def test_the_sha3_hasher_is_initialised_once() -> None:
    astp_hash = backend_module("astp", "c", "hasher")
    hasher = astp_hash.Sha3_256(b"prefix-")
    with pytest.raises(errors.InUseError):
        hasher.__init__(b"other")
    clone = hasher.copy()
    with pytest.raises(errors.InUseError):
        clone.__init__()
    hasher.update(b"rest")
    import hashlib
    assert hasher.digest() == hashlib.sha3_256(b"prefix-rest").digest()
    assert clone.digest() == hashlib.sha3_256(b"prefix-").digest()


def _tie_search(astp_impl: ModuleType) -> tuple[Any, list[str]]:
    import hashlib

    inputs = [hashlib.sha3_256(bytes([i])).hexdigest() for i in range(8)]
    return astp_impl.TieSearch(inputs, [(4, 4)], spine_algorithm_version=2), inputs


def test_a_tie_search_used_again_from_its_own_order_raises() -> None:
    compiled, _ = _tie_search(backend_module("astp", "c", "prover"))

    def order() -> Any:
        yield 0
        compiled.root_of([0, 1, 2, 3, 4, 5, 6, 7])     # the tree is being rewritten
        yield 1

    with pytest.raises(errors.InUseError):
        compiled.root_of(order())
    with pytest.raises(errors.InUseError):
        compiled.root_of(iter(lambda: compiled.search("00" * 32, cap=100) and 0, 1))


def test_a_root_of_that_fails_midway_leaves_the_tree_consistent() -> None:
    compiled, inputs = _tie_search(backend_module("astp", "c", "prover"))
    twin, _ = _tie_search(backend_module("astp", "py", "prover"))
    swapped = [0, 1, 2, 3, 7, 6, 5, 4]

    def failing() -> Any:
        yield from swapped[:6]
        raise KeyError("order failed")

    with pytest.raises(KeyError):
        compiled.root_of(failing())
    for order in ([0, 1, 2, 3, 7, 6, 4, 5], swapped, list(range(8))):
        assert compiled.root_of(order) == twin.root_of(order)
    found = compiled.search(twin.root_of(swapped).hex(), cap=100)
    assert found[0] == swapped
