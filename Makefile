# LAST-V2X. `make run` does the main job on embedded defaults; `make test` runs the suite.
# Both install what they need first: a venv in .venv with exactly what requirements.lock pins.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
UV_VERSION := 0.13.9
UV := .tools/uv/bin/uv
LOCK := requirements.lock
PROTOS := $(wildcard protos/lastv2x/v1/*.proto)
BUF := .tools/node_modules/.bin/buf

.DEFAULT_GOAL := help
.PHONY: help setup lock browser run test lint protos protos-check bench docs bench-parse bench-parse-live chaos fuzz mutant-fuzz llm-live-test images deploy-check up down clean experiments

help: ## this list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

# uv, pinned, beside the project (not in the venv: it builds the venv).
$(UV):
	$(PYTHON) -m pip install --quiet --disable-pip-version-check --target .tools/uv uv==$(UV_VERSION)

# A stale lock stops here, in one line, before the venv is touched. The project itself is installed
# without build isolation, from the locked setuptools, so nothing unlocked is fetched.
$(STAMP): pyproject.toml $(LOCK) Makefile | $(UV)
	@$(PYTHON) scripts/lock.py --check
	test -x $(PY) || $(UV) venv --quiet --python $(PYTHON) $(VENV)
	$(UV) pip sync --quiet --python $(PY) --require-hashes $(LOCK)
	$(UV) pip install --quiet --python $(PY) --no-deps --no-build-isolation -e .
	touch $(STAMP)

setup: $(STAMP) ## venv with exactly requirements.lock's versions (uv pip sync); stubs are committed in lastv2x/v1

lock: $(UV) ## re-resolve requirements.lock after a pyproject.toml edit (UPGRADE=1: newest admitted versions)
	$(PYTHON) scripts/lock.py $(if $(UPGRADE),--upgrade)

run: setup ## the main path on embedded defaults, printed as a table
	$(PY) -m lastv2x_app.cli demo

test: setup protos-check browser ## the whole test suite (what CI runs)
	$(PY) -m pytest

# The report's browser test drives Debian's headless chromium: installed when apt-get can (root), else
# that one test skips, saying so. Never fails the build.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -qq chromium >/dev/null 2>&1 || \
	    { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; }; }; } || \
	  echo "chromium not installed: tests/app/test_report.py's browser test will skip"

lint: setup $(BUF) ## ruff, mypy on the core and the search service, buf lint
	$(VENV)/bin/ruff check lastv2x lastv2x_app services tests bench
	$(VENV)/bin/mypy lastv2x/core
	$(VENV)/bin/mypy --follow-imports=silent services/search
	cd protos && ../$(BUF) lint

protos: setup ## regenerate lastv2x/v1 stubs from protos/
	$(PY) -m grpc_tools.protoc -I protos --python_out=. --pyi_out=. --grpc_python_out=. $(PROTOS)

protos-check: setup ## fail when the committed stubs drift from protos/ (version stamps aside)
	@$(PY) scripts/protos_check.py

$(BUF):
	mkdir -p .tools && cd .tools && npm install --silent --no-audit --no-fund @bufbuild/buf

bench: setup ## benchmarks that print side-by-side ratios (not part of the suite); writes docs/benchmarks.md
	$(PY) bench/report.py

docs: setup ## the documentation site: regenerate docs/reference/ from the code, mkdocs build --strict into site/
	$(PY) scripts/docs_reference.py
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

chaos: setup ## fault test: every service killed in turn mid-campaign (then a one-replica run); archive as a clean run
	$(PY) -m lastv2x_app.chaos --budget 24

mutant-fuzz: setup ## the search's own mutants (MUTANTS, default 10000) through verify, grounding, simulator validation: 0 untyped errors
	$(PY) -m lastv2x_app.mutant_fuzz --mutants $(MUTANTS)

MUTANTS ?= 10000
FUZZ_PER_RPC ?= 10000
fuzz: setup ## fuzz every RPC of the five services (FUZZ_PER_RPC inputs each, default 10000): crashes, hangs, leaks
	$(PY) -m lastv2x_app.fuzz --per-rpc $(FUZZ_PER_RPC)

# The papers' experiments (issue 33): every row's paper figure beside ours, into EXPERIMENTS.md. CARLA towns from
# ../shared/data/opendrive/carla unless LASTV2X_MAP_PATHS says otherwise; a row that cannot run says why.
QUICK ?=
EXPERIMENTS_MAP_PATHS ?= $(or $(LASTV2X_MAP_PATHS),../shared/data/opendrive/carla)
experiments: setup ## the papers' experiments, ours beside theirs, into EXPERIMENTS.md (QUICK=1: minutes)
	LASTV2X_MAP_PATHS=$(EXPERIMENTS_MAP_PATHS) $(PY) -m lastv2x_app.experiments $(if $(QUICK),--quick)

bench-parse: setup ## parser benchmark: in-sample field accuracy, then the held-out set scored exactly (misses listed)
	$(PY) bench/bench_parse.py --heldout

bench-parse-live: setup ## held-out parse set through the OpenAI backend on a local llama.cpp server + SmolLM2, schema-constrained (slow)
	scripts/bench_parse_live.sh

llm-live-test: setup ## OpenAI backend against a real llama.cpp server + SmolLM2 (slow first time: compiles llama-cpp)
	scripts/llama_server_test.sh

images: ## build the service images (needs a Docker engine)
	docker build -f deploy/Dockerfile -t lastv2x:dev .

deploy-check: setup ## render kustomize overlays and validate them offline
	$(PY) deploy/check.py

up: setup ## start the local stack (five services on loopback)
	$(PY) -m lastv2x_app.cli up

down: ## stop the local stack
	$(PY) -m lastv2x_app.cli down

clean: ## remove the venv and caches
	rm -rf $(VENV) .tools .lastv2x build site *.egg-info
