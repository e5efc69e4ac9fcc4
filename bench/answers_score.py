"""Scoring of answers against gold answer spans, without a judge model (bench/answers.py; issue 41, item 2).

SQuAD's official normalisation (lower case, punctuation and articles removed, whitespace collapsed), made
Unicode-aware for German and Spanish as MLQA's evaluation script does it: text is NFC-normalised and case-folded
(so a decomposed "u + ¨" equals "ü", and "ß" folds to "ss"), every Unicode punctuation character (category P*:
"¿", "¡", "«", "»", "„", "–") is removed, and each language's articles are dropped. Accents are kept: "Múnich"
and "Munich" are different words, as in the official scores.

On that normal form:
- `exact_match`: the answer equals a gold answer (max over the gold answers);
- `token_f1`: SQuAD's token F1 (max over the gold answers);
- `contains_span`: a gold answer's tokens appear as a contiguous run in the answer's tokens (the usual test for
  a long-form answer: "The war ended in 1945 [1]." contains "1945");
- `citation_precision` / `citation_recall`: a cited passage contains a gold span / the gold paragraph is cited;
- `is_refusal`: the answer says the documents do not have it (English, German, Spanish phrases).

Citation markers (`[1]`, `[1, 3]`, `[1][2]`, Open WebUI's `[source_id]` with a number) are removed from answers
before scoring, so a marker's number never counts as an answer token.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ARTICLES = {
    "en": ("a", "an", "the"),
    "de": ("der", "die", "das", "den", "dem", "des", "ein", "eine", "einer", "eines", "einem", "einen"),
    "es": ("el", "la", "lo", "los", "las", "un", "una", "unos", "unas"),
}
MARKERS = re.compile(r"\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\]")  # [1]  [1, 3]  [1;2]

_REFUSAL = re.compile(
    "|".join(
        [
            # English (as bench/real_answers.NOT_FOUND, plus the product's own refusal)
            r"\b(?:not (?:found|mentioned|contain\w*|provide\w*|include\w*|cover\w*|available|discuss\w*|address\w*|"
            r"specified|stated|in the (?:documents?|passages?|context|sources?|provided))",
            r"no (?:information|mention|relevant|details?|data|documents?|passages?)",
            r"none of the (?:passages?|documents?|sources?|texts?|context|provided)",
            r"(?:do|does|did)(?:n't|n’t| not) "
            r"(?:have|contain|mention|say|include|provide|cover|discuss|address|specify)",
            r"(?:can ?not|can't|can’t|couldn't|could not|unable to) (?:find|answer|locate|provide|determine)",
            r"outside (?:the scope|of the)|(?:doesn't|does not|don't|do not) appear|i don't know|i do not know)\b",
            # German
            r"\b(?:keine (?:Informationen?|Angaben?|Hinweise?|Erwähnung)|nicht (?:erwähnt|enthalten|angegeben|"
            r"genannt|beantwortet|beantworten|gefunden|finden)|(?:enthalten|erwähnen|nennen) (?:\w+ )?(?:keine|nicht)|"
            r"geht (?:\w+ )?nicht hervor|ich weiß (?:es )?nicht|kann (?:ich )?(?:\w+ )?nicht beantworten)\b",
            # Spanish
            r"\b(?:no (?:se )?(?:menciona|mencionan|encuentra|encuentran|especifica|proporciona|proporcionan|incluye|"
            r"contiene|contienen|indica|hay información|tengo información|dispongo|puedo (?:responder|encontrar|"
            r"determinar))|ninguna información|sin información|no lo sé|no sé)\b",
        ]
    ),
    re.IGNORECASE,
)


def strip_markers(text: str) -> str:
    """The text without citation markers."""
    return MARKERS.sub(" ", text)


def normalize(text: str, lang: str = "en") -> str:
    """SQuAD's normalisation, Unicode-aware (the module docstring): markers, punctuation and articles removed."""
    text = unicodedata.normalize("NFC", strip_markers(text)).casefold()
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)
    articles = set(ARTICLES.get(lang, ARTICLES["en"]))
    return " ".join(t for t in text.split() if t not in articles)


