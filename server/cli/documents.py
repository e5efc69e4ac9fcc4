"""`ragchat ingest` and `ragchat worker`."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from server.cli import remote
from server.cli.common import acting_as, add_user_option, open_runtime, run_async, where
from server.settings import Settings

if TYPE_CHECKING:
    from server.documents.pipeline import Progress


async def ingest(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    server = remote.server_url(args, settings.data_dir)
    if server:  # upload to a running server, as the token's user; it ingests in the background
        print(f"ragchat: using the server at {server}", file=sys.stderr)
        return remote.ingest(args, server)
    print(f"ragchat: using {where(settings)}", file=sys.stderr)
    async with open_runtime(settings) as rt:
        principal = await acting_as(rt, args.user)
        if args.collection:
            await rt.documents.check_collection_writable(principal, UUID(args.collection[0]))
        registered = await rt.documents.register_paths(
            principal, [Path(p) for p in args.paths], retry_failed=args.retry_failed
        )
        if args.collection:
            for r in registered:
                if r.document_id:
                    await rt.documents.add_to_collection(principal, r.document_id, UUID(args.collection[0]))
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

        progress = await rt.documents.ingest([r.document_id for r in queued if r.document_id], report)
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
    return 1 if failures else 0  # any file that failed makes the command fail (scripts can tell)


async def worker(settings: Settings, args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with open_runtime(settings) as rt:
        print("ragchat worker: waiting for queued documents (Ctrl+C to stop)", flush=True)
        await rt.documents.run_worker(stop, poll_s=args.poll)
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser("worker", help="process queued documents (run as many as you like)")
    w.add_argument("--poll", type=float, default=2.0, help="seconds between queue polls")
    w.set_defaults(func=run_async(worker))

    ing = sub.add_parser("ingest", help="ingest files and folders (recursively)")
    ing.add_argument("paths", nargs="+", help="files or folders")
    ing.add_argument("--quiet", action="store_true", help="no progress bar")
    ing.add_argument("--retry-failed", action="store_true", help="queue again files that failed before")
    remote.add_remote_options(ing)
    add_user_option(ing)
    ing.set_defaults(func=run_async(ingest))
