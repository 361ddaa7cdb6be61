"""The fuzz targets of fuzz/ (atheris), run here without the fuzzer: every seed of their
seed corpus passes, and each target really fails when the backends disagree — so the
smoke run in CI (.ci/fuzz-smoke) is a check that can fail."""
from __future__ import annotations

import importlib
import json
import sys
from types import ModuleType
from typing import Any

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "fuzz"))
seeds = importlib.import_module("seeds")
harness = importlib.import_module("_harness")
fps_cases = importlib.import_module("fps_cases")


def target(name: str) -> ModuleType:
    try:
        return importlib.import_module(f"fuzz_{name}")
    except ImportError as exc:  # a compiled backend that is not built
        pytest.skip(f"fuzz_{name}: {exc}")


@pytest.mark.parametrize("name", seeds.TARGETS)
def test_every_seed_passes(name: str) -> None:
    module = target(name)
    found = seeds.seeds(name)
    assert len(found) >= 3
    for seed in found:
        module.one_input(seed)


def test_seeds_are_written_once_each(tmp_path: Any) -> None:
    counts = seeds.write(tmp_path)
    assert set(counts) == set(seeds.TARGETS)
    for name, count in counts.items():
        assert len(list((tmp_path / name).iterdir())) == count


class Wrapped:
    """A backend module with some functions replaced (the rest delegate)."""

    def __init__(self, module: Any, **replaced: Any) -> None:
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._module, name)


def test_the_cbor_targets_catch_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    module = target("cbor_core")
    cbor_target = sys.modules["cbor_target"]
    twin = cbor_target.TWIN

    def off_by_one(data: bytes, **options: Any) -> Any:
        value = twin.decode(data, **options)
        return value + 1 if type(value) is int else value

    monkeypatch.setattr(cbor_target, "TWIN", Wrapped(twin, decode=off_by_one))
    with pytest.raises(harness.Mismatch, match="decode"):
        module.one_input(bytes.fromhex("05"))
    module.one_input(bytes.fromhex("f5"))  # true: not an int, the fake agrees

    def error_elsewhere(data: bytes, **options: Any) -> Any:
        from canonkit.errors import TruncatedError

        raise TruncatedError("x", offset=len(data) + 1)

    monkeypatch.setattr(cbor_target, "TWIN", Wrapped(twin, decode=error_elsewhere))
    with pytest.raises(harness.Mismatch):
        module.one_input(bytes.fromhex("f5"))
    if hasattr(twin, "check"):  # the validating entry point is compared too
        monkeypatch.setattr(cbor_target, "TWIN", Wrapped(twin, check=error_elsewhere))
        with pytest.raises(harness.Mismatch, match="check"):
            module.one_input(bytes.fromhex("f5"))


def test_the_cbor_targets_catch_a_changed_reencoding(monkeypatch: pytest.MonkeyPatch) -> None:
    module = target("cbor_dcbor")
    cbor_target = sys.modules["cbor_target"]
    twin = cbor_target.TWIN

    def padded(value: Any, **options: Any) -> bytes:
        return bytes(twin.encode(value, **options)) + b"\x00"

    monkeypatch.setattr(cbor_target, "TWIN", Wrapped(twin, encode=padded))
    with pytest.raises(harness.Mismatch, match="encode\\(decode"):
        module.one_input(bytes.fromhex("8102"))


def test_a_non_canonkit_exception_is_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    module = target("fps")

    class Crashing:
        def __getattr__(self, name: str) -> Any:
            def crash(*args: Any, **kwargs: Any) -> Any:
                raise SystemError("a crash in waiting")
            return crash

    monkeypatch.setattr(module, "TWIN", Crashing())
    with pytest.raises(SystemError):
        module.one_input(fps_cases.build("reverse", "byte", 0, 0, [b"ab"]))


def test_the_fps_target_checks_out_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    module = target("fps")
    twin = module.TWIN

    class WritesNothing:
        def __getattr__(self, name: str) -> Any:
            real = getattr(twin, name)

            def call(*args: Any, out: Any = None, **kwargs: Any) -> Any:
                if out is None:
                    return real(*args, **kwargs)
                return len(out)  # claims to have written, wrote nothing
            return call

    monkeypatch.setattr(module, "TWIN", WritesNothing())
    case = fps_cases.build("reverse", "byte", 0, 0, [b"abc"], use_out=True)
    with pytest.raises(harness.Mismatch, match="out="):
        module.one_input(case)


def test_fps_case_layout_round_trips() -> None:
    data = fps_cases.build("splice", "word", 2, 7, [b"abcd", b"", b"xy"], use_out=True)
    assert fps_cases.parse(data) == ("splice", "word", 2, 7, [b"abcd", b"", b"xy"], True)
    assert fps_cases.parse(b"\x00" * 9) is None
    huge = fps_cases.parse(bytes([8 | 0, 1]) + b"\x01\x00\x00\x00" * 2)
    assert huge is not None and huge[2] == (1 << 63) + 1


def test_the_astp_target_compares_two_different_kernels() -> None:
    module = target("astp_documents")
    compiled = module.COMPILED.read_episode.__globals__["reader"].__name__
    twin = module.TWIN.read_episode.__globals__["reader"].__name__
    assert twin == "canonkit.astp._py.segments" and compiled != twin


def test_the_episode_readers_target_catches_a_lenient_reader(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    module = target("episode_readers")
    worker = importlib.import_module("canonkit.reverify.worker")
    seed = seeds.seeds("episode_readers")[0]
    forged = bytes([1, 0, 0]) + seed[1 + seed[0] % 9 * 2:]  # plan: repeat the first member
    module.one_input(forged)
    monkeypatch.setattr(worker, "loads_json", lambda data, source: json.loads(data))
    with pytest.raises(harness.Mismatch):
        module.one_input(forged)


def test_shape_tells_apart_what_equality_does_not() -> None:
    from canonkit.cbor._types import Tag

    shape = harness.shape
    assert shape(1) != shape(True) and shape(1.0) != shape(1)
    assert shape(0.0) != shape(-0.0)
    assert shape(float("nan")) == shape(float("nan"))
    assert shape({1: 2, 3: 4}) != shape({3: 4, 1: 2})
    assert shape(Tag(1, [b"a"])) != shape(Tag(1, [bytearray(b"a")]))
