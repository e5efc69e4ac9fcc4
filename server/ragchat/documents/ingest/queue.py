"""The ingestion job queue's SQL: queued documents are claimed under a lease by one worker, renewed while it
works, report progress, fail with a reason or give up after their attempts; retry, cancel and rechunk requeue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ragchat.core import metrics
from ragchat.db.pool import Conn


async def requeue_failed(conn: Conn, owner: UUID, document_id: UUID) -> bool:
    """Queue a failed document of `owner` again, with a fresh count of attempts."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'queued', error = NULL, chunks_done = 0, attempts = 0, lease_until = NULL,
               worker_id = NULL, not_before = NULL, progress_started_at = NULL, updated_at = now()
           WHERE id = %s AND owner_id = %s AND status = 'failed'""",
        (document_id, owner),
    )
    return cur.rowcount == 1


async def retry(conn: Conn, owner: UUID, document_id: UUID) -> bool:
    """Queue again a failed document, or a stuck one (processing with its lease run out); attempts start over."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'queued', error = NULL, chunks_done = 0, attempts = 0, lease_until = NULL,
               worker_id = NULL, not_before = NULL, progress_started_at = NULL, updated_at = now()
           WHERE id = %s AND owner_id = %s
             AND (status = 'failed' OR (status = 'processing' AND coalesce(lease_until, locked_at) < now()))""",
        (document_id, owner),
    )
    return cur.rowcount == 1


async def cancel(conn: Conn, owner: UUID, document_id: UUID) -> bool:
    """Stop a queued or processing document: failed with the error "cancelled" (the worker holding it notices
    its lease is gone and drops its work)."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'failed', error = 'cancelled', lease_until = NULL, worker_id = NULL,
               updated_at = now()
           WHERE id = %s AND owner_id = %s AND status IN ('queued', 'processing')""",
        (document_id, owner),
    )
    return cur.rowcount == 1


async def rechunk(conn: Conn, document_id: UUID, chunking: dict[str, Any]) -> bool:
    """Queue a ready or failed document again to be chunked as `chunking` asks (its stored bytes are parsed
    again; its current chunks stay searchable until the new ones replace them). The caller checked access."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'queued', chunking = %s, error = NULL, chunks_done = 0, attempts = 0,
               lease_until = NULL, worker_id = NULL, not_before = NULL, progress_started_at = NULL, updated_at = now()
           WHERE id = %s AND status IN ('ready', 'failed')
             AND EXISTS (SELECT 1 FROM document_blobs b WHERE b.document_id = documents.id)""",
        (Jsonb(chunking), document_id),
    )
    return cur.rowcount == 1


async def give_up_expired(conn: Conn, *, max_attempts: int) -> int:
    """Fail documents whose lease ran out on their last allowed attempt (the worker died each time), with
    the last error they had; returns how many."""
    cur = await conn.execute(
        """UPDATE documents SET status = 'failed', lease_until = NULL, worker_id = NULL, updated_at = now(),
               error = left('gave up after ' || attempts || ' attempts: ' || coalesce(error,
                   'the worker processing it stopped (crashed or was killed) before it finished'), 2000)
           WHERE status = 'processing' AND lease_until < now() AND attempts >= %s""",
        (max_attempts,),
    )
    return cur.rowcount


async def status_counts(conn: Conn) -> dict[str, int]:
    """How many documents are in each status (queued, processing, ready, failed): the queue's gauge."""
    rows = await (await conn.execute("SELECT status, count(*) AS n FROM documents GROUP BY status")).fetchall()
    return {r["status"]: int(r["n"]) for r in rows}


_DUE = "(not_before IS NULL OR not_before <= now())"  # a requeued document waits out its backoff


async def next_due(conn: Conn, ids: Sequence[UUID] | None = None) -> float | None:
    """Seconds until the first queued document (of `ids`) is due again after a backoff; None if none waits."""
    row = await (
        await conn.execute(
            """SELECT extract(epoch FROM min(not_before) - now())::float8 AS wait FROM documents
               WHERE status = 'queued' AND not_before IS NOT NULL AND (%s::uuid[] IS NULL OR id = ANY(%s::uuid[]))""",
            (None if ids is None else list(ids), None if ids is None else list(ids)),
        )
    ).fetchone()
    return None if row is None or row["wait"] is None else max(0.0, float(row["wait"]))


