"""A hypothesis state machine over put / put_object / set_ref / delete_ref / repack / gc /
fsck, checked against a simple in-memory model of which objects must exist: everything a
ref reaches must always read back as its bytes; gc with no grace period leaves exactly
that; nothing else ever changes an object's bytes."""
from __future__ import annotations

import shutil
import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    rule,
)

from canonkit import objects
from canonkit.store import Store

NAMES = st.sampled_from(["main", "dev", "tags/v1", "team/a/b"])


class StoreModel(RuleBasedStateMachine):
    addresses = Bundle("addresses")

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="canonkit-model-")
        self.store = Store.init(f"{self.dir}/s", durable=False)
        self.data: dict[str, bytes] = {}      # every address ever put -> its bytes
        self.children: dict[str, list[str]] = {}
        self.present: set[str] = set()        # may exist (put, not yet collected)
        self.refs: dict[str, str] = {}

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def required(self) -> set[str]:
        """What the refs reach: must exist."""
        out: set[str] = set()
        todo = list(self.refs.values())
        while todo:
            a = todo.pop()
            if a not in out:
                out.add(a)
                todo += self.children.get(a, [])
        return out

    @rule(target=addresses, data=st.binary(max_size=300), form=st.sampled_from(["loose",
                                                                                 "deflate"]))
    def put(self, data: bytes, form: str) -> str:
        address = self.store.put(data, form=form)
        assert address == objects.address(data)
        self.data[address] = data
        self.present.add(address)
        return address

    @rule(target=addresses, refs=st.lists(addresses, min_size=1, max_size=3, unique=True))
    def put_tree(self, refs: list[str]) -> object:
        live = [a for a in refs if a in self.present]
        if not live:
            return multiple()
        entries = [{"name": f"e{i}", "mode": 0o100644, "ref": bytes.fromhex(a[7:])}
                   for i, a in enumerate(live)]
        address = self.store.put_object("tree", {"entries": entries})
        self.data[address] = objects.encode_object("tree", {"entries": entries})
        self.children[address] = live
        self.present.add(address)
        return address

    @rule(name=NAMES, address=addresses)
    def set_ref(self, name: str, address: str) -> None:
        if address not in self.present:
            return
        self.store.set_ref(name, address, expect=self.refs.get(name, Store.ABSENT))
        self.refs[name] = address

    @rule(name=NAMES)
    def delete_ref(self, name: str) -> None:
        assert self.store.delete_ref(name) == (name in self.refs)
        self.refs.pop(name, None)

    @rule(mode=st.sampled_from(["auto", "always", "never"]), merge=st.booleans())
    def repack(self, mode: str, merge: bool) -> None:
        self.store.repack(deflate=mode, merge=merge, grace_seconds=0)

    @rule()
    def gc_now(self) -> None:
        self.store.gc(grace_seconds=0)
        self.present = self.required()

    @rule()
    def gc_with_grace(self) -> None:
        stats = self.store.gc()  # everything is younger than an hour: nothing goes
        assert stats.deleted == 0

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = Store(f"{self.dir}/s", durable=False)

    @rule()
    def fsck(self) -> None:
        report = self.store.fsck()
        assert report.ok, report.errors()
        assert report.reachable == len(self.required())

    @invariant()
    def required_objects_read_back(self) -> None:
        required = sorted(self.required())
        assert self.store.get_many(required) == [self.data[a] for a in required]
        stored = set(self.store.addresses())
        assert set(required) <= stored <= self.present
        assert self.store.refs() == dict(sorted(self.refs.items()))


StoreModel.TestCase.settings = settings(
    max_examples=50, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestStoreModel = StoreModel.TestCase
