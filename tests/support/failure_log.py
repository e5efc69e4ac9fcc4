"""Failures written down as they happen (a pytest plugin: tests/conftest.py loads it).

With PYTEST_FAILURE_LOG set to a file, every failed test phase (setup, call, teardown) appends its node id
and report there at once, from whichever xdist worker ran it: a run of three quarters of an hour
(`tools/busy_test.sh`) shows why a test failed while it still runs, not only in pytest's summary at the end.
"""

from __future__ import annotations

import os
import time

import pytest


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get("PYTEST_FAILURE_LOG")
    if not path or not report.failed:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    entry = f"=== {time.strftime('%H:%M:%S')} {worker} {report.when} {report.nodeid}\n{report.longreprtext}\n"
    if report.capstderr:
        entry += f"--- stderr\n{report.capstderr[-4000:]}\n"
    with open(path, "a", encoding="utf-8") as log:  # one write per entry: workers append whole entries
        log.write(entry + "\n")
