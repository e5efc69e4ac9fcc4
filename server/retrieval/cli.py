"""CLI commands for retrieval: search, eval."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from server.settings import LOCAL_OWNER_ID, Settings


def build_searcher(rt: Any, settings: Settings) -> Any:
    from server.chat.clients import rerank_client
    from server.retrieval.rerank_factory import make_reranker
    from server.retrieval.search import Searcher

    return Searcher(rt.pool, rt.embedder, settings, make_reranker(rerank_client(settings), settings))


async def _search(settings: Settings, args: argparse.Namespace) -> int:
    from server.cli import open_runtime
    from server.retrieval.filters import parse_metadata_filters
    from server.retrieval.models import SearchFilters

    filters = SearchFilters(document_ids=args.document or None, metadata=parse_metadata_filters(args.filter))
    async with open_runtime(settings) as rt:
        searcher = build_searcher(rt, settings)
        result = await searcher.search(
            args.query, owner=LOCAL_OWNER_ID, limit=args.top_k, mode=args.mode, filters=filters, rerank=args.rerank
        )
    if args.json:
        print(json.dumps(result.to_api(), indent=2))
        return 0
    print(
        f"{len(result.chunks)} results · {result.mode}{' + reranked' if result.reranked else ''} · "
        f"{result.timings.total_ms:.1f} ms · confidence {result.confidence.label}"
    )
    for rank, hit in enumerate(result.chunks, 1):
        snippet = textwrap.shorten(hit.content.replace("\n", " "), width=90, placeholder="…")
        page = f"p.{hit.page}" if hit.page else ""
        print(f"{rank:>3}  {hit.score:5.3f}  {hit.filename[:32]:<32} {page:<6} {snippet}")
    if not result.chunks:
        print("no results" if result.has_embeddings else "no documents yet: run `ragchat ingest PATH`")
    return 0


async def _eval(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from server.cli import open_runtime
    from server.evaluation.beir import load_beir
    from server.evaluation.runner import ensure_corpus, eval_owner, format_table, run_queries

    dataset = load_beir(args.dataset, args.split)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    ks = sorted({int(k) for k in args.k.split(",")} | {10})
    owner = eval_owner(dataset)
    async with open_runtime(settings) as rt:
        bar = tqdm(desc="ingesting corpus", unit="doc", disable=args.quiet)

        def report(p: Any) -> None:
            bar.n = p.documents_done + p.documents_failed
            bar.refresh()

        ingested = await ensure_corpus(rt.pool, rt.embedder, settings, dataset, owner, report)
        bar.close()
        if ingested:
            print(f"ingested {ingested} corpus documents", file=sys.stderr)
        reports = await run_queries(build_searcher(rt, settings), dataset, owner, modes, ks, rerank=args.rerank)
    print(f"{dataset.path.name} · split {args.split} · {len(dataset.queries)} queries")
    print(format_table(reports, ks))
    if args.json:
        write_json(Path(args.json), {m: r.to_json() for m, r in reports.items()})
    return 0


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def add_search_commands(sub: argparse._SubParsersAction, wrap: Any) -> None:
    """Register `search` and `eval` on the `ragchat` parser."""
    search = sub.add_parser("search", help="search your documents")
    search.add_argument("query")
    search.add_argument("--mode", choices=["vector", "keyword", "hybrid"])
    search.add_argument("--top-k", type=int, default=10)
    search.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None)
    search.add_argument("--filter", action="append", metavar="KEY=VALUE", help="document metadata filter")
    search.add_argument("--document", action="append", metavar="ID", help="only this document (repeatable)")
    search.add_argument("--json", action="store_true", help="print the same JSON as GET /api/search")
    search.set_defaults(func=wrap(_search))

    ev = sub.add_parser("eval", help="evaluate retrieval on a BEIR-format dataset")
    ev.add_argument("--dataset", required=True)
    ev.add_argument("--split", default="test")
    ev.add_argument("--modes", default="vector,keyword,hybrid")
    ev.add_argument("--k", default="1,3,5,10,100")
    ev.add_argument("--rerank", action="store_true")
    ev.add_argument("--json", metavar="FILE")
    ev.add_argument("--quiet", action="store_true")
    ev.set_defaults(func=wrap(_eval))
