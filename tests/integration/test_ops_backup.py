"""`ragchat backup` / `ragchat restore` (issue 31): a round trip keeps every row and the search results; a file
that is truncated, newer or not ours, and a non-empty target, are refused with nothing touched."""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ragchat.core.options import options_of
from ragchat.core.principal import local_principal
from ragchat.db.backup import BackupError, backup, restore, table_counts
from ragchat.db.migrate import head_version
from ragchat.runtime import Overrides, open_runtime
from ragchat.settings import Settings
from ragchat.vectors.store import manifest_spaces
from tests.support.chat import ingest_corpus

KEY = b"a-test-key-that-is-long-enough-0123456789"
QUERIES = ["when does the volcano erupt", "how long should bread dough rise", "holiday allowance days"]


@pytest.fixture
def new_db(pg_uri: str) -> Iterator[Any]:
    """Factory of new, empty databases on the test server."""
    names: list[str] = []

    def make() -> str:
        name = f"ops_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        names.append(name)
        return make_conninfo(**{**conninfo_to_dict(pg_uri), "dbname": name})

    yield make
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        for name in names:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def searches(settings: Settings, uri: str, embedder: Any) -> list[list[tuple[str, str, str]]]:
    """The real search (hybrid) of QUERIES over the database at `uri`: (chunk id, file, text) of the top 5."""
    async with open_runtime(settings.model_copy(update={"database_url": uri}), Overrides(embedder=embedder)) as rt:
        options = options_of(rt.settings.retrieval, limit=5)
        results = [await rt.searcher.search(q, principal=local_principal(), options=options) for q in QUERIES]
    return [[(str(c.id), c.filename, c.content) for c in r.chunks] for r in results]


async def test_backup_restore_round_trip(
    db: str, pool: Any, embedder: Any, settings: Settings, new_db: Any, tmp_path: Path
) -> None:
    await ingest_corpus(pool, embedder, settings)
    archive = tmp_path / "ragchat.backup"
    manifest = backup(db, archive, spaces=manifest_spaces, key=KEY)
    assert manifest.schema_version == head_version() and manifest.rows["documents"] == 3
    assert manifest.embedding_spaces[0]["model"] == embedder.model_name and manifest.rows["document_blobs"] == 3

    target = new_db()
    restored = restore(target, archive, key=KEY)
    assert restored["dump_sha256"] == manifest.dump_sha256
    assert table_counts(target) == table_counts(db)
    with psycopg.connect(db) as a, psycopg.connect(target) as b:
        blobs = "SELECT document_id::text, md5(data) FROM document_blobs ORDER BY 1"
        assert a.execute(blobs).fetchall() == b.execute(blobs).fetchall()  # the uploaded originals
    before, after = await searches(settings, db, embedder), await searches(settings, target, embedder)
    assert after == before and all(before)

    # a non-empty target: refused, untouched; --force replaces it
    with pytest.raises(BackupError, match="not empty"):
        restore(target, archive, key=KEY)
    assert table_counts(target) == table_counts(db)
    restore(target, archive, force=True, key=KEY)
    assert table_counts(target) == table_counts(db)


def _tar(parts: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in parts.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_bad_backups_are_refused_and_nothing_is_touched(db: str, new_db: Any, tmp_path: Path) -> None:
    good = tmp_path / "good.backup"
    backup(db, good, spaces=manifest_spaces)
    with tarfile.open(good) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        dump = tar.extractfile("database.dump").read()  # type: ignore[union-attr]
    newer = {**manifest, "schema_version": "9990", "app_version": "9.0.0"}
    cases = {
        "truncated": (good.read_bytes()[: len(good.read_bytes()) // 2], "truncated or damaged"),
        "not a tar": (b"hello, I am a text file\n" * 100, "not a ragchat backup"),
        "someone else's tar": (_tar({"notes.txt": b"x"}), r"not a ragchat backup .*: no manifest"),
        "other manifest": (_tar({"manifest.json": b'{"format": "other"}', "database.dump": dump}), "not a ragchat"),
        "newer": (_tar({"manifest.json": json.dumps(newer).encode(), "database.dump": dump}), "9990"),
        "shorter dump": (
            _tar({"manifest.json": json.dumps(manifest).encode(), "database.dump": dump[:-10]}),
            "refused before extracting it",
        ),
        "changed dump": (
            _tar({"manifest.json": json.dumps(manifest).encode(), "database.dump": dump[:-10] + b"0123456789"}),
            "checksum does not match",
        ),
    }
    for case, (data, message) in cases.items():
        target = new_db()
        path = tmp_path / f"{case}.backup"
        path.write_bytes(data)
        with pytest.raises(BackupError, match=message):
            restore(target, path, force=True, trust_unsigned=True)
        assert table_counts(target) == {}, case  # nothing touched
    with pytest.raises(BackupError, match=f"schema {head_version()}"):
        restore(new_db(), tmp_path / "newer.backup", trust_unsigned=True)


def test_backup_and_restore_commands(db: str, new_db: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.integration.test_ops_migrations import ragchat

    unsigned = tmp_path / "unsigned.backup"
    made = ragchat(db, tmp_path, "backup", str(unsigned))
    assert made.returncode == 0 and "UNSIGNED" in made.stdout and "ragchat backup-key" in made.stderr, made.stderr
    refused = ragchat(new_db(), tmp_path, "restore", str(unsigned))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--trust-unsigned" in refused.stderr

    key_file = tmp_path / "keys" / "backup.key"
    assert ragchat(db, tmp_path, "backup-key", str(key_file)).returncode == 0
    assert key_file.stat().st_mode & 0o777 == 0o600 and len(key_file.read_text().strip()) >= 32
    again = ragchat(db, tmp_path, "backup-key", str(key_file))
    assert again.returncode == 2 and "exists" in again.stderr
    monkeypatch.setenv("BACKUP_KEY_FILE", str(key_file))
    archive = tmp_path / "cli.backup"
    made = ragchat(db, tmp_path, "backup", str(archive))
    assert made.returncode == 0 and f"schema {head_version()}" in made.stdout and "signed" in made.stdout, made.stderr
    target = new_db()
    first = ragchat(target, tmp_path, "restore", str(archive))
    assert first.returncode == 0 and "signature checked" in first.stdout, first.stderr
    again = ragchat(target, tmp_path, "restore", str(archive))
    assert again.returncode == 2 and "not empty" in again.stderr and "--force" in again.stderr
    forced = ragchat(target, tmp_path, "restore", "--force", str(archive))
    assert forced.returncode == 0, forced.stderr
    assert table_counts(target) == table_counts(db)
    trusted = ragchat(target, tmp_path, "restore", "--force", "--trust-unsigned", str(unsigned))
    assert trusted.returncode == 0 and "UNSIGNED, trusted" in trusted.stdout, trusted.stderr
