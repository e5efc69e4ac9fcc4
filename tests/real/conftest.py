"""Real-model tests: collected only with RAGCHAT_REAL_LLM=1 (`make test-real`), so `make test` never runs them.

Every test here gets the `real` marker. The session fixture `real_llm` installs the runtime and the model (cached
after the first run) and serves it on a free 127.0.0.1 port for the whole session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real.model import RealLLM, ensure_model, ensure_runtime

ENABLED = os.environ.get("RAGCHAT_REAL_LLM") == "1"
HERE = Path(__file__).parent

if not ENABLED:
    collect_ignore_glob = ["*"]  # nothing under tests/real is collected: run them with `make test-real`


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "real: needs the real LLM (Qwen2.5-Coder-1.5B via xllamacpp); make test-real")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.real)


@pytest.fixture(scope="session")
def real_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealLLM]:
    """The model served over HTTP: `.base_url` (http://127.0.0.1:PORT/v1), `.model`, `.root_url`, `.log_tail()`."""
    ensure_runtime()
    model_path = ensure_model()
    log_path = tmp_path_factory.mktemp("real-llm") / "server.log"
    with RealLLM(model_path, n_ctx=4096, threads=2, log_path=log_path) as llm:
        yield llm
