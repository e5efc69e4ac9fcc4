"""What every door says about an answer once it is written: the per-sentence citation check, post-hoc citation
repair, and whether the documents cover the question — computed once (`verify_answer`) and shown the same way
by the page, `/api/rag`, `/v1`, MCP and the CLI.

- **What a passage says** includes its document's title and file name: an answer that names its document
  ("The Vacation Policy says …") is not "naming something the passage lacks".
- **Citation repair**: a sentence that cites nothing but states a fact, and that one retrieved passage supports
  by the same rules a cited sentence is checked by (`citations.verdict_of`), gets that passage's marker in the
  text instead of a "no source" warning. In a summary or comparison (the passages are the parts the
  map-reduce wrote), every uncited sentence is given the part it is closest to and checked against it: it is
  never marked "no source" for lacking a marker, and it is still marked when that part does not support it.
  A cited sentence whose numbers do not support it while another passage of the turn does is re-cited: an
  over-cited sentence keeps the numbers that support it, a mis-cited one gets the passage that supports it best
  (small models often cite the wrong number for a true sentence; bench/answers_recheck.py measures it).
- **Not in your documents** (`not_covered`): every search of the turn fell below the confidence floor
  (`coverage.not_covered`) *and* the check did not find the answer supported; an answer whose every sentence a
  passage supports never carries it.
- **Unsearched** (`searched: false`): the answer states facts and no search or document tool ran, so nothing
  in it comes from the documents; the doors say so instead of showing it as a grounded answer.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragchat.chat.engine.citations import (
    MAX_CHECKS,
    META_TERMS,
    CitationReport,
    Embedder,
    JudgeLLM,
    check_citations,
    content_terms,
    find_claims,
    lexical_support,
    similarities,
    unfounded,
    verdict_of,
)
from ragchat.chat.engine.coverage import NOT_COVERED, not_covered

log = logging.getLogger(__name__)
SUMMARY_TOOLS = frozenset({"summarize_documents"})
_QUESTION_WORDS = frozenset(
    "many much long often far old wer wen wem was welche wann wie warum wieviel quién qué cuál cuándo dónde cómo "
    "cuánto cuántos cuántas".split()
)
_MARKERS = re.compile(r"\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
_TRAILING_MARKERS = re.compile(r"(?:\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\])+\s*$")


def passage_text(source: Mapping[str, Any]) -> str:
    """What passage n says for the check: its document's title and file name, its section, then its text."""
    head = [str(source.get(k) or "") for k in ("title", "filename", "section")]
    names = " · ".join(dict.fromkeys(h for h in head if h))
    content = str(source.get("content") or "")
    return f"{names}\n{content}" if names else content


