"""`ragchat reembed`: switch the embedding model without downtime (see server/ragchat/vectors/reembed.py)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ragchat.cli.common import open_runtime, print_json, run_async
from ragchat.settings import Settings

if TYPE_CHECKING:
    from ragchat.vectors.reembed import ReembedProgress


async def reembed(settings: Settings, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    async with open_runtime(settings) as rt:
        if args.cancel:
            print("cancelled the switch" if await rt.reembedder.cancel() else "no switch under way")
            return 0
        if args.status:
            status = await rt.spaces.status()
            progress = await rt.reembedder.progress()
            if args.json:
                print_json({**status, "progress": progress.to_json()})
                return 0
            stored = status["stored"]
            print(
                f"stored vectors: {stored['model']} ({stored['provider']}, {stored['dim']} dims)"
                if stored
                else "no vectors stored"
            )
            print(f"configured: {status['configured']['model']} ({status['configured']['provider']})")
            if progress.state == "building":
                print(f"building {progress.target}: {progress.done}/{progress.total} chunks")
            if status["message"]:
                print(status["message"])
            return 0
        provider = args.provider or rt.embedder.provider
        model = args.model or (rt.embedder.model_name if args.provider is None else None)
        if not model:
            print("ragchat: name the model with --model", file=sys.stderr)
            return 2
        progress = await rt.reembedder.progress()
        if progress.state != "building":
            space = await rt.reembedder.start(provider, model)
            if space.state == "active":
                print(f"nothing stored yet: new documents will use {space.label}")
                return 0
        bar = tqdm(unit="chunk", desc="re-embedding", disable=args.quiet)

        def report(p: ReembedProgress) -> None:
            bar.total = p.total
            bar.n = p.done
            bar.refresh()

        space = await rt.reembedder.run(report)
        bar.close()
    if space is not None:
        print(f"search now uses {space.label}; the old vectors are gone")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser(
        "reembed",
        help="switch the embedding model without downtime (resumes a switch that was interrupted)",
        description="Builds vectors with the new model beside the stored ones while search keeps answering, "
        "then switches atomically and drops the old ones. Run it again after an interruption to resume.",
    )
    r.add_argument("--provider", choices=["sentence-transformers", "ollama", "openai"], help="default: EMBED_PROVIDER")
    r.add_argument("--model", help="default: EMBED_MODEL")
    r.add_argument("--status", action="store_true", help="show which model the stored vectors use, and progress")
    r.add_argument("--json", action="store_true", help="with --status: print it as JSON")
    r.add_argument("--cancel", action="store_true", help="abandon a switch under way (the stored vectors stay)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=run_async(reembed))
