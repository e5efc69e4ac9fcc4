"""An owner's corpus as the evaluation reads it (core/ownership.py `Corpus`): how much of it is ingested, and a
stratified sample of its chunks to generate questions from."""

from __future__ import annotations

from uuid import UUID

from ragchat.core.ownership import CorpusState, SampledChunk
from ragchat.db.pool import Conn


async def corpus_state(conn: Conn, owner: UUID, max_failures: int) -> CorpusState:
    counts = await (
        await conn.execute(
            "SELECT count(*) FILTER (WHERE status = 'ready') AS ready, "
            "count(*) FILTER (WHERE status = 'failed') AS failed, "
            "count(*) FILTER (WHERE status IN ('queued', 'processing')) AS pending "
            "FROM documents WHERE owner_id = %s",
            (owner,),
        )
    ).fetchone()
    rows = await (
        await conn.execute(
            "SELECT coalesce(metadata->>'source_id', filename) AS doc, coalesce(error, 'unknown error') AS error "
            "FROM documents WHERE owner_id = %s AND status = 'failed' ORDER BY created_at, doc, id LIMIT %s",
            (owner, max_failures),
        )
    ).fetchall()
    assert counts is not None
    failures = [(str(r["doc"]), str(r["error"])) for r in rows]
    return CorpusState(int(counts["ready"]), int(counts["failed"]), int(counts["pending"]), failures)


async def sample_chunks(conn: Conn, owner: UUID, n: int, *, seed: str, min_chars: int) -> list[SampledChunk]:
    """Up to `n` chunks of the owner's ready documents, one per document per round, in a seeded random order."""
    rows = await (
        await conn.execute(
            """
            SELECT id, document_id, title, content, metadata FROM (
                SELECT c.id, c.document_id, d.title, c.content, d.metadata,
                       row_number() OVER (PARTITION BY c.document_id ORDER BY md5(c.id::text || %(seed)s)) AS rn,
                       md5(c.document_id::text || %(seed)s) AS doc_order
                FROM document_chunks c JOIN documents d ON d.id = c.document_id
                WHERE c.owner_id = %(owner)s AND d.owner_id = %(owner)s AND d.status = 'ready'
                  AND length(c.content) >= %(min_chars)s
            ) s
            ORDER BY rn, doc_order
            LIMIT %(n)s
            """,
            {"owner": owner, "seed": seed, "n": n, "min_chars": min_chars},
        )
    ).fetchall()
    return [SampledChunk(r["id"], r["document_id"], r["title"], r["content"], dict(r["metadata"] or {})) for r in rows]
