# pgrun — every entry point people need. See README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PGRUN := $(VENV)/bin/pgrun
STAMP := $(VENV)/.installed-$(shell cksum < pyproject.toml | cut -d' ' -f1)
# Runs its command against DATABASE_URL when set, else against a throw-away embedded cluster.
WITH_DB = if [ -n "$$DATABASE_URL" ]; then $(1); else $(PGRUN) dev -- $(1); fi

.PHONY: help demo test suites lint lint-static lint-plpgsql pgtap pytest dev migrate check-schema \
        sql-bundle bench bench-peers docs sysdeps venv clean

help:
	@echo "make demo        from a fresh clone: a throw-away PostgreSQL, a sample order workflow run by a worker"
	@echo "make test        everything from a fresh clone: install, lint, pgTAP, pytest"
	@echo "make dev         start a local PostgreSQL and print its DATABASE_URL"
	@echo "make migrate     apply the schema to DATABASE_URL"
	@echo "make lint        sqlfluff, plpgsql_check, ruff, mypy --strict"
	@echo "make bench       benchmarks; writes bench/results/*.json (see docs/performance.md)"
	@echo "make bench-peers pgrun side by side with its peers; writes bench/results/peers.json"
	@echo "make docs        regenerate docs/sql-api.md from the catalog"

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

sysdeps:
	bash scripts/ensure-system-deps.sh

# A throw-away embedded cluster (pgrun dev -- ...), the demo app against it, then stop it.
demo: venv sysdeps
	$(PGRUN) dev -- $(PY) -m pgrun.demo

# One embedded cluster for every suite; -k runs every suite even when one fails, and
# `pgrun dev` stops the cluster whatever the outcome and passes the exit code on.
test: venv sysdeps
	$(PGRUN) dev -- $(MAKE) --no-print-directory -k suites

suites: lint pgtap pytest

lint: lint-static lint-plpgsql

# mypy checks the benches too, but for the peers' own scripts (their libraries live in
# bench/peers/.venv-peers, not in this venv).
lint-static: venv
	$(VENV)/bin/sqlfluff lint --processes 2 sql plpgsql
	$(VENV)/bin/ruff check python tests_py bench scripts
	$(VENV)/bin/ruff format --check python tests_py bench scripts
	$(VENV)/bin/mypy python/pgrun
	$(VENV)/bin/mypy bench --exclude 'bench/peers/peer_'

lint-plpgsql: venv sysdeps
	@$(call WITH_DB,$(PY) scripts/plpgsql_lint.py)

pgtap: venv sysdeps
	@$(call WITH_DB,$(PY) scripts/run_pgtap.py $(T))

docs: venv sysdeps
	@$(call WITH_DB,$(PY) scripts/gen_sql_api.py)

pytest: venv sysdeps
	@$(call WITH_DB,$(PY) -m pytest -q)

dev: venv sysdeps
	$(PGRUN) dev --migrate

migrate: venv
	$(PGRUN) migrate

check-schema: venv
	$(PGRUN) check-schema

sql-bundle: venv
	$(PGRUN) sql-bundle -o pgrun.sql

# Benchmarks start their own durable embedded server unless DATABASE_URL is set. ab_bench.py
# compares the hot path with the commit before the role model (--base REF for another);
# server_cpu_bench.py the server time per call with HEAD (the uncommitted change);
# ceilings_bench.py an enqueue against plain writes of the same job into pgrun.jobs.
bench: venv sysdeps
	$(PY) bench/jobs_bench.py $(BENCH_ARGS)
	$(PY) bench/workflows_bench.py $(BENCH_ARGS)
	$(PY) bench/ab_bench.py $(BENCH_ARGS)
	$(PY) bench/ceilings_bench.py
	@$(call WITH_DB,$(PY) bench/server_cpu_bench.py)

# The peers are installed from PyPI into their own venv (bench/peers/.venv-peers) by the script.
bench-peers: venv sysdeps
	$(PY) bench/peers/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pgrun .mypy_cache .ruff_cache .pytest_cache dist build
