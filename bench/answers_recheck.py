"""The answer checks run again, offline, on answers bench/answers.py recorded (issue 41, item 5: checks calibrated
on gold answers, not on hand-picked cases).

Each `ragchat` line of bench/results/answers.jsonl keeps the text the model streamed and the search results the
page received (`tool_results`). This runs today's verifier (`chat.engine.verify.verify_answer`, the code every
door runs) on them with the real embedding model, scores the result with the same code as the benchmark
(`answers_score`), and prints the check figures as recorded and as rechecked side by side:

- right answers (a gold span, the gold paragraph cited) that carry any warning: goal ≤ 5 %;
- answers with no gold span that carry a warning: goal ≥ 90 %;
- "Not in your documents" precision and recall on the unanswerable questions (goal ≥ 0.90 each), and never under
  an answer about the question whose every sentence is supported (an answer about something else, from an
  unrelated passage, is counted apart: the flag is right there).

No model is asked: a change to the verifier is measured in seconds on answers already given.

    PYTHONPATH=server .venv/bin/python bench/answers_recheck.py [--log bench/results/answers.jsonl] [--show N]
        [--judge]   # also the LLM judge (CITATION_JUDGE=true) on the real model: ~15 s an answer on 2 cores
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import answers_score as sc
from bench.common import RESULTS, bench_settings, load_embedder, table, write_json


async def recheck(
    rows: Sequence[dict[str, Any]], embedder: Any, judge: Any = None, judge_model: str = ""
) -> list[dict[str, Any]]:
    """The rows with the verifier's output, the shown answer and the scores as today's code makes them (with
    `judge`, the LLM judge of CITATION_JUDGE=true too)."""
    from ragchat.chat.engine.verify import verify_answer

    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows, 1):
        results = row.get("tool_results") or []
        text = row.get("streamed") or ""
        v = await verify_answer(
            text,
            results,
            embedder,
            finish_reason=row.get("finish_reason"),
            question=row["question"],
            judge=judge,
            judge_model=judge_model,
            judge_timeout_s=300.0,
        )
        if judge is not None:
            print(f"  judged {i}/{len(rows)}: judged={v.report.judged} answers={v.report.answers_question}", flush=True)
        verifier = v.to_json()
        new = {**row, "verifier": verifier, "not_covered": v.not_covered, "answer": v.text if v.repaired else text}
        new["scores"] = sc.score(new, row.get("lang", "en"))
        out.append(new)
    return out


def with_judge(rows: Sequence[dict[str, Any]], embedder: Any) -> list[dict[str, Any]]:
    """`recheck` with the real-model tier's model (llama.cpp) as the judge, over ragchat's OpenAI provider."""
    from ragchat.providers.llm.openai import OpenAIProvider
    from tests.real.model import RealLLM, ensure_model, ensure_runtime

    ensure_runtime()
    with RealLLM(ensure_model(), n_ctx=4096, threads=2, log_path=RESULTS / ".recheck" / "llm.log") as real:
        judge = OpenAIProvider(real.base_url, timeout_s=300.0)
        return asyncio.run(recheck(rows, embedder, judge, real.model))


def checks(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    from ragchat.chat.engine.verify import answers_something_else

    s = sc.summarize(rows)
    flagged = [r for r in rows if (r.get("verifier") or {}).get("all_supported") and r["verifier"].get("not_covered")]
    # an answer its passages support but about something else than the question (an unrelated passage of a weak
    # search): "Not in your documents" is right there, and no door shows a clean ✓ beside it (verify.clean)
    elsewhere = sum(1 for r in flagged if answers_something_else(r.get("answer") or "", r["question"]))
    keys = ("warned_right", "warned_wrong", "warned_asserting_unanswerable", "not_in_documents_precision",
            "not_in_documents_recall", "contains_gold", "citation_precision")  # fmt: skip
    return {
        **{k: s[k] for k in keys},
        "not_covered_under_supported_on_question": len(flagged) - elsewhere,  # goal 0
        "not_covered_under_supported_elsewhere": elsewhere,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--log", type=Path, default=RESULTS / "answers.jsonl")
    p.add_argument("--show", type=int, default=0, help="print N answers whose warning changed or is wrong")
    p.add_argument("--judge", action="store_true", help="with the LLM judge (CITATION_JUDGE) on the real model")
    args = p.parse_args(argv)
    rows = [
        r
        for r in sc.read_lines(args.log)
        if r["arm"].startswith("ragchat") and "tool_results" in r and not r.get("error")
    ]
    if not rows:
        print(f"no ragchat answers with their search results in {args.log}")
        return 1
    settings = bench_settings(RESULTS / ".recheck")
    embedder = load_embedder(settings)
    if args.judge:
        new = with_judge(rows, embedder)
    else:
        new = asyncio.run(recheck(rows, embedder))
    before, after = checks(rows), checks(new)
    cell = sc._cell  # the benchmark's own formatting of a share
    print(table(["check", "as recorded", "rechecked now"], [(k, cell(before[k]), cell(after[k])) for k in before],
                title=f"{len(rows)} ragchat answers ({args.log.name})"))  # fmt: skip
    name = "answers_recheck_judge.json" if args.judge else "answers_recheck.json"
    write_json(RESULTS / name, {"answers": len(rows), "judge": args.judge, "recorded": before, "rechecked": after})
    shown = 0
    for old, cur in zip(rows, new, strict=True):
        if shown >= args.show:
            break
        s = cur["scores"]
        right = cur["kind"] == "answerable" and s.get("contains") and s.get("cited_gold_doc")
        missed = cur["kind"] == "answerable" and not s.get("contains") and not s.get("warning")
        odd = (right and s.get("warning")) or missed
        if odd or old["scores"].get("warning") != s.get("warning"):
            shown += 1
            print(f"\n--- {cur['qid']} ({cur['kind']}) golds={cur['golds']} right={bool(right)} "
                  f"warning {old['scores'].get('warning')} → {s.get('warning')} {s.get('warning_kinds')}")  # fmt: skip
            print("Q:", cur["question"])
            print("A:", cur["answer"][:400])
            for c in cur["verifier"].get("citations") or []:
                if c["verdict"] != "supported":
                    how = f"lex={c['lexical']} sim={c['similarity']}"
                    print(f"   {c['verdict']} [{c['n']}] {how}: {c['sentence'][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
