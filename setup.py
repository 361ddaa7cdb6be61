"""Extension list and build knobs; all metadata lives in pyproject.toml.

The compiled modules are those of the capability table, src/canonkit/_capabilities.py:
``ext/<capability>/<module>.pyx`` becomes ``canonkit.<capability>.<module>``, the name
derived from the path. C helpers and .pxi files in ``ext/<capability>/`` are ``#include``d
by the .pyx that needs them, so the list needs no per-module sources; a .pyx the table
does not name, or a module it names without a source, fails the build.

Knobs (environment):
  CANONKIT_NO_EXTENSIONS=1       build nothing: a pure ``py3-none-any`` wheel, the twins serve.
  CANONKIT_REQUIRE_EXTENSIONS=1  fail the build if any extension fails (CI, release wheels);
                                 otherwise an extension that fails is skipped (its twin
                                 serves, ``import`` warns) and a build that compiled
                                 nothing is tagged ``py3-none-any``, not ``cp3xx-<platform>``.
  CANONKIT_WERROR=1              turn C compiler warnings into errors (CI).
  CANONKIT_CYTHON_ANNOTATE=1     write Cython's annotated HTML next to the sources.
  CANONKIT_EXTENSIONS=cbor._codec,...  build only the named extensions (development).
  CANONKIT_SANITIZE=address,undefined  compile and link with -fsanitize=... (debug build
                                 for .ci/sanitize; load the ASan runtime with LD_PRELOAD).
"""
import os
import runpy
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1 (development installs only: pyproject needs >= 77)
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).parent
NO_EXT = os.environ.get("CANONKIT_NO_EXTENSIONS") == "1"
REQUIRE_EXT = os.environ.get("CANONKIT_REQUIRE_EXTENSIONS") == "1"
WERROR = os.environ.get("CANONKIT_WERROR") == "1"
ANNOTATE = os.environ.get("CANONKIT_CYTHON_ANNOTATE") == "1"
ONLY = {n for n in os.environ.get("CANONKIT_EXTENSIONS", "").split(",") if n}

DIRECTIVES = {
    "language_level": 3,
    "embedsignature": True,
    # Not declared free-threading compatible: the extension types keep C-level mutable
    # state (encoder buffers, hasher states, decoder scratch) whose safety under
    # concurrent use relies on the GIL. On a free-threaded interpreter the GIL is
    # re-enabled at import, which is correct; no free-threaded wheels are built.
    "freethreading_compatible": False,
}
if sys.platform == "win32":
    CFLAGS = ["/O2", "/W3"] + (["/WX"] if WERROR else [])
else:
    # -Wall over the C helpers and Cython's output; CI (CANONKIT_WERROR=1, gcc) makes every
    # warning fatal but one: -Wmaybe-uninitialized, which gcc -O3 raises on Cython's own
    # utility code (a digits buffer in __Pyx_PyUnicode_From_uint8_t, written before it is
    # read) — a false positive outside our sources, so it stays visible but not fatal.
    CFLAGS = ["-O3", "-fno-strict-aliasing", "-Wall"]
    if WERROR:
        CFLAGS += ["-Werror", "-Wno-error=maybe-uninitialized"]
LDFLAGS = []
SANITIZE = os.environ.get("CANONKIT_SANITIZE", "")
if SANITIZE:  # -O1 after -O3 wins: readable reports, still fast enough to test
    CFLAGS += [f"-fsanitize={SANITIZE}", "-fno-omit-frame-pointer", "-g", "-O1"]
    LDFLAGS += [f"-fsanitize={SANITIZE}"]


# system libraries a compiled module links (the store's kernel inflates small DEFLATE
# objects itself, with zlib; zlib's headers come with every Python build environment)
LIBRARIES = {"canonkit.store._format": ["z"]}


def module_name(pyx):
    """``ext/<capability>/<module>.pyx`` -> ``canonkit.<capability>.<module>``."""
    return ".".join(["canonkit", *pyx.relative_to(HERE / "ext").with_suffix("").parts])


def extensions():
    if NO_EXT:
        return []
    table = runpy.run_path(str(HERE / "src" / "canonkit" / "_capabilities.py"))
    wanted = set(table["compiled_modules"]())
    sources = {module_name(p): p for p in sorted((HERE / "ext").glob("*/_*.pyx"))}
    if set(sources) != wanted:
        raise SystemExit(f"ext/ and src/canonkit/_capabilities.py disagree: sources without "
                         f"a table entry {sorted(set(sources) - wanted)}, table entries "
                         f"without a source {sorted(wanted - set(sources))}")
    out = []
    for name, pyx in sorted(sources.items()):
        if ONLY and name.removeprefix("canonkit.") not in ONLY:
            continue
        folder = pyx.parent
        # headers and .pxi files are #included: a changed one must rebuild the module
        depends = [str(h.relative_to(HERE)) for h in sorted(folder.iterdir())
                   if h.suffix in (".h", ".pxi", ".pxd")]
        out.append(Extension(
            name,
            [str(pyx.relative_to(HERE))],
            include_dirs=[str(folder.relative_to(HERE))],
            extra_compile_args=CFLAGS,
            extra_link_args=LDFLAGS,
            libraries=LIBRARIES.get(name, []),
            depends=depends,
            optional=not REQUIRE_EXT,  # a failure skips the extension with a warning
        ))
    return out


class CythonBuildExt(build_ext):
    """Cythonize each extension as it is built, so a Cython error is a compile error
    like any other (fatal, or skipped for an optional extension), and record what
    was built for ``PurityAwareWheel``."""

    def initialize_options(self):
        super().initialize_options()
        self.built = []

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:  # the extensions are independent: compile them side by side
            self.parallel = os.cpu_count() or 1

    def build_extension(self, ext):
        from Cython.Build import cythonize
        from Cython.Compiler.Errors import CompileError as CythonError

        try:
            try:
                (cythonized,) = cythonize(
                    [ext], compiler_directives=DIRECTIVES, annotate=ANNOTATE, quiet=True
                )
            except CythonError as exc:
                raise CompileError(f"Cython failed on {ext.sources[0]}: {exc}") from exc
            ext.sources = cythonized.sources
            super().build_extension(ext)
        except BaseException:
            # a module left in build/ by an earlier build must not ship in place of this one
            stale = Path(self.get_ext_fullpath(ext.name))
            if not self.inplace and stale.exists():
                stale.unlink()
            raise
        self.built.append(ext.name)


class PurityAwareWheel(bdist_wheel):
    """A wheel is platform-specific only if an extension was actually compiled into it:
    a fallback build (no compiler, every extension failed) is ``py3-none-any``."""

    def run_command(self, command):
        super().run_command(command)
        if command == "build" and not self.get_finalized_command("build_ext").built:
            self.distribution.ext_modules = []  # installed as purelib, tagged py3-none-any
            self.root_is_pure = True


setup(
    ext_modules=extensions(),
    cmdclass={"build_ext": CythonBuildExt, "bdist_wheel": PurityAwareWheel},
)
