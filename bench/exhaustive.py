"""Exhaustive search (GET /api/search/documents, `ragchat search --all`): does it list every matching document
across 1,000 real documents, and in what time?

The first 1,000 SciFact dev corpus records are ingested through the real pipeline (one document each) into a
private embedded Postgres (a temporary data directory). Per query, every page is fetched through the searcher
(`Searcher.find_documents`, what the route and the CLI call), `--reps` times; the truth is a plain SQL
`SELECT DISTINCT document_id … WHERE search_vector @@ query` over all chunks. Also shown: how many of the
matching documents a top-k search (hybrid, k = 10 and 100 passages) would have named. One run with a small
bound (`limit` 200 passages) shows the early stop. Load average recorded.

    HF_HUB_OFFLINE=1 PYTHONPATH=server .venv/bin/python bench/exhaustive.py [--docs 1000] [--reps 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DATA, RESULTS, bench_runtime, bench_settings, cpu_context, load_embedder, table, write_json
from ragchat.core.matches import DocumentMatches, MatchRequest
from ragchat.core.options import options_of
from ragchat.core.principal import LOCAL_OWNER_ID, Principal
from ragchat.runtime import Runtime

PRINCIPAL = Principal(LOCAL_OWNER_ID)
QUERIES: list[tuple[str, str]] = [
    ("insulin", "all"),
    ("vitamin D", "all"),
    ("tumor", "all"),
    ("cell", "all"),
    ('"randomized controlled trial"', "all"),
    ("mice -human", "all"),
    ("malaria tuberculosis hiv", "any"),
    ("the of and", "all"),
]


async def ingest(rt: Runtime, n: int, data_dir: Path) -> tuple[int, int, float]:
    lines = (data_dir / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    data = ("\n".join(lines) + "\n").encode()
    started = time.perf_counter()
    registered = await rt.documents.ingestion.register_bulk(PRINCIPAL, "scifact-1000.jsonl", data)
    ids = [r.document_id for r in registered if r.document_id]
    progress = await rt.documents.ingestion.ingest(ids)
    return progress.documents_done, progress.chunks_done, time.perf_counter() - started


async def every_page(rt: Runtime, query: str, match: str, limit: int | None = None) -> tuple[list[Any], int, float]:
    started = time.perf_counter()
    cursor: str | None = None
    documents: list[Any] = []
    pages = 0
    last: DocumentMatches | None = None
    while True:
        request = MatchRequest(query=query, match=match, page_size=50, cursor=cursor, limit=limit)  # type: ignore[arg-type]
        last = await rt.searcher.find_documents(request, principal=PRINCIPAL)
        pages += 1
        documents += last.documents
        cursor = last.next_cursor
        if cursor is None:
            break
    assert last is not None
    return [documents, last], pages, (time.perf_counter() - started) * 1000


async def truth(rt: Runtime, query: str, match: str) -> set[Any]:
    if match == "all":
        sql = (
            "SELECT DISTINCT document_id FROM document_chunks "
            "WHERE search_vector @@ websearch_to_tsquery('english', %s)"
        )
        params: tuple[Any, ...] = (query,)
    else:
        sql = (
            "SELECT DISTINCT document_id FROM document_chunks WHERE search_vector @@ "
            "(SELECT string_agg(quote_literal(lexeme), ' | ') FROM unnest(to_tsvector('english', %s)))::tsquery"
        )
        params = (query,)
    async with rt.pool.connection() as conn:
        rows = await (await conn.execute(sql, params)).fetchall()  # type: ignore[arg-type]
    return {r["document_id"] for r in rows}


async def topk_documents(rt: Runtime, query: str, k: int) -> set[Any]:
    options = options_of(rt.settings.retrieval, limit=k, mode="hybrid")
    result = await rt.searcher.search(query, principal=PRINCIPAL, options=options)
    return {c.document_id for c in result.chunks}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DATA, help="a BEIR folder (default: the shared SciFact dev)")
    args = parser.parse_args()
    out: dict[str, Any] = {"bench": "exhaustive", "docs": args.docs, "reps": args.reps, "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-exhaustive-") as tmp:
        settings = bench_settings(Path(tmp))
        embedder = load_embedder(settings)
        try:
            async with bench_runtime(settings, embedder=embedder) as rt:
                docs, chunks, ingest_s = await ingest(rt, args.docs, args.data)
                out |= {"documents": docs, "chunks": chunks, "ingest_s": round(ingest_s, 1)}
                print(f"ingested {docs} documents, {chunks} chunks in {ingest_s:.0f} s", file=sys.stderr)
                rows: list[dict[str, Any]] = []
                for query, match in QUERIES:
                    expected = await truth(rt, query, match)
                    times = []
                    for _ in range(args.reps):
                        (found, last), pages, ms = await every_page(rt, query, match)
                        times.append(ms)
                    listed = [d.document_id for d in found]
                    top10 = await topk_documents(rt, query, 10) if expected else set()
                    top100 = await topk_documents(rt, query, 100) if expected else set()
                    rows.append(
                        {
                            "query": query,
                            "match": match,
                            "matching_documents": len(expected),
                            "listed": len(listed),
                            "all_listed": set(listed) == expected and len(listed) == len(set(listed)),
                            "passages": last.total_passages,
                            "pages": pages,
                            "complete": last.complete,
                            "ms_median": round(statistics.median(times), 1),
                            "ms_max": round(max(times), 1),
                            "top10_found": len(top10 & expected),
                            "top100_found": len(top100 & expected),
                        }
                    )
                (found, last), pages, ms = await every_page(rt, "cell", "all", limit=200)
                out["bounded"] = {
                    "query": "cell",
                    "limit": 200,
                    "listed": len(found),
                    "complete": last.complete,
                    "note": last.note,
                    "ms": round(ms, 1),
                }
        finally:
            await embedder.close()
    out["rows"] = rows
    out["load_after"] = os.getloadavg()
    out["cpu"] = cpu_context()
    headers = ["query", "match", "matching docs", "listed", "all listed", "passages", "pages", "complete",
               "ms median", "ms max", "top-10 found", "top-100 found"]  # fmt: skip
    print(table(headers, [list(r.values()) for r in rows], title=f"exhaustive search over {out['documents']} docs"))
    print(json.dumps(out["bounded"]))
    print(f"load average before {out['load_before']}, after {out['load_after']}")
    write_json(RESULTS / "exhaustive.json", out)


if __name__ == "__main__":
    asyncio.run(main())
