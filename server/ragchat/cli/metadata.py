"""`ragchat metadata extract [--all | ID ...]`: run the LLM metadata extraction again, in this process."""

from __future__ import annotations

import argparse
import sys
from uuid import UUID

from ragchat.cli.common import acting_as, add_user_option, id_arg, open_runtime, run_async, where
from ragchat.core.errors import BadRequest
from ragchat.settings import Settings


async def extract(settings: Settings, args: argparse.Namespace) -> int:
    if bool(args.all) == bool(args.document_ids):
        raise BadRequest("name the documents (IDs) or pass --all (every document of yours)")
    ids = [UUID(i) for i in args.document_ids]  # checked by the parser (id_arg)
    print(f"ragchat: using {where(settings)}", file=sys.stderr)
    async with open_runtime(settings) as rt:
        principal = await acting_as(rt, args.user)
        queued: list[UUID] = []
        for document_id in ids or [None]:
            queued += await rt.documents.metadata.request_extraction(principal, document_id)
        done, failed = await rt.documents.metadata.extract_pending(queued)
        for document_id in queued:
            row = await rt.documents.catalog.get(principal, document_id)
            if row is None:
                continue
            status = row.get("metadata_status") or "not run"
            waiting = " (the document is not ready yet)" if row["status"] != "ready" else ""
            print(f"{status:<8} {row['title'][:60]}{waiting}  {row.get('metadata_error') or ''}".rstrip())
    print(f"{done} extracted, {failed} failed", file=sys.stderr)
    return 1 if failed else 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    m = sub.add_parser("metadata", help="document metadata: run the LLM extraction again")
    msub = m.add_subparsers(dest="metadata_command", required=True)
    e = msub.add_parser("extract", help="extract title, summary, topics, type, language and dates with the LLM")
    e.add_argument("document_ids", nargs="*", metavar="ID", type=id_arg("document"), help="these documents")
    e.add_argument("--all", action="store_true", help="every document of yours")
    add_user_option(e)
    e.set_defaults(func=run_async(extract))
