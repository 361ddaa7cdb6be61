"""Small DAG-CBOR messages against libipld, cbrrr, cbor2 and orjson (JSON, for scale).

    python -m pytest bench/test_small_messages.py --benchmark-json=/tmp/small.json
    python bench/report.py /tmp/small.json --baseline libipld

Groups ``small-messages:<operation>:<message>`` (operations decode, encode, check,
decode_prefix; the messages of ``bench/small_messages.py``). Contenders: ``canonkit-c``
is the module function (``cbor.decode(b, profile="dag-cbor")``, ...), ``canonkit-c-object``
the reusable ``Decoder``/``Encoder``; check and decode_prefix rows have libipld's decode
for scale. Every call is timed in batches of 500 (see ``test_cbor._run``).
"""
from __future__ import annotations

from typing import Any

import pytest
from small_messages import MESSAGES, OPERATIONS, contenders, message_bytes
from test_cbor import _run

CONTENDERS = ("canonkit-c", "canonkit-c-object", "libipld", "cbrrr", "cbor2", "orjson")


@pytest.mark.parametrize("contender", CONTENDERS)
@pytest.mark.parametrize("name", list(MESSAGES))
@pytest.mark.parametrize("operation", OPERATIONS)
def test_small_message(benchmark: Any, operation: str, name: str, contender: str) -> None:
    runs = contenders(operation, name)
    if contender not in runs:
        pytest.skip(f"{contender} has no {operation}")
    _run(benchmark, f"small-messages:{operation}:{name}", contender, runs[contender],
         len(message_bytes(name)))
