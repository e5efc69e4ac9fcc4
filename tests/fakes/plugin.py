"""Pytest plugin with fixtures for the fake LLM servers (`pytest_plugins = ["tests.fakes.plugin"]`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.ollama_server import FakeOllama, closed_port_url
from tests.fakes.openai_server import FakeOpenAI


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
