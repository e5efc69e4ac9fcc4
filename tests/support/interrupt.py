"""Ctrl-C ends the test run (a pytest plugin: tests/conftest.py loads it).

pytest-asyncio runs every async test and fixture in an `asyncio.Runner`, and a Runner replaces Python's SIGINT
handler while it runs with one that only cancels the running task. A test, or the code under test, that turns
that cancellation into another outcome (a caught `CancelledError`, an error raised while cleaning up) loses the
interrupt: the test fails or passes and the session goes on to the next one, while the servers and background
loops it started keep running. The handler installed here is not `signal.default_int_handler`, so a Runner
leaves it in place: Ctrl-C raises KeyboardInterrupt in the main thread wherever it is, as in a plain script, and
if something still swallows it, the session stops after the test it interrupted (fixtures torn down as usual).

An interrupted run skips what only a finished run needs: the final garbage collection pytest does to report
unraisable exceptions (seconds with a worker's heap of 1 GB or more), and the removal of the test databases'
data directories (`interrupted()`: the fixtures stop the servers and leave the files to pytest's own clean-up of
old temporary directories). Measured with a Ctrl-C during `make test`: 12.3 s to the shell before, most of it in
those two.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Generator
from types import FrameType

import pytest
from _pytest.unraisableexception import gc_collect_iterations_key

_interrupted = threading.Event()


def interrupted() -> bool:
    """Whether Ctrl-C has been pressed in this process (fixtures skip slow clean-up that only tidies)."""
    return _interrupted.is_set()


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


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _interrupted.is_set():  # no final garbage collection for the unraisable-exception report
        session.config.stash[gc_collect_iterations_key] = 0


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """An interrupted xdist worker leaves without tearing its interpreter down (3-4 s for a heap of 1 GB or
    more): it has told the controller it finished (pytest_sessionfinish), its servers are stopped, and the
    controller kills a worker that is still there 10 s after the interrupt anyway."""
    if _interrupted.is_set() and os.environ.get("PYTEST_XDIST_WORKER"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(2)
