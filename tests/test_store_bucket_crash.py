"""Crash safety of a store in object storage (STORE.md §7, last bullet), by fault
injection: repack and gc ended right before their mutating requests (a sample of them
here; ``python tests/bucket_crashes.py`` tries every one), and answers lost on the way
back from the server (a retried conditional request finds its own first attempt
applied: ``PreconditionFailedError.detail == "retried"``)."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from bucket_crashes import Image, check_completed, prepare, sweep
from bucket_helpers import upload
from services import FaultProxy, S3Prefix, needs_obstore
from store_helpers import ForkServer, assert_resolvable

from canonkit.store import Store

pytestmark = needs_obstore

# the suite's sample: every request of repack (8); of gc's 18, the first five (the lease,
# the sweep, the pack, its index, the first deletion), every fourth and the last two
STRIDE = {"repack": 1, "gc": 4}


@pytest.fixture(scope="module")
def image() -> Iterator[Image]:
    base = Path(tempfile.mkdtemp(prefix="canonkit-bucket-pristine-"))
    yield prepare(base / "store", 4)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def server(s3: S3Prefix) -> Iterator[ForkServer]:
    srv = ForkServer(dict(os.environ))  # the s3 fixture has set the endpoint's variables
    yield srv
    srv.close()


@pytest.mark.slow
@pytest.mark.parametrize("op", ["repack", "gc"])
def test_a_crash_before_any_request_loses_nothing(s3: S3Prefix, server: ForkServer,
                                                  image: Image, op: str,
                                                  tmp_path: Path) -> None:
    total, tried = sweep(server, image, s3.url, op, STRIDE[op], tmp_path / "count")
    assert total == image.requests(op) and tried >= 7


def _put_of(suffix: str) -> object:
    return lambda method, path: method == "PUT" and path.split("?")[0].endswith(suffix)


@pytest.mark.parametrize("what, match", [
    ("the lease's creation (If-None-Match)", _put_of("/lock")),
    ("the index's publication (If-None-Match)", _put_of(".idx")),
    ("the pack's upload", _put_of(".pack")),
    ("a deletion (S3's client sends it as a POST ?delete)",
     lambda method, path: method == "POST" and path.endswith("?delete")),
    ("the lease's release (If-Match)", lambda method, path: method == "DELETE"
     and path.split("?")[0].endswith("/lock")),
])
def test_a_lost_answer_is_recognised_and_the_repack_completes(
        s3: S3Prefix, proxied: FaultProxy, image: Image, what: str, match: object) -> None:
    """The request reached the store, its answer did not reach the client: the retry
    finds its own first attempt applied (the lease is ours, the index the one we wrote,
    the object already deleted) and the repack goes on as if nothing had happened."""
    url = s3.url + "st/"
    upload(image.root, url)
    proxied.lose(1, match=match)  # type: ignore[arg-type]
    Store(url).repack(grace_seconds=0)
    assert proxied.faults == 1, what
    check_completed(url, image, "repack", run=False)
    assert_resolvable(Store(url), set(image.data), image.data)
