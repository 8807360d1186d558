# Entry points named in the README. Everything installs into .venv; nothing global.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint typecheck postgres clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev,spark]"
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install the project with its dev tools

demo: setup  ## run `henge demo` on the embedded defaults (SQLite, simulated cluster)
	$(BIN)/henge demo

postgres:  ## make sure the Postgres server for the tests answers
	@scripts/ensure-postgres.sh

lint: setup
	$(BIN)/ruff check scheduler tests migrations
	$(BIN)/ruff format --check scheduler tests migrations
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy scheduler/core

test: setup postgres lint typecheck  ## every check and every test
	$(BIN)/pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis henge.db henge.db-*
