"""The eval_runs repository (migration 0012): runs kept per owner, read back only by their owner."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ragchat.core.errors import NotFound
from ragchat.db.pool import Pool

__all__ = ["create_run", "finish_run", "get_run", "list_runs", "set_progress"]

_COLUMNS = "id, owner_id, created_at, dataset, config, results, partial, notes, status, progress"


async def create_run(
    pool: Pool,
    owner: UUID,
    dataset: str,
    config: dict[str, Any],
    *,
    results: dict[str, Any] | None = None,
    partial: bool = False,
    notes: str = "",
    status: str = "done",
) -> int:
    """Store a run (finished, or `running` for one that fills in later); returns its id."""
    async with pool.connection() as conn:
        row = await (
            await conn.execute(
                "INSERT INTO eval_runs (owner_id, dataset, config, results, partial, notes, status) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (owner, dataset, Jsonb(config), Jsonb(results or {}), partial, notes, status),
            )
        ).fetchone()
    assert row is not None
    return int(row["id"])


async def set_progress(pool: Pool, run_id: int, progress: dict[str, Any]) -> None:
    async with pool.connection() as conn:
        await conn.execute("UPDATE eval_runs SET progress = %s WHERE id = %s", (Jsonb(progress), run_id))


async def finish_run(
    pool: Pool,
    run_id: int,
    *,
    status: str,
    results: dict[str, Any] | None = None,
    partial: bool = False,
    notes: str = "",
) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE eval_runs SET status = %s, results = %s, partial = %s, notes = %s, "
            'progress = progress || \'{"stage": "finished"}\'::jsonb WHERE id = %s',
            (status, Jsonb(results or {}), partial, notes, run_id),
        )


async def get_run(pool: Pool, owner: UUID | None, run_id: int) -> dict[str, Any]:
    """One run; `owner` None reads any owner's (the CLI on the server's machine). Another owner's run is a 404."""
    async with pool.connection() as conn:
        row = await (
            await conn.execute(
                f"SELECT {_COLUMNS} FROM eval_runs WHERE id = %s AND (%s::uuid IS NULL OR owner_id = %s)",
                (run_id, owner, owner),
            )
        ).fetchone()
    if row is None:
        raise NotFound(f"no evaluation run {run_id}")
    return dict(row)


async def list_runs(pool: Pool, owner: UUID, limit: int = 50) -> list[dict[str, Any]]:
    """The owner's runs, newest first."""
    async with pool.connection() as conn:
        rows = await (
            await conn.execute(
                f"SELECT {_COLUMNS} FROM eval_runs WHERE owner_id = %s ORDER BY created_at DESC, id DESC LIMIT %s",
                (owner, limit),
            )
        ).fetchall()
    return [dict(r) for r in rows]
