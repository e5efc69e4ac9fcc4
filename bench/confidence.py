"""Best-hit cosine similarity for answerable versus unanswerable questions: where the confidence tiers go.

    .venv/bin/python bench/confidence.py [--answerable 200] [--held-out 100] [--distractors 1500]

The configured embedding model (all-MiniLM-L6-v2 by default) embeds a slice of the SciFact dev corpus, cut
into ~120-word chunks with the title in front (as `embedding_text` does), and the queries:

* answerable: SciFact claims whose relevant abstracts are in the slice;
* held out: other claims whose relevant abstracts were left out (same topic, the answer is missing);
* off topic: everyday questions a science corpus cannot answer.

For each query the best chunk's cosine similarity is what `Confidence` sees (server/ragchat/core/search.py). The
table prints percentiles of that figure per group and, for candidate thresholds, the share of each group
at or above it. No database: the similarity is the same dot product pgvector computes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.common import DATA, load_embedder  # noqa: E402
from ragchat.settings import Settings  # noqa: E402
from ragchat.vectors.store import embedding_text  # noqa: E402

OFF_TOPIC = [
    "What is the warranty period of my dishwasher?",
    "How do I reset my router password?",
    "Who won the football world cup in 2014?",
    "What time does the train to Lyon leave?",
    "How many vacation days do employees get per year?",
    "What is the capital of Australia?",
    "How do I bake sourdough bread?",
    "What is the refund policy for online orders?",
    "How do I change a flat tyre on a bicycle?",
    "Which programming language should I learn first?",
    "What does clause 7 of the lease say about pets?",
    "How much does the premium subscription cost?",
    "When is the quarterly sales meeting?",
    "How do I configure SSH keys on GitHub?",
    "What is the plot of the novel Moby Dick?",
    "Where can I park near the office?",
    "How do I file my taxes as a freelancer?",
    "What is the best way to learn the guitar?",
    "What are the opening hours of the library?",
    "How do I export a spreadsheet to PDF?",
    "Who is the author of the employee handbook?",
    "How long is the notice period in my contract?",
    "What is the recipe for tomato soup?",
    "Which hotels are close to the airport?",
    "How do I install a ceiling fan?",
    "What is the exchange rate from euros to dollars?",
    "How do I cancel my gym membership?",
    "What are the rules of chess castling?",
    "How can I improve my credit score?",
    "What is the dress code for the wedding?",
    "How often should I water a cactus?",
    "What is the maximum upload size for attachments?",
    "How do I migrate a WordPress site?",
    "What are the symptoms of a failing car battery?",
    "Which laptop has the longest battery life?",
    "How do I write a cover letter?",
    "When was the Eiffel Tower built?",
    "What is the speed limit on German motorways?",
    "How do I remove a red wine stain?",
    "What are the terms of the non-compete agreement?",
    "How do I set up a Kubernetes cluster?",
    "What is the difference between a latte and a cappuccino?",
    "Who is responsible for approving travel expenses?",
    "How many players are on a rugby team?",
    "What is the password policy for company accounts?",
    "How do I knit a scarf?",
    "What is the shipping time to Canada?",
    "Which movie won best picture last year?",
    "How do I repot an orchid?",
    "What does the invoice say about late payment fees?",
]

THRESHOLDS = (0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65)


def chunks(title: str, text: str, words: int = 120) -> list[str]:
    tokens = text.split()
    return [embedding_text(title, " ".join(tokens[i : i + words])) for i in range(0, max(1, len(tokens)), words)]


def load(n_answerable: int, n_held_out: int, n_distractors: int, seed: int) -> tuple[list[str], dict[str, list[str]]]:
    corpus = {}
    for line in (DATA / "corpus.jsonl").read_text().splitlines():
        doc = json.loads(line)
        corpus[doc["_id"]] = doc
    queries = {}
    for line in (DATA / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        queries[q["_id"]] = q["text"]
    relevant: dict[str, set[str]] = {}
    for line in (DATA / "qrels" / "train.tsv").read_text().splitlines()[1:]:
        qid, cid, _ = line.split("\t")
        if qid in queries and cid in corpus:
            relevant.setdefault(qid, set()).add(cid)
    rng = random.Random(seed)
    qids = sorted(relevant, key=int)
    rng.shuffle(qids)
    answerable, held_out = qids[:n_answerable], qids[n_answerable : n_answerable + n_held_out]
    excluded = set().union(*(relevant[q] for q in held_out))
    included = set().union(*(relevant[q] for q in answerable)) - excluded
    others = [c for c in sorted(corpus) if c not in included and c not in excluded]
    docs = sorted(included) + rng.sample(others, min(n_distractors, len(others)))
    texts = [t for cid in docs for t in chunks(corpus[cid].get("title", ""), corpus[cid]["text"])]
    groups = {
        "answerable": [queries[q] for q in answerable],
        "held out": [queries[q] for q in held_out],
        "off topic": OFF_TOPIC,
    }
    return texts, groups


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answerable", type=int, default=200)
    parser.add_argument("--held-out", type=int, default=100)
    parser.add_argument("--distractors", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=19)
    args = parser.parse_args()
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    texts, groups = load(args.answerable, args.held_out, args.distractors, args.seed)
    embedder = load_embedder(settings)
    try:
        docs = np.concatenate([await embedder.embed_documents(texts[i : i + 256]) for i in range(0, len(texts), 256)])
        best = {name: (await embedder.embed_queries(qs) @ docs.T).max(axis=1) for name, qs in groups.items() if qs}
    finally:
        await embedder.close()
    print(f"model {settings.embeddings.embed_model}: {len(texts)} chunks, best-hit cosine similarity per query\n")
    print("| group | n | p10 | p25 | median | p75 | p90 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, sims in best.items():
        p = np.percentile(sims, [10, 25, 50, 75, 90])
        print(f"| {name} | {len(sims)} | " + " | ".join(f"{v:.3f}" for v in p) + " |")
    print("\nshare of each group whose best hit is at or above the threshold\n")
    print("| threshold | " + " | ".join(best) + " |")
    print("|---:|" + "---:|" * len(best))
    for t in THRESHOLDS:
        print(f"| {t:.2f} | " + " | ".join(f"{(sims >= t).mean():.0%}" for sims in best.values()) + " |")


if __name__ == "__main__":
    asyncio.run(main())
