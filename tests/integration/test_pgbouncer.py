"""ragchat behind a real PgBouncer in transaction mode (issue 30): Debian's `pgbouncer`, started by the test in
front of the test Postgres, with a database of its own.

What transaction pooling breaks is session state: advisory locks that outlive a transaction, prepared
statements (PgBouncer before 1.21 cannot keep them), `SET` outside a transaction. Migrations (two processes at
once), the re-embedding lock, ingestion, and repeated searches (psycopg prepares a statement on its fifth run)
all go through the pooler here, with DATABASE_PREPARED_STATEMENTS=false as docs/operator/scaling.md says for
PgBouncer < 1.21.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest

from ragchat.core.options import options_of
from ragchat.db.migrate import ensure_vector_extension, migrate
from ragchat.db.pool import make_pool
from ragchat.documents.ingest.registration import register_bytes
from tests.conftest import free_port, make_settings
from tests.support.services import LOCAL, LOCAL_OWNER_ID, make_pipeline, make_searcher

pytestmark = pytest.mark.slow

DOCS = {
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
}


def _pgbouncer() -> str:
    """The binary: installed, else Debian's package installed now (as root), else a skip (a failure in CI)."""
    found = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None)
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for step in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "pgbouncer"]):
            subprocess.run(step, env=env, capture_output=True, timeout=600)
        found = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("pgbouncer is not installed (apt-get install pgbouncer)")
        pytest.skip("pgbouncer is not installed (apt-get install pgbouncer)")
    return found


@pytest.fixture(scope="module")
def bouncer(pg_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A URI through PgBouncer (transaction pooling) to a fresh database on the test server."""
    binary = _pgbouncer()
    name = f"bouncer_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    target = urlparse(pg_uri)
    socket_dir = parse_qs(target.query).get("host", [target.hostname or "127.0.0.1"])[0]
    backend_port = target.port or int(parse_qs(target.query).get("port", ["5432"])[0])
    user = target.username or "postgres"
    root = tmp_path_factory.mktemp("pgbouncer")
    port = free_port()
    (root / "users.txt").write_text(f'"{user}" ""\n')
    (root / "pgbouncer.ini").write_text(
        f"""[databases]
{name} = host={socket_dir} port={backend_port} dbname={name} user={user}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {root / "users.txt"}
pool_mode = transaction
default_pool_size = 4
max_client_conn = 100
server_reset_query =
query_wait_timeout = 10
server_connect_timeout = 5
ignore_startup_parameters = extra_float_digits,options
logfile = {root / "pgbouncer.log"}
pidfile = {root / "pgbouncer.pid"}
"""
    )
    args = [binary, str(root / "pgbouncer.ini")]
    if os.geteuid() == 0:  # pgbouncer refuses to run as root: run it as the user the server's socket belongs to
        owner = pwd.getpwuid(os.stat(socket_dir).st_uid).pw_name
        args = ["runuser", "-u", owner if owner != "root" else "nobody", "--", *args]
        os.chmod(root, 0o777)
        for f in root.iterdir():
            os.chmod(f, 0o666)
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    uri = f"postgresql://{user}@127.0.0.1:{port}/{name}"
    deadline = time.monotonic() + 15
    while True:
        try:
            with psycopg.connect(uri, connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            break
        except psycopg.OperationalError:
            if proc.poll() is not None or time.monotonic() > deadline:
                log = (root / "pgbouncer.log").read_text() if (root / "pgbouncer.log").exists() else ""
                raise RuntimeError(
                    f"pgbouncer did not start: {proc.stderr.read() if proc.stderr else ''} {log}"
                ) from None
            time.sleep(0.2)
    try:
        yield uri
    finally:
        proc.terminate()
        proc.wait(10)
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_two_processes_migrate_at_once_through_the_pooler(bouncer: str) -> None:
    ensure_vector_extension(bouncer)
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(migrate(bouncer))
        except Exception as exc:  # collected: the assertion below names it
            results.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not [r for r in results if isinstance(r, Exception)], results
    applied = [name for r in results for name in r]
    assert len(applied) == len(set(applied)) > 0  # each migration applied once, by one of them
    assert migrate(bouncer) == []
    with psycopg.connect(bouncer) as conn:  # no session lock left behind on a pooled server connection
        held = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()
    assert held == (0,)


async def test_ingest_and_repeated_searches_work_through_the_pooler(
    bouncer: str, embedder: Any, tmp_path: Path
) -> None:
    ensure_vector_extension(bouncer)
    migrate(bouncer)
    settings = make_settings(bouncer, tmp_path, database_prepared_statements=False)
    pool = make_pool(bouncer, min_size=2, max_size=4, prepared_statements=False)
    await pool.open(wait=True)
    try:
        for name, text in DOCS.items():
            await register_bytes(pool, LOCAL_OWNER_ID, name, text.encode(), settings.ingestion)
        await make_pipeline(pool, embedder, settings).run()
        searcher = make_searcher(pool, embedder, settings)

        async def ask(mode: str) -> str:
            options = options_of(settings.retrieval, mode=mode, limit=2)
            result = await searcher.search("what makes sourdough bread rise?", principal=LOCAL, options=options)
            return result.chunks[0].filename

        # many clients at once, each query repeated past psycopg's prepare threshold (5)
        answers = await asyncio.gather(*(ask(mode) for mode in ("vector", "keyword", "hybrid") for _ in range(8)))
        assert set(answers) == {"bread.txt"}
    finally:
        await pool.close()
