"""The in-extension SHA3-256 (ext/astp/keccak.h) against hashlib.sha3_256.

Only the compiled backend has its own Keccak; the twin uses hashlib, so these tests
use the compiled module alone (skipped, with the reason, when it is not built). The
permutation has a portable C build and, on x86-64 CPUs with BMI1, a BMI1 build chosen at
run time; the fixture runs every test on each build this CPU can run."""
from __future__ import annotations

import hashlib
import itertools
import random
import threading

import pytest
from conftest import backend_module
from hypothesis import given, settings
from hypothesis import strategies as st

RATE = 136


@pytest.fixture(scope="module", params=["native", "portable"])
def c_astp(request: pytest.FixtureRequest):
    module = backend_module("astp", "c")
    module._set_keccak_lanes(0, portable=request.param == "portable")
    if request.param == "native" and not module._keccak_bmi():
        pytest.skip("no BMI1 build on this CPU: 'portable' covers it")
    try:
        yield module
    finally:
        module._set_keccak_lanes(0)


def _message(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def test_every_length_0_to_1000(c_astp) -> None:
    for n in range(1001):
        data = _message(n, n)
        assert c_astp.sha3_256(data) == hashlib.sha3_256(data).digest(), n


@pytest.mark.parametrize("blocks", [1, 2, 3, 7, 8, 15])
def test_around_the_rate_boundary(c_astp, blocks: int) -> None:
    for n in range(blocks * RATE - 3, blocks * RATE + 4):
        for fill in (0x00, 0xFF):
            data = bytes([fill]) * n
            assert c_astp.sha3_256(data) == hashlib.sha3_256(data).digest(), (n, fill)
        data = _message(n, n + 7)
        assert c_astp.sha3_256(data) == hashlib.sha3_256(data).digest(), n


def test_known_answers(c_astp) -> None:
    # FIPS 202 example values (NIST CSRC "SHA3-256" examples): empty and "abc".
    assert c_astp.sha3_256(b"").hex() == (
        "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"
    )
    assert c_astp.sha3_256(b"abc").hex() == (
        "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
    )


def test_accepts_any_contiguous_buffer(c_astp) -> None:
    data = _message(500, 1)
    expected = hashlib.sha3_256(data).digest()
    assert c_astp.sha3_256(bytearray(data)) == expected
    assert c_astp.sha3_256(memoryview(data)) == expected
    with pytest.raises(TypeError):
        c_astp.sha3_256("text is not bytes")


@pytest.mark.parametrize("mib", [1, 33])
def test_large_inputs(c_astp, mib: int) -> None:
    data = _message(mib * 1024 * 1024 + 77, mib)
    assert c_astp.sha3_256(data) == hashlib.sha3_256(data).digest()


def test_large_input_incremental(c_astp) -> None:
    data = _message(20 * 1024 * 1024 + 5, 20)
    h = c_astp.Sha3_256()
    view = memoryview(data)
    rng = random.Random(5)
    pos = 0
    while pos < len(data):
        step = rng.choice([1, 135, 136, 137, 4095, 4096, 1 << 20, 3 << 20])
        h.update(view[pos : pos + step])
        pos += step
    assert h.digest() == hashlib.sha3_256(data).digest()


@settings(max_examples=150)
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(0, 3000), max_size=8))
def test_incremental_split_anywhere(data: bytes, cuts: list[int]) -> None:
    c_astp = backend_module("astp", "c")
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    h = c_astp.Sha3_256()
    for lo, hi in itertools.pairwise(bounds):
        h.update(data[lo:hi])
    expected = hashlib.sha3_256(data)
    assert h.digest() == expected.digest()
    assert h.hexdigest() == expected.hexdigest()
    assert h.digest() == expected.digest()  # digest() does not consume the state


def test_copy_is_independent(c_astp) -> None:
    h = c_astp.Sha3_256(b"prefix-")
    fork = h.copy()
    h.update(b"one")
    fork.update(b"two")
    assert h.digest() == hashlib.sha3_256(b"prefix-one").digest()
    assert fork.digest() == hashlib.sha3_256(b"prefix-two").digest()


@settings(max_examples=200)
@given(st.binary(max_size=2 * RATE + 10))
def test_random_inputs(data: bytes) -> None:
    c_astp = backend_module("astp", "c")
    assert c_astp.sha3_256(data) == hashlib.sha3_256(data).digest()


def test_big_endian_lane_code(tmp_path) -> None:
    """The lane load/store code for big-endian hosts (byte shifts instead of memcpy), forced
    on this host with -DCK_LITTLE_ENDIAN=0 in a small C program, against hashlib."""
    import shutil
    import subprocess

    from conftest import REPO

    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler on PATH")
    program = tmp_path / "be.c"
    program.write_text(
        '#include "keccak.h"\n#include <stdio.h>\n'
        "int main(void) { static uint8_t buf[700]; uint8_t out[32]; size_t n, i;\n"
        "  for (i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 131 + 7);\n"
        "  for (n = 0; n <= sizeof buf; n++) { ck_sha3_256(buf, n, out);\n"
        '    for (i = 0; i < 32; i++) printf("%02x", out[i]); printf("\\n"); }\n'
        "  return 0; }\n"
    )
    exe = tmp_path / "be"
    subprocess.run([cc, "-O1", "-DCK_LITTLE_ENDIAN=0", f"-I{REPO / 'ext' / 'astp'}", str(program),
                    "-o", str(exe)], check=True, capture_output=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    data = bytes((i * 131 + 7) & 0xFF for i in range(700))
    assert got == [hashlib.sha3_256(data[:n]).hexdigest() for n in range(701)]


def test_one_hasher_shared_by_threads() -> None:
    """Large updates absorb without the GIL; two threads updating one hasher must still see
    each update absorbed whole (never two at once into one state), and a digest or copy taken
    meanwhile must be the state between two updates."""
    c_astp = backend_module("astp", "c")
    chunk = random.Random(5).randbytes(256 * 1024)  # far above the GIL-release threshold
    rounds = 24
    reference = hashlib.sha3_256()
    prefixes = {reference.digest()}
    for _ in range(2 * rounds):
        reference.update(chunk)
        prefixes.add(reference.digest())
    for _ in range(3):
        h = c_astp.Sha3_256()
        start = threading.Barrier(3)
        seen: list[bytes] = []

        def update() -> None:
            start.wait()
            for _ in range(rounds):
                h.update(chunk)

        def observe() -> None:
            start.wait()
            for _ in range(rounds):
                seen.append(h.digest())
                seen.append(h.copy().digest())

        threads = [threading.Thread(target=f) for f in (update, update, observe)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert h.digest() == reference.digest()
        assert set(seen) <= prefixes
