"""ASTP kernels: properties of each backend (``astp_impl``) and differential tests compiled
vs twin (``backend_pair("astp")``), per docs/astp-kernel-api.md.

The compiled side is skipped while it is not built; a kernel the compiled module does not
(yet) expose is skipped by name, so a partial build is visible in the skip reasons.
"""
from __future__ import annotations

import hashlib
import itertools
import math
import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from conftest import backend_module, backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_astp import EP, any_digest, digests, invalid_fields, uints, uuids, valid_fields

from canonkit import errors

EXAMPLES = settings(max_examples=60, deadline=None)


def need(impl: ModuleType, *names: str) -> None:
    missing = [n for n in names if not hasattr(impl, n)]
    if missing:
        pytest.skip(f"{impl.__name__} lacks {', '.join(missing)}")


def pair(*names: str) -> tuple[ModuleType, ModuleType]:
    c, py = backend_pair("astp")
    need(c, *names)
    return c, py


def outcome(fn: Callable[[], Any]) -> Any:
    """The value, or the error class for comparing refusals across backends."""
    try:
        return ("ok", fn())
    except errors.CanonkitError as exc:
        return ("error", type(exc))


# --- an independent oracle: ASTP.md §5.1 pseudo-code, verbatim ----------------------------

def H(data: bytes) -> bytes:
    return hashlib.sha3_256(data).digest()


def reference_root(inputs: list[bytes], sav: int, episode_id: str | None = None) -> str:
    if sav == 1:
        inputs = [H(episode_id.encode())] + inputs  # type: ignore[union-attr]
    if sav in (0, 1):
        def leaf(x: bytes) -> bytes:
            return H(b"LEAF:" + x.hex().encode()).hex().encode()

        def node(a: bytes, b: bytes) -> bytes:
            return H(b"NODE:" + a + b).hex().encode()
    else:
        def leaf(x: bytes) -> bytes:
            return H(b"TREE_LEAF:v2:" + x)

        def node(a: bytes, b: bytes) -> bytes:
            return H(b"TREE_NODE:v2:" + a + b)
    level = [leaf(x) for x in inputs]
    while len(level) > 1:
        level = [node(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0].decode() if sav in (0, 1) else level[0].hex()


def leaves_of(n: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(32) for _ in range(n)]


# --- sha3 -----------------------------------------------------------------------------------

def test_sha3_256_lengths(astp_impl: ModuleType) -> None:
    data = bytes(range(256)) * 5
    for n in list(range(300)) + [135, 136, 137, 271, 272, 273, 1000]:
        assert astp_impl.sha3_256(data[:n]) == hashlib.sha3_256(data[:n]).digest()
    assert astp_impl.sha3_256(memoryview(data)) == hashlib.sha3_256(data).digest()


# --- field encoding ---------------------------------------------------------------------------

@EXAMPLES
@given(valid_fields)
def test_valid_fields_twin(field: tuple[str, Any]) -> None:
    py = backend_module("astp", "py")
    kind, value = field
    encoded = py.encode_field(kind, value)
    base = kind.split("|")[0].split("(")[0]
    assert encoded[0] == (0 if value is None else py.FIELD_KINDS[base])


@EXAMPLES
@given(valid_fields)
def test_valid_fields_differential(field: tuple[str, Any]) -> None:
    c, py = pair("encode_field")
    assert c.encode_field(*field) == py.encode_field(*field)


@EXAMPLES
@given(invalid_fields)
def test_invalid_fields_refused(field: tuple[str, Any]) -> None:
    py = backend_module("astp", "py")
    with pytest.raises((errors.InvalidFieldError, errors.InvalidHashError)):
        py.encode_field(*field)


@EXAMPLES
@given(invalid_fields)
def test_invalid_fields_differential(field: tuple[str, Any]) -> None:
    c, py = pair("encode_field")
    assert outcome(lambda: c.encode_field(*field)) == outcome(lambda: py.encode_field(*field))


@pytest.mark.parametrize("kind", ["LIST", "LIST(NULL)", "LIST(LIST(HASH))", "HASH|NULL|NULL", "hash", "", "LIST(HASH"])
def test_unknown_kinds(astp_impl: ModuleType, kind: str) -> None:
    need(astp_impl, "encode_field")
    with pytest.raises(errors.InvalidFieldError):
        astp_impl.encode_field(kind, [])


def test_field_edge_values(astp_impl: ModuleType) -> None:
    need(astp_impl, "encode_field", "timestamp_ms")
    enc = astp_impl.encode_field
    assert enc("UINT", 2**64 - 1) == b"\x03" + b"\xff" * 8
    assert enc("FLOAT", 5e-324).hex() == "090000000000000001"  # subnormal as is
    assert enc("FLOAT", 1) == enc("FLOAT", 1.0)
    assert enc("TIMESTAMP", "1970-01-01T00:00:00Z") == b"\x05" + bytes(8)
    assert astp_impl.timestamp_ms("2026-01-01T00:00:00.123999Z") == astp_impl.timestamp_ms("2026-01-01T00:00:00.123Z")
    with pytest.raises(errors.InvalidFieldError):
        enc("TIMESTAMP", "1969-12-31T23:59:59.999Z")
    with pytest.raises(errors.InvalidFieldError):
        enc("FLOAT", 10**400)
    assert enc("UUID", EP.upper()) == enc("UUID", EP)
    assert enc("HASH", "AB" * 32) == enc("HASH", "ab" * 32)
    with pytest.raises(errors.InvalidHashError):
        enc("HASH", " " + "ab" * 31 + "a")


# --- leaf hashes ------------------------------------------------------------------------------

leaf_args = st.tuples(uuids, st.text(max_size=12).filter(lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s)),
                      st.sampled_from(["1.0.0", "1.2.0", ""]), uints, any_digest, st.one_of(st.none(), uuids))


