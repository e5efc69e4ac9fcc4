"""Bringing each space's HNSW index to what the installed pgvector does best.

On pgvector >= 0.8 a space still indexed as `vector` (made before, or by an older pgvector) gets a `halfvec`
index built, its `vector` index dropped and `embedding_spaces.index_type` set, all in one transaction under an
advisory lock (the server and `ragchat worker` may start together). Searches keep working meanwhile: until
the commit they use the old index. On older pgvector a space still marked `halfvec` (a backup of a newer engine
restored there: its halfvec index is left out, db/backup.py) gets its `vector` index built the same way.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from psycopg import sql

from ragchat.db.pool import Conn
from ragchat.vectors.store import Space, default_index_type, list_spaces

log = logging.getLogger(__name__)

_LOCK = "ragchat.vectors.indexes"


async def upgrade_indexes(conn: Conn) -> list[Space]:
    """Rebuild `vector` indexes as `halfvec` where pgvector >= 0.8, and `halfvec` ones as `vector` below; the
    spaces rebuilt. Own transaction."""
    best = await default_index_type(conn)
    if best != "halfvec" and all(s.index_type == best for s in await list_spaces(conn)):
        return []
    rebuilt: list[Space] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_LOCK,))
        for space in await list_spaces(conn):
            if space.index_type == best:
                continue
            began = time.monotonic()
            now = replace(space, index_type=best)
            await conn.execute(now.index_ddl())
            await conn.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(space.index_name()))
            await conn.execute("UPDATE embedding_spaces SET index_type = %s WHERE id = %s", (best, space.id))
            log.warning(
                "rebuilt the %s index of %s as %s (the installed pgvector's best) in %.1f s",
                space.index_type,
                space.label,
                best,
                time.monotonic() - began,
            )
            rebuilt.append(now)
    return rebuilt
