"""`ragchat ingest`, `ragchat worker` and `ragchat retry`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from ragchat.cli import remote, worker_health
from ragchat.cli.common import acting_as, add_user_option, format_duration, id_arg, open_runtime, run_async, where
from ragchat.core.errors import RagchatError
from ragchat.documents.catalog.shared import Asked
from ragchat.documents.metadata.fields import parse_meta_args
from ragchat.observability.logs import json_mode, say
from ragchat.settings import Settings

if TYPE_CHECKING:
    from ragchat.core.principal import Principal
    from ragchat.documents.api.service import DocumentService
    from ragchat.documents.catalog.shared import Registered
    from ragchat.documents.ingest.pipeline import Progress


async def ingest(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    meta = parse_meta_args(args.meta)  # a bad --meta fails before anything is read
    server = remote.server_url(args, settings.database.data_dir)
    if server:  # upload to a running server, as the token's user; it ingests in the background
        print(f"ragchat: using the server at {server}", file=sys.stderr)
        return remote.ingest(args, server)
    print(f"ragchat: using {where(settings)}", file=sys.stderr)
    async with open_runtime(settings) as rt:
        principal = await acting_as(rt, args.user)
        if args.collection:
            await rt.documents.catalog.check_collection_writable(principal, UUID(args.collection[0]))
        paths = [Path(p) for p in args.paths if not remote.is_url(p)]
        chunking = None
        if args.chunk or args.chunk_tokens:
            chunking = {"requested": args.chunk or settings.ingestion.chunk_strategy, "tokens": args.chunk_tokens}
        asked = Asked(chunking=chunking, metadata=meta or None)
        registered = await rt.documents.ingestion.register_paths(
            principal, paths, retry_failed=args.retry_failed, asked=asked
        )
        fetched = await register_urls(rt.documents, principal, [p for p in args.paths if remote.is_url(p)])
        await rt.documents.metadata.set_upload_metadata(principal, fetched, meta)
        if chunking:
            await rt.documents.ingestion.set_chunking(principal, fetched, chunking)
        registered += fetched
        if args.collection:
            for r in registered:
                if r.document_id:
                    await rt.documents.catalog.add_to_collection(principal, r.document_id, UUID(args.collection[0]))
        queued = [r for r in registered if r.status in ("queued", "requeued")]
        duplicates = [r for r in registered if r.status == "duplicate"]
        rejected = [r for r in registered if r.status == "rejected"]
        started = time.perf_counter()
        as_events = json_mode()  # LOG_FORMAT=json: progress events (at most one a second) instead of the bar
        bar = tqdm(total=len(queued), unit="doc", desc="ingesting", disable=not queued or args.quiet or as_events)
        said = [0.0]

        def report(p: Progress) -> None:  # after every embedded batch and every stored or failed document
            bar.n = p.documents_done + p.documents_failed
            elapsed = time.perf_counter() - started
            rate = (p.chunks_embedded + p.chunks_reused) / max(elapsed, 1e-9)
            eta = p.eta_s(len(queued), elapsed)
            if as_events and not args.quiet and (elapsed - said[0] >= 1 or bar.n >= len(queued)):
                said[0] = elapsed
                say(
                    f"ingesting: {bar.n}/{len(queued)} documents",
                    "progress",
                    documents_done=p.documents_done,
                    documents_failed=p.documents_failed,
                    documents_total=len(queued),
                    chunks_done=p.chunks_embedded + p.chunks_reused,
                    chunks_total=p.chunks_total,
                    chunks_per_s=round(rate, 2),
                    eta_s=None if eta is None else round(eta, 1),
                )
            bar.set_postfix_str(
                f"{p.chunks_embedded + p.chunks_reused}/{p.chunks_total} chunks, {rate:.1f}/s"
                + (f", ~{format_duration(eta)} left" if eta is not None else "")
                + (f", {p.documents_failed} failed" if p.documents_failed else "")
            )
            bar.refresh()

        progress = await rt.documents.ingestion.ingest([r.document_id for r in queued if r.document_id], report)
        bar.close()
        elapsed = time.perf_counter() - started
    say(
        f"ingested {progress.documents_done} documents ({progress.chunks_done} chunks, "
        f"{progress.chunks_reused} embeddings reused) in {elapsed:.1f}s",
        "ingested",
        documents_done=progress.documents_done,
        chunks_done=progress.chunks_done,
        chunks_reused=progress.chunks_reused,
        seconds=round(elapsed, 1),
    )
    if duplicates:
        earlier_failures = sum(1 for d in duplicates if d.error and d.error.startswith("failed"))
        print(f"skipped {len(duplicates)} already ingested (same content)", end="")
        print(f", {earlier_failures} of them had failed (use --retry-failed)" if earlier_failures else "")
    if not queued and not rejected:
        print("nothing new to ingest")
    failures = [(r.filename, r.error or "") for r in rejected] + progress.failures
    for name, reason in failures:
        print(f"failed: {reason if reason.startswith(name) else f'{name}: {reason}'}", file=sys.stderr)
    if failures:
        print(f"{len(failures)} failed", file=sys.stderr)
    return 1 if failures else 0  # any file that failed makes the command fail (scripts can tell)


async def register_urls(documents: DocumentService, principal: Principal, urls: list[str]) -> list[Registered]:
    """Fetch and queue each URL (web page or document file); a URL that cannot be fetched comes back rejected."""
    from ragchat.documents.catalog.shared import Registered  # with the runtime, not at every command's start

    out: list[Registered] = []
    for url in urls:
        try:
            out += await documents.ingestion.register_url(principal, url)
        except RagchatError as exc:
            out.append(Registered(url, "rejected", error=f"{url}: {exc.message}", code=exc.code))
    return out


async def worker(settings: Settings, args: argparse.Namespace) -> int:
    heartbeat = Path(args.heartbeat_file) if args.heartbeat_file else worker_health.default_file()
    if args.check:  # a container's health check: a live worker's database round trip within STALE_S
        healthy, why = worker_health.check(heartbeat)
        print(f"ragchat worker: {why}", file=sys.stdout if healthy else sys.stderr)
        return 0 if healthy else 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    from ragchat.system_routes import metrics_port

    logging.getLogger("ragchat.documents").setLevel(logging.INFO)  # a line per stored document, for operators
    async with open_runtime(settings) as rt, metrics_port(rt) as listener:
        where_metrics = f"; metrics on port {listener.port}" if listener else ""
        say(f"ragchat worker: waiting for queued documents (Ctrl+C to stop){where_metrics}", "ready")
        beats = asyncio.create_task(worker_health.beat(rt.pool, heartbeat, stop), name="worker-heartbeat")
        try:
            await rt.documents.ingestion.run_worker(stop, poll_s=args.poll)
        finally:
            stop.set()
            await beats
    return 0


async def retry(settings: Settings, args: argparse.Namespace) -> int:
    """Queue failed (or stuck) documents again: through a running server when there is one, else locally."""
    if not args.all_failed and not args.document_ids:
        print("ragchat retry: name documents (DOC_ID ...) or pass --all-failed", file=sys.stderr)
        return 2
    ids = [UUID(i) for i in args.document_ids]
    server = remote.server_url(args, settings.database.data_dir)
    if server:
        print(f"ragchat: using the server at {server}", file=sys.stderr)
        return retry_remote(args, server, ids)
    print(f"ragchat: using {where(settings)}", file=sys.stderr)
    failed = 0
    async with open_runtime(settings) as rt:
        principal = await acting_as(rt, args.user)
        if args.all_failed:
            ids += await rt.documents.ingestion.retry_all_failed(principal)
            print(f"queued again {len(ids)} failed documents")
            ids = []
        for doc_id in ids:
            try:
                row = await rt.documents.ingestion.retry(principal, doc_id)
                print(f"queued     {doc_id}  {row['filename']}")
            except RagchatError as exc:
                failed += 1
                print(f"ragchat: {exc.message}", file=sys.stderr)
    print("a running server or `ragchat worker` ingests them", file=sys.stderr)
    return 1 if failed else 0


def retry_remote(args: argparse.Namespace, server: str, ids: list[UUID]) -> int:
    """`ragchat retry` through the server's API (POST /api/documents/{id}/retry), as the token's user."""
    failed = 0
    with remote.client(server, remote.token_for(args, server, required=False)) as http:
        if args.all_failed:
            offset = 0
            while True:  # the list comes a page (at most 200) at a time
                params = {"status": "failed", "limit": 200, "offset": offset}
                page = remote.check(http.get("/api/documents", params=params))
                ids += [UUID(d["id"]) for d in page["documents"] if d["access"] == "owner"]
                offset += 200
                if offset >= page.get("total", 0):
                    break
        for doc_id in ids:
            response = http.post(f"/api/documents/{doc_id}/retry")
            if response.is_success:
                print(f"queued     {doc_id}  {response.json()['filename']}")
                continue
            failed += 1
            try:
                remote.check(response)
            except RagchatError as exc:
                print(f"ragchat: {exc.message}", file=sys.stderr)
    print(f"the server at {server} ingests them in the background", file=sys.stderr)
    return 1 if failed else 0


def _chunk_tokens(value: str) -> int:
    n = int(value)
    if not 16 <= n <= 256:
        raise argparse.ArgumentTypeError("must be between 16 and 256")
    return n


def add_commands(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser("worker", help="process queued documents (run as many as you like)")
    w.add_argument("--poll", type=float, default=2.0, help="seconds between queue polls")
    w.add_argument("--check", action="store_true", help="health check: is a worker here alive (exit 0) or not (1)")
    w.add_argument("--heartbeat-file", metavar="PATH", help="where the worker notes it is alive (default: in /tmp)")
    w.set_defaults(func=run_async(worker))

    ing = sub.add_parser("ingest", help="ingest files, folders (recursively) and web pages (http:// or https://)")
    ing.add_argument("paths", nargs="+", help="files, folders or URLs")
    ing.add_argument("--quiet", action="store_true", help="no progress bar")
    ing.add_argument("--retry-failed", action="store_true", help="queue again files that failed before")
    ing.add_argument(
        "--meta",
        action="append",
        metavar="KEY=VALUE",
        help="metadata on every new document, repeatable (a key given twice is a list): --meta subject=Polity",
    )
    ing.add_argument(
        "--chunk",
        choices=("auto", "line", "sentence", "semantic"),
        help="chunking strategy for these files (default: CHUNK_STRATEGY)",
    )
    ing.add_argument(
        "--chunk-tokens", type=_chunk_tokens, metavar="N", help="word pieces per chunk, 16-256 (default: CHUNK_TOKENS)"
    )
    remote.add_remote_options(ing)
    add_user_option(ing)
    ing.set_defaults(func=run_async(ingest))

    rt = sub.add_parser("retry", help="queue failed (or stuck) documents again, attempts reset")
    rt.add_argument("document_ids", nargs="*", metavar="DOC_ID", type=id_arg("document"), help="documents to retry")
    rt.add_argument("--all-failed", action="store_true", help="every failed document of yours")
    rt.add_argument("--server", metavar="URL", help="retry through this running server (default: RAGCHAT_SERVER)")
    rt.add_argument("--token", help="personal API token (default: RAGCHAT_TOKEN, else `ragchat login`'s)")
    rt.add_argument("--local", action="store_true", help="work on the database directly, even if a server runs")
    add_user_option(rt)
    rt.set_defaults(func=run_async(retry))
