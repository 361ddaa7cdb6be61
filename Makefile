# The two commands of README.md. Each does the whole set-up on a fresh machine (Python
# >= 3.10 with its headers and a C compiler; Linux or macOS):
#
#   make demo   a virtualenv in $(VENV) (created when absent), canonkit built with every
#               compiled extension required, then the main job: re-verify the bundled
#               62-Episode corpus and print its table
#   make test   the same set-up plus the `test` extra, then the test suite
#
# The extras the suite needs are listed once, in pyproject.toml's `test` extra.
# Variables: VENV (default .venv), PYTHON (the interpreter that creates the virtualenv:
# any CPython 3.10-3.13, e.g. `make test PYTHON=python3.13 VENV=.venv313`), TESTS (what
# pytest runs, default the whole suite), PYTEST_ARGS (extra pytest arguments).

PYTHON ?= python3
VENV ?= .venv
TESTS ?= tests
BIN := $(VENV)/bin
TOOLS := $(VENV)/.canonkit-build-tools

# every extension must compile: a fresh checkout never silently runs on the twins
export CANONKIT_REQUIRE_EXTENSIONS := 1

.PHONY: demo test

$(TOOLS):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip "setuptools>=77" wheel "Cython>=3.0"
	touch $@

demo: $(TOOLS)
	$(BIN)/python -m pip install --quiet --no-build-isolation --editable .
	@# status 1 is this corpus's answer (5 Episodes do not reproduce), not a failed demo
	$(BIN)/canonkit reverify examples/seed-table; status=$$?; \
	  echo "canonkit reverify exited with status $$status" \
	       "(0: all reproduced; 1: some did not, see the table; 2: could not run)"; \
	  test $$status -le 1

test: $(TOOLS)
	$(BIN)/python -m pip install --quiet --no-build-isolation --editable ".[test]"
	$(BIN)/python -m pytest $(TESTS) $(PYTEST_ARGS)