def tokens(text: str, lang: str = "en") -> list[str]:
    return normalize(text, lang).split()


def exact_match(answer: str, golds: Iterable[str], lang: str = "en") -> bool:
    norm = normalize(answer, lang)
    return any(norm == normalize(g, lang) for g in golds)


def _f1(pred: Sequence[str], gold: Sequence[str]) -> float:
    if not pred or not gold:
        return float(pred == gold)
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(answer: str, golds: Iterable[str], lang: str = "en") -> float:
    pred = tokens(answer, lang)
    return max((_f1(pred, tokens(g, lang)) for g in golds), default=0.0)


def contains_span(text: str, golds: Iterable[str], lang: str = "en") -> bool:
    """A gold answer's normalised tokens appear as a contiguous run in the text's (an empty gold never counts)."""
    hay = f" {normalize(text, lang)} "
    return any((g := normalize(gold, lang)) and f" {g} " in hay for gold in golds)


def citation_precision(cited_texts: Sequence[str], golds: Iterable[str], lang: str = "en") -> tuple[int, int]:
    """(cited passages that contain a gold span, cited passages): summed over answers for a micro average."""
    golds = list(golds)
    return sum(1 for t in cited_texts if contains_span(t, golds, lang)), len(cited_texts)


def citation_recall(cited_docs: Iterable[str], gold_doc: str) -> bool:
    """The gold paragraph (its document id) is among the cited ones."""
    return gold_doc in set(cited_docs)


def is_refusal(text: str) -> bool:
    """The answer says the documents (or the model) do not have it: English, German or Spanish phrases."""
    return bool(_REFUSAL.search(strip_markers(text)))


def asserts_answer(text: str) -> bool:
    """For a question the documents cannot answer: the text still states something (not empty, not a refusal)."""
    return bool(strip_markers(text).strip()) and not is_refusal(text)


def cited_numbers(text: str) -> list[int]:
    """The passage numbers an answer cites, in order of first citation."""
    out: list[int] = []
    for marker in MARKERS.findall(text):
        for n in re.findall(r"\d+", marker):
            if int(n) not in out:
                out.append(int(n))
    return out


# ---- the checkpoint lines ------------------------------------------------------------------------------
def read_lines(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:  # a line cut by a kill: ignored (and redone)
                continue
    return rows


def append_line(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    row = {**row, "loadavg": [round(x, 2) for x in os.getloadavg()], "at": datetime.now(UTC).isoformat()}
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row, ensure_ascii=False) + "\n")


# ---- one answer, and the table -----------------------------------------------------------------------------
WARNING_VERDICTS = ("unsupported", "weak", "missing", "no_source")  # the page's doubtful marks (Citations.tsx)


def score(row: dict[str, Any], lang: str = "en") -> dict[str, Any]:
    """The scores of one checkpoint line (`answer`, `passages` [{doc, content}] numbered from 1, `golds`,
    `gold_doc`, `kind`; ragchat's `verifier` and `not_covered` when there)."""
    text, passages, golds = row.get("answer") or "", row.get("passages") or [], row["golds"]
    numbers = cited_numbers(text) + [n for n in row.get("done_cited") or [] if n not in cited_numbers(text)]
    cited = [passages[n - 1] for n in numbers if 1 <= n <= len(passages)]
    out: dict[str, Any] = {
        "refusal": is_refusal(text),
        "cited": len(cited),
        "invalid_markers": len(numbers) - len(cited),
    }
    if row.get("not_covered") is not None:
        out["not_covered"] = bool(row["not_covered"])
    verifier = row.get("verifier") or {}
    verdicts = Counter(c.get("verdict") for c in (verifier.get("citations") or []))
    if row.get("verifier") is not None or "not_covered" in out:
        kinds = [v for v in WARNING_VERDICTS if verdicts.get(v)] + (["not_covered"] if out.get("not_covered") else [])
        # the page's other doubtful marks (Citations.tsx `CitationSummary`): "it may not answer what was asked" and
        # "no search of your documents was made"; each draws ⚠ instead of a clean ✓
        if verifier.get("off_question") and not out.get("not_covered"):
            kinds.append("off_question")
        if verifier.get("searched") is False and verifier.get("sentences"):
            kinds.append("unsearched")
        out |= {"verdicts": dict(verdicts), "warning": bool(kinds), "warning_kinds": kinds}
    if row["kind"] == "unanswerable":
        out["asserts"] = asserts_answer(text)
        return out
    k, n = citation_precision([p.get("content", "") for p in cited], golds, lang)
    out |= {
        "em": exact_match(text, golds, lang),
        "f1": round(token_f1(text, golds, lang), 4),
        "contains": contains_span(text, golds, lang),
        "cited_gold_span": k,
        "cited_gold_doc": citation_recall([str(p.get("doc")) for p in cited], str(row["gold_doc"])),
        "retrieved_gold": any(str(p.get("doc")) == str(row["gold_doc"]) for p in passages),
    }
    assert n == len(cited)
    return out


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo), 2)


