"""Extension list and build knobs; all metadata lives in pyproject.toml.

Every ``ext/_<name>.pyx`` becomes ``canonkit._<name>``; C helpers in ``ext/`` are
``#include``d by the .pyx that needs them, so the list needs no per-module sources.

Knobs (environment):
  CANONKIT_NO_EXTENSIONS=1       build nothing; the pure-Python twins serve.
  CANONKIT_REQUIRE_EXTENSIONS=1  fail the build if any extension fails (CI).
  CANONKIT_CYTHON_ANNOTATE=1     write Cython's annotated HTML next to the sources.
  CANONKIT_EXTENSIONS=_cbor,...  build only the named extensions (development).
  CANONKIT_SANITIZE=address,undefined  compile and link with -fsanitize=... (debug build
                                 for .ci/sanitize; load the ASan runtime with LD_PRELOAD).
"""
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
NO_EXT = os.environ.get("CANONKIT_NO_EXTENSIONS") == "1"
REQUIRE_EXT = os.environ.get("CANONKIT_REQUIRE_EXTENSIONS") == "1"
ANNOTATE = os.environ.get("CANONKIT_CYTHON_ANNOTATE") == "1"
ONLY = {n for n in os.environ.get("CANONKIT_EXTENSIONS", "").split(",") if n}

DIRECTIVES = {
    "language_level": 3,
    "embedsignature": True,
    "freethreading_compatible": False,
}
CFLAGS = ["-O3", "-fno-strict-aliasing"] if sys.platform != "win32" else ["/O2"]
LDFLAGS = []
SANITIZE = os.environ.get("CANONKIT_SANITIZE", "")
if SANITIZE:  # -O1 after -O3 wins: readable reports, still fast enough to test
    CFLAGS += [f"-fsanitize={SANITIZE}", "-fno-omit-frame-pointer", "-g", "-O1"]
    LDFLAGS += [f"-fsanitize={SANITIZE}"]


def extensions():
    if NO_EXT:
        return []
    import numpy

    pyx = sorted((HERE / "ext").glob("_*.pyx"))
    # headers are #included by the .pyx files: a changed header must rebuild them
    headers = [str(h.relative_to(HERE)) for h in sorted((HERE / "ext").glob("*.h"))]
    return [
        Extension(
            f"canonkit.{p.stem}",
            [str(p.relative_to(HERE))],
            include_dirs=["ext", numpy.get_include()],
            define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            extra_compile_args=CFLAGS,
            extra_link_args=LDFLAGS,
            depends=headers,
        )
        for p in pyx
        if not ONLY or p.stem in ONLY
    ]


class TolerantBuildExt(build_ext):
    """Cythonize and compile each extension on its own; a failure skips that one
    extension (its twin serves) unless CANONKIT_REQUIRE_EXTENSIONS=1."""

    def build_extension(self, ext):
        from Cython.Build import cythonize

        try:
            (cythonized,) = cythonize(
                [ext], compiler_directives=DIRECTIVES, annotate=ANNOTATE, quiet=True
            )
            ext.sources = cythonized.sources
            super().build_extension(ext)
        except (Exception, SystemExit) as exc:  # any build failure is reported the same way
            if REQUIRE_EXT:
                raise
            print(f"canonkit: skipping {ext.name}: {exc}", file=sys.stderr)


setup(ext_modules=extensions(), cmdclass={"build_ext": TolerantBuildExt})
