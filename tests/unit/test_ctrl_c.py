"""Ctrl-C during an async test ends the test run (tests/support/interrupt.py), also when the interrupted test
swallows the cancellation that asyncio.Runner turns SIGINT into."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.support.interrupt"]
PYTEST += ["-o", "asyncio_mode=auto"]

SWALLOWS = """
import asyncio, os, signal
from pathlib import Path

async def test_interrupted():
    os.killpg(os.getpgrp(), signal.SIGINT)  # Ctrl-C: every process of the run (xdist's too), mid-test
    try:
        await asyncio.sleep(600)
    except asyncio.CancelledError:
        pass  # code under test that turns the cancellation into something else

async def test_after():
    Path(os.environ["AFTER_MARKER"]).write_text("ran")
"""


def _sigint_default() -> None:
    """As a terminal starts a job: SIGINT not ignored (a background job of a script inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["serial", "xdist"])
def test_ctrl_c_in_an_async_test_stops_the_session(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_swallow.py").write_text(SWALLOWS)
    marker = tmp_path / "after"
    done = subprocess.run(
        [*PYTEST, "--basetemp", str(tmp_path / "bt"), *workers, str(tmp_path)],
        cwd=tmp_path,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            "AFTER_MARKER": str(marker),
        },
        capture_output=True,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=_sigint_default,
        timeout=600,  # a hang is the failure this test looks for; the assertions below say what went wrong
    )
    assert not marker.exists(), "the session went on after Ctrl-C:\n" + done.stdout[-3000:]
    assert done.returncode in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED), done.stdout[-3000:]
