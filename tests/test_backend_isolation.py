"""A twin import for side-by-side runs must leave the live package untouched: later
`from canonkit import astp` binds the live (compiled when built) kernels again."""
import canonkit
from canonkit import _backend


def test_twin_import_restores_the_live_package() -> None:
    from canonkit import astp as live

    live_backend = live.__backend__
    why_not = dict(_backend.WHY_NOT_COMPILED)
    twin = _backend.import_on_twins("canonkit.astp")
    assert twin is not live and twin.__backend__ == "python"
    from canonkit import astp as again

    assert again is live and canonkit.astp is live
    assert again.__backend__ == live_backend
    assert _backend.WHY_NOT_COMPILED == why_not
