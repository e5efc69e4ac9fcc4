"""The citation verifier on a labelled set made from both dev corpora: precision and recall per label.

Each example is one answer sentence and the passage it is checked against (an abstract of SciFact-dev or
NFCorpus-dev, sampled with a fixed seed), labelled by how it was made:

- supported:   a sentence of the passage, cited [1];
- partly:      a sentence of the passage with a clause of another abstract's sentence appended, cited [1];
- unsupported: a sentence of another abstract cited [1], or a sentence of the passage with one of its figures
               changed (the "465,500 EUR" case), cited [1];
- uncited:     a sentence of the passage with no marker (a claim without a source);
- not a claim: a question or a list's lead-in with no marker (must get no check).

The verifier's verdict maps to labels as: supported -> supported, weak -> partly, unsupported -> unsupported,
no_source -> uncited, no check -> not a claim. Prints a table and writes JSON (with the load average).

    .venv/bin/python bench/verifier.py [--per-label 12] [--json bench/results/verifier.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
from pathlib import Path
from typing import Any

from ragchat.chat.engine.citations import check_citations
from ragchat.providers.embeddings import build_embedder
from ragchat.settings import Settings

DATA = Path(os.environ.get("RAGCHAT_BENCH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
SETS = ("scifact-dev", "nfcorpus-dev")
LABELS = ("supported", "partly", "unsupported", "uncited", "not a claim")
VERDICT_LABEL = {"supported": "supported", "weak": "partly", "unsupported": "unsupported", "no_source": "uncited"}
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_FIGURE = re.compile(r"\b\d+(?:\.\d+)?\b")
NON_CLAIMS = (
    "Which of these results matter most for your question?",
    "Here is what the passages say:",
    "Do you want me to look for more studies?",
    "The key findings are:",
    "Is there a specific outcome you are interested in?",
    "The documents do not mention the cost of the treatment.",
)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SPLIT.split(text) if 60 <= len(s.strip()) <= 300]


def load(name: str) -> list[dict[str, Any]]:
    with (DATA / name / "corpus.jsonl").open() as f:
        return [json.loads(line) for line in f]


def examples(rng: random.Random, docs: list[dict[str, Any]], per_label: int) -> list[tuple[str, str, str]]:
    """(label, answer text, passage) triples."""
    usable = [d for d in docs if len(sentences(d["text"])) >= 3]
    out: list[tuple[str, str, str]] = []

    def pick() -> tuple[str, list[str]]:
        d = rng.choice(usable)
        return d["text"], sentences(d["text"])

    for _ in range(per_label):
        passage, own = pick()
        out.append(("supported", rng.choice(own).rstrip(".") + " [1].", passage))
        passage, own = pick()
        _, other = pick()
        words = rng.choice(other).rstrip(".").split()
        half = rng.choice(own).rstrip(".").split()
        # half of a passage sentence joined to half of another abstract's: related, but not what it says
        mixed = " ".join(half[: max(4, len(half) // 2)] + words[len(words) // 2 :])
        out.append(("partly", mixed + " [1].", passage))
        passage, _ = pick()
        _, other = pick()
        out.append(("unsupported", rng.choice(other).rstrip(".") + " [1].", passage))
        passage, own = pick()
        with_figures = [s for s in own if _FIGURE.search(s)]
        if with_figures:
            s = rng.choice(with_figures)
            m = _FIGURE.search(s)
            assert m
            changed = s[: m.start()] + str(int(float(m.group())) * 3 + 7) + s[m.end() :]
            out.append(("unsupported", changed.rstrip(".") + " [1].", passage))
        passage, own = pick()
        out.append(("uncited", rng.choice(own), passage))
        passage, _ = pick()
        out.append(("not a claim", rng.choice(NON_CLAIMS), passage))
    return out


async def run(per_label: int) -> dict[str, Any]:
    settings = Settings()
    embedder = build_embedder(settings.embeddings, settings.llm)
    rng = random.Random(35)
    rows: list[dict[str, Any]] = []
    for name in SETS:
        for label, answer, passage in examples(rng, load(name), per_label):
            report = await check_citations(answer, [passage], embedder)
            got = VERDICT_LABEL.get(report.citations[0].verdict, "?") if report.citations else "not a claim"
            rows.append({"set": name, "label": label, "predicted": got, "answer": answer[:200]})
    table = []
    for label in LABELS:
        tp = sum(1 for r in rows if r["label"] == label and r["predicted"] == label)
        predicted = sum(1 for r in rows if r["predicted"] == label)
        actual = sum(1 for r in rows if r["label"] == label)
        table.append(
            {
                "label": label,
                "n": actual,
                "precision": round(tp / predicted, 3) if predicted else None,
                "recall": round(tp / actual, 3) if actual else None,
            }
        )
    return {"examples": len(rows), "table": table, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-label", type=int, default=12, help="examples per label and set (unsupported: up to 2x)")
    ap.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "verifier.json", help="output")
    args = ap.parse_args()
    load_before = os.getloadavg()
    result = asyncio.run(run(args.per_label))
    result["load"] = [load_before, os.getloadavg()]
    print(f"{result['examples']} labelled sentences from {', '.join(SETS)}; load {result['load']}")
    print("| label | n | precision | recall |")
    print("|---|---:|---:|---:|")
    for row in result["table"]:
        print(f"| {row['label']} | {row['n']} | {row['precision']} | {row['recall']} |")
    confusion: dict[str, dict[str, int]] = {}
    for r in result["rows"]:
        confusion.setdefault(r["label"], {}).setdefault(r["predicted"], 0)
        confusion[r["label"]][r["predicted"]] += 1
    print("confusion (label -> predicted):", json.dumps(confusion))
    result["confusion"] = confusion
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
