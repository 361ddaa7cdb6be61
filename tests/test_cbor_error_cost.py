"""An encode that fails deep inside nested maps must cost about one extra walk, not one
per enclosing map (the compiled encoder once re-walked every enclosing map on the error
path: 4 s for 511 nested dicts). Counted in nodes visited, not timed."""
from types import ModuleType
from typing import Any

import pytest

from canonkit import errors


class CountingDict(dict):  # type: ignore[type-arg]
    """A dict subclass that counts how often its items are walked."""

    walks = 0

    def items(self):  # type: ignore[no-untyped-def, override]
        CountingDict.walks += 1
        return super().items()


def nested(depth: int, leaf: Any) -> Any:
    value: Any = leaf
    for _ in range(depth):
        value = CountingDict(a=value)
    return value


@pytest.mark.parametrize("depth", [50, 400])
def test_failing_encode_walks_each_map_a_bounded_number_of_times(
    cbor_impl: ModuleType, depth: int
) -> None:
    value = nested(depth, float("nan"))
    CountingDict.walks = 0
    with pytest.raises(errors.EncodeFloatOutsideProfileError):
        cbor_impl.encode(value, profile="dag-cbor")
    assert CountingDict.walks <= 3 * depth
