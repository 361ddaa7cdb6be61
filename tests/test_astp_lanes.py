"""The compiled tree folds hash up to 8 nodes side by side (2-way SSE2, 4-way AVX2 or
8-way AVX-512F Keccak, ext/astp/astp_keccak_simd.h) and fall back to one state at a time. Every width the CPU
offers must give the twin's results; batches of every fill level (1..8 nodes, odd levels,
carried-up nodes) are covered by the sizes below."""
from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from conftest import backend_module, backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st

WIDTHS = [1, 2, 4, 8]
# (lanes, portable): the portable single-state permutation as well as the BMI1 build
MODES = [(1, True), (1, False), (2, False), (4, False), (8, False)]
SIZES = [*range(1, 70), 127, 128, 129, 255, 256, 257, 1000, 4099]


@pytest.fixture(params=MODES, ids=[f"lanes{w}{'-portable' if p else ''}" for w, p in MODES])
def pair(request: pytest.FixtureRequest):
    c, py = backend_pair("astp")
    lanes, portable = request.param
    if lanes > c._keccak_lanes()[1]:
        pytest.skip(f"{lanes}-lane Keccak not available on this CPU")
    c._set_keccak_lanes(lanes, portable=portable)
    try:
        yield c, py
    finally:
        c._set_keccak_lanes(0)


def test_lane_knob_refuses_unknown_widths() -> None:
    c, _ = backend_pair("astp")
    now, widest = c._keccak_lanes()
    assert widest in (1, 2, 4, 8) and now == widest
    for bad in (3, 5, 16, -1):
        with pytest.raises(ValueError):
            c._set_keccak_lanes(bad)


def test_spines_every_version(pair) -> None:
    c, py = pair
    rng = random.Random(11)
    for n in SIZES:
        leaves = np.frombuffer(rng.randbytes(32 * n), dtype=np.uint8).reshape(n, 32)
        for sav in (0, 1, 2, 3):
            assert c.spine_root(leaves, spine_algorithm_version=sav, episode_id="ep") == (
                py.spine_root(leaves, spine_algorithm_version=sav, episode_id="ep")), (n, sav)
        raw = leaves.tobytes()
        assert c.merkle_root_v1(raw) == py.merkle_root_v1(raw)
        assert c.merkle_root_v2(raw) == py.merkle_root_v2(raw)


def test_proofs(pair) -> None:
    c, py = pair
    rng = random.Random(12)
    for n in (1, 2, 3, 9, 17, 33, 100):
        leaves = [rng.randbytes(32) for _ in range(n)]
        for i in range(n):
            assert c.inclusion_proof_v1(leaves, i) == py.inclusion_proof_v1(leaves, i)
            assert c.inclusion_proof_v2(leaves, i) == py.inclusion_proof_v2(leaves, i)


def _draw_inputs(data: st.DataObject, c: Any, most: int) -> tuple[int, random.Random,
                                                                  list[bytes]]:
    """A Keccak width the CPU has, a seeded generator, and 1 to ``most`` random inputs."""
    widest = c._keccak_lanes()[1]
    width = data.draw(st.sampled_from([w for w in WIDTHS if w <= widest]))
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    return width, rng, [rng.randbytes(32) for _ in range(data.draw(st.integers(1, most)))]


def _draw_groups(data: st.DataObject, n: int, *, gap: int, limit: int
                 ) -> tuple[list[tuple[int, int]], int]:
    """Disjoint groups of 1 to 5 of n inputs, up to ``gap`` apart, whose orders number at
    most ``limit``; and that number."""
    groups, pos, space = [], 0, 1
    while pos < n:
        length = data.draw(st.integers(1, 5))
        if pos + length <= n and space * math.factorial(length) <= limit and data.draw(st.booleans()):
            groups.append((pos, length))
            space *= math.factorial(length)
        pos += length + data.draw(st.integers(0, gap))
    return groups, space


