"""Two builds of the compiled CBOR kernels side by side in one process, on the large
documents: the A/B check that a change to ``ext/cbor`` does not slow them down.

    PYTHONPATH=src python bench/cbor_ab.py OTHER_SRC [--rounds 30]

``OTHER_SRC`` is the ``src`` folder of another checkout with its extensions built in place
(``python setup.py build_ext --inplace``). Its ``_decode`` and ``_codec`` modules are loaded
next to this checkout's (the pure-Python modules they import are this checkout's), and
every (operation, dataset) row calls both builds in turn (first one, then the other),
round after round; each prints
the minimum times and other / this (above 1.00: this build is faster). Times are CPU time
of the calling thread (``time.thread_time``): time spent waiting for a core is not counted.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).parent))

from cbor_datasets import dataset  # noqa: E402

from canonkit.cbor import _codec, _decode  # noqa: E402

DATASETS = ("records10k", "twitter", "citm", "canada")


def load_other(src: Path, name: str) -> ModuleType:
    """The compiled module ``canonkit.cbor.<name>`` of the other build, as a second module
    object (``sys.modules`` keeps this build's)."""
    path = next((src / "canonkit" / "cbor").glob(f"{name}.*.so"))
    spec = importlib.util.spec_from_file_location(f"canonkit.cbor.{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def minimums(fns: list[Callable[[], object]], rounds: int) -> list[float]:
    best = [float("inf")] * len(fns)
    order = list(range(len(fns)))
    for _ in range(rounds):
        order.reverse()  # neither build always runs first (after the other's free)
        for i in order:
            fn = fns[i]
            start = time.thread_time()
            result = fn()
            elapsed = time.thread_time() - start
            del result  # freed outside the timed call
            best[i] = min(best[i], elapsed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other_src", type=Path)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    other_decode, other_codec = load_other(args.other_src, "_decode"), None
    sys.modules["canonkit.cbor._decode"] = other_decode  # the other _codec imports it
    try:
        other_codec = load_other(args.other_src, "_codec")
    finally:
        sys.modules["canonkit.cbor._decode"] = _decode
    print(f"{'operation':16} {'dataset':11} {'this ms':>9} {'other ms':>9} {'other/this':>10}")
    for name in DATASETS:
        value = dataset(name)
        for profile in ("core", "dag-cbor"):
            data = _codec.encode(value, profile=profile)
            rows = {
                f"decode {profile}": (_decode.Decoder(profile=profile).decode,
                                      other_decode.Decoder(profile=profile).decode, data),
                f"check {profile}": (_decode.Decoder(profile=profile).check,
                                     other_decode.Decoder(profile=profile).check, data),
                f"encode {profile}": (_codec.Encoder(profile=profile).encode,
                                      other_codec.Encoder(profile=profile).encode, value),
            }
            for operation, (this, other, arg) in rows.items():
                mine, theirs = minimums([lambda: this(arg), lambda: other(arg)], args.rounds)
                print(f"{operation:16} {name:11} {mine * 1e3:9.3f} {theirs * 1e3:9.3f} "
                      f"{theirs / mine:10.3f}")


if __name__ == "__main__":
    main()
