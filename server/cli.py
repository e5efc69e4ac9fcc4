"""The `ragchat` command: serve, worker, ingest, search, eval, reindex."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from psycopg_pool import AsyncConnectionPool
from pydantic import ValidationError

from server.settings import Settings

log = logging.getLogger("ragchat")


@dataclass
class Runtime:
    settings: Settings
    pool: AsyncConnectionPool
    embedder: Any


@asynccontextmanager
async def open_runtime(settings: Settings, *, with_embedder: bool = True) -> AsyncIterator[Runtime]:
    """Database (embedded unless DATABASE_URL is set) with migrations applied, a pool, and the embedder."""
    from server.app import build_embedder
    from server.db.pool import open_pool, prepare_database

    database = await asyncio.to_thread(prepare_database, settings)
    try:
        async with open_pool(database.uri, settings) as pool:
            embedder = await asyncio.to_thread(build_embedder, settings) if with_embedder else None
            yield Runtime(settings, pool, embedder)
    finally:
        await asyncio.to_thread(database.close)


# ------------------------------------------------------------------------------------------------ commands


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from server.app import create_app

    host = args.host or settings.host
    port = args.port or settings.port
    print(f"ragchat: serving on http://{host}:{port}", flush=True)
    uvicorn.run(create_app(settings), host=host, port=port, log_level=settings.log_level, timeout_graceful_shutdown=5)
    return 0


async def _ingest(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from server.documents.ingest import IngestionPipeline, Progress, register_paths
    from server.settings import LOCAL_OWNER_ID

    async with open_runtime(settings) as rt:
        registered = await register_paths(
            rt.pool, LOCAL_OWNER_ID, [Path(p) for p in args.paths], settings, retry_failed=args.retry_failed
        )
        queued = [r for r in registered if r.status in ("queued", "requeued")]
        duplicates = [r for r in registered if r.status == "duplicate"]
        rejected = [r for r in registered if r.status == "rejected"]
        started = time.perf_counter()
        bar = tqdm(total=len(queued), unit="doc", desc="ingesting", disable=not queued or args.quiet)

        def report(p: Progress) -> None:
            bar.n = p.documents_done + p.documents_failed
            rate = p.chunks_done / max(time.perf_counter() - started, 1e-9)
            bar.set_postfix(chunks=p.chunks_done, chunks_per_s=f"{rate:.1f}", failed=p.documents_failed)
            bar.refresh()

        progress = await IngestionPipeline(rt.pool, rt.embedder, settings, on_progress=report).run(
            [r.document_id for r in queued if r.document_id]
        )
        bar.close()
        elapsed = time.perf_counter() - started
    print(
        f"ingested {progress.documents_done} documents ({progress.chunks_done} chunks, "
        f"{progress.chunks_reused} embeddings reused) in {elapsed:.1f}s"
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
    return 1 if failures and not progress.documents_done and not duplicates else 0


async def _worker(settings: Settings, args: argparse.Namespace) -> int:
    from server.documents.ingest import run_worker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with open_runtime(settings) as rt:
        print("ragchat worker: waiting for queued documents (Ctrl+C to stop)", flush=True)
        await run_worker(rt.pool, rt.embedder, settings, stop, poll_s=args.poll)
    return 0


def _async(fn: Callable[[Settings, argparse.Namespace], Any]) -> Callable[[Settings, argparse.Namespace], int]:
    def run(settings: Settings, args: argparse.Namespace) -> int:
        return asyncio.run(fn(settings, args))

    return run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragchat", description="Chat with your documents.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="process queued documents (run as many as you like)")
    worker.add_argument("--poll", type=float, default=2.0, help="seconds between queue polls")
    worker.set_defaults(func=_async(_worker))

    ingest = sub.add_parser("ingest", help="ingest files and folders (recursively)")
    ingest.add_argument("paths", nargs="+")
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument("--retry-failed", action="store_true", help="queue again files that failed before")
    ingest.set_defaults(func=_async(_ingest))

    from server.retrieval.cli import add_search_commands

    add_search_commands(sub, _async)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValidationError as exc:
        print(f"ragchat: configuration error:\n{exc}", file=sys.stderr)
        return 2
    if args.command in ("serve", "worker"):
        logging.getLogger("server").setLevel(settings.log_level.upper())
    from server.errors import RagchatError

    try:
        return int(args.func(settings, args) or 0)
    except RagchatError as exc:
        print(f"ragchat: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
