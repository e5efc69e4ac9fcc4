"""Issue 44, item 2: the client tools a backup or restore runs are the newest found, and a restore into a server
older than the tools drops the one preamble setting it lacks, there only."""

from __future__ import annotations

import io
from pathlib import Path

from ragchat.db.pg_tools import filter_preamble, pg_tool, rejected_settings, tool_major

PREAMBLE = b"""--
-- PostgreSQL database dump
--

\\restrict a3jnlWp6fRgP7JCJiYbs7lZ2

-- Dumped from database version 18.6

BEGIN;

SET statement_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET transaction_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);
SET default_table_access_method = heap;

CREATE TABLE public.t (
    a text
);

COPY public.t (a) FROM stdin;
SET transaction_timeout = 0;
\\.

COMMIT;
"""


def test_only_the_preamble_setting_is_dropped() -> None:
    out = io.BytesIO()
    dropped = filter_preamble(io.BytesIO(PREAMBLE), out, {"transaction_timeout"})
    assert dropped == ["SET transaction_timeout = 0;"]
    # the row whose text is that same line is data: it stays
    assert out.getvalue() == PREAMBLE.replace(b"SET transaction_timeout = 0;\n", b"", 1)
    assert out.getvalue().count(b"SET transaction_timeout = 0;") == 1
    same = io.BytesIO()
    assert filter_preamble(io.BytesIO(PREAMBLE), same, set()) == [] and same.getvalue() == PREAMBLE


def test_settings_a_server_lacks() -> None:
    assert rejected_settings(18, 15) == rejected_settings(18, 16) == {"transaction_timeout"}
    assert rejected_settings(18, 17) == rejected_settings(18, 18) == rejected_settings(16, 13) == set()


def _fake_tool(directory: Path, name: str, major: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{name} (PostgreSQL) {major}.4'\n")
    path.chmod(0o755)
    return path


def test_the_newest_tools_are_chosen(tmp_path: Path) -> None:
    embedded = pg_tool("pg_restore")
    assert tool_major(embedded) == 18
    old = _fake_tool(tmp_path / "old", "pg_restore", 15)  # PG_BIN_DIR at an older server's tools
    assert pg_tool("pg_restore", tmp_path / "old") == embedded
    newer = _fake_tool(tmp_path / "new", "pg_restore", 19)
    assert pg_tool("pg_restore", tmp_path / "new") == str(newer)
    same = _fake_tool(tmp_path / "same", "pg_restore", 18)  # a tie: PG_BIN_DIR's
    assert pg_tool("pg_restore", tmp_path / "same") == str(same)
    assert tool_major(str(old)) == 15
