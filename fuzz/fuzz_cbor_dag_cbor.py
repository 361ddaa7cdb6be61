"""Fuzz target: CBOR decoding under the dag-cbor profile, compiled vs twin, and re-encoding."""
import _harness
from cbor_target import make

one_input = make("dag-cbor")

if __name__ == "__main__":
    _harness.run(one_input)
