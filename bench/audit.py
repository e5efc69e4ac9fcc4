"""The audit log under load: 10,000 rows a minute written the way actions write them, while an admin pages;
then an hour's worth of rows (600,000) paged, filtered, exported and purged.

Phase 1 (*paced*): `--rate` rows a minute for `--seconds`, each in its own transaction through `AuditLog.record`
(as every action does), from `--writers` concurrent tasks, while a reader asks for the first page, a filtered
page and a page deep behind a cursor once a second. Reports achieved rate, write latency and read latency.
Phase 2 (*an hour*): the table filled to `--rows` rows spread over the last hour (generate_series), then first
page, deep pages (cursor), filters, the export's throughput and peak memory, and the retention purge.

    HF_HUB_OFFLINE=1 .venv/bin/python bench/audit.py [--rate 10000] [--seconds 60] [--rows 600000]

Its own embedded Postgres in a temporary directory (no embedding model is loaded).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import uuid4

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import RESULTS, bench_settings, cpu_context, pct, table, write_json
from ragchat.audit.repository import AuditFilter, Position
from ragchat.audit.schemas import make_cursor, read_cursor
from ragchat.audit.service import AuditLog
from ragchat.core.audit import Actor, AuditAction
from ragchat.db.pool import make_pool, prepare_database

ACTIONS = [AuditAction.SIGN_IN, AuditAction.CHAT_ANSWER, AuditAction.DOCUMENT_DELETE, AuditAction.TOKEN_CREATE]
USERS = [Actor(uuid4(), f"user{i}") for i in range(20)]


def details(i: int) -> dict[str, Any]:
    """An answer's sources (8 chunks) every fourth row, else a small object."""
    if i % 4 == 1:
        doc = str(uuid4())
        return {"status": "complete", "chunks": [{"chunk_id": i * 8 + k, "document_id": doc} for k in range(8)]}
    return {"n": i}


async def timed(fn: Any) -> float:
    start = time.perf_counter()
    await fn()
    return (time.perf_counter() - start) * 1000


