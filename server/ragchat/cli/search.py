"""`ragchat search`."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from contextlib import aclosing
from typing import Any

from ragchat.cli import remote
from ragchat.cli.common import acting_as, add_user_option, id_arg, open_runtime, run_async, where
from ragchat.cli.search_all import add_options, search_all
from ragchat.core.options import Asked
from ragchat.core.search import SearchFilters
from ragchat.httpapi.search import search_response
from ragchat.policy.request import Ask
from ragchat.retrieval.facets import facet_counts
from ragchat.retrieval.filters import parse_metadata_filters
from ragchat.settings import Settings


async def search(settings: Settings, args: argparse.Namespace) -> int:
    server = remote.server_url(args, settings.database.data_dir)
    if server:  # a running server answers, as the token's user: no cold start
        print(f"ragchat: using the server at {server}", file=sys.stderr)
        if args.all:
            return await search_all(settings, args, server)
        if args.rag:
            return remote.rag(args, server, rag_filters(args))
        return print_results(remote.search(args, server), args.json)
    print(f"ragchat: using {where(settings)}", file=sys.stderr)
    if args.all:
        return await search_all(settings, args, None)
    if args.rag:
        return await local_rag(settings, args)
    filters = SearchFilters(
        document_ids=args.document or None,
        collection_ids=args.collection or None,
        metadata=parse_metadata_filters(args.filter),
    )
    async with open_runtime(settings) as rt:
        principal = await acting_as(rt, args.user)
        asked = Asked(mode=args.mode, rerank=args.rerank, limit=args.top_k, filters=filters)
        ask = Ask(search=asked, document_ids=filters.document_ids, collection_ids=filters.collection_ids)
        checked = await rt.policy.check(principal, ask)  # as the server checks a request (no per-user rates)
        assert checked.options is not None
        result = await rt.searcher.search(args.query, principal=principal, options=checked.options)
        api = search_response(result)
        api.facets = await facet_counts(rt.pool, principal, filters)  # as GET /api/search answers
    return print_results(api.model_dump(mode="json"), args.json)


def rag_filters(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "document_ids": args.document or None,
        "collection_ids": args.collection or None,
        "metadata": parse_metadata_filters(args.filter),
    }


async def local_rag(settings: Settings, args: argparse.Namespace) -> int:
    """`search --rag` on the database directly: the same answer as POST /api/rag, streamed to the terminal."""
    from ragchat.chat.api.rag_routes import checked_rag, rag_answer
    from ragchat.chat.schemas import RagBody, RagFilters

    body = RagBody(query=args.query, top_k=args.top_k, mode=args.mode, rerank=args.rerank,
                   filters=RagFilters(**rag_filters(args)))  # fmt: skip
    async with open_runtime(settings) as rt:
        principal = await acting_as(rt, args.user)
        req = await checked_rag(rt.policy, principal, body, "none")  # as POST /api/rag checks it
        if args.json:
            start = time.perf_counter()
            answer = await rt.chat.answer(principal, req)
            print(rag_answer(answer, (time.perf_counter() - start) * 1000).model_dump_json(indent=2))
            return 0
        sources: list[dict[str, Any]] = []
        verification: dict[str, Any] | None = None
        async with aclosing(rt.chat.answer_stream(principal, req)) as events:
            async for event in events:
                if event.event == "token":
                    print(event.data["delta"], end="", flush=True)
                elif event.event == "retry":
                    print(f"\n({event.data['message']})\n", flush=True)
                elif event.event == "tool_result":
                    sources += event.data["chunks"]
                elif event.event == "done":
                    verification = event.data.get("verification")
    remote.print_sources(sources)
    remote.print_checks(verification)
    return 0


SCORE_KINDS = {
    "similarity": "cosine similarity (0-1)",
    "bm25 (normalised)": "BM25 relative to the best match (0-1)",
    "fused": "hybrid fusion of similarity and BM25 (0-1)",
    "rerank": "LLM rerank relevance (0-1)",
}


def print_results(api: dict[str, Any], as_json: bool) -> int:
    """GET /api/search's JSON, as it is (`--json`) or as a table."""
    if as_json:
        print(json.dumps(api, indent=2))
        return 0
    confidence = api["confidence"]
    said = confidence.get("text") or f"confidence {confidence['label']}"  # `text`: servers since the contract
    print(
        f"{len(api['chunks'])} results · {api['mode']}{' + reranked' if api['reranked'] else ''} · "
        f"{api['timing_ms']['total_ms']:.1f} ms · {said}"
    )
    for note in (confidence.get("message"), (api.get("rerank") or {}).get("warning")):
        if note and api["chunks"]:
            print(note)
    kinds = list(dict.fromkeys(hit.get("score_kind", "similarity") for hit in api["chunks"]))
    if kinds:
        print("score: " + ", then ".join(SCORE_KINDS.get(str(k), str(k)) for k in kinds))
    for rank, hit in enumerate(api["chunks"], 1):
        snippet = textwrap.shorten(hit["content"].replace("\n", " "), width=90, placeholder="…")
        page = f"p.{hit['page']}" if hit.get("page") else ""
        print(f"{rank:>3}  {hit['score']:5.3f}  {hit['filename'][:32]:<32} {page:<6} {snippet}")
        if hit.get("citation"):
            print(f"{'':>5}{hit['citation']}")
    if not api["chunks"]:
        print("no results" if api["has_embeddings"] else "no documents yet: run `ragchat ingest PATH`")
    for key, values in (api.get("facets") or {}).items():  # servers since the metadata facets
        print(f"{key}: " + ", ".join(f"{v['value']} ({v['count']})" for v in values[:8]))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("search", help="search your documents")
    s.add_argument("query", help="what to look for (a question or keywords)")
    s.add_argument("--mode", choices=["vector", "keyword", "hybrid"], help="default: SEARCH_MODE")
    s.add_argument("--top-k", type=int, default=10, help="how many chunks (default 10)")
    s.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None, help="LLM rerank the results")
    s.add_argument(
        "--filter",
        action="append",
        metavar="KEY=VALUE",
        help="document metadata filter, repeatable: values of one key are OR, keys are AND",
    )
    s.add_argument(
        "--document", action="append", metavar="ID", type=id_arg("document"), help="only this document (repeatable)"
    )
    s.add_argument("--json", action="store_true", help="print the same JSON as GET /api/search (or /api/rag)")
    s.add_argument("--rag", action="store_true", help="answer the query from the passages (streamed), with sources")
    add_options(s)
    remote.add_remote_options(s)
    add_user_option(s)
    s.set_defaults(func=run_async(search))
