# Entry points named in the README. Everything installs into .venv; nothing global.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The core modules compiled with mypyc (scheduler/compiled.py), all in one group whose shared
# library is the target: rebuilt whenever any core source changes (mypyc compiles against the
# types of the modules it does not compile too).
COMPILED     := henge_core__mypyc$(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
CORE_SOURCES := $(shell find scheduler/core -name '*.py') scheduler/compiled.py scripts/compile_core.py

# The agent is a distribution of its own (agent/, henge-agent) that henge depends on: both are
# installed in one pip call so the resolver takes henge-agent from this tree.
LINT_PATHS := scheduler agent tests migrations examples/spark
AGENT_WHEEL_DIR := dist

.PHONY: setup demo test lint typecheck docs docs-check postgres agent-wheel image image-early uncompile clean

$(STAMP): pyproject.toml agent/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ./agent -e ".[dev,spark,docs,bench]"
	touch $(STAMP)

$(COMPILED): $(STAMP) $(CORE_SOURCES)
	$(BIN)/python scripts/compile_core.py

setup: $(STAMP) $(COMPILED)  ## create .venv, install the project with its dev tools, compile the core

uncompile:  ## remove the compiled core: run the plain Python source (`make setup` compiles again)
	rm -f henge_core__mypyc.*.so
	find scheduler -name '*.so' -delete
	rm -rf build/mypyc

demo: setup  ## run `henge demo` on the embedded defaults (SQLite, simulated cluster)
	$(BIN)/henge demo

postgres:  ## make sure the Postgres server for the tests answers
	@scripts/ensure-postgres.sh

lint: setup
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy scheduler/core agent/henge_agent

# NO_MKDOCS_2_WARNING: the Material theme otherwise prints a banner about its successor each build.
docs: setup  ## serve the documentation site at http://127.0.0.1:8000, rebuilt on every edit
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-check: setup  ## build the site with --strict: a dead link or a page missing from the navigation fails
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

agent-wheel: setup  ## build the henge-agent wheel into dist/ (what a tenant's driver installs)
	$(BIN)/python -m build --wheel --outdir $(AGENT_WHEEL_DIR) agent

image:  ## build the container image from the Dockerfile with buildah (as root; installs buildah and debootstrap)
	@scripts/ensure-image.sh

# The image tests (tests/image) need the image, built from the working tree (and, once per
# machine, buildah and a base image): `make test` starts the build in the background before the
# linters, so that it overlaps them, and the tests wait for its outcome (HENGE_IMAGE_BUILD_LOG;
# the .status file beside the log holds the script's exit code once it is done).
IMAGE_BUILD_LOG := $(VENV)/image-build.log
image-early: setup
	@rm -f $(IMAGE_BUILD_LOG).status
	@{ scripts/ensure-image.sh > $(IMAGE_BUILD_LOG) 2>&1; echo $$? > $(IMAGE_BUILD_LOG).tmp; \
	   mv $(IMAGE_BUILD_LOG).tmp $(IMAGE_BUILD_LOG).status; } </dev/null >/dev/null 2>&1 &

# The tests run in two parts, each printing its slowest 25 tests' times. Those that start no Spark
# share out over four workers, whatever the cores: many of them wait on servers and subprocesses,
# so two workers a core keep a 2-core machine busy, and more would pass Postgres's default limit
# of 100 connections (each worker has its own session database, and a few tests drive servers
# with tens of connections). The real Spark ones run alone after them, since they time real
# processes on the machine's cores: run beside the others, even at a lower priority, both parts
# had tests miss their time bounds (Postgres and the servers' I/O are shared).
test: setup postgres image-early lint typecheck docs-check  ## every check and every test
	HENGE_IMAGE_BUILD_LOG=$(IMAGE_BUILD_LOG) $(BIN)/pytest --numprocesses 4 --ignore tests/spark --durations=25
	$(BIN)/pytest tests/spark --durations=25

clean: uncompile
	rm -rf $(VENV) $(AGENT_WHEEL_DIR) .pytest_cache .mypy_cache .ruff_cache .hypothesis henge.db henge.db-*
