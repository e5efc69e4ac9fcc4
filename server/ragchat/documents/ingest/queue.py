"""The ingestion job queue's SQL: queued documents are claimed under a lease by one worker, renewed while it
works, report progress, fail with a reason or give up after their attempts; retry, cancel and rechunk requeue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ragchat.db.pool import Conn
from ragchat.observability import metrics


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


#: A document parsed in a child process (server/ragchat/documents/parsing/isolated.py): images, PDFs and any file whose
#: bytes do not come with the claim. The rest ("light": small text, office files) is parsed in the worker itself.
HEAVY_SQL = """(d.content_type LIKE 'image/%%' OR d.content_type = 'application/pdf'
    OR d.byte_size > coalesce(%(inline)s::bigint, d.byte_size))"""
_CLAIM_LOCK = 4_300_027  # pg_advisory_xact_lock key: claims take turns, so the per-owner caps hold across workers

_RETURNING = (
    """RETURNING d.id, d.owner_id, d.filename, d.title, d.content_type, d.metadata, d.created_at,
    d.attempts, d.byte_size, d.chunking, """
    + HEAVY_SQL
    + """ AS heavy,
    CASE WHEN %(inline)s::bigint IS NULL OR d.byte_size <= %(inline)s::bigint
         THEN (SELECT data FROM document_blobs b WHERE b.document_id = d.id) END AS data"""
)
_LEASE = """status = 'processing', locked_at = now(), attempts = attempts + 1,
    lease_until = now() + make_interval(secs => %(lease_s)s), worker_id = %(worker_id)s, updated_at = now(),
    chunks_done = 0, chunks_total = NULL, progress_started_at = NULL, not_before = NULL, progress_note = NULL"""


async def claim(
    conn: Conn,
    *,
    limit: int,
    ids: Sequence[UUID] | None = None,
    stale_after_s: int = 600,
    worker_id: str | None = None,
    lease_s: float = 60.0,
    inline: int | None = None,
    heavy_limit: int | None = None,
    heavy_per_owner: int = 1,
) -> list[dict[str, Any]]:
    """Lease up to `limit` queued documents (or ones whose lease ran out: a crashed worker's) to `worker_id`
    for `lease_s` seconds. A processing row without a lease (from before leases) is stale after `stale_after_s`.
    Each row brings its file's bytes as `data`, only when they are at most `inline` bytes if that is given (the
    caller reads a bigger one with `blob` when it gets to it), and `heavy` (see HEAVY_SQL).

    Fair between owners: owners take turns (each owner's n-th oldest queued document, counting the documents it
    has processing already, so the owner with the fewest running and then the oldest waiting goes first). With
    `heavy_limit`, at most that many heavy documents, and none of an owner who already has `heavy_per_owner`
    heavy ones processing anywhere: one user's scans cannot hold every worker's child process."""
    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CLAIM_LOCK,))
    params: dict[str, Any] = {
        "limit": limit,
        "ids": None if ids is None else list(ids),
        "stale": stale_after_s,
        "worker_id": worker_id,
        "lease_s": lease_s,
        "inline": inline,
        "heavy_limit": heavy_limit if heavy_limit is not None else limit,
        "per_owner": heavy_per_owner if heavy_limit is not None else limit,
    }
    rows = await _claim_stale(conn, params, ids, heavy_limit)
    params["limit"] = limit - len(rows)
    params["heavy_limit"] -= sum(1 for r in rows if r["heavy"])
    if params["limit"] > 0:
        rows += await _claim_fresh(conn, params, ids, heavy_limit)
    if taken := sum(1 for r in rows if r.pop("taken_over")):
        metrics.LEASE_TAKEOVERS.inc(taken)
    return sorted(rows, key=lambda r: r["created_at"])  # RETURNING has no order of its own


async def _claim_stale(
    conn: Conn, params: dict[str, Any], ids: Sequence[UUID] | None, heavy_limit: int | None
) -> list[dict[str, Any]]:
    """Documents a dead worker left processing (lease run out, or no lease and locked long ago), oldest first."""
    only = "AND d.id = ANY(%(ids)s::uuid[])" if ids is not None else ""
    heavy = "true" if heavy_limit is None else HEAVY_SQL
    sql = f"""WITH stale AS (
                  SELECT d.id, d.created_at, {heavy} AS heavy FROM documents d
                  WHERE d.status = 'processing' AND (d.lease_until < now()
                      OR (d.lease_until IS NULL AND d.locked_at < now() - make_interval(secs => %(stale)s)))
                  {only}
                  ORDER BY d.created_at LIMIT %(limit)s FOR UPDATE OF d SKIP LOCKED),
              picked AS (  -- at most `heavy_limit` heavy ones (the others stay for a worker with room)
                  SELECT id FROM (SELECT id, created_at, heavy,
                                         row_number() OVER (PARTITION BY heavy ORDER BY created_at) AS nth
                                  FROM stale) s
                  WHERE NOT s.heavy OR s.nth <= %(heavy_limit)s)
              UPDATE documents d SET {_LEASE} FROM picked WHERE d.id = picked.id
              {_RETURNING}, true AS taken_over"""
    return await (await conn.execute(sql, params)).fetchall()


async def _claim_fresh(
    conn: Conn, params: dict[str, Any], ids: Sequence[UUID] | None, heavy_limit: int | None
) -> list[dict[str, Any]]:
    """Queued documents due now, owners taking turns (see `claim`)."""
    if ids is None:  # the owners with something queued, one index probe each (a loose index scan)
        owners = """WITH RECURSIVE owners AS (
            (SELECT owner_id FROM documents WHERE status = 'queued' ORDER BY owner_id LIMIT 1)
            UNION ALL
            SELECT (SELECT d.owner_id FROM documents d WHERE d.status = 'queued' AND d.owner_id > o.owner_id
                    ORDER BY d.owner_id LIMIT 1)
            FROM owners o WHERE o.owner_id IS NOT NULL)"""
        only = ""
    else:
        owners = "WITH owners AS (SELECT DISTINCT owner_id FROM documents WHERE id = ANY(%(ids)s::uuid[]))"
        only = "AND d.id = ANY(%(ids)s::uuid[])"
    heavy_cap = "" if heavy_limit is None else "AND (NOT c.heavy OR c.kind_nth <= %(per_owner)s - c.heavy_running)"
    sql = f"""{owners},
        running AS (
            SELECT d.owner_id, count(*) AS n, count(*) FILTER (WHERE {HEAVY_SQL}) AS heavy_n FROM documents d
            WHERE d.status = 'processing' AND (d.lease_until IS NULL OR d.lease_until >= now())
            GROUP BY d.owner_id),
        firsts AS (  -- each owner's oldest due documents, light and heavy apart
            SELECT o.owner_id, f.* FROM owners o CROSS JOIN LATERAL (
                SELECT d.id, d.created_at, {HEAVY_SQL} AS heavy FROM documents d
                WHERE d.owner_id = o.owner_id AND d.status = 'queued' AND {_DUE}
                      {only}
                ORDER BY d.created_at LIMIT %(limit)s) f
            WHERE o.owner_id IS NOT NULL),
        cand AS (
            SELECT f.id, f.heavy, f.created_at, coalesce(r.heavy_n, 0) AS heavy_running,
                   row_number() OVER (PARTITION BY f.owner_id, f.heavy ORDER BY f.created_at) AS kind_nth,
                   row_number() OVER (PARTITION BY f.owner_id ORDER BY f.created_at) + coalesce(r.n, 0) AS turn
            FROM firsts f LEFT JOIN running r ON r.owner_id = f.owner_id),
        light AS (
            SELECT d.id FROM documents d JOIN cand c ON c.id = d.id
            WHERE NOT c.heavy AND d.status = 'queued'
            ORDER BY c.turn, c.created_at LIMIT %(limit)s FOR UPDATE OF d SKIP LOCKED),
        heavy AS (
            SELECT d.id FROM documents d JOIN cand c ON c.id = d.id
            WHERE c.heavy AND d.status = 'queued' {heavy_cap}
            ORDER BY c.turn, c.created_at LIMIT greatest(%(heavy_limit)s, 0) FOR UPDATE OF d SKIP LOCKED),
        picked AS (
            SELECT p.id FROM (SELECT id FROM light UNION ALL SELECT id FROM heavy) p
            JOIN cand c ON c.id = p.id ORDER BY c.turn, c.created_at LIMIT %(limit)s)
        UPDATE documents d SET {_LEASE} FROM picked WHERE d.id = picked.id
        {_RETURNING}, false AS taken_over"""
    return await (await conn.execute(sql, params)).fetchall()


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


async def ocr_used(conn: Conn, owner: UUID) -> int:
    """Pixels decoded for OCR of `owner`'s documents in the last 24 hours (OCR_USER_MEGAPIXELS_PER_DAY)."""
    row = await (
        await conn.execute(
            """SELECT coalesce(sum(pixels), 0)::bigint AS n FROM ocr_usage
               WHERE owner_id = %s AND at > now() - interval '1 day'""",
            (owner,),
        )
    ).fetchone()
    return int(row["n"]) if row else 0


async def record_ocr(conn: Conn, owner: UUID, document_id: UUID, pixels: int) -> None:
    """Count `pixels` decoded for OCR of a document against its owner's daily budget."""
    await conn.execute(
        "INSERT INTO ocr_usage (owner_id, document_id, pixels) VALUES (%s, %s, %s)", (owner, document_id, pixels)
    )
