"""Pytest plugin with fixtures for the fake LLM servers (`pytest_plugins = ["tests.fakes.plugin"]`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.ollama_server import FakeOllama, closed_port_url
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.script import RequestRecord


@pytest.fixture(scope="session")
def fake_ollama_server() -> Iterator[FakeOllama]:
    """One fake Ollama server for the whole test session."""
    server = FakeOllama().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_ollama(fake_ollama_server: FakeOllama) -> Iterator[FakeOllama]:
    """The session server, reset (empty script, no records, default knobs) before each test."""
    fake_ollama_server.reset()
    yield fake_ollama_server
    fake_ollama_server.abort_in_flight()


@pytest.fixture
def closed_ollama_url() -> str:
    """A URL where nothing listens (connection refused)."""
    return closed_port_url()


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAI]:
    """One fake OpenAI-compatible server for the whole test session (no API key required)."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The session server, reset (empty script, no records, default knobs) before each test; `url` ends in /v1."""
    fake_openai_server.reset()
    yield fake_openai_server
    fake_openai_server.abort_in_flight()


class LLMFake:
    """The fake behind the parametrized `llm` fixture: the same scripting API whatever the protocol."""

    def __init__(self, provider: str, fake: FakeOllama | FakeOpenAI) -> None:
        self.provider = provider
        self.fake = fake

    @property
    def settings(self) -> dict[str, Any]:
        """Settings overrides that point ragchat's LLM provider at this fake."""
        if self.provider == "openai":
            return {"llm_provider": "openai", "openai_base_url": self.fake.url}
        return {"llm_provider": "ollama", "ollama_host": self.fake.url}

    def json_schema(self, record: RequestRecord) -> dict[str, Any] | None:
        """The JSON schema a structured-output request carried (Ollama `format`, OpenAI `response_format`)."""
        body = record.body if isinstance(record.body, dict) else {}
        if self.provider == "openai":
            fmt = body.get("response_format") or {}
            return (fmt.get("json_schema") or {}).get("schema")
        fmt = body.get("format")
        return fmt if isinstance(fmt, dict) else None

    def tools_offered(self, record: RequestRecord) -> bool:
        return bool(record.tool_names)


@pytest.fixture(params=["ollama", "openai"])
def llm(request: pytest.FixtureRequest, fake_ollama: FakeOllama, fake_openai: FakeOpenAI) -> LLMFake:
    """Each test runs twice: against the fake Ollama (native API) and the fake OpenAI-compatible server."""
    return LLMFake(request.param, fake_ollama if request.param == "ollama" else fake_openai)