@EXAMPLES
@given(leaf_args)
def test_leaf_hashes_differential(args: tuple) -> None:
    c, py = pair("leaf_hash_v1", "leaf_hash_v2")
    assert c.leaf_hash_v2(*args) == py.leaf_hash_v2(*args)
    assert c.leaf_hash_v1(*args) == py.leaf_hash_v1(*args)


def test_leaf_hash_v1_no_nfc_and_v2_nfc(astp_impl: ModuleType) -> None:
    need(astp_impl, "leaf_hash_v1", "leaf_hash_v2")
    a = (EP, "e\u0301", "1", 0, "00" * 32, None)
    b = (EP, "\u00e9", "1", 0, "00" * 32, None)
    assert astp_impl.leaf_hash_v2(*a) == astp_impl.leaf_hash_v2(*b)
    assert astp_impl.leaf_hash_v1(*a) != astp_impl.leaf_hash_v1(*b)
    nil = "00000000-0000-0000-0000-000000000000"
    assert astp_impl.leaf_hash_v1(*a[:5], nil) == astp_impl.leaf_hash_v1(*a)       # v1 cannot tell
    assert astp_impl.leaf_hash_v2(*a[:5], nil) != astp_impl.leaf_hash_v2(*a)       # v2 can
    for bad in ((EP, "s", "1", -1, "00" * 32, None), (EP, "s", "1", True, "00" * 32, None)):
        with pytest.raises(errors.InvalidFieldError):
            astp_impl.leaf_hash_v2(*bad)
        with pytest.raises(errors.InvalidFieldError):
            astp_impl.leaf_hash_v1(*bad)


# --- spine roots ------------------------------------------------------------------------------

@pytest.mark.parametrize("sav", [0, 1, 2, 3])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 100])
def test_spine_root_matches_the_spec_pseudocode(astp_impl: ModuleType, sav: int, n: int) -> None:
    need(astp_impl, "spine_root")
    leaves = leaves_of(n, n * 10 + sav)
    want = reference_root(leaves, sav, EP)
    assert astp_impl.spine_root(leaves, spine_algorithm_version=sav, episode_id=EP) == want
    assert astp_impl.spine_root([x.hex() for x in leaves], spine_algorithm_version=sav, episode_id=EP) == want
    arr = np.frombuffer(b"".join(leaves), dtype=np.uint8).reshape(n, 32)
    assert astp_impl.spine_root(arr, spine_algorithm_version=sav, episode_id=EP) == want


@settings(max_examples=12, deadline=None)
@given(st.integers(min_value=1, max_value=5000), st.sampled_from([0, 1, 2, 3]), st.integers(0, 2**32))
def test_spine_root_differential_up_to_5000(n: int, sav: int, seed: int) -> None:
    c, py = pair("spine_root", "merkle_root_v1", "merkle_root_v2")
    leaves = leaves_of(n, seed)
    root = py.spine_root(leaves, spine_algorithm_version=sav, episode_id=EP)
    assert c.spine_root(leaves, spine_algorithm_version=sav, episode_id=EP) == root
    arr = np.frombuffer(b"".join(leaves), dtype=np.uint8).reshape(n, 32)
    assert c.spine_root(arr, spine_algorithm_version=sav, episode_id=EP) == root
    raw = b"".join(leaves)
    fold = c.merkle_root_v2 if sav >= 2 else c.merkle_root_v1
    if sav != 1:
        assert fold(raw).hex() == root
    assert c.merkle_root_v2(raw) == py.merkle_root_v2(raw)
    assert c.merkle_root_v1(raw) == py.merkle_root_v1(raw)


