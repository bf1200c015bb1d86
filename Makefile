# Twin: `make run` starts the world and every server; `make test` runs the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: run test lint format bench load coverage clean setup

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/twin run $(ARGS)

test: $(STAMP)
	$(BIN)/pytest $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP)
	$(BIN)/python -m bench $(ARGS)

load: $(STAMP)
	$(BIN)/locust -f loadtests/locustfile.py --headless -u 20 -r 10 -t 30s --host http://127.0.0.1:9375 $(ARGS)

coverage: $(STAMP)
	$(BIN)/python -m scripts.api_coverage

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
