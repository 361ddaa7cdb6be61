"""Optional dependencies, imported on first use: a missing one is a
``MissingDependencyError`` that names the extra to install, never a bare ImportError
from deep inside a run."""
from __future__ import annotations

import importlib
from types import ModuleType

from .errors import MissingDependencyError

# module -> the extra of pyproject.toml that installs it
EXTRAS = {"zstandard": "zstd", "tqdm": "progress", "numpy": "numpy", "obstore": "s3"}


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise ``MissingDependencyError`` saying that ``purpose``
    needs it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingDependencyError(
            f"{purpose} needs the optional package {module!r}: "
            f"pip install 'canonkit[{EXTRAS[module]}]'", detail=module) from None