def test_merkle_roots_agree_with_spine_root(astp_impl: ModuleType) -> None:
    need(astp_impl, "merkle_root_v1", "merkle_root_v2")
    for n in (1, 2, 3, 6, 31):
        leaves = leaves_of(n, n)
        raw = b"".join(leaves)
        assert astp_impl.merkle_root_v2(raw).hex() == reference_root(leaves, 2)
        assert astp_impl.merkle_root_v1(bytearray(raw)).hex() == reference_root(leaves, 0)
        assert astp_impl.merkle_root_v2(np.frombuffer(raw, dtype=np.uint8)).hex() == reference_root(leaves, 2)


@pytest.mark.parametrize("call,exc", [
    (lambda k: k.spine_root([], spine_algorithm_version=2), errors.EmptyTreeError),
    (lambda k: k.spine_root(np.zeros((0, 32), np.uint8), spine_algorithm_version=0), errors.EmptyTreeError),
    (lambda k: k.merkle_root_v2(b""), errors.EmptyTreeError),
    (lambda k: k.merkle_root_v1(b"\x00" * 33), errors.InvalidHashError),
    (lambda k: k.spine_root(["00" * 32], spine_algorithm_version=4), errors.UnknownIdentifierError),
    (lambda k: k.spine_root(["00" * 32], spine_algorithm_version=True), errors.UnknownIdentifierError),
    (lambda k: k.spine_root(["00" * 32], spine_algorithm_version="2"), errors.UnknownIdentifierError),
    (lambda k: k.spine_root(["00" * 32], spine_algorithm_version=1), errors.InvalidFieldError),
    (lambda k: k.spine_root(["00" * 31], spine_algorithm_version=2), errors.InvalidHashError),
    (lambda k: k.spine_root([b"\x00" * 31], spine_algorithm_version=2), errors.InvalidHashError),
    (lambda k: k.spine_root([None], spine_algorithm_version=2), errors.InvalidHashError),
    (lambda k: k.spine_root("00" * 32, spine_algorithm_version=2), errors.InvalidHashError),
    (lambda k: k.spine_root(np.zeros((2, 31), np.uint8), spine_algorithm_version=2), errors.InvalidHashError),
    (lambda k: k.spine_root(np.zeros((2, 32), np.int16), spine_algorithm_version=2), errors.InvalidHashError),
    (lambda k: k.spine_root(np.zeros(64, np.uint8), spine_algorithm_version=2), errors.InvalidHashError),
])
def test_spine_refusals(astp_impl: ModuleType, call: Callable[[ModuleType], Any], exc: type) -> None:
    need(astp_impl, "spine_root", "merkle_root_v1", "merkle_root_v2")
    with pytest.raises(exc):
        call(astp_impl)


# --- sets -------------------------------------------------------------------------------------

