"""The read router's decisions without servers: lag from WAL positions, the read-your-writes window, round
robin over healthy replicas, and DATABASE_READ_URL's validation (the servers: tests/integration/
test_read_replicas.py)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pydantic
import pytest

from ragchat.db.replicas import ReadRouter, Replica, redact
from ragchat.settings import Settings, split_urls


def router(n: int = 2, **kwargs: Any) -> ReadRouter:
    primary: Any = object()
    replicas = [Replica(name=f"r{i}", url=f"postgresql://h{i}/db", pool=object()) for i in range(n)]  # type: ignore[arg-type]
    return ReadRouter(primary, replicas, **kwargs)


def test_lag_is_how_long_ago_the_primary_passed_what_the_replica_replayed() -> None:
    r = router(max_lag_s=5)
    now = time.monotonic()
    r._history.extend([(now - 9, 100), (now - 4, 200), (now - 1, 300)])
    assert r.lag_of(300) == 0.0  # replayed everything seen: an idle primary adds no lag
    assert r.lag_of(400) == 0.0
    assert 0.9 < r.lag_of(250) < 1.5  # missing what the primary had 1 s ago
    assert 3.9 < r.lag_of(150) < 4.5
    assert 8.9 < r.lag_of(50) < 9.5


def test_a_writer_reads_the_primary_for_the_window_and_others_use_healthy_replicas() -> None:
    r = router(max_lag_s=0.2, check_s=0.1)
    writer, reader = uuid.uuid4(), uuid.uuid4()
    assert r.choose(reader) is None  # nothing checked yet: the primary
    for replica in r.replicas:
        replica.healthy = True
    picked = {r.choose(reader).name for _ in range(4)}  # type: ignore[union-attr]
    assert picked == {"r0", "r1"}  # round robin
    r.note_write(writer)
    assert r.choose(writer) is None
    assert r.choose(reader) is not None
    time.sleep(0.35)  # past max_lag + one check
    assert r.choose(writer) is not None
    r.replicas[0].healthy = False
    assert {r.choose(reader).name for _ in range(3)} == {"r1"}  # type: ignore[union-attr]


def test_without_replicas_everything_is_the_primary() -> None:
    r = router(0)
    r.note_write(uuid.uuid4())
    assert r.choose(uuid.uuid4()) is None and r._writes == {}


def test_names_in_logs_carry_no_credentials() -> None:
    assert redact("postgresql://reader:s3cret@db2.example:6432/rag?sslmode=require") == "db2.example:6432/rag"
    assert "s3cret" not in redact("host=db2 password=s3cret dbname=rag")


def test_several_urls_split_on_commas() -> None:
    assert split_urls(" postgresql://a/db , ,postgresql://b/db") == ["postgresql://a/db", "postgresql://b/db"]
    assert split_urls(None) == []


@pytest.mark.parametrize(
    "value",
    [
        "postgresql://u@h:notaport/db",
        "postgresql://u@h:99999/db",
        "host=h port=5432 dbname",
        "postgresql://ok@h/db, ftp://x y",
        "'; DROP TABLE users; --",
        "\x00",
    ],
)
def test_an_unparsable_read_url_is_a_clear_startup_error(value: str, tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        Settings(_env_file=None, data_dir=tmp_path, database_read_url=value)  # type: ignore[call-arg]
    text = str(caught.value)
    assert "DATABASE_READ_URL" in text and ("not a PostgreSQL connection URL" in text or "empty" in text)
    assert "s3cret" not in text


def test_a_password_in_a_bad_url_is_not_repeated(tmp_path: Path) -> None:
    with pytest.raises(pydantic.ValidationError) as caught:
        Settings(_env_file=None, data_dir=tmp_path, database_read_url="postgresql://u:s3cret@h:port/db")  # type: ignore[call-arg]
    assert "s3cret" not in str(caught.value).split("input_value")[0]
