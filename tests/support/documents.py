"""Many ready documents at once, inserted with SQL (not uploaded): for lists, paging and bulk actions."""

from __future__ import annotations

import psycopg

from ragchat.core.principal import LOCAL_OWNER_ID


def seed_ready(db: str, prefix: str, count: int, *, digits: int = 3) -> None:
    """`count` ready text documents of the local owner: `{prefix}-{i}.txt` titled `{prefix} {i, zero-padded}`,
    i from 0, each a second older than the one before (newest first is i = 0), byte sizes 10 + i."""
    with psycopg.connect(db) as conn:
        conn.execute(
            """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status, created_at)
               SELECT %(owner)s, %(prefix)s || '-' || i || '.txt', %(prefix)s || ' ' || lpad(i::text, %(digits)s, '0'),
                      'text/plain', 10 + i, md5(%(prefix)s || i), 'ready', now() - make_interval(secs => i)
               FROM generate_series(0, %(last)s) i""",
            {"owner": LOCAL_OWNER_ID, "prefix": prefix, "digits": digits, "last": count - 1},
        )
