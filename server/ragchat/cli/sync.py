"""`ragchat sync DIR`: mirror a folder into your library, once or `--watch`ing it (server/ragchat/documents/sync/)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from ragchat.cli.common import acting_as, open_runtime, run_async, where
from ragchat.settings import Settings

if TYPE_CHECKING:
    from ragchat.documents.ingest.pipeline import Progress
    from ragchat.documents.sync.service import SyncReport

SHOWN = 20  # lines per kind of change, unless --verbose


async def sync(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ragchat.documents.sync.service import FolderSync
    from ragchat.documents.sync.watch import run_until_stopped, watch

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"ragchat: using {where(settings)}", file=sys.stderr)
    async with open_runtime(settings) as rt:
        principal = await acting_as(rt, args.user)

        async def ingest(ids: Sequence[UUID]) -> Progress:
            started = time.perf_counter()
            bar = tqdm(total=len(ids), unit="doc", desc="ingesting", disable=args.quiet)

            def report(p: Progress) -> None:
                bar.n = p.documents_done + p.documents_failed
                rate = p.chunks_done / max(time.perf_counter() - started, 1e-9)
                bar.set_postfix(chunks=p.chunks_done, chunks_per_s=f"{rate:.1f}", failed=p.documents_failed)
                bar.refresh()

            try:
                return await rt.documents.ingestion.ingest(ids, report)
            finally:
                bar.close()

        syncer = FolderSync(
            rt.pool,
            settings.ingestion,
            principal.user_id,
            Path(args.dir),
            ingest,
            dry_run=args.dry_run,
            allow_empty=args.allow_empty,
        )
        async with syncer.locked():
            if not args.watch:
                report = await run_until_stopped(syncer, stop)
                show(report, verbose=args.verbose)
                if report.stopped:
                    return 130
                return 1 if report.failed else 0
            first = True

            def on_report(report: SyncReport) -> None:
                nonlocal first
                if first or report.changed or report.stopped:
                    show(report, verbose=args.verbose, quiet_when_unchanged=not first)
                if first and not report.stopped:
                    print(f"watching {report.root} for changes (Ctrl+C to stop)", flush=True)
                first = False

            def on_note(message: str) -> None:
                print(f"ragchat sync: {message}", file=sys.stderr, flush=True)

            await watch(syncer, stop, interval_s=args.interval, on_report=on_report, on_note=on_note)
    print("stopped", flush=True)
    return 0


def show(report: SyncReport, *, verbose: bool = False, quiet_when_unchanged: bool = False) -> None:
    """The summary: counts, then the files of each kind (SHOWN of each unless `verbose`), failures on stderr."""
    counts = (
        f"{len(report.added)} added, {len(report.updated)} updated, {len(report.renamed)} renamed, "
        f"{len(report.removed)} removed, {len(report.skipped)} skipped, {len(report.failed)} failed "
        f"({report.unchanged} unchanged)"
    )
    stamp = time.strftime("%H:%M:%S")
    if report.dry_run:
        print(f"dry run of {report.root}: would be {counts}; nothing was changed")
    elif report.stopped:
        print(f"[{stamp}] stopped before the sync of {report.root} finished; so far {counts}")
    elif report.changed:
        print(f"[{stamp}] synced {report.root} in {report.seconds:.1f}s: {counts}")
    elif not quiet_when_unchanged:
        print(
            f"[{stamp}] nothing changed in {report.root}: {report.unchanged} files up to date, nothing to do "
            f"({report.seconds:.1f}s)"
        )
    limit = None if verbose else SHOWN
    _lines("added", report.added, limit)
    _lines("updated", report.updated, limit)
    _lines("renamed", [f"{a} -> {b}" for a, b in report.renamed], limit)
    _lines("removed", report.removed, limit)
    _lines("skipped", [f"{rel}: {why}" for rel, why in report.skipped], limit)
    _lines("failed", [f"{rel}: {why}" for rel, why in report.failed], None, err=True)
    if report.resumed:
        print(f"took up {report.resumed} documents an earlier, interrupted sync had left queued")
    if report.chunks_embedded or report.chunks_reused:
        print(f"embedded {report.chunks_embedded} chunks ({report.chunks_reused} embeddings reused)")
    if report.pending:
        print(f"{report.pending} documents are still being ingested by another worker (a running server?)")
    if report.failed_before:
        print(
            f"{report.failed_before} unchanged files failed in an earlier run; change them, or queue them again "
            "with `ragchat retry --all-failed`:",
            file=sys.stderr,
        )
        _lines("failed", [f"{rel}: {why}" for rel, why in report.failed_before_examples], None, err=True)
    sys.stdout.flush()


def _lines(kind: str, items: list[str], limit: int | None, *, err: bool = False) -> None:
    out = sys.stderr if err else sys.stdout
    for item in items[:limit]:
        print(f"  {kind:<8} {item}", file=out)
    if limit is not None and len(items) > limit:
        print(f"  {kind:<8} ... and {len(items) - limit} more (--verbose lists them all)", file=out)


def add_commands(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "sync",
        help="mirror a folder into your library: new, changed, renamed and deleted files (--watch keeps at it)",
    )
    s.add_argument("dir", metavar="DIR", help="the folder")
    s.add_argument("--watch", action="store_true", help="keep running: sync again whenever the folder changes")
    s.add_argument(
        "--interval",
        type=float,
        default=60.0,
        metavar="S",
        help="with --watch: also sync every S seconds (all there is where changes cannot be watched)",
    )
    s.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    s.add_argument(
        "--allow-empty", action="store_true", help="remove every synced document when the folder turned up empty"
    )
    s.add_argument("--verbose", "-v", action="store_true", help="list every file of each kind")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument(
        "--user",
        "--owner",
        dest="user",
        metavar="NAME",
        help="sync into this user's library (default: the first admin)",
    )
    s.set_defaults(func=run_async(sync))