@EXAMPLES
@given(st.lists(digests, max_size=20), st.randoms())
def test_sets(members: list[bytes], rnd: random.Random) -> None:
    py = backend_module("astp", "py")
    shuffled = members + members[: len(members) // 2]
    rnd.shuffle(shuffled)
    for fn in (py.hash_set_v1, py.hash_set_v2):
        assert fn(b"P:", members) == fn(b"P:", [m.hex().upper() for m in shuffled])
    distinct = sorted(set(members))
    assert py.encode_set_v2(b"P:", members) == b"P:" + len(distinct).to_bytes(4, "big") + b"".join(distinct)


@EXAMPLES
@given(st.lists(any_digest, max_size=20))
def test_sets_differential(members: list[Any]) -> None:
    c, py = pair("hash_set_v1", "hash_set_v2", "encode_set_v2")
    for name in ("hash_set_v1", "hash_set_v2", "encode_set_v2"):
        assert getattr(c, name)(b"SIGNAL_MANIFEST:v2:", members) == getattr(py, name)(b"SIGNAL_MANIFEST:v2:", members)


def test_set_refusals(astp_impl: ModuleType) -> None:
    need(astp_impl, "hash_set_v1", "hash_set_v2")
    for bad in (["00" * 31], [b"\x00" * 33], [1]):
        with pytest.raises(errors.InvalidHashError):
            astp_impl.hash_set_v2(b"P", bad)
        with pytest.raises(errors.InvalidHashError):
            astp_impl.hash_set_v1(b"P", bad)


# --- proofs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8, 13, 32, 33])
def test_v2_proofs_every_index(astp_impl: ModuleType, n: int) -> None:
    need(astp_impl, "inclusion_proof_v2", "verify_inclusion_proof_v2", "expected_siblings")
    leaves = leaves_of(n, n)
    root = reference_root(leaves, 2)
    for i in range(n):
        leaf, siblings, got_root = astp_impl.inclusion_proof_v2(leaves, i)
        assert (leaf, got_root) == (leaves[i].hex(), root)
        assert len(siblings) == astp_impl.expected_siblings(i, n)
        assert astp_impl.verify_inclusion_proof_v2(leaf, i, n, siblings, root)
        for j in range(-2, n + 2):
            if j != i:
                assert not astp_impl.verify_inclusion_proof_v2(leaf, j, n, siblings, root)
        assert not astp_impl.verify_inclusion_proof_v2(leaf, i, n, siblings + [root], root)
        if siblings:
            assert not astp_impl.verify_inclusion_proof_v2(leaf, i, n, siblings[:-1], root)
            tampered = [siblings[0][::-1]] + siblings[1:]
            assert not astp_impl.verify_inclusion_proof_v2(leaf, i, n, tampered, root)
        for bad_index in (True, 1.0, "1", None):
            assert astp_impl.verify_inclusion_proof_v2(leaf, bad_index, n, siblings, root) is False
    with pytest.raises(errors.InvalidFieldError):
        astp_impl.inclusion_proof_v2(leaves, n)
    with pytest.raises(errors.InvalidFieldError):
        astp_impl.expected_siblings(n, n)
    with pytest.raises(errors.InvalidHashError):
        astp_impl.verify_inclusion_proof_v2("zz", 0, n, [], root)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 300), st.data())
def test_v2_proofs_differential(n: int, data: st.DataObject) -> None:
    c, py = pair("inclusion_proof_v2", "verify_inclusion_proof_v2", "expected_siblings")
    leaves = leaves_of(n, n)
    i = data.draw(st.integers(0, n - 1))
    proof = py.inclusion_proof_v2(leaves, i)
    assert c.inclusion_proof_v2(leaves, i) == proof
    j = data.draw(st.integers(-3, n + 3))
    count = data.draw(st.integers(-1, n + 3))
    sibs = data.draw(st.sampled_from([proof[1], proof[1][:-1], proof[1] + [proof[2]]]))
    assert c.verify_inclusion_proof_v2(proof[0], j, count, sibs, proof[2]) == \
        py.verify_inclusion_proof_v2(proof[0], j, count, sibs, proof[2])
    if 0 <= j < count:
        assert c.expected_siblings(j, count) == py.expected_siblings(j, count)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 12])
def test_v1_proofs_every_index(astp_impl: ModuleType, n: int) -> None:
    need(astp_impl, "inclusion_proof_v1", "verify_inclusion_proof_v1")
    leaves = leaves_of(n, n + 100)
    root = reference_root(leaves, 0)
    for i in range(n):
        leaf, path, directions, got_root = astp_impl.inclusion_proof_v1(leaves, i)
        assert got_root == root and leaf == leaves[i].hex()
        assert astp_impl.verify_inclusion_proof_v1(leaf, path, directions, root)
        if path:
            flipped = ["left" if d == "right" else "right" for d in directions]
            assert not astp_impl.verify_inclusion_proof_v1(leaf, path, flipped, root)
            with pytest.raises(errors.InvalidFieldError):
                astp_impl.verify_inclusion_proof_v1(leaf, path, directions[:-1], root)
            with pytest.raises(errors.InvalidFieldError):
                astp_impl.verify_inclusion_proof_v1(leaf, path, ["up"] * len(path), root)


def test_v1_proofs_differential() -> None:
    c, py = pair("inclusion_proof_v1", "verify_inclusion_proof_v1")
    for n in (1, 2, 5, 9, 40):
        leaves = leaves_of(n, n)
        for i in range(n):
            assert c.inclusion_proof_v1(leaves, i) == py.inclusion_proof_v1(leaves, i)


# --- tie search -------------------------------------------------------------------------------

