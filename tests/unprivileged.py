"""Running a command as a user for whom ``chmod 000`` really means unreadable.

Not root: the current user, as it is. Root ignores file modes, so as root the command runs
as nobody (``subprocess``'s ``user=``/``group=``), and nobody must be able to read the
interpreter and the packages the command imports. An interpreter installed where nobody
cannot go (pyenv's under root's 0700 home) gets a mirror: its executable, shared library
and standard library hard-linked (copied across file systems) into a directory nobody can
read, next to canonkit and its mandatory dependencies. When even that cannot run, the tests
skip with the reason the probe gave — they never fail for the environment, and never pass
without running.
"""
from __future__ import annotations

import atexit
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

import pytest

import canonkit

NOBODY = 65534
ROOT = os.geteuid() == 0
# what the commands under test import besides canonkit and the standard library: its
# mandatory dependencies (pyproject.toml)
NEEDED = ("orjson", "blake3")
PROBE = "import canonkit.cli, canonkit.cli.reverify, canonkit.reverify.runner, " + \
    ", ".join(NEEDED)
# parts of the standard library no command imports (and the bulk of its size)
STDLIB_SKIPPED = {"test", "site-packages", "idlelib", "tkinter", "turtledemo", "ensurepip",
                  "lib2to3", "pydoc_data"}


def _mirror_file(src: Path, dst: Path) -> None:
    """A hard link when others may read ``src`` (a link shares its mode: never changed
    here), else a copy others may read."""
    mode = src.stat().st_mode
    if mode & 0o004:
        try:
            os.link(src, dst)
            return
        except OSError:  # another file system, or linking refused
            pass
    shutil.copy2(src, dst)
    dst.chmod(0o755 if mode & 0o100 else 0o644)


def _mirror_tree(src: Path, dst: Path, skipped: set[str] = set()) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    dst.chmod(0o755)
    for entry in os.scandir(src):
        if entry.name in skipped or entry.name.startswith("config-"):
            continue
        target = dst / entry.name
        if entry.is_dir(follow_symlinks=False):
            _mirror_tree(Path(entry.path), target)
        elif entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
        elif entry.is_file():
            _mirror_file(Path(entry.path), target)


def _packages(site: Path) -> None:
    """canonkit (as imported here: checkout or installed) and NEEDED, under ``site``."""
    _mirror_tree(Path(canonkit.__file__).resolve().parent, site / "canonkit")
    for name in NEEDED:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"{name} is not installed")
        if spec.submodule_search_locations:
            _mirror_tree(Path(list(spec.submodule_search_locations)[0]), site / name)
        else:
            _mirror_file(Path(spec.origin), site / Path(spec.origin).name)


def _interpreter(home: Path) -> Path:
    """This interpreter's installation (not its virtualenv) mirrored under ``home``."""
    real = Path(os.path.realpath(sys.executable))
    base = Path(sys.base_prefix)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (home / "bin").mkdir(parents=True)
    _mirror_file(real, home / "bin" / version)
    libdir = Path(sysconfig.get_config_var("LIBDIR") or base / "lib")
    (home / "lib").mkdir()
    for lib in libdir.glob("libpython*"):
        if lib.is_file():
            _mirror_file(lib, home / "lib" / lib.name)
    _mirror_tree(base / "lib" / version, home / "lib" / version, STDLIB_SKIPPED)
    (home / "lib" / version / "site-packages").mkdir()
    return home / "bin" / version


def _probe(command: list[str], env: dict[str, str]) -> str | None:
    """None when ``command`` runs PROBE as nobody, else why not."""
    try:
        done = subprocess.run([*command, "-c", PROBE], env=env, capture_output=True,
                              text=True, timeout=60, check=False, user=NOBODY,
                              group=NOBODY, extra_groups=[])
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    lines = done.stderr.strip().splitlines()
    return None if done.returncode == 0 else (lines[-1] if lines else f"status {done.returncode}")


@functools.cache
def _setup() -> tuple[list[str], dict[str, str], dict[str, Any]] | str:
    """(command prefix, environment, subprocess options) for an unprivileged run of this
    interpreter, or the reason there is none."""
    if not ROOT:
        return [sys.executable], dict(os.environ), {}
    home = Path(tempfile.mkdtemp(prefix="canonkit-unprivileged-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    home.chmod(0o755)
    try:
        _packages(home / "site")
    except (OSError, RuntimeError) as exc:
        return f"cannot copy the packages for an unprivileged user: {exc}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(home / "site")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    options = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    why = _probe([sys.executable], env)
    if why is None:
        return [sys.executable], env, options
    try:
        python = _interpreter(home / "python")
    except OSError as exc:
        return f"nobody cannot run {sys.executable} ({why}), and mirroring it failed: {exc}"
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [str(home / "python" / "lib"), os.environ.get("LD_LIBRARY_PATH", "")]).rstrip(os.pathsep)
    mirrored = _probe([str(python)], env)
    if mirrored is not None:
        return f"nobody cannot run {sys.executable} ({why}) nor a mirror of it ({mirrored})"
    return [str(python)], env, options


def run_unprivileged(*argv: str | os.PathLike[str], timeout: float = 120,
                     env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m canonkit ARGV`` as a user ``chmod 000`` stops; skips the test (saying
    why) where no such run is possible."""
    setup = _setup()
    if isinstance(setup, str):
        pytest.skip(setup)
    command, base_env, options = setup
    return subprocess.run([*command, "-m", "canonkit", *map(os.fspath, argv)],
                          env={**base_env, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout, check=False, **options)