def numbered_sources(tool_results: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every passage the model saw, numbered from 1 in the order it saw them."""
    return [{"n": n, **chunk} for n, chunk in enumerate((c for r in tool_results for c in r["chunks"]), 1)]


@dataclass
class Verification:
    """The answer as shown (`text`, with repaired markers) and what the checks found."""

    text: str
    report: CitationReport
    repaired: int  # markers added to uncited sentences
    not_covered: bool
    searched: bool  # a search or a document tool ran this turn
    off_question: bool = False  # it does not give what was asked: it repeats the question, or the judge says so

    @property
    def supported(self) -> bool:
        """Every sentence that states something is supported by a passage (and there is at least one)."""
        claims, supported = self.report.sentences()
        return claims > 0 and supported == claims

    @property
    def warnings(self) -> int:
        """How many marks the page shows under the answer (0: a clean ✓)."""
        verdicts = [c.verdict for c in self.report.citations]
        unsearched = 0 if self.searched or not verdicts else 1
        off = int(self.off_question and not self.not_covered)  # one mark for "not what you asked"
        return sum(v != "supported" for v in verdicts) + int(self.not_covered) + unsearched + off

    def to_json(self, message_id: str | None = None) -> dict[str, Any]:
        out = self.report.to_json(message_id)
        if not out["sentences"]:
            out["summary"] = ""  # nothing stated, nothing to check: no line under the answer
        out.update(
            {
                "not_covered": self.not_covered,
                "searched": self.searched,
                "repaired": self.repaired,
                "all_supported": self.supported,
                "off_question": self.off_question,
                "warnings": self.warnings,
            }
        )
        out["content"] = self.text if self.repaired else None  # the page replaces the streamed text with this one
        return out


def _summary_turn(tool_results: Sequence[Mapping[str, Any]]) -> bool:
    return any(r.get("name") in SUMMARY_TOOLS for r in tool_results)


def _insert_markers(text: str, repairs: list[tuple[int, int]]) -> str:
    """`text` with ` [n]` put at the end of each repaired sentence (`(end, n)`), after its full stop."""
    out, last = [], 0
    for end, n in sorted(repairs):
        out.append(text[last:end])
        out.append(f" [{n}]")
        last = end
    out.append(text[last:])
    return "".join(out)


async def _repairs(
    text: str, passages: list[str], embedder: Embedder | None, *, summary: bool, timeout_s: float, asked: str = ""
) -> list[tuple[int, int]]:
    """(end of sentence, passage number) for each uncited fact that one passage supports (in a summary: the part
    it is closest to)."""
    uncited = [c for c in find_claims(text, uncited=True) if not c.numbers][:MAX_CHECKS]
    if not uncited or not passages:
        return []
    pairs = [(c.sentence, p) for c in uncited for p in passages]
    sims = await similarities(embedder, pairs, timeout_s)
    repairs: list[tuple[int, int]] = []
    for i, claim in enumerate(uncited):
        best: tuple[float, int] | None = None
        for j, passage in enumerate(passages):
            lexical = lexical_support(claim.sentence, passage)
            sim = sims[i * len(passages) + j]
            closeness = max(lexical, sim if sim is not None else 0.0)
            if summary:  # the part it came from is the closest one: checked against it, whatever it says
                ok = True
            else:
                ok = verdict_of(lexical, sim, unfounded(claim.sentence, passage, asked)) == "supported"
            if ok and (best is None or closeness > best[0]):
                best = (closeness, j + 1)
        if best is not None:
            end = claim.end
            trailing = _TRAILING_MARKERS.search(text[claim.start : claim.end])
            if trailing:  # never between a sentence and markers it already has
                end = claim.start + trailing.start()
            repairs.append((end, best[1]))
    return repairs


def _supports(sentence: str, passage: str, similarity: float | None, asked: str = "") -> bool:
    lexical = lexical_support(sentence, passage)
    return verdict_of(lexical, similarity, unfounded(sentence, passage, asked)) == "supported"


async def _recitations(
    text: str, passages: list[str], embedder: Embedder | None, *, timeout_s: float, asked: str = ""
) -> list[tuple[int, int, tuple[int, ...]]]:
    """(start, end, numbers) for each cited sentence whose markers are wrong: it cites passages that do not
    support it while one of the turn's passages does. Over-cited ("… [2][3][4]", only 3 supports it): it keeps the
    supporting ones; mis-cited (none of its numbers supports it): it gets the passage that supports it best. A
    number past the passages counts as one that does not support it (seen with the 1.5B model on xquad-dev: "…
    (BAU) scenario [21]." after a passage holding "[21st] century"); a sentence no passage supports keeps it, and
    the check reports it "missing"."""
    cited = [c for c in find_claims(text) if c.numbers][:MAX_CHECKS]
    if not cited or not passages:
        return []
    pairs = [(c.sentence, p) for c in cited for p in passages]
    sims = await similarities(embedder, pairs, timeout_s)
    out: list[tuple[int, int, tuple[int, ...]]] = []
    for i, claim in enumerate(cited):
        row = sims[i * len(passages) : (i + 1) * len(passages)]
        good = [n for n in range(1, len(passages) + 1) if _supports(claim.sentence, passages[n - 1], row[n - 1], asked)]
        if not good or set(claim.numbers) <= set(good):
            continue  # nothing supports it (the check says so) or every number it cites does
        keep = tuple(n for n in claim.numbers if n in good)
        if not keep:  # mis-cited: the passage closest to it among those that support it
            keep = (max(good, key=lambda n: max(lexical_support(claim.sentence, passages[n - 1]), row[n - 1] or 0.0)),)
        out.append((claim.start, claim.end, keep))
    return out


def _recite(text: str, recitations: list[tuple[int, int, tuple[int, ...]]]) -> str:
    """`text` with each listed sentence's markers replaced by its new numbers, put after the sentence."""
    out, last = [], 0
    for start, end, numbers in sorted(recitations):
        bare = _MARKERS.sub("", text[start:end]).rstrip()
        bare = re.sub(r"\s+([.,;:!?])", r"\1", bare)
        out += [text[last:start], bare, " " + "".join(f"[{n}]" for n in numbers)]
        last = end
    out.append(text[last:])
    return "".join(out)


async def verify_answer(
    text: str,
    tool_results: Sequence[Mapping[str, Any]],
    embedder: Embedder | None,
    *,
    finish_reason: str | None = None,
    question: str = "",
    judge: JudgeLLM | None = None,
    judge_model: str = "",
    judge_timeout_s: float = 30.0,
    embed_timeout_s: float = 15.0,
    repair: bool = True,
) -> Verification:
    """Check `text` against the turn's passages; repair uncited supported sentences; decide coverage."""
    passages = [passage_text(s) for s in numbered_sources(tool_results)]
    repaired = 0
    if repair and finish_reason != NOT_COVERED:
        try:
            repairs = await _repairs(
                text,
                passages,
                embedder,
                summary=_summary_turn(tool_results),
                timeout_s=embed_timeout_s,
                asked=question,
            )
        except Exception:  # a bug in the repair never costs the user the answer or its check
            log.exception("verify: citation repair failed")
            repairs = []
        if repairs:
            text = _insert_markers(text, repairs)
            repaired = len(repairs)
        if not _summary_turn(tool_results):  # a summary's parts are checked as cited, never re-cited
            try:
                recitations = await _recitations(text, passages, embedder, timeout_s=embed_timeout_s, asked=question)
            except Exception:
                log.exception("verify: re-citing failed")
                recitations = []
            if recitations:
                text = _recite(text, recitations)
                repaired += len(recitations)
    report = await check_citations(
        text,
        passages,
        embedder,
        judge=judge,
        judge_model=judge_model,
        judge_timeout_s=judge_timeout_s,
        embed_timeout_s=embed_timeout_s,
        question=question,
    )
    verification = Verification(text, report, repaired, not_covered=False, searched=bool(tool_results))
    verification.off_question = bool(question) and (
        report.answers_question is False
        or (report.answers_question is None and (restates_question(text, question) or no_time_given(text, question)))
    )
    refused = finish_reason == NOT_COVERED
    weak_search = not_covered(tool_results)
    off_topic = weak_search and bool(question) and answers_something_else(verification.text, question)
    verification.not_covered = refused or (weak_search and (not verification.supported or off_topic))
    return verification


def answers_something_else(text: str, question: str) -> bool:
    """Does the answer share none of the question's content words (a football question answered with a passage
    on the Amazon forest, seen on xquad-dev)? Asked only when no search matched the question well: the passages
    then support the text, but the text is not about what was asked."""
    asked = {t for t in content_terms(question) if len(t) > 2 and t not in _QUESTION_WORDS}
    return bool(asked) and not asked & set(content_terms(text))


_WHEN = re.compile(
    r"^\W*(?:when|(?:in |by )?(?:what|which) (?:year|century|decade|month|date)|wann"
    r"|(?:in |im )?welche[mn]? (?:jahr|jahrhundert|monat)|cuándo|(?:en )?qué (?:año|siglo|fecha|mes))\b",
    re.IGNORECASE,
)
# a time in an answer: a figure, or a word that places it in time (English, German, Spanish)
_TIMES = frozenset(
    "january february march april may june july august september october november december spring summer autumn "
    "fall winter century centuries decade decades year years month months week weeks day days ago bc ad bce ce "
    "during after before until since age era period reign war dynasty today now then later earlier early late mid "
    "once times morning evening night first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
    "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth "
    "januar februar märz mai juni juli oktober dezember frühling sommer herbst jahrhundert jahrhunderts jahr jahre "
    "jahren monat tag tagen während nach vor bis seit krieg zeit zeitalter heute damals später früher anfang ende "
    "mitte enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre siglo siglos "
    "año años mes día días durante después antes hasta desde guerra época hoy entonces principios finales "
    "mediados".split()
)


def no_time_given(text: str, question: str) -> bool:
    """Is it a "when" question ("When was this edict declared?", "In what year …", "Wann …", "¿Cuándo …") whose
    answer states something but names no time, no figure and no word placing it in time ("The Edict of
    Fontainebleau was declared.", xquad-dev)? Such an answer does not give what was asked, however well its
    passage supports it."""
    if not _WHEN.match(question) or not find_claims(text, uncited=True):
        return False
    said = _MARKERS.sub(" ", text)
    return not re.search(r"\d", said) and not _TIMES & set(re.findall(r"\w+", said.lower()))


def restates_question(text: str, question: str) -> bool:
    """Does the answer only say back what the question already holds ("Public schools were recognized under the
    South African Schools Act" for "Along with public schools, what type of school was recognized under the South
    African Schools Act?", xquad-dev)? Its claims add no content word, figure or name beyond the question's and
    the words that point at sources. "Yes" and "no" are answers."""
    claims = find_claims(text, uncited=True)
    if not claims or not question.strip():
        return False
    asked = set(content_terms(question))
    said = {t for c in claims for t in content_terms(c.sentence)}
    return not (said - asked - META_TERMS)


def clean(verification: Mapping[str, Any]) -> bool:
    """Does the answer earn a clean ✓ (the page's `CitationSummary` draws the same): every sentence supported,
    and no other mark under it. An answer its passages support but that is about something else than the
    question (an unanswerable question answered from an unrelated passage, seen on xquad-dev) shows "Not in
    your documents" or "may not answer what was asked" beside its count, never a ✓."""
    return bool(
        verification.get("all_supported")
        and not verification.get("not_covered")
        and not verification.get("off_question")
        and verification.get("searched", True)
    )


def footnotes(verification: Mapping[str, Any] | None) -> str:
    """The verification as plain text under an answer (RAG_FOOTNOTES, the CLI, MCP): the summary line and each
    sentence that is not supported, e.g. "⚠ not supported by [2]: The office opens at 8."."""
    if not verification:
        return ""
    lines: list[str] = []
    if verification.get("not_covered"):
        lines.append("Not in your documents: nothing found matches the question closely.")
    elif verification.get("off_question"):
        lines.append("⚠ This may not answer what was asked.")
    elif not verification.get("searched", True) and verification.get("sentences"):
        lines.append("Not from your documents: no search was made for this answer.")
    if verification.get("summary"):
        lines.append(f"{'✓' if clean(verification) else '⚠'} {verification['summary']}.")
    words = {"unsupported": "not supported by", "weak": "only partly supported by", "missing": "cites a missing"}
    for check in verification.get("citations") or []:
        verdict = check.get("verdict")
        if verdict == "supported":
            continue
        where = "no source" if verdict == "no_source" else f"{words.get(verdict, verdict)} [{check.get('n')}]"
        sentence = str(check.get("sentence") or "")
        lines.append(f"  - {where}: {sentence[:200]}")
    return "\n".join(lines)