def _groups(rnd: random.Random, n_segments: int, n_signals: int) -> list[tuple[int, int]]:
    groups, pos = [], 0
    while pos < n_signals:
        length = min(rnd.randint(1, 4), n_signals - pos)
        if length > 1:
            groups.append((n_segments + pos, length))
        pos += length
    return groups


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(1, 10), st.sampled_from([0, 1, 2, 3]), st.randoms(use_true_random=False))
def test_tie_search_twin(n_segments: int, n_signals: int, sav: int, rnd: random.Random) -> None:
    py = backend_module("astp", "py")
    inputs = leaves_of(n_segments + n_signals, rnd.randint(0, 10**6))
    if rnd.random() < 0.3 and n_signals > 1:  # duplicates inside the signals
        inputs[-1] = inputs[-2]
    groups = _groups(rnd, n_segments, n_signals)
    search = py.TieSearch(inputs, groups, spine_algorithm_version=sav, episode_id=EP)
    orders = list(search.orders())
    assert len(orders) == search.space == math.prod(math.factorial(n) for _, n in groups)
    assert orders[0] == list(range(len(inputs)))
    planted = rnd.choice(orders)
    for order in rnd.sample(orders, min(5, len(orders))) + [planted]:
        want = reference_root([inputs[k] for k in order], sav, EP)
        assert search.root_of(order).hex() == want  # incremental refold == full refold
    target = reference_root([inputs[k] for k in planted], sav, EP)
    found, tried, cap_hit = search.search(target, cap=search.space)
    assert not cap_hit and found is not None
    assert reference_root([inputs[k] for k in found], sav, EP) == target
    assert found == next(o for o in orders if reference_root([inputs[k] for k in o], sav, EP) == target)
    assert tried == orders.index(found) + 1
    if search.space > 1:
        assert search.search(target, cap=search.space - 1) == (None, 0, True)
    assert search.search("00" * 32, cap=search.space) == (None, search.space, False)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 30), st.integers(2, 9), st.sampled_from([0, 1, 2]), st.randoms(use_true_random=False))
def test_tie_search_differential(n_segments: int, n_signals: int, sav: int, rnd: random.Random) -> None:
    c, py = pair("TieSearch", "search_orders")
    inputs = [x.hex() for x in leaves_of(n_segments + n_signals, rnd.randint(0, 10**6))]
    if rnd.random() < 0.3:
        inputs[-1] = inputs[-2]
    groups = _groups(rnd, n_segments, n_signals)
    twin = py.TieSearch(inputs, groups, spine_algorithm_version=sav, episode_id=EP)
    orders = list(twin.orders())
    planted = rnd.choice(orders)
    target = py.spine_root([inputs[k] for k in planted], spine_algorithm_version=sav, episode_id=EP)
    for cap in (0, len(orders) - 1, len(orders)):
        assert c.search_orders(inputs, groups, target, spine_algorithm_version=sav, episode_id=EP, cap=cap) == \
            py.search_orders(inputs, groups, target, spine_algorithm_version=sav, episode_id=EP, cap=cap)
    compiled = c.TieSearch(inputs, groups, spine_algorithm_version=sav, episode_id=EP)
    assert compiled.space == twin.space
    assert compiled.root_of(planted) == twin.root_of(planted)


@pytest.mark.parametrize("groups", [[(0, 2), (1, 2)], [(5, 1), (-1, 2)], [(9, 2)], [(0, 0)], [("0", 2)]])
def test_tie_search_bad_groups(astp_impl: ModuleType, groups: list) -> None:
    need(astp_impl, "TieSearch")
    with pytest.raises(errors.InvalidFieldError):
        astp_impl.TieSearch(["00" * 32] * 10, groups, spine_algorithm_version=0)


def test_tie_search_eight_signals(astp_impl: ModuleType) -> None:
    need(astp_impl, "search_orders")
    inputs = [x.hex() for x in leaves_of(20 + 8, 3)]
    perm = list(range(20)) + [20 + k for k in (7, 6, 5, 4, 3, 2, 1, 0)]
    target = reference_root([bytes.fromhex(inputs[k]) for k in perm], 1, EP)
    found, tried, cap_hit = astp_impl.search_orders(inputs, [(20, 8)], target, spine_algorithm_version=1,
                                                    episode_id=EP, cap=40320)
    assert (found, tried, cap_hit) == (perm, 40320, False)  # the reverse order is the last permutation
    assert astp_impl.search_orders(inputs, [(20, 8)], target, spine_algorithm_version=1, episode_id=EP,
                                   cap=40319) == (None, 0, True)


def test_itertools_order_is_the_contract() -> None:
    py = backend_module("astp", "py")
    search = py.TieSearch(["00" * 32] * 5, [(0, 2), (2, 3)], spine_algorithm_version=2)
    expected = [list(a) + list(b) for a, b in itertools.product(itertools.permutations(range(2)),
                                                                 itertools.permutations(range(2, 5)))]
    assert list(search.orders()) == expected
