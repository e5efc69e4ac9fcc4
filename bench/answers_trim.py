"""What cutting passages to the sentences around the hit (CHAT_PASSAGE_SENTENCES) keeps and saves, measured offline
on the passages bench/answers.py's `ragchat` arm received (issue 41, item 4).

For each answerable question whose retrieved passages hold a gold answer span, is the span still in the passages
once each is cut to N sentences around its best match with the question (`chat.engine.prompts.trim_passage`, the
code the model's prompt is built with)? And how many characters of passage text does the prompt carry? No model is
asked: what the cut costs in answers is measured by running bench/answers.py with the setting.

    PYTHONPATH=server .venv/bin/python bench/answers_trim.py [--log bench/results/answers.jsonl] [--sizes 0,2,3,4,5]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import answers_score as sc
from bench.common import RESULTS, table, write_json


def main(argv: Sequence[str] | None = None) -> int:
    from ragchat.chat.engine.prompts import trim_passage

    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--log", type=Path, default=RESULTS / "answers.jsonl")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[0, 2, 3, 4, 5])
    args = p.parse_args(argv)
    rows = [
        r
        for r in sc.read_lines(args.log)
        if r["arm"] == "ragchat" and r["kind"] == "answerable" and r.get("tool_results") and not r.get("error")
    ]
    held = [r for r in rows if any(sc.contains_span(c["content"], r["golds"], r["lang"]) for c in _chunks(r))]
    out: dict[str, dict[str, float | int]] = {}
    for n in args.sizes:
        kept = chars = 0
        for r in held:
            cut = [trim_passage(c["content"], r["question"], n) for c in _chunks(r)]
            kept += any(sc.contains_span(c, r["golds"], r["lang"]) for c in cut)
        for r in rows:
            chars += sum(len(trim_passage(c["content"], r["question"], n)) for c in _chunks(r))
        per_question = chars / max(1, len(rows))
        out[str(n)] = {"gold_kept": kept, "gold_in_passages": len(held), "chars_per_question": per_question}
    whole = out.get("0", {}).get("chars_per_question") or None
    print(table(
        ["sentences (0: whole)", "gold span kept", "passage chars / question", "vs whole"],
        [(n, f"{v['gold_kept']}/{v['gold_in_passages']}", round(float(v["chars_per_question"])),
          f"{float(v['chars_per_question']) / whole:.2f}" if whole else "-") for n, v in out.items()],
        title=f"{len(rows)} answerable ragchat questions, {len(held)} with a gold span in their passages",
    ))  # fmt: skip
    write_json(RESULTS / "answers_trim.json", {"questions": len(rows), "sizes": out})
    return 0


def _chunks(row: dict) -> list[dict]:
    return [c for t in row.get("tool_results") or [] for c in t.get("chunks") or []]


if __name__ == "__main__":
    sys.exit(main())
