"""Issue 43, item 11: a Postgres restarted after a crash (kill -9 of the postmaster) is stopped with ragchat.

Each test runs its own embedded PostgreSQL in a temporary directory, and real processes: `ragchat serve` stopped
with SIGTERM, and a second ragchat process whose watchdog restarts the server this one started.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from ragchat.db.embedded import start_embedded

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def postgres_pids(pgdata: Path) -> list[int]:
    """Postmasters serving `pgdata` (their command line names it: `postgres -D <pgdata> ...`)."""
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            if process.info["name"] == "postgres" and str(pgdata) in " ".join(process.info["cmdline"] or []):
                if process.status() != psutil.STATUS_ZOMBIE:
                    found.append(process.pid)
        except psutil.Error:
            continue
    return found


def wait_gone(pgdata: Path, within_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (left := postgres_pids(pgdata)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def kill_postmaster(pgdata: Path) -> int:
    pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    os.kill(pid, signal.SIGKILL)
    return pid


def wait_restarted(pgdata: Path, old: int, within_s: float = 60.0) -> int:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        running = [p for p in postgres_pids(pgdata) if p != old]
        if running:
            return running[0]
        time.sleep(0.1)
    raise AssertionError("the postmaster was not restarted")


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    data = (tmp_path / "data").resolve()
    yield data
    for pid in postgres_pids(data / "pgdata"):  # a failed test leaves no server behind
        psutil.Process(pid).kill()


#: a second ragchat process on the same data directory (as `ragchat worker` is): its watchdog restarts the
#: postmaster, then it stops normally (not the last process on the directory: the server stays up)
SECOND_PROCESS = textwrap.dedent(
    """
    import asyncio, faulthandler, signal, sys
    from pathlib import Path
    from ragchat.db.embedded import start_embedded
    from ragchat.db.migrate import ensure_vector_extension
    from ragchat.db.pool import make_pool
    from ragchat.db.watchdog import DatabaseWatchdog

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for the stacks when it hangs

    async def main() -> None:
        embedded = start_embedded(Path(sys.argv[1]))
        ensure_vector_extension(embedded.uri)
        pool = make_pool(embedded.uri)
        await pool.open(wait=True)
        watchdog = DatabaseWatchdog(pool, embedded.uri, embedded=embedded, interval_s=0.1)
        task = asyncio.create_task(watchdog.run())
        print("ready", flush=True)
        for _ in range(600):
            if watchdog.restarts:
                break
            await asyncio.sleep(0.1)
        print("restarts", watchdog.restarts, flush=True)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        print("watchdog stopped", flush=True)
        await pool.close()
        print("pool closed", flush=True)
        embedded.stop()
        print("released", flush=True)

    asyncio.run(main())
    """
)


def test_a_postmaster_another_process_restarted_stops_with_the_last_one(data_dir: Path) -> None:
    embedded = start_embedded(data_dir)  # this process: the server
    pgdata = embedded.pgdata
    assert postgres_pids(pgdata)
    second = subprocess.Popen(
        [PYTHON, "-c", SECOND_PROCESS, str(data_dir)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert second.stdout is not None and second.stdout.readline().strip() == "ready"
        old = kill_postmaster(pgdata)
        try:
            out, _ = second.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            second.send_signal(signal.SIGUSR1)  # its threads' stacks, on its stderr (in the test's report)
            time.sleep(2)
            raise
    finally:
        second.kill()
    assert second.returncode == 0 and "restarts 1" in out, out
    new = wait_restarted(pgdata, old)
    assert postgres_pids(pgdata) == [new]  # the other process stopped; the server still has its database
    embedded.stop()  # the last process out: the postmaster running now stops, not only the one it started
    assert wait_gone(pgdata) == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ragchat_serve_stops_the_postgres_its_watchdog_restarted(data_dir: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "DATA_DIR": str(data_dir),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "AUTH": "off",
        "INGEST_WORKERS": "0",
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "DB_WATCHDOG_INTERVAL_S": "0.2",
        "HF_HUB_OFFLINE": "1",
    }
    log = data_dir.parent / "serve.log"
    with log.open("w") as out:
        serve = subprocess.Popen(
            [PYTHON, "-m", "ragchat.cli", "serve"], cwd=data_dir.parent, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    pgdata = data_dir / "pgdata"
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while "ready at" not in log.read_text():
            assert serve.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        old = kill_postmaster(pgdata)
        wait_restarted(pgdata, old)
        while True:
            health = httpx.get(f"{url}/api/health", timeout=10)
            if health.status_code == 200 and health.json()["db"]["restarts"] == 1:
                break
            assert time.monotonic() < deadline, health.text
            time.sleep(0.2)
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
    finally:
        serve.kill()
    assert wait_gone(pgdata) == [], log.read_text()[-3000:]
