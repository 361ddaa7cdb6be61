"""Content addresses of small records next to their floors, with pytest-benchmark.

    python -m pytest bench/test_small_objects.py --benchmark-json=/tmp/small-objects.json
    python bench/report.py /tmp/small-objects.json --baseline floor

Groups ``small-objects:<operation>:<record>`` (operations ``address_object``,
``for_block`` and ``link``; the records and contenders of ``bench/small_objects.py``,
where each row's ``floor`` is said). Every call is timed in batches of 500 (see
``test_cbor._run``).
"""
from __future__ import annotations

from typing import Any

import pytest
from small_objects import CONTENDERS, OPERATIONS, contenders, input_size, names
from test_cbor import _run

CASES = [(operation, name, contender) for operation in OPERATIONS
         for name in names(operation) for contender in CONTENDERS[operation]]


@pytest.mark.parametrize(("operation", "name", "contender"), CASES)
def test_small_object(benchmark: Any, operation: str, name: str, contender: str) -> None:
    runs = contenders(operation, name)
    assert tuple(runs) == CONTENDERS[operation]
    _run(benchmark, f"small-objects:{operation}:{name}", contender, runs[contender],
         input_size(operation, name))
