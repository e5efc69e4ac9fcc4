"""Pytest plugin with fixtures for the fake Ollama server (`pytest_plugins = ["tests.fakes.plugin"]`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.ollama_server import FakeOllama, closed_port_url


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
