# `make run` and `make test` do all set-up on a fresh machine: a .venv with the Python
# packages, and redis-server from Debian's packages when it is missing.
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup run test redis-server

setup: $(VENV)/.installed redis-server

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

redis-server:
	@command -v redis-server >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q redis-server; }

# The main job: an embedded Redis, a 20,000-node mixed fleet, the dispatcher, shards and
# binder as processes, the mixed workload with the live table, then the report in out/.
run: setup
	$(BIN)/shardsched bench --workload mixed --nodes 20000 --profile mixed --pods 50000 \
		--live --json out/run.json --plot out/

test: setup
	$(BIN)/pytest
