"""Issue 44, item 2: backups move between PostgreSQL versions, on real servers of two versions.

- PostgreSQL 16 + pgvector 0.6 (the previous embedded engine, `pgserver`, from the dev extra) → the embedded
  PostgreSQL 18 + pgvector 0.8 → PostgreSQL 16 again: every row and the searches survive each way. Going back,
  the restore feeds pg_restore 18's SQL through psql without `SET transaction_timeout` (16 lacks it), leaves out
  the halfvec index (pgvector 0.6 lacks halfvec) and the app builds the space's `vector` index at start.
- PG_BIN_DIR at an older server's tools (Debian's PostgreSQL 15): the newest tools are used anyway.
- Debian's PostgreSQL 15 has no pgvector package: a restore there is refused up front, saying so, nothing made.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ragchat.db.backup import BackupError, backup, restore, table_counts
from ragchat.db.pg_tools import server_major
from ragchat.runtime import Overrides, open_runtime
from ragchat.vectors.store import manifest_spaces
from tests.fixtures.build_pg16_datadir import populate, settings_for, snapshot, start_pg16
from tests.integration import test_ops_backup
from tests.support.replication import _free_port, _own, _run, _user  # pyright: ignore[reportPrivateUsage]

pytestmark = pytest.mark.slow
new_db = test_ops_backup.new_db  # the fixture: new, empty databases on the embedded 18 test server
KEY = b"a-test-key-that-is-long-enough-0123456789"
DEBIAN_15 = Path("/usr/lib/postgresql/15/bin")


def on(uri: str, dbname: str) -> str:
    return make_conninfo(**{**conninfo_to_dict(uri), "dbname": dbname})


def create(uri: str, dbname: str) -> str:
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {dbname}")  # type: ignore[arg-type]  # the test's own fixed names
    return on(uri, dbname)


async def app_view(root: Path, uri: str, embedder: Any) -> dict[str, Any]:
    """Row counts and the fixed searches (chunk and document per hit) as the app sees the database at `uri`:
    opened by the app itself (migrations, index upkeep), as a server after the restore would."""
    async with open_runtime(settings_for(root, uri), Overrides(embedder=embedder)) as runtime:
        seen = await snapshot(runtime)
    seen["searches"] = {k: [hit[:2] for hit in hits] for k, hits in seen["searches"].items()}
    return seen


def index_types(uri: str) -> list[str]:
    with psycopg.connect(uri) as conn:
        return [
            str(r[0])
            for r in conn.execute(
                "SELECT CASE WHEN indexdef LIKE '%%halfvec%%' THEN 'halfvec' ELSE 'vector' END FROM pg_indexes "
                "WHERE indexname LIKE 'chunk_embeddings_hnsw_%%' ORDER BY 1"
            )
        ]


@pytest.fixture
def pg16(tmp_path: Path) -> Iterator[str]:
    server = start_pg16(tmp_path / "pg16")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


async def test_pg16_to_embedded_18_and_back(pg16: str, new_db: Any, embedder: Any, tmp_path: Path) -> None:
    assert server_major(pg16) == 16
    source = create(pg16, "ragchat_source")
    async with open_runtime(settings_for(tmp_path, source), Overrides(embedder=embedder)) as runtime:
        await populate(runtime)
    before = await app_view(tmp_path, source, embedder)
    assert before["counts"]["chunk_embeddings"] > 5 and all(before["searches"].values())
    assert index_types(source) == ["vector"]

    made_on_16 = tmp_path / "from16.backup"
    backup(source, made_on_16, spaces=manifest_spaces, key=KEY)  # pg_dump 18 dumping a 16 server
    on_18 = new_db()
    restore(on_18, made_on_16, key=KEY)
    assert table_counts(on_18) == before["counts"]
    assert await app_view(tmp_path, on_18, embedder) == before
    assert index_types(on_18) == ["halfvec"]  # the app on pgvector 0.8 rebuilt it, as on any start there

    made_on_18 = tmp_path / "from18.backup"
    backup(on_18, made_on_18, spaces=manifest_spaces, key=KEY)
    back = create(pg16, "ragchat_back")
    restore(back, made_on_18, key=KEY)
    assert table_counts(back) == before["counts"]
    assert await app_view(tmp_path, back, embedder) == before
    assert index_types(back) == ["vector"]

    # --force over a filled PostgreSQL 16 database: the same path, swapped in by rename
    restore(back, made_on_18, key=KEY, force=True)
    assert table_counts(back) == before["counts"]
    with psycopg.connect(on(pg16, "postgres")) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname LIKE 'ragchat_re%%'").fetchone() == (0,)


class Debian15:
    """Debian's PostgreSQL 15 (postgresql-15), started from its own binaries in a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.user = _user()
        self.pgdata = root / "pgdata"
        self.port = _free_port()
        self.pgdata.mkdir(parents=True)
        _own(root, self.user)
        os.chmod(root, 0o755)
        _run([str(DEBIAN_15 / "initdb"), "-D", str(self.pgdata), "-U", "postgres", "--auth=trust"], self.user)
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write("\nlisten_addresses = '127.0.0.1'\nfsync = off\n")
        self._ctl("-l", str(self.pgdata / "server.log"), "-o", f"-p {self.port} -k {self.pgdata}", "-w", "start")

    def _ctl(self, *args: str) -> None:
        _run([str(DEBIAN_15 / "pg_ctl"), "-D", str(self.pgdata), *args], self.user)

    @property
    def uri(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        self._ctl("-m", "immediate", "-w", "stop")


@pytest.fixture
def pg15(tmp_path: Path) -> Iterator[Debian15]:
    if not (DEBIAN_15 / "postgres").exists():
        pytest.skip("Debian's postgresql-15 is not installed (.ci/run installs it)")
    server = Debian15(tmp_path / "pg15")
    try:
        yield server
    finally:
        server.stop()


def test_old_tools_in_pg_bin_dir_and_a_server_without_pgvector(
    pg15: Debian15, db: str, new_db: Any, tmp_path: Path
) -> None:
    assert server_major(pg15.uri) == 15
    old = subprocess.run([str(DEBIAN_15 / "pg_dump"), "--version"], capture_output=True, text=True).stdout
    assert "15." in old
    archive = tmp_path / "a.backup"
    # PG_BIN_DIR at PostgreSQL 15's tools: pg_dump 15 cannot dump an 18 server, pg_restore 15 cannot read the
    # archive of pg_dump 18 ("unsupported version (1.16) in file header"); the newest are used instead
    made = backup(db, archive, spaces=manifest_spaces, key=KEY, bin_dir=DEBIAN_15)
    target = new_db()
    restore(target, archive, key=KEY, bin_dir=DEBIAN_15)
    assert table_counts(target) == made.rows

    target15 = create(pg15.uri, "ragchat_target")
    with pytest.raises(BackupError, match=r"PostgreSQL 15\) has no pgvector extension.*nothing was replaced"):
        restore(target15, archive, key=KEY, bin_dir=DEBIAN_15)
    assert table_counts(target15) == {}
    with psycopg.connect(pg15.uri) as conn:
        assert conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'ragchat_re%%'").fetchall() == []
