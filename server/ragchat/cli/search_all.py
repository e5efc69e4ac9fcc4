"""`ragchat search --all`: every document that matches (GET /api/search/documents), every page, as a table."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Any

from ragchat.cli import remote
from ragchat.cli.common import acting_as, open_runtime
from ragchat.core.matches import MatchRequest
from ragchat.core.search import SearchFilters
from ragchat.retrieval.filters import parse_metadata_filters
from ragchat.settings import Settings

MAX_PAGES = 1000  # 200,000 documents at the largest page size: the scan's bound stops far earlier


def _params(args: argparse.Namespace, cursor: str | None) -> list[tuple[str, Any]]:
    params: list[tuple[str, Any]] = [("q", args.query), ("match", args.match), ("page_size", args.page_size)]
    if args.limit is not None:
        params.append(("limit", args.limit))
    if cursor:
        params.append(("cursor", cursor))
    params += [("document_ids", d) for d in args.document or []]
    params += [("collection_ids", c) for c in getattr(args, "collection", None) or []]
    params += [("filter", f) for f in args.filter or []]
    return params


async def search_all(settings: Settings, args: argparse.Namespace, server: str | None) -> int:
    """Every page, from the server when one runs (as the token's user), else from the database directly."""
    pages: list[dict[str, Any]] = []
    cursor = args.cursor
    if server:
        for _ in range(MAX_PAGES):
            pages.append(remote.get_json(args, server, "/api/search/documents", _params(args, cursor)))
            cursor = pages[-1]["next_cursor"]
            if not cursor or args.one_page:
                break
        return print_documents(pages, args.json)
    filters = SearchFilters(
        document_ids=args.document or None,
        collection_ids=getattr(args, "collection", None) or None,
        metadata=parse_metadata_filters(args.filter),
    )
    async with open_runtime(settings) as rt:
        principal = await acting_as(rt, args.user)
        for _ in range(MAX_PAGES):
            request = MatchRequest(
                query=args.query,
                match=args.match,
                page_size=args.page_size,
                cursor=cursor,
                limit=args.limit,
                filters=filters if filters.active else None,
            )
            found = await rt.searcher.find_documents(request, principal=principal)
            pages.append(found.model_dump(mode="json"))
            cursor = found.next_cursor
            if not cursor or args.one_page:
                break
    return print_documents(pages, args.json)


def print_documents(pages: list[dict[str, Any]], as_json: bool) -> int:
    """The pages as one JSON object (the last page's fields, every page's documents), or as a table."""
    last = pages[-1]
    documents = [d for page in pages for d in page["documents"]]
    if as_json:
        print(json.dumps({**last, "documents": documents, "pages": len(pages)}, indent=2))
        return 0
    done = "every matching document" if last["complete"] else "stopped early"
    print(
        f"{last['total_documents']} documents · {last['total_passages']} matching passages · {done} · "
        f"query {last['tsquery'] or '(nothing searchable)'}"
    )
    for rank, doc in enumerate(documents, 1):
        best = doc["best"]
        snippet = textwrap.shorten(best["content"].replace("\n", " "), width=70, placeholder="…")
        page = f"p.{best['page']}" if best.get("page") else ""
        print(f"{rank:>4}  {doc['matches']:>5}×  {doc['filename'][:32]:<32} {page:<6} {snippet}")
    if last.get("note"):
        print(last["note"], file=sys.stderr if documents else sys.stdout)
    if last["next_cursor"]:
        print(f"more: --cursor {last['next_cursor']}")
    return 0


def add_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--all", action="store_true", help="every document that matches (full-text), with counts and the best passage"
    )
    s.add_argument("--match", choices=["all", "any"], default="all", help="--all: every word (default) or any word")
    s.add_argument("--limit", type=int, help="--all: matching passages to scan at most (default SEARCH_ALL_LIMIT)")
    s.add_argument("--page-size", type=int, default=100, help="--all: documents per request (default 100)")
    s.add_argument("--cursor", help="--all: start after this page (next_cursor of an earlier answer)")
    s.add_argument("--one-page", action="store_true", help="--all: only one page (then print its cursor)")
