"""The CBOR decoder targets (one per profile). Both backends decode the input under the
profile and must agree; so must ``check``, ``check_sequence`` and ``decode_prefix``. An
accepted input re-encodes, on both backends, to exactly the input bytes (a deterministic
profile accepts only its one encoding of a value), ``check`` accepts whatever ``decode``
accepts, and ``decode_prefix`` reads the same value to the end of the input."""
from __future__ import annotations

from collections.abc import Callable

from _harness import Mismatch, instrumented, outcome, pair, same

with instrumented():
    COMPILED, TWIN = pair("cbor")


def make(profile: str) -> Callable[[bytes], None]:
    def one_input(data: bytes) -> None:
        where = f"({data.hex()}, profile={profile!r})"
        got = outcome(lambda: COMPILED.decode(data, profile=profile))
        same(f"decode{where}", got, outcome(lambda: TWIN.decode(data, profile=profile)))
        checked = None
        for name in ("check", "check_sequence", "decode_prefix"):
            if hasattr(COMPILED, name):  # the streaming and validating entry points
                result = outcome(lambda n=name: getattr(COMPILED, n)(data, profile=profile))
                same(f"{name}{where}", result,
                     outcome(lambda n=name: getattr(TWIN, n)(data, profile=profile)))
                if name == "check":
                    checked = result
                if name == "decode_prefix" and got[0] == "value" and (
                        result[0] != "value" or result[1][1] != len(data)):
                    raise Mismatch(f"decode accepts {data.hex()} but decode_prefix gave "
                                   f"{result!r}")
        if got[0] != "value":
            return
        if checked is not None and checked[0] != "value":
            raise Mismatch(f"decode accepts {data.hex()} under {profile!r}, check refuses: "
                           f"{checked!r}")
        for name, backend in (("compiled", COMPILED), ("twin", TWIN)):
            value = backend.decode(data, profile=profile)
            again = outcome(lambda b=backend, v=value: b.encode(v, profile=profile))
            if again != ("value", data):
                raise Mismatch(f"{name}: encode(decode({data.hex()})) under {profile!r} "
                               f"gave {again!r}")

    return one_input
