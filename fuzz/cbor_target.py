"""The CBOR decoder targets (one per profile): both backends decode the input under the
profile and must agree; an accepted input re-encodes, on both backends, to exactly the
input bytes (a deterministic profile accepts only its one encoding of a value)."""
from __future__ import annotations

from collections.abc import Callable

from _harness import Mismatch, instrumented, outcome, pair, same

with instrumented():
    COMPILED, TWIN = pair("cbor")


def make(profile: str) -> Callable[[bytes], None]:
    def one_input(data: bytes) -> None:
        got = outcome(lambda: COMPILED.decode(data, profile=profile))
        want = outcome(lambda: TWIN.decode(data, profile=profile))
        same(f"decode({data.hex()}, profile={profile!r})", got, want)
        if hasattr(COMPILED, "check"):  # the validating fast path, where it exists
            same(f"check({data.hex()}, profile={profile!r})",
                 outcome(lambda: COMPILED.check(data, profile=profile)),
                 outcome(lambda: TWIN.check(data, profile=profile)))
        if got[0] != "value":
            return
        for name, backend, value in (("compiled", COMPILED, got[1]), ("twin", TWIN, want[1])):
            again = outcome(lambda b=backend, v=value: b.encode(v, profile=profile))
            if again != ("value", data):
                raise Mismatch(f"{name}: encode(decode({data.hex()})) under {profile!r} "
                               f"gave {again!r}")

    return one_input