def _ratio(k: int, n: int) -> str:
    return f"{k / n:.2f} ({k}/{n})" if n else "-"


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One arm's figures over its lines (one language)."""
    ans = [r for r in rows if r["kind"] == "answerable"]
    none = [r for r in rows if r["kind"] == "unanswerable"]
    s = [r["scores"] for r in ans]
    cites = sum(x["cited"] for x in s)
    flagged = "not_covered" in (rows[0]["scores"] if rows else {})
    retrieves = any(r.get("passages") for r in rows) or any(r["arm"] != "model-alone" for r in rows)

    def says(r: dict[str, Any]) -> bool:  # "not in your documents" as a reader meets it: the text says so, or
        return bool(r["scores"]["refusal"]) or (flagged and bool(r["scores"].get("not_covered")))  # the page's flag

    tp, fp = sum(says(r) for r in none), sum(says(r) for r in ans)
    right = [x for x in s if x["contains"] and x["cited_gold_doc"]]
    wrong = [x for x in s if not x["contains"]]
    ttft = [r["ttft_s"] for r in rows if r.get("ttft_s") is not None]
    total = [r["total_s"] for r in rows if r.get("total_s") is not None]
    return {
        "answerable": len(ans),
        "unanswerable": len(none),
        "em": _share(sum(x["em"] for x in s), len(s)),
        "f1": round(sum(x["f1"] for x in s) / len(s), 4) if s else None,
        "contains_gold": _share(sum(x["contains"] for x in s), len(s)),
        "citation_precision": _share(sum(x["cited_gold_span"] for x in s), cites),
        "citations": cites,
        "citation_recall": _share(sum(x["cited_gold_doc"] for x in s), len(s)) if retrieves else None,
        "retrieved_gold": _share(sum(x["retrieved_gold"] for x in s), len(s)) if retrieves else None,
        "not_in_documents_signal": "page flag or refusal in the text" if flagged else "refusal in the text",
        "not_in_documents_precision": _share(tp, tp + fp),
        "not_in_documents_recall": _share(tp, len(none)),
        "refusal_unanswerable": _share(sum(r["scores"]["refusal"] for r in none), len(none)),
        "asserts_unanswerable": _share(sum(r["scores"]["asserts"] for r in none), len(none)),
        "ttft_s_median": _pct(ttft, 0.5),
        "ttft_s_p95": _pct(ttft, 0.95),
        "total_s_median": _pct(total, 0.5),
        "total_s_p95": _pct(total, 0.95),
        "warned_right": _share(sum(bool(x.get("warning")) for x in right), len(right)) if flagged else None,
        "warned_wrong": _share(sum(bool(x.get("warning")) for x in wrong), len(wrong)) if flagged else None,
        "warned_asserting_unanswerable": _share(
            sum(bool(r["scores"].get("warning")) for r in none if r["scores"]["asserts"]),
            sum(1 for r in none if r["scores"]["asserts"]),
        )
        if flagged
        else None,
        "errors": sum(1 for r in rows if r.get("error")),
        "loadavg_1min_median": _pct([r["loadavg"][0] for r in rows if r.get("loadavg")], 0.5),
        "loadavg_1min_max": max((r["loadavg"][0] for r in rows if r.get("loadavg")), default=None),
    }


