"""The embedded PostgreSQL's shared_buffers (db/tuning.py): sized from the data and the memory, applied with a
restart by the process that starts the server, left for the next start by one that finds it running."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest
from pydantic import ValidationError

from ragchat.db.embedded import start_embedded
from ragchat.db.tuning import MB, auto_mb, forget_shared_buffers, memory_limit_bytes
from ragchat.settings import Settings, parse_size_mb

GB = 1024 * MB


def test_auto_is_half_the_data_within_the_engine_default_and_a_quarter_of_memory() -> None:
    assert auto_mb(10 * MB, 24 * GB) == 128  # a small library keeps the engine's default
    assert auto_mb(300 * MB, 24 * GB) == 384  # the data, rounded up to 128 MB steps
    assert auto_mb(6_967_547_583, 24 * GB) == 6144  # the 1M-chunk database (6.5 GB): a quarter of 24 GB
    assert auto_mb(6_967_547_583, 64 * GB) == 6656  # with more memory, all of it
    assert auto_mb(100 * GB, 8 * GB) == 2048  # never more than a quarter of memory
    assert auto_mb(100 * GB, 256 * MB) == 128  # nor less than the default


def test_sizes_are_parsed_or_refused_clearly() -> None:
    assert [parse_size_mb(v) for v in ("auto", "512MB", "4gb", " 2GB ")] == [None, 512, 4096, 2048]
    for bad in ("64MB", "1TB", "lots", "", "-1GB", "9" * 40):
        with pytest.raises(ValueError):
            parse_size_mb(bad)
    with pytest.raises(ValidationError, match=r"512MB or 4GB"):
        Settings(_env_file=None, EMBEDDED_SHARED_BUFFERS="lots")  # type: ignore[call-arg]
    assert Settings(_env_file=None, EMBEDDED_SHARED_BUFFERS="off").database.embedded_shared_buffers == "off"  # type: ignore[call-arg]


def test_a_cgroup_limit_below_physical_memory_counts(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text("1073741824\n")
    assert memory_limit_bytes(tmp_path) == GB
    (tmp_path / "memory.max").write_text("max\n")
    assert memory_limit_bytes(tmp_path) > GB


def test_forgetting_our_line_keeps_the_rest(tmp_path: Path) -> None:
    conf = tmp_path / "postgresql.auto.conf"
    conf.write_text("# Do not edit\nshared_buffers = '900000MB'\nwork_mem = '8MB'\n")
    forget_shared_buffers(tmp_path)
    assert conf.read_text() == "# Do not edit\nwork_mem = '8MB'\n"


def _shown(uri: str) -> tuple[str, bool]:
    with psycopg.connect(uri) as conn:
        row = conn.execute(
            "SELECT setting::bigint * 8 / 1024, pending_restart FROM pg_settings WHERE name = 'shared_buffers'"
        ).fetchone()
    assert row is not None
    return f"{row[0]}MB", bool(row[1])


def test_the_starting_process_applies_it_and_an_attached_one_leaves_it_for_the_next_start(tmp_path: Path) -> None:
    first = start_embedded(tmp_path, "256MB")  # this process started it: restarted with the size at once
    try:
        assert _shown(first.uri) == ("256MB", False)
        again = start_embedded(tmp_path, "512MB")  # found it running: written, pending the next start
        for _ in range(50):  # the reload is signalled, not waited for
            if _shown(again.uri)[1]:
                break
            time.sleep(0.1)
        assert _shown(again.uri) == ("256MB", True)
    finally:
        first.stop()
    auto = start_embedded(tmp_path, "auto")  # a tiny cluster: back to the engine's default, at once
    try:
        assert _shown(auto.uri) == ("128MB", False)
    finally:
        auto.stop()
    off = start_embedded(tmp_path, "off")  # left alone
    try:
        assert _shown(off.uri) == ("128MB", False)
    finally:
        off.stop()
