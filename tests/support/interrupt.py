"""Ctrl-C ends the test run (a pytest plugin: tests/conftest.py loads it).

pytest-asyncio runs every async test and fixture in an `asyncio.Runner`, and a Runner replaces Python's SIGINT
handler while it runs with one that only cancels the running task. A test, or the code under test, that turns
that cancellation into another outcome (a caught `CancelledError`, an error raised while cleaning up) loses the
interrupt: the test fails or passes and the session goes on to the next one, while the servers and background
loops it started keep running. The handler installed here is not `signal.default_int_handler`, so a Runner
leaves it in place: Ctrl-C raises KeyboardInterrupt in the main thread wherever it is, as in a plain script, and
if something still swallows it, the session stops after the test it interrupted (fixtures torn down as usual).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Generator
from types import FrameType

import pytest

_interrupted = threading.Event()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) in (
        signal.default_int_handler,
        _on_sigint,
    ):
        signal.signal(signal.SIGINT, _on_sigint)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    result = yield
    if _interrupted.is_set():
        item.session.shouldstop = "interrupted (Ctrl-C)"
        raise KeyboardInterrupt
    return result
