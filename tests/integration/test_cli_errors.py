"""A user's mistakes on the command line are one line saying what to fix, never a traceback (issue 44): a bad
id, a DATABASE_URL that is no URL or reaches no database, a port already in use (found before the slow
start-up); the listing commands print JSON with `--json`; the worker's health check can fail."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from tests.conftest import free_port

CLI = "import sys; from ragchat.cli import main; sys.exit(main(sys.argv[1:]))"


def ragchat(tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the command in a clean environment; its result and the CPU seconds it used."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAGCHAT_", "DATABASE_", "HOST", "PORT"))}
    full = {**clean, "RAGCHAT_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1", **env}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-c", CLI, *args], env=full, capture_output=True, text=True, timeout=180, cwd=tmp_path
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return done, cpu


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("ragchat: using ")]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def baseline_cpu(tmp_path_factory: pytest.TempPathFactory) -> float:
    """The CPU seconds of `ragchat --version`: the command's own imports, the least any command costs."""
    done, cpu = ragchat(tmp_path_factory.mktemp("version"), "--version")
    assert done.returncode == 0, done.stderr
    return cpu


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("retry", "not-a-uuid"), "argument DOC_ID: 'not-a-uuid' is not a document id"),
        (("search", "cells", "--document", "12"), "argument --document: '12' is not a document id"),
        (("ingest", "x.txt", "--collection", "mine"), "argument --collection: 'mine' is not a collection id"),
        (("metadata", "extract", "abc"), "argument ID: 'abc' is not a document id"),
    ],
)
def test_a_bad_id_is_one_line(tmp_path: Path, args: tuple[str, ...], where: str) -> None:
    done, _ = ragchat(tmp_path, *args)
    line = one_line_error(done)
    assert where in line and "UUID" in line and "--help" in line, line


def test_a_database_url_that_is_no_url(tmp_path: Path) -> None:
    for command in (("user", "list"), ("serve",)):
        done, _ = ragchat(tmp_path, *command, DATABASE_URL="localhost:5432/ragchat")
        line = one_line_error(done)
        assert line.startswith("ragchat: DATABASE_URL is not a PostgreSQL connection URL"), line
        assert "postgresql://USER:PASSWORD@HOST:5432/DBNAME" in line


def test_a_database_that_cannot_be_reached(tmp_path: Path, pg_uri: str, baseline_cpu: float) -> None:
    closed = f"postgresql://ragchat:s3cret-pw@127.0.0.1:{free_port()}/ragchat"
    missing = make_conninfo(pg_uri, dbname="no_such_database")
    for url, says in ((closed, "Connection refused"), (missing, 'database "no_such_database" does not exist')):
        for command in (("user", "list"), ("migrate", "--status"), ("retry", "--all-failed", "--local")):
            done, _ = ragchat(tmp_path, *command, DATABASE_URL=url)
            line = one_line_error(done)
            assert line.startswith("ragchat: cannot connect to the database in DATABASE_URL ("), line
            assert says in line and "s3cret-pw" not in line, line
        served, cpu = ragchat(tmp_path, "serve", "--port", str(free_port()), DATABASE_URL=url)
        line = one_line_error(served)
        assert says in line, line
        assert cpu < baseline_cpu + 1.0, f"serve used {cpu:.2f} s of CPU before saying so ({baseline_cpu:.2f} s)"


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_a_port_in_use_is_said_before_the_start_up(tmp_path: Path, taken_port: int, baseline_cpu: float) -> None:
    done, cpu = ragchat(tmp_path, "serve", "--port", str(taken_port))
    line = one_line_error(done)
    assert f"port {taken_port} on 127.0.0.1 is already in use" in line, line
    assert f"--port {taken_port + 1}" in line
    assert "ready" not in done.stdout and "starting" not in done.stdout  # nothing of the start-up ran
    # no database, no app, no model: the imports `ragchat --version` needs, and a bind
    assert cpu < baseline_cpu + 1.0, f"{cpu:.2f} s of CPU before the error (`--version`: {baseline_cpu:.2f} s)"

    other, _ = ragchat(tmp_path, "serve", "--host", "192.0.2.1", "--port", str(taken_port))  # TEST-NET: not ours
    assert "is not an address of this machine" in one_line_error(other)


def test_listing_commands_print_json(tmp_path: Path, db: str) -> None:
    env = {"DATABASE_URL": db, "RAGCHAT_PASSWORD": "correct horse battery"}
    added, _ = ragchat(tmp_path, "user", "add", "boss", "--admin", **env)
    assert added.returncode == 0, added.stderr
    done, _ = ragchat(tmp_path, "user", "list", "--json", **env)
    assert done.returncode == 0, done.stderr
    users = json.loads(done.stdout)["users"]
    assert [(u["username"], u["is_admin"], u["disabled"], u["documents"]) for u in users] == [("boss", True, False, 0)]

    done, _ = ragchat(tmp_path, "migrate", "--status", "--json", **env)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["pending"] == [] and status["changed"] == [] and status["schema_version"]

    done, _ = ragchat(tmp_path, "reembed", "--status", "--json", **env)
    assert done.returncode == 0, done.stderr
    spaces = json.loads(done.stdout)
    assert spaces["stored"] is None and spaces["configured"]["model"] and spaces["progress"]["state"] == "idle"
    with psycopg.connect(db) as conn:  # (the listing changed nothing)
        assert conn.execute("SELECT count(*) FROM users WHERE username = 'boss'").fetchone() == (1,)


def test_the_worker_health_check_can_fail(tmp_path: Path, db: str) -> None:
    """compose's worker health check (`ragchat worker --check`): healthy only while a live worker's database
    round trips are recent; a missing, stale or orphaned heartbeat fails it."""
    beat = tmp_path / "worker.alive"
    env = {"DATABASE_URL": db, "OLLAMA_HOST": "http://127.0.0.1:9"}
    check = ("worker", "--check", "--heartbeat-file", str(beat))
    done, _ = ragchat(tmp_path, *check, **env)
    assert done.returncode == 1 and "not running" in done.stderr, done

    beat.write_text(json.dumps({"pid": os.getpid(), "at": time.time() - 600}))  # alive, but stuck 10 minutes
    done, _ = ragchat(tmp_path, *check, **env)
    assert done.returncode == 1 and "it is stuck" in done.stderr, done
    beat.write_text(json.dumps({"pid": 2**22 + 7, "at": time.time()}))  # fresh, from no process
    done, _ = ragchat(tmp_path, *check, **env)
    assert done.returncode == 1 and "is gone" in done.stderr, done
    beat.unlink()

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RAGCHAT_", "DATABASE_"))}
    full = {**clean, **env, "RAGCHAT_DATA_DIR": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1"}
    worker = subprocess.Popen(
        [sys.executable, "-c", CLI, "worker", "--heartbeat-file", str(beat)],
        env=full,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not beat.exists():
            assert worker.poll() is None and time.monotonic() < deadline, "no heartbeat from the worker"
            time.sleep(0.2)
        done, _ = ragchat(tmp_path, *check, **env)
        assert done.returncode == 0 and f"worker {worker.pid} is alive" in done.stdout, done
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    done, _ = ragchat(tmp_path, *check, **env)
    assert done.returncode == 1, done  # a worker that stopped took its heartbeat with it
