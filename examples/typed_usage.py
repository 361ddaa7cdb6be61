"""canonkit from typed code: every call below has a precise static type, checked in CI
with ``mypy --strict`` and ``pyright`` (strict mode, set in the comment below).

Run it as a script, too: ``python examples/typed_usage.py`` prints what it computed.
"""
# pyright: strict
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import canonkit
from canonkit import astp, cbor, errors, fps, objects, reverify

if sys.version_info >= (3, 11):
    from typing import assert_type
else:  # pragma: no cover - Python 3.10
    from typing_extensions import assert_type

HERE = Path(__file__).parent


def cbor_round_trip() -> bytes:
    record = {"name": "canonkit", "sizes": [1, 2.5], "raw": b"\x00\x01"}
    data = cbor.encode(record, profile="dag-cbor")
    assert_type(data, bytes)
    assert cbor.decode(data, profile="dag-cbor") == record
    encoder = cbor.Encoder(profile="core")
    assert_type(encoder.encode([1, 2]), bytes)
    cbor.check(data, profile="dag-cbor")  # validates without building values
    sequence = encoder.encode(1) + encoder.encode("two")  # an RFC 8742 CBOR sequence
    first, end = cbor.decode_prefix(sequence, 0)
    assert_type(end, int)
    assert (first, end) == (1, 1)
    assert list(cbor.iter_sequence(sequence)) == [1, "two"]
    try:
        cbor.decode(bytes.fromhex("a2617402617301"))  # keys "t" before "s"
    except errors.DecodeError as exc:
        code: str = exc.code
        offset: int | None = exc.offset
        assert (code, offset) == ("unsorted_map_keys", 4)
    return data


def fps_bits() -> str:
    nibble_shifted = fps.slice(b"\x01\x23\x45\x67", 4, 16, "bit")
    assert_type(nibble_shifted, bytes)  # no out=: a new bytes object
    buffer = bytearray(2)
    written = fps.reverse(nibble_shifted, "bit", out=buffer)
    assert_type(written, int)  # out=: the number of bytes written into it
    assert (written, bytes(buffer)) == (2, b"\x2c\x48")
    assert_type(fps.cid_sha256_digest(buffer), bytes)
    return fps.cid_sha256_hex(nibble_shifted)


def astp_root() -> str:
    leaves = [hashlib.sha3_256(bytes([i])).digest() for i in range(5)]
    root = astp.spine_root(leaves, spine_algorithm_version=2)
    assert_type(root, str)
    return root


def object_address() -> str:
    address = objects.address(b"hello tovio\n")
    assert_type(address, str)
    return address


def reverify_example() -> int:
    run = reverify.run([HERE / "seed-table"], jobs=1, progress=False)
    outcomes: dict[str, int] = {}
    for result in run:
        outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
    return run.summary.exit_status


def main() -> None:
    live = canonkit.backend()
    assert_type(live, dict[str, canonkit.BackendName])  # "compiled" | "python"
    version: str = canonkit.__version__
    print(f"canonkit {version} on {live}")
    print("dag-cbor bytes:", cbor_round_trip().hex())
    print("fps cid:       ", fps_bits())
    print("spine root:    ", astp_root())
    print("address:       ", object_address())
    print("reverify exit: ", reverify_example())


if __name__ == "__main__":
    main()
