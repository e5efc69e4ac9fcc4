"""Issue 44, item 1: a `ragchat restore` killed halfway (SIGKILL while pg_restore runs) leaves the target serving,
and the next restore drops what it left behind; a target a running ragchat uses is refused, and the server still
stops promptly after a restore."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from ragchat.db.backup import BackupError, backup, restore, table_counts
from ragchat.db.pool import make_pool
from ragchat.vectors.store import manifest_spaces
from tests.integration import test_ops_backup
from tests.support.chat import ingest_corpus

new_db = test_ops_backup.new_db  # the fixture: new, empty databases on the test server
KEY = "a-test-key-that-is-long-enough-0123456789"
ROOT = Path(__file__).resolve().parents[2]
QUERY = {"q": "volcano", "mode": "keyword"}  # no query embedding: the stored space's model is not loaded
CLI = "import sys; from ragchat.cli import main; sys.exit(main(sys.argv[1:]))"


def leftovers(uri: str) -> tuple[list[str], list[str]]:
    """The databases and roles a restore makes (and drops again), as they are now on the server."""
    with psycopg.connect(make_conninfo(uri, dbname="postgres")) as conn:
        dbs = [r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname ~ '^ragchat_|_replaced_'")]
        roles = [r[0] for r in conn.execute("SELECT rolname FROM pg_roles WHERE rolname LIKE 'ragchat_restore_%'")]
    return sorted(dbs), sorted(roles)


def ragchat(uri: str, tmp_path: Path, *args: str, wait: bool = True) -> Any:
    env = {**os.environ, "DATABASE_URL": uri, "RAGCHAT_DATA_DIR": str(tmp_path / "data"), "BACKUP_KEY": KEY}
    command = [sys.executable, "-c", CLI, *args]
    if not wait:
        return subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def orphan_restores(work_dirs: Collection[Path]) -> list[psutil.Process]:
    """The pg_restore processes reading a dump in one of `work_dirs`: this test's restores only (tests running
    beside it restore too, and theirs are not orphans)."""
    names = [str(work) for work in work_dirs]
    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            command = " ".join(process.info["cmdline"] or [])
            if process.info["name"] == "pg_restore" and any(name in command for name in names):
                found.append(process)
        except psutil.Error:
            continue
    return found


def work_dirs_of(pid: int) -> list[Path]:
    """The temporary directories a restore process `pid` made (db/restore_lock.py's `work_dir`)."""
    found = []
    for work in Path(tempfile.gettempdir()).glob("ragchat-restore-*"):
        try:
            if int((work / "pid").read_text()) == pid:
                found.append(work)
        except (OSError, ValueError):
            continue
    return found


def orphans_gone(work_dirs: Collection[Path], within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while orphan_restores(work_dirs) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not orphan_restores(work_dirs)


@pytest.fixture
def no_orphans() -> Iterator[set[Path]]:
    """The work directories of the restores a test killed: a failed test leaves no pg_restore of theirs behind."""
    killed: set[Path] = set()
    yield killed
    for process in orphan_restores(killed):
        process.kill()


def wait_for_pg_restore(uri: str, restoring: subprocess.Popen[bytes], within_s: float = 240.0) -> None:
    """Until pg_restore's session is copying rows into the new database (so the kill lands mid-restore)."""
    deadline = time.monotonic() + within_s
    with psycopg.connect(make_conninfo(uri, dbname="postgres"), autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pg_restore' "
                "AND datname LIKE 'ragchat_restoring_%%' AND query LIKE 'COPY%%'"
            ).fetchone()
            if row and row[0]:
                return
            assert restoring.poll() is None, restoring.communicate()
            time.sleep(0.05)
    raise AssertionError("pg_restore never started copying")


async def test_a_restore_killed_halfway_leaves_the_target_serving(
    db: str, pool: Any, embedder: Any, settings: Any, new_db: Any, tmp_path: Path, no_orphans: set[Path]
) -> None:
    await ingest_corpus(pool, embedder, settings)
    small = tmp_path / "small.backup"
    backup(db, small, spaces=manifest_spaces, key=KEY.encode())
    with psycopg.connect(db, autocommit=True) as conn:  # rows enough that pg_restore runs for a while
        conn.execute(
            "INSERT INTO audit_log (actor_name, action, details) SELECT 'load', 'test.load', "
            "jsonb_build_object('n', n, 'pad', repeat(md5(n::text), 8)) FROM generate_series(1, 400000) n"
        )
    big = tmp_path / "big.backup"
    backup(db, big, spaces=manifest_spaces, key=KEY.encode())
    target = new_db()
    restore(target, small, key=KEY.encode())
    before = table_counts(target)
    documents = "SELECT filename FROM documents ORDER BY 1"
    with psycopg.connect(target) as conn:
        names = conn.execute(documents).fetchall()

    restoring = ragchat(target, tmp_path, "restore", "--force", str(big), wait=False)
    try:
        wait_for_pg_restore(target, restoring)
        restoring.kill()  # SIGKILL: no cleanup runs in the restore process; its pg_restore goes on alone
        restoring.wait(timeout=30)
    finally:
        restoring.kill()
        no_orphans.update(work_dirs_of(restoring.pid))
    # the target still serves, as it was, while the orphaned pg_restore fills the new database
    assert table_counts(target) == before
    with psycopg.connect(target) as conn:
        assert conn.execute(documents).fetchall() == names
    dbs, roles = leftovers(target)
    assert any(d.startswith("ragchat_restoring_") for d in dbs) and roles, (dbs, roles)
    left = work_dirs_of(restoring.pid)
    assert len(left) == 1 and (left[0] / "database.dump").exists()  # the killed restore's copy of the dump

    # the next restore drops them first (the pg_restore still writing into one is disconnected), then works
    again = ragchat(target, tmp_path, "restore", "--force", str(small))
    assert again.returncode == 0, again.stderr
    assert leftovers(target) == ([], [])
    assert work_dirs_of(restoring.pid) == []
    assert table_counts(target) == before
    assert orphans_gone(left, within_s=30)


async def test_a_target_a_running_ragchat_uses_is_refused(db: str, new_db: Any, tmp_path: Path) -> None:
    archive = tmp_path / "a.backup"
    backup(db, archive, spaces=manifest_spaces, key=KEY.encode())
    target = new_db()
    restore(target, archive, key=KEY.encode())
    before = table_counts(target)
    server_pool = make_pool(target)  # the pool `ragchat serve` and `ragchat worker` open
    await server_pool.open(wait=True)
    try:
        with pytest.raises(BackupError, match=r"in use by other sessions of a running ragchat .*stop the server"):
            restore(target, archive, key=KEY.encode(), force=True)
        cli = ragchat(target, tmp_path, "restore", "--force", str(archive))
        assert cli.returncode == 2 and cli.stderr.count("\n") == 1 and "stop the server" in cli.stderr, cli.stderr
        async with server_pool.connection() as conn:  # the server goes on as before
            assert (await (await conn.execute("SELECT count(*) AS n FROM users")).fetchone()) == {"n": before["users"]}
    finally:
        await server_pool.close()
    assert table_counts(target) == before and leftovers(target) == ([], [])
    restore(target, archive, key=KEY.encode(), force=True)  # stopped: the restore goes ahead
    assert table_counts(target) == before


def test_a_session_that_is_closing_does_not_block_a_restore(db: str, new_db: Any, tmp_path: Path) -> None:
    """A client that has just closed its connection leaves its backend in pg_stat_activity for a moment (CI
    failed on it: a test's search pool closed, then `restore --force` saw "1: unnamed"). A session that ends
    within the settling time is not "in use"; one that stays is (the test above)."""
    archive = tmp_path / "a.backup"
    backup(db, archive, spaces=manifest_spaces, key=KEY.encode())
    target = new_db()
    restore(target, archive, key=KEY.encode())
    before = table_counts(target)
    lingering = psycopg.connect(target)  # unnamed, like the test's own connections
    closer = threading.Timer(1.0, lingering.close)
    closer.start()
    try:
        restore(target, archive, key=KEY.encode(), force=True)
    finally:
        closer.cancel()
        lingering.close()
    assert table_counts(target) == before and leftovers(target) == ([], [])


def serve(uri: str, tmp_path: Path, port: int) -> tuple[subprocess.Popen[bytes], Path]:
    env = {
        **os.environ,
        "DATABASE_URL": uri,
        "DATA_DIR": str(tmp_path / "data"),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "AUTH": "off",
        "INGEST_WORKERS": "0",
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "HF_HUB_OFFLINE": "1",
    }
    log = tmp_path / f"serve-{port}-{time.monotonic_ns()}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "ragchat.cli", "serve"], cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 240
    while "ready at" not in log.read_text():
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    return process, log


def contents(response: httpx.Response) -> list[str]:
    return [c["content"] for c in response.json()["chunks"]]


def stop_within(process: subprocess.Popen[bytes], log: Path, seconds: float) -> float:
    began = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"the server did not stop within {seconds} s: {log.read_text()[-3000:]}") from None
    return time.monotonic() - began


@pytest.mark.slow
async def test_a_running_server_refuses_the_restore_and_stops_promptly_after_one(
    db: str, pool: Any, embedder: Any, settings: Any, new_db: Any, tmp_path: Path
) -> None:
    from tests.integration.test_embedded_stop import free_port

    await ingest_corpus(pool, embedder, settings)
    archive = tmp_path / "a.backup"
    backup(db, archive, spaces=manifest_spaces, key=KEY.encode())
    target = new_db()
    restore(target, archive, key=KEY.encode())
    port = free_port()
    url = f"http://127.0.0.1:{port}/api/search"
    process, log = serve(target, tmp_path, port)
    http = httpx.AsyncClient(timeout=120)
    try:
        first = await http.get(url, params=QUERY)
        assert first.status_code == 200 and first.json()["chunks"], first.text
        refused = ragchat(target, tmp_path, "restore", "--force", str(archive))
        assert refused.returncode == 2 and "stop the server" in refused.stderr, refused.stderr
        again = await http.get(url, params=QUERY)
        assert again.status_code == 200 and contents(again) == contents(first)
        assert stop_within(process, log, 20) < 20
    finally:
        process.kill()
    restored = ragchat(target, tmp_path, "restore", "--force", str(archive))
    assert restored.returncode == 0, restored.stderr
    process, log = serve(target, tmp_path, port)  # the restored database: searches work, and it stops at once
    try:
        after = await http.get(url, params=QUERY)
        assert after.status_code == 200 and contents(after) == contents(first), after.text
        assert stop_within(process, log, 20) < 20
    finally:
        process.kill()
        await http.aclose()