@settings(max_examples=25)
@given(data=st.data())
def test_tie_search(data: st.DataObject) -> None:
    c, py = backend_pair("astp")
    width, rng, inputs = _draw_inputs(data, c, 60)
    n = len(inputs)
    if n > 3 and data.draw(st.booleans()):
        inputs[n - 1] = inputs[n - 2]  # duplicates: several orders share the root
    groups, _ = _draw_groups(data, n, gap=3, limit=2000)
    sav = data.draw(st.sampled_from([0, 1, 2, 3]))
    order = list(range(n))
    for s, length in groups:
        part = order[s : s + length]
        rng.shuffle(part)
        order[s : s + length] = part
    target = py.spine_root([inputs[i] for i in order], spine_algorithm_version=sav,
                           episode_id="ep")
    c._set_keccak_lanes(width, portable=data.draw(st.booleans()))
    try:
        got = c.search_orders(inputs, groups, target, spine_algorithm_version=sav,
                              episode_id="ep", cap=2000)
    finally:
        c._set_keccak_lanes(0)
    assert got == py.search_orders(inputs, groups, target, spine_algorithm_version=sav,
                                   episode_id="ep", cap=2000)
    assert got[0] is not None


def _shuffled(rng: random.Random, inputs: list[bytes], groups: list[tuple[int, int]]) -> list[int]:
    order = list(range(len(inputs)))
    for s, length in groups:
        part = order[s : s + length]
        rng.shuffle(part)
        order[s : s + length] = part
    return order


@settings(max_examples=150)
@given(data=st.data())
def test_tie_search_over_lanes_finds_and_counts_as_the_twin(data: st.DataObject) -> None:
    """The compiled search holds several candidates at once (ext/astp/astp_tie_lanes.h)
    and memoizes the low levels: groups in any order (the enumeration follows the order
    given), of length 1 to 5, far apart or adjacent, duplicate inputs (the first match of
    the enumeration wins; equal values under different ids), a root no order gives (every
    order tried), a memo that is full from the start or soon — at every width, the twin's
    (order, tried, cap_hit), and the tree is left fit for ``root_of``."""
    c, py = backend_pair("astp")
    width, rng, inputs = _draw_inputs(data, c, 80)
    n = len(inputs)
    for _ in range(data.draw(st.integers(0, 3))):  # repeated inputs: several orders match
        inputs[rng.randrange(n)] = inputs[rng.randrange(n)]
    groups, space = _draw_groups(data, n, gap=20, limit=3000)
    rng.shuffle(groups)
    sav = data.draw(st.sampled_from([0, 1, 2, 3]))
    planted = _shuffled(rng, inputs, groups)
    target = (py.spine_root([inputs[i] for i in planted], spine_algorithm_version=sav,
                            episode_id="ep")
              if data.draw(st.booleans()) else rng.randbytes(32).hex())
    c._set_keccak_lanes(width)
    c._set_tie_memo(data.draw(st.sampled_from([-1, 0, 1, 6])))  # the memo full at once, or not
    try:
        search = c.TieSearch(inputs, groups, spine_algorithm_version=sav, episode_id="ep")
        twin = py.TieSearch(inputs, groups, spine_algorithm_version=sav, episode_id="ep")
        assert search.search(target, cap=space) == twin.search(target, cap=space)
        probe = _shuffled(rng, inputs, groups)
        assert search.root_of(probe) == twin.root_of(probe)
        assert search.search(target, cap=space) == twin.search(target, cap=space)
    finally:
        c._set_keccak_lanes(0)
        c._set_tie_memo(-1)


@pytest.mark.parametrize("sav", [1, 2])
def test_tie_search_with_groups_too_far_apart_for_the_lanes(sav: int) -> None:
    """Groups whose window of the tree exceeds what a lane holds (CK_TIE_MAX_WINDOW nodes)
    are searched one candidate at a time, with the same results."""
    c, py = backend_pair("astp")
    rng = random.Random(sav)
    inputs = [rng.randbytes(32) for _ in range(9000)]
    groups = [(8996, 4), (0, 3)]
    planted = _shuffled(rng, inputs, groups)
    target = py.spine_root([inputs[i] for i in planted], spine_algorithm_version=sav,
                           episode_id="ep")
    got = c.search_orders(inputs, groups, target, spine_algorithm_version=sav,
                          episode_id="ep", cap=144)
    assert got == py.search_orders(inputs, groups, target, spine_algorithm_version=sav,
                                   episode_id="ep", cap=144)
    assert got[0] == planted or py.spine_root([inputs[i] for i in got[0]],
                                              spine_algorithm_version=sav,
                                              episode_id="ep") == target


