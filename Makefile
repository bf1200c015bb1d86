# Twin: `make run` starts the world and every server; `make test` runs the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
ARGS   ?=

.PHONY: run test lint format bench soak load load-distributed scenarios coverage clean setup

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,cluster]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/twin run $(ARGS)

test: $(STAMP)
	$(BIN)/pytest $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(STAMP)
	@echo "make bench: every part of python -m bench in turn, about 20 minutes on 2 cores; one part: make bench ARGS='--only http' (list: ARGS=--list)"
	$(BIN)/python -m bench $(ARGS)

# Locust against a running twin (make run): see loadtests/locustfile.py for the users and variables.
LOCUST      := $(BIN)/locust -f loadtests/locustfile.py
LOAD        := --headless -u 20 -r 10 --host http://127.0.0.1:9375
LOCUST_PORT ?= 5557

soak: $(STAMP)
	$(BIN)/python -m bench.soak $(ARGS)

load: $(STAMP)
	$(LOCUST) $(LOAD) -t 30s $(ARGS)

# One master and two worker processes on loopback, 20 s; the master prints the merged statistics.
load-distributed: $(STAMP)
	@workers=""; for n in 1 2; do \
	  $(LOCUST) --worker --master-host 127.0.0.1 --master-port $(LOCUST_PORT) & workers="$$workers $$!"; \
	done; \
	$(LOCUST) --master --master-bind-host 127.0.0.1 --master-bind-port $(LOCUST_PORT) --expect-workers 2 \
	  $(LOAD) -t 20s $(ARGS); status=$$?; \
	kill $$workers 2>/dev/null; wait; exit $$status

scenarios: $(STAMP)
	$(BIN)/twin scenario list

coverage: $(STAMP)
	$(BIN)/python -m scripts.api_coverage

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