async def paced(audit: AuditLog, pool: Any, rate: int, seconds: float, writers: int) -> dict[str, Any]:
    total = int(rate * seconds / 60)
    interval = writers * 60.0 / rate  # each writer's pace
    latencies: list[float] = []
    reads: dict[str, list[float]] = {"first page": [], "by action": [], "deep (cursor)": []}
    done = asyncio.Event()
    began = time.perf_counter()

    async def writer(w: int) -> None:
        for n in range(w, total, writers):
            due = began + (n // writers) * interval
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            actor = USERS[n % len(USERS)]

            async def write(n: int = n, actor: Actor = actor) -> None:
                async with pool.connection() as conn:
                    await audit.record(
                        conn, ACTIONS[n % 4], actor, target_type="document", target_id=uuid4(), details=details(n)
                    )

            latencies.append(await timed(write))

    async def reader() -> None:
        where = AuditFilter(actions=(AuditAction.DOCUMENT_DELETE.value,))
        while not done.is_set():
            reads["first page"].append(await timed(lambda: audit.page(AuditFilter(), before=None, limit=51)))
            reads["by action"].append(await timed(lambda: audit.page(where, before=None, limit=51)))
            middle = await position(pool, max(2, len(latencies) // 2))
            reads["deep (cursor)"].append(await timed(lambda m=middle: audit.page(AuditFilter(), before=m, limit=51)))
            await asyncio.sleep(1.0)

    read_task = asyncio.create_task(reader())
    await asyncio.gather(*(writer(w) for w in range(writers)))
    elapsed = time.perf_counter() - began
    done.set()
    await read_task
    return {
        "rows": total,
        "seconds": round(elapsed, 2),
        "rows_per_min": round(total / elapsed * 60),
        "write": pct(latencies),
        "reads": {k: pct(v) for k, v in reads.items()},
    }


#: rows dated in the past need the table owner to switch the stamping trigger off (migrations/0028)
UNSTAMPED = "ALTER TABLE audit_log DISABLE TRIGGER audit_log_stamp"
STAMPED = "ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_stamp"


async def an_hour(audit: AuditLog, pool: Any, rows: int) -> dict[str, Any]:
    async with pool.connection() as conn:
        start = time.perf_counter()
        await conn.execute(UNSTAMPED)  # dated rows (the bench's own fill), in this transaction only
        await conn.execute(
            """INSERT INTO audit_log (id, at, actor_id, actor_name, client, action, target_type, target_id, details)
               SELECT nextval('audit_log_id_seq'), now() - make_interval(secs => 3600.0 * g / %(n)s), NULL,
                      'user' || (g %% 20), '10.0.0.1',
                      (ARRAY['auth.sign_in','chat.answer','document.delete','token.create'])[1 + g %% 4],
                      'document', g::text, jsonb_build_object('n', g)
               FROM generate_series(1, %(n)s) g""",
            {"n": rows},
        )
        await conn.execute(STAMPED)
        fill_s = time.perf_counter() - start
        await conn.execute("ANALYZE audit_log")
        size = await (await conn.execute("SELECT pg_total_relation_size('audit_log') AS b")).fetchone()
        max_id = await (await conn.execute("SELECT max(id) AS m FROM audit_log")).fetchone()
    top = int(max_id["m"]) if max_id else rows
    middle, last = await position(pool, top // 2), await position(pool, 60)
    half_hour_ago = await _ago(pool, 1800)
    cases = {
        "first page": (AuditFilter(), None),
        "page at half the log (cursor)": (AuditFilter(), middle),
        "last page (cursor)": (AuditFilter(), last),
        "action filter": (AuditFilter(actions=("document.delete",)), None),
        "actor name filter": (AuditFilter(actor_name="user7"), None),
        "actor + action, deep": (AuditFilter(actor_name="user7", actions=("chat.answer",)), middle),
        "target filter": (AuditFilter(target_type="document", target_id=str(rows // 3)), None),
        "since 30 min ago": (AuditFilter(since=half_hour_ago), None),
        "until 30 min ago": (AuditFilter(until=half_hour_ago), None),
    }
    pages: dict[str, Any] = {}
    for name, (where, before) in cases.items():
        if before is not None:
            assert read_cursor(make_cursor(before, where), where) == before
        times = [await timed(lambda w=where, b=before: audit.page(w, before=b, limit=51)) for _ in range(15)]
        pages[name] = pct(times)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    exported = 0
    lines = 0
    async for piece in audit.export(AuditFilter()):
        exported += len(piece)
        lines += piece.count(b"\n")
    export_s = time.perf_counter() - start
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "rows": rows,
        "fill_s": round(fill_s, 2),
        "table_mb": round(int(size["b"]) / 1e6, 1) if size else None,
        "pages": pages,
        "export": {
            "rows": lines,
            "seconds": round(export_s, 2),
            "rows_per_s": round(lines / export_s),
            "mb": round(exported / 1e6, 1),
            "peak_rss_growth_mb": round((rss_after - rss_before) / 1024, 1),
        },
    }


async def position(pool: Any, row_id: int) -> Position | None:
    """(at, id) of a row: where a cursor after it points."""
    async with pool.connection() as conn:
        row = await (await conn.execute("SELECT at, id FROM audit_log WHERE id = %s", (row_id,))).fetchone()
    return (row["at"], row["id"]) if row else None


async def _ago(pool: Any, seconds: int) -> Any:
    async with pool.connection() as conn:
        row = await (await conn.execute("SELECT now() - make_interval(secs => %s) AS t", (seconds,))).fetchone()
    return row["t"] if row else None


async def purge_bench(audit: AuditLog, pool: Any, rows: int) -> dict[str, Any]:
    """An hour of rows aged past the retention window, purged in batches of 10,000 by `AuditLog.purge`."""
    async with pool.connection() as conn:
        await conn.execute(UNSTAMPED)
        await conn.execute(
            """INSERT INTO audit_log (id, at, actor_name, action, details)
               SELECT nextval('audit_log_id_seq'), now() - interval '400 days' - make_interval(secs => g), 'old',
                      'auth.sign_in', '{}'
               FROM generate_series(1, %s) g""",
            (rows,),
        )
        await conn.execute(STAMPED)
    start = time.perf_counter()
    removed = await audit.purge(365)
    return {"rows": removed, "seconds": round(time.perf_counter() - start, 2)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=10_000, help="rows a minute in the paced phase")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--writers", type=int, default=32, help="concurrent writers (requests in flight)")
    parser.add_argument("--rows", type=int, default=600_000, help="rows in the one-hour phase (0: skip it)")
    args = parser.parse_args()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ragchat-audit-bench-") as tmp:
        settings = bench_settings(Path(tmp))
        database = await asyncio.to_thread(prepare_database, settings.database)
        pool = make_pool(database.uri, min_size=2, max_size=10)
        await pool.open(wait=True)
        try:
            audit = AuditLog(pool, settings.audit)
            first = await paced(audit, pool, args.rate, args.seconds, args.writers)
            hour = await an_hour(audit, pool, args.rows) if args.rows else None
            purge = await purge_bench(audit, pool, args.rows // 2) if args.rows else None
        finally:
            await pool.close()
            database.close()
    out = {
        "args": vars(args),
        "loadavg_start": [round(x, 2) for x in load_start],
        "cpu": cpu_context(),
        "paced": first,
        "hour": hour,
        "purge": purge,
    }
    print(f"load average at start {out['loadavg_start']}, at end {out['cpu']['loadavg']}")
    print(
        table(
            ["paced phase", "rows", "seconds", "rows/min", "write p50 ms", "write p99 ms", "max ms"],
            [
                [
                    f"{args.rate:,}/min, {args.writers} writers",
                    first["rows"],
                    first["seconds"],
                    first["rows_per_min"],
                    first["write"]["p50_ms"],
                    first["write"]["p99_ms"],
                    first["write"]["max_ms"],
                ]
            ],
        )
    )
    print(
        table(
            ["read while writing", "p50 ms", "p99 ms", "n"],
            [[k, v["p50_ms"], v["p99_ms"], v["n"]] for k, v in first["reads"].items()],
        )
    )
    if hour is None or purge is None:
        write_json(RESULTS / "audit.json", out)
        return
    print(
        table(
            [f"page of 50 at {hour['rows']:,} rows ({hour['table_mb']} MB)", "p50 ms", "p95 ms", "max ms"],
            [[k, v["p50_ms"], v["p95_ms"], v["max_ms"]] for k, v in hour["pages"].items()],
        )
    )
    e = hour["export"]
    print(
        f"export: {e['rows']:,} rows, {e['mb']} MB in {e['seconds']} s ({e['rows_per_s']:,} rows/s), "
        f"peak RSS growth {e['peak_rss_growth_mb']} MB"
    )
    print(f"purge: {purge['rows']:,} rows past retention in {purge['seconds']} s")
    write_json(RESULTS / "audit.json", out)


if __name__ == "__main__":
    asyncio.run(main())