_HEX = frozenset(b"0123456789abcdefABCDEF")


@pytest.mark.parametrize("width", WIDTHS)
def test_hex_decoding_of_the_scanner_refuses_exactly_the_non_hex_bytes(width: int) -> None:
    """The scanner decodes content hashes (64 characters) and UUIDs (32 digits and four
    dashes) with the vectorised decoder at 4 and 8 lanes and the table at 1 and 2: every
    byte value at every position is read as Python's ``bytes.fromhex`` reads it, or (not
    a hex digit) makes the scanner decline the document."""
    from canonkit.astp.documents import Segment, Signal

    c = backend_module("astp", "c")
    scanner = backend_module("astp", "c", "scanner")
    if width > c._keccak_lanes()[1]:
        pytest.skip(f"{width}-lane Keccak not available on this CPU")
    digest = bytes(range(0x10, 0x30)).hex().upper().encode()
    uuid = b"0123abcd-4567-89ef-ABCD-0123456789ab"

    def scan(content: bytes, node_id: bytes) -> tuple[bytes, str] | None:
        doc = (b'{"format":"canonkit-episode/1","episode_id":"e","seal":null,"segments":'
               b'[{"sequence_index":0,"content_hash":"' + content + b'","node_id":"'
               + node_id + b'"}]}')
        got = scanner.scan_episode(doc, Segment, Signal)
        return None if got is None else (got[1].content_raw(), got[1][0].node_id)

    c._set_keccak_lanes(width)
    try:
        assert scan(digest, uuid) == (bytes.fromhex(digest.decode()), uuid.decode().lower())
        for at in range(64):
            for byte in range(256):
                text = digest[:at] + bytes([byte]) + digest[at + 1:]
                want = (bytes.fromhex(text.decode("latin-1")), uuid.decode().lower()) \
                    if byte in _HEX else None
                assert scan(text, uuid) == want, (at, byte)
        for at in (k for k in range(36) if k not in (8, 13, 18, 23)):
            for byte in range(256):
                text = uuid[:at] + bytes([byte]) + uuid[at + 1:]
                want = ((bytes.fromhex(digest.decode()), text.decode("latin-1").lower())
                        if byte in _HEX else None)
                assert scan(digest, text) == want, (at, byte)
    finally:
        c._set_keccak_lanes(0)


@pytest.mark.parametrize("width", [1, 8])
def test_a_long_tie_search_stops_on_ctrl_c(width: int) -> None:
    """A search of millions of orders (one at a time, or over lanes) stays interruptible:
    SIGINT raises KeyboardInterrupt in it within its 2^16-candidate checks, and the search
    object can search again afterwards."""
    import signal
    import threading

    c, _ = backend_pair("astp")
    if width > c._keccak_lanes()[1]:
        pytest.skip(f"{width}-lane Keccak not available on this CPU")
    rng = random.Random(width)
    inputs = [rng.randbytes(32) for _ in range(40)]
    groups = [(0, 10), (20, 10)]  # 10!^2 orders: far more than the test could wait for
    c._set_keccak_lanes(width)
    timer = threading.Timer(0.3, signal.raise_signal, (signal.SIGINT,))
    try:
        search = c.TieSearch(inputs, groups, spine_algorithm_version=2)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            search.search("00" * 32, cap=10**20)
        assert search.search("00" * 32, cap=0) == (None, 0, True)
        small = c.TieSearch(inputs, [(0, 3)], spine_algorithm_version=2)
        assert small.search("00" * 32, cap=6) == (None, 6, False)
    finally:
        timer.cancel()
        c._set_keccak_lanes(0)