async def claim(
    conn: Conn,
    *,
    limit: int,
    ids: Sequence[UUID] | None = None,
    stale_after_s: int = 600,
    worker_id: str | None = None,
    lease_s: float = 60.0,
    inline: int | None = None,
) -> list[dict[str, Any]]:
    """Lease up to `limit` queued documents (or ones whose lease ran out: a crashed worker's) to `worker_id`
    for `lease_s` seconds. A processing row without a lease (from before leases) is stale after `stale_after_s`.
    Each row brings its file's bytes as `data`, only when they are at most `inline` bytes if that is given (the
    caller reads a bigger one with `blob` when it gets to it)."""
    # Two statements, so each can use its index: the primary key for an explicit id list (the CLI's own
    # documents), the partial queued index otherwise. A generic `ids IS NULL OR id = ANY(ids)` uses neither
    # and rescans the whole list for every queued row.
    if ids is None:
        where, params = f"status = 'queued' AND {_DUE}", []
    else:
        where, params = f"id = ANY(%s::uuid[]) AND status = 'queued' AND {_DUE}", [list(ids)]
    stale_where = """status = 'processing' AND (lease_until < now()
        OR (lease_until IS NULL AND locked_at < now() - make_interval(secs => %s)))"""
    stale_params: list[Any] = [stale_after_s]
    if ids is not None:
        stale_where += " AND id = ANY(%s::uuid[])"
        stale_params.append(list(ids))
    rows = await (
        await conn.execute(
            f"""WITH fresh AS (SELECT id, created_at, false AS taken_over FROM documents WHERE {where}
                               ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED),
                     stale AS (SELECT id, created_at, true AS taken_over FROM documents WHERE {stale_where}
                               ORDER BY created_at LIMIT %s FOR UPDATE SKIP LOCKED),
                     picked AS (SELECT id, taken_over
                                FROM (SELECT * FROM fresh UNION ALL SELECT * FROM stale) both_kinds
                                ORDER BY created_at LIMIT %s)
                UPDATE documents d SET status = 'processing', locked_at = now(), attempts = attempts + 1,
                       lease_until = now() + make_interval(secs => %s), worker_id = %s, updated_at = now(),
                       chunks_done = 0, chunks_total = NULL, progress_started_at = NULL, not_before = NULL,
                       progress_note = NULL
                FROM picked
                WHERE d.id = picked.id
                RETURNING picked.taken_over, d.id, d.owner_id, d.filename, d.title, d.content_type, d.metadata,
                          d.created_at, d.attempts, d.byte_size, d.chunking,
                          CASE WHEN %s::bigint IS NULL OR d.byte_size <= %s::bigint
                               THEN (SELECT data FROM document_blobs b WHERE b.document_id = d.id) END AS data""",
            (*params, limit, *stale_params, limit, limit, lease_s, worker_id, inline, inline),
        )
    ).fetchall()
    if taken := sum(1 for r in rows if r.pop("taken_over")):
        metrics.LEASE_TAKEOVERS.inc(taken)
    return sorted(rows, key=lambda r: r["created_at"])  # RETURNING has no order of its own


async def renew_leases(conn: Conn, worker_id: str, lease_s: float) -> set[UUID]:
    """The heartbeat: extend every lease `worker_id` holds; returns the documents it still holds (one that was
    cancelled, deleted or taken over is missing)."""
    rows = await (
        await conn.execute(
            """UPDATE documents SET lease_until = now() + make_interval(secs => %s)
               WHERE worker_id = %s AND status = 'processing' RETURNING id""",
            (lease_s, worker_id),
        )
    ).fetchall()
    return {r["id"] for r in rows}


async def held(conn: Conn, worker_id: str, document_ids: Sequence[UUID]) -> set[UUID]:
    """Which of `document_ids` `worker_id` still holds (not cancelled, deleted or reclaimed)."""
    rows = await (
        await conn.execute(
            "SELECT id FROM documents WHERE id = ANY(%s::uuid[]) AND worker_id = %s AND status = 'processing'",
            (list(document_ids), worker_id),
        )
    ).fetchall()
    return {r["id"] for r in rows}


async def set_progress(conn: Conn, done: dict[UUID, int], *, total: bool = False) -> None:
    """One statement for many documents: `done` chunks embedded so far (the first report starts the clock the
    ETA is measured by), or with `total=True` the chunk totals once parsed (chunks_done reset to 0)."""
    if not done:
        return
    column = (
        "chunks_total = p.n, chunks_done = 0"
        if total
        else ("chunks_done = p.n, progress_started_at = coalesce(d.progress_started_at, now())")
    )
    await conn.execute(
        f"""UPDATE documents d SET {column}, updated_at = now()
            FROM unnest(%s::uuid[], %s::int[]) AS p(id, n)
            WHERE d.id = p.id AND d.status = 'processing'""",
        (list(done), list(done.values())),
    )


async def set_note(conn: Conn, document_id: UUID, worker_id: str, note: str) -> None:
    """What the worker holding the document is doing now ("OCR page 3 of 12"), shown while it reads it."""
    await conn.execute(
        """UPDATE documents SET progress_note = left(%s, 200), updated_at = now()
           WHERE id = %s AND worker_id = %s AND status = 'processing'""",
        (note, document_id, worker_id),
    )


async def mark_failed(
    conn: Conn,
    document_id: UUID,
    error: str,
    *,
    worker_id: str | None = None,
    retry_below: int = 0,
    backoff_s: float = 0.0,
    backoff_max_s: float = 300.0,
) -> str | None:
    """Record why processing failed: queued again while the attempts are under `retry_below` (not before
    `backoff_s` × 2^(attempts-1), at most `backoff_max_s`), else failed. With `worker_id`, only while that
    worker still holds the lease. Returns the new status (None: not held)."""
    holder = "AND worker_id = %s AND status = 'processing'" if worker_id is not None else ""
    params: list[Any] = [retry_below, retry_below, backoff_s, backoff_max_s, error[:2000], document_id]
    if worker_id is not None:
        params.append(worker_id)
    row = await (
        await conn.execute(
            f"""UPDATE documents SET status = CASE WHEN attempts < %s THEN 'queued' ELSE 'failed' END,
                   not_before = CASE WHEN attempts < %s
                       THEN now() + make_interval(secs => least(%s * 2 ^ greatest(attempts - 1, 0), %s)) END,
                   error = %s, locked_at = NULL, lease_until = NULL, worker_id = NULL, updated_at = now()
               WHERE id = %s {holder} RETURNING status""",
            params,
        )
    ).fetchone()
    return row["status"] if row else None


class LeaseLost(Exception):
    """The document was cancelled, deleted or taken over by another worker while this one worked on it."""