def _share(k: int, n: int) -> dict[str, Any] | None:
    return {"k": int(k), "n": n, "value": round(k / n, 4)} if n else None


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, dict):
        return _ratio(v["k"], v["n"])
    return str(v)


COLUMNS = [
    ("answerable", "answerable done"),
    ("contains_gold", "answer contains a gold span"),
    ("em", "exact match"),
    ("f1", "token F1"),
    ("citation_precision", "citation precision (cited passage holds a gold span)"),
    ("citation_recall", "citation recall (gold paragraph cited)"),
    ("retrieved_gold", "gold paragraph retrieved"),
    ("unanswerable", "unanswerable done"),
    ("not_in_documents_precision", '"not in your documents" precision'),
    ("not_in_documents_recall", '"not in your documents" recall'),
    ("asserts_unanswerable", "unanswerable: text still asserts an answer"),
    ("ttft_s_median", "first token s, median"),
    ("ttft_s_p95", "p95"),
    ("total_s_median", "done s, median"),
    ("total_s_p95", "p95"),
]
CHECKS = [
    ("warned_right", "right (gold span + gold paragraph cited) with any warning"),
    ("warned_wrong", "no gold span, with a warning"),
    ("warned_asserting_unanswerable", "unanswerable but asserting, with a warning"),
]


def _table(summary: dict[str, dict[str, Any]]) -> list[str]:
    """The main table's lines: a row per "data/lang/arm" of `summary`, a column per COLUMNS."""
    head = "| data / lang / arm | " + " | ".join(h for _, h in COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 1)]
    return lines + [f"| {key} | " + " | ".join(_cell(s[c]) for c, _ in COLUMNS) + " |" for key, s in summary.items()]


def report(rows: Sequence[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The markdown tables (one row per data split, language and arm) and the JSON summary."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["data"], r["lang"], r["arm"]), []).append(r)
    summary = {f"{d}/{lang}/{arm}": summarize(g) for (d, lang, arm), g in sorted(groups.items())}
    lines = _table(summary)
    checked = {k: s for k, s in summary.items() if s["warned_right"] is not None or s["warned_wrong"] is not None}
    if checked:
        lines += [
            "",
            "| checks: data / lang / arm | "
            + " | ".join(h for _, h in CHECKS)
            + " | errors | load 1-min median / max |",
        ]
        lines += ["|" + "---|" * (len(CHECKS) + 3)]
        for key, s in checked.items():
            load = f"{s['loadavg_1min_median']} / {s['loadavg_1min_max']}"
            lines.append(f"| {key} | " + " | ".join(_cell(s[c]) for c, _ in CHECKS) + f" | {s['errors']} | {load} |")
    signals = {k: s["not_in_documents_signal"] for k, s in summary.items()}
    lines += ["", '"Not in your documents": ' + "; ".join(f"{k}: {v}" for k, v in signals.items())]
    return "\n".join(lines) + "\n", {"generated_at": datetime.now(UTC).isoformat(timespec="seconds"), "arms": summary}


def paired(rows: Sequence[dict[str, Any]], keys: Sequence[str]) -> str:
    """The table of `report` for two or more "data/lang/arm" groups, on the questions every one of them
    answered without an error (a paired comparison: runs of different sessions asked the same seeded ids)."""
    groups = {k: [r for r in rows if f"{r['data']}/{r['lang']}/{r['arm']}" == k] for k in keys}
    if missing := [k for k, g in groups.items() if not g]:
        raise ValueError(f"no lines for {', '.join(missing)}")
    common = set.intersection(*({r["qid"] for r in g if not r.get("error")} for g in groups.values()))
    summary = {k: summarize([r for r in g if r["qid"] in common]) for k, g in groups.items()}
    lines = [f"Paired: the {len(common)} questions all of these answered", "", *_table(summary)]
    return "\n".join(lines) + "\n"
