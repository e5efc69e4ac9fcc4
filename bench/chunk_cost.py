"""What each chunking strategy costs to ingest ordinary long notes: chunk + embed, in one run (issue 34).

Notes of 60-word sentences (about 14 KB each, no headings: the text `auto` once sent to semantic chunking)
are chunked by each strategy with the production `chunk_document` and the default embedder (EMBED_BACKEND),
and the chunks embedded as ingestion does. Strategies alternate note by note so load hits all of them alike.
Prints a table and writes JSON with the load average.

    .venv/bin/python bench/chunk_cost.py [--notes 100] [--json bench/results/chunk_cost.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from ragchat.documents.chunking.strategy import blocking_embed, chunk_document
from ragchat.documents.parsing.parsers import parse
from ragchat.providers.embeddings import build_embedder
from ragchat.settings import Settings

STRATEGIES = ("auto", "sentence", "semantic")
VOCAB = (
    "the of and to in a is that for on with as was by patients study results data cells protein levels risk "
    "analysis trial model during after before between increased reduced treatment effect clinical group"
).split()


def note(rng: random.Random, sentences: int = 42) -> bytes:
    body = " ".join(" ".join(rng.choice(VOCAB) for _ in range(60)).capitalize() + "." for _ in range(sentences))
    return body.encode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=100, help="notes per strategy")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "chunk_cost.json", help="output")
    args = ap.parse_args()
    settings = Settings()
    embedder = build_embedder(settings.embeddings, settings.llm)
    embed = blocking_embed(embedder, None)
    rng = random.Random(34)
    notes = [note(rng) for _ in range(args.notes)]
    seconds: dict[str, list[float]] = {s: [] for s in STRATEGIES}
    chunks: dict[str, int] = dict.fromkeys(STRATEGIES, 0)
    load_before = os.getloadavg()
    for i, data in enumerate(notes):
        sections = parse(data, f"note{i}.md").sections
        for strategy in STRATEGIES:
            started = time.perf_counter()
            result = chunk_document(
                sections,
                f"note{i}.md",
                embedder.count_tokens,
                embed,
                strategy=strategy,  # type: ignore[arg-type]
                max_tokens=settings.ingestion.chunk_tokens,
                overlap=settings.ingestion.chunk_overlap,
                max_chars=2000,
            )
            embedder.embed_sync([c.content for c in result.chunks])  # type: ignore[attr-defined]
            seconds[strategy].append(time.perf_counter() - started)
            chunks[strategy] += len(result.chunks)
    load_after = os.getloadavg()
    base = sum(seconds["sentence"])
    rows = []
    print(f"{args.notes} notes of {len(notes[0]) // 1000} KB; load {load_before} -> {load_after}")
    print("| strategy | total s | per note p50 s | p95 s | chunks | vs sentence |")
    print("|---|---:|---:|---:|---:|---:|")
    for s in STRATEGIES:
        xs = sorted(seconds[s])
        row = {
            "strategy": s,
            "total_s": round(sum(xs), 2),
            "p50_s": round(statistics.median(xs), 3),
            "p95_s": round(xs[int(0.95 * (len(xs) - 1))], 3),
            "chunks": chunks[s],
            "ratio": round(sum(xs) / base, 2),
        }
        rows.append(row)
        print(f"| {s} | {row['total_s']} | {row['p50_s']} | {row['p95_s']} | {row['chunks']} | {row['ratio']}x |")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"notes": args.notes, "load_before": load_before, "load_after": load_after, "rows": rows}, indent=2)
    )


if __name__ == "__main__":
    main()
