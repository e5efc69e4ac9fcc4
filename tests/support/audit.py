"""Helpers for the audit log's tests (no tests here): rows written as the app writes them, and rows dated in
the past, which only the table's owner can make (it switches the stamping trigger off inside one transaction:
a schema change, as docs/notes/audit.md says)."""

from __future__ import annotations

import psycopg


def insert_rows(uri: str, n: int, age_days: int = 0) -> None:
    """`n` `auth.sign_in` rows by 'tester'; `age_days` > 0 dates them that many days (minus n seconds) ago."""
    with psycopg.connect(uri) as conn:  # one transaction: the trigger is off for this insert only
        if not age_days:
            conn.execute(
                """INSERT INTO audit_log (actor_name, action, details)
                   SELECT 'tester', 'auth.sign_in', jsonb_build_object('n', g) FROM generate_series(1, %s) g""",
                (n,),
            )
            return
        conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_stamp")
        conn.execute(
            """INSERT INTO audit_log (id, at, actor_name, action, details)
               SELECT nextval('audit_log_id_seq'), now() - make_interval(days => %s, secs => g), 'tester',
                      'auth.sign_in', jsonb_build_object('n', g)
               FROM generate_series(1, %s) g""",
            (age_days, n),
        )
        conn.execute("ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_stamp")


def count(uri: str, where: str = "true") -> int:
    with psycopg.connect(uri) as conn:
        row = conn.execute(f"SELECT count(*) FROM audit_log WHERE {where}").fetchone()  # type: ignore[arg-type]
        return int(row[0]) if row else 0
