"""A document's ingestion stage and ETA as the API shows them, and the CLI's durations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ragchat.cli.common import format_duration
from ragchat.documents.api.schemas import ingest_stage

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def row(**values: Any) -> dict[str, Any]:
    return {"status": "processing", "chunks_total": None, "chunks_done": 0, "progress_started_at": None, **values}


def test_stages() -> None:
    assert ingest_stage(row(status="queued"), NOW) == ("queued", None)
    assert ingest_stage(row(status="queued", not_before=NOW + timedelta(seconds=3)), NOW) == ("waiting", None)
    assert ingest_stage(row(status="queued", not_before=NOW - timedelta(seconds=3)), NOW) == ("queued", None)
    assert ingest_stage(row(), NOW) == ("reading", None)
    assert ingest_stage(row(chunks_total=100), NOW) == ("embedding", None)
    assert ingest_stage(row(status="ready", chunks_total=100, chunks_done=100), NOW) == ("ready", None)
    assert ingest_stage(row(status="failed"), NOW) == ("failed", None)


def test_eta_is_the_rate_so_far_applied_to_what_is_left() -> None:
    started = NOW - timedelta(seconds=10)
    assert ingest_stage(row(chunks_total=100, chunks_done=25, progress_started_at=started), NOW) == ("embedding", 30.0)
    assert ingest_stage(row(chunks_total=100, chunks_done=100, progress_started_at=started), NOW) == ("embedding", 0.0)


def test_durations() -> None:
    assert format_duration(4.4) == "4 s"
    assert format_duration(185) == "3 min 05 s"
    assert format_duration(3725) == "1 h 02 min"
