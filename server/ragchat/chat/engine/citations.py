"""Verified citations: does passage n support the sentence that cites it as [n]?

After an answer, `check_citations(text, passages, embedder)` splits it into sentences; each sentence holding
markers (`[2]`, `[1, 3]`, `[1][3]`) yields one check per distinct number it cites, in order, and each sentence
that cites nothing but states a fact (`states_fact`: a figure, or FACT_MIN_TERMS content words; not a question,
a list's lead-in or "the documents do not say") yields one `no_source` check (n = 0). The report's summary
counts sentences: "4 of 5 sentences supported by the cited passages".

- **lexical**: the share of the sentence's content words (stop words dropped, markers removed, a light
  stemming: plurals, -ing, -ed, -ly) that occur in the passage; numbers weigh double (a figure is usually
  the claim). 0..1.
- **similarity**: cosine between the sentence (without markers) and the passage, with the runtime's embedding
  model; every sentence and every cited passage go in one `embed_documents` call. None when the model
  failed, or (a remote model) took longer than `EMBED_TIMEOUT_S`: the verdict then rests on the lexical score.
  The bundled in-process model has no time limit: its work is bounded (at most `MAX_CHECKS` pairs of capped
  length), and a wall-clock limit only turned a busy machine's verdicts into lexical-only ones.

Verdicts: `missing` (no passage n this turn), else `supported`, `weak` or `unsupported` by the thresholds
below. Tuned with all-MiniLM-L6-v2 on the test corpus and a handful of real answers (values measured):

    claim (answer sentence, markers removed)                  cited passage    lexical  similarity  verdict
    "Employees get 25 days of paid holiday per year."          holiday policy     0.88      0.93       supported
    "Lava flows from the crater."                              volcano            1.00      0.72       supported
    "Visitors must sign in at reception."                      office hours       0.67      0.47       supported
    "Eruptions release gas and ash."                           volcano            0.75      0.75       supported
    "Employees may carry over 5 unused days to next year."     holiday policy     0.25      0.57      unsupported: 5?
    "The office is open from 8 am to 6 pm."                    holiday policy     0.00      0.14       unsupported
    "Sourdough rises because wild yeast ferments the dough."   volcano            0.00      0.18       unsupported
    "Sick leave is unlimited"                                  holiday policy     0.00      0.30       unsupported

A sentence that states a number or a name (a capitalised word inside it) the passage does not hold, or says the
opposite of it (a negation dropped or added: `polarity.py`), is `unsupported`: the passage cannot be what
supports it. Otherwise it is `unsupported`
when lexical < LEXICAL_WEAK and similarity < SIMILARITY_WEAK (or unknown); `supported` when lexical >=
LEXICAL_SUPPORTED, or similarity >= SIMILARITY_SUPPORTED, or lexical >= LEXICAL_WEAK with similarity >=
SIMILARITY_SUPPORTED_WITH, or lexical >= LEXICAL_SUPPORTED_WITH with similarity >= SIMILARITY_WEAK; `weak`
otherwise.

Optional LLM judge (`CITATION_JUDGE=true`, judge.py): one `complete_json` call per answer with every checked
claim and its passage, and the question; its verdicts replace the cheap ones and it says whether the answer
answers the question (`answers_question`); on any failure the cheap verdicts stand.

Bounds: at most MAX_CHECKS checks per answer, sentences capped at MAX_SENTENCE_CHARS and passages at
MAX_PASSAGE_CHARS for the model, so a hostile answer costs a bounded amount of work.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from ragchat.chat.engine.judge import JudgeLLM, ask_judge
from ragchat.chat.engine.polarity import contradicts

log = logging.getLogger(__name__)

Verdict = Literal["supported", "weak", "unsupported", "missing", "no_source"]

LEXICAL_SUPPORTED = 0.75
SIMILARITY_SUPPORTED = 0.65
LEXICAL_WEAK = 0.25
SIMILARITY_WEAK = 0.40
SIMILARITY_SUPPORTED_WITH = 0.50  # with lexical >= LEXICAL_WEAK
LEXICAL_SUPPORTED_WITH = 0.60  # with similarity >= SIMILARITY_WEAK
MAX_CHECKS = 64
MAX_SENTENCE_CHARS = 1000
MAX_PASSAGE_CHARS = 2000
EMBED_TIMEOUT_S = 15.0

FACT_MIN_TERMS = 4  # content words that make an uncited sentence a claim (labelled set: bench/verifier.py)
_CODE = re.compile(r"```[\s\S]*?(?:```|$)|`[^`\n]*`")
_NOT_COVERED = re.compile(
    r"\b(?:(?:do|does|did)(?:n't| not)|cannot|can't|could not|couldn't|no|nothing|none)\b[^.]{0,80}"
    r"\b(?:document|passage|source|information|mention|cover|say|contain)",
    re.IGNORECASE,
)
_MARKER = re.compile(r"\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
_MARKER_RUN = re.compile(r"(?:\s*[,;]?\s*\[\d{1,3}(?:\s*,\s*\d{1,3})*\])+")  # "… year. [1], [2]"
_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*(?=\s)|\n\s*\n|\n(?=\s*(?:[-*+]|\d+[.)])\s)|\n")
_ABBREVIATIONS = {"e.g", "i.e", "etc", "vs", "mr", "mrs", "dr", "no", "fig", "p", "pp", "approx", "cf"}
_WORD = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+", re.UNICODE)
_STOP = frozenset(
    """a an the and or but nor so yet of to in on at by for with from as into onto over under about above below
    is are was were be been being am do does did done have has had having it its this that these those there
    here they them their he she him her his we us our you your i me my not no can could may might must shall
    should will would also than then which who whom whose what when where why how all any each both either
    neither some such only own same very just more most other per according passage source document says
    said""".split()
)

#: words of a sentence that only points at its sources ("This is stated in passage [2].", "Dies steht in [1].",
#: "Esto se menciona en [1]."): such a sentence states nothing to check (stemmed like `content_terms`)
_META_WORDS = """stated states state mentioned mentions mention supported supports support shown shows show given
    found information info conclusion answer explained explains described describes noted written text context
    excerpt passages sources documents cited cites citation refer refers referenced indicated indicates confirmed
    confirms provided provides based reference references above following see also detail details
    dies diese dieser dieses steht stehen genannt erwähnt angegeben laut quelle quellen abschnitt dokument
    informationen hervor geht esto esta este estos se menciona mencionado mencionada indica indicado según pasaje
    fuente fuentes texto documento información afirma en el la los las del de im der die das""".split()


def _meta_terms() -> frozenset[str]:
    return frozenset(stem(w) for w in _META_WORDS)


class Embedder(Protocol):
    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...


LOCAL_PROVIDERS = frozenset({"sentence-transformers"})  # in this process: bounded by the work, never waiting


@dataclass(frozen=True)
class Claim:
    """A sentence of the answer that cites passages: its span (with its markers) and the numbers it cites."""

    sentence: str  # without the markers
    start: int
    end: int
    numbers: tuple[int, ...]


@dataclass
class CitationCheck:
    sentence: str
    start: int
    end: int
    n: int
    verdict: Verdict
    lexical: float
    similarity: float | None


@dataclass
class CitationReport:
    citations: list[CitationCheck] = field(default_factory=list)
    judged: bool = False
    answers_question: bool | None = None  # the judge's view, when it was asked with the question

    def sentences(self) -> tuple[int, int]:
        """(claims, supported): sentences that state something, and those whose every citation is supported."""
        by_sentence: dict[int, list[Verdict]] = {}
        for c in self.citations:
            by_sentence.setdefault(c.start, []).append(c.verdict)
        supported = sum(1 for vs in by_sentence.values() if all(v == "supported" for v in vs))
        return len(by_sentence), supported

    def to_json(self, message_id: str | None = None) -> dict[str, Any]:
        verdicts = [c.verdict for c in self.citations]
        claims, supported = self.sentences()
        return {
            **({"message_id": message_id} if message_id else {}),
            "citations": [asdict(c) for c in self.citations],
            "unsupported": verdicts.count("unsupported"),
            "weak": verdicts.count("weak"),
            "missing": verdicts.count("missing"),
            "no_source": verdicts.count("no_source"),
            "sentences": claims,
            "supported_sentences": supported,
            "summary": f"{supported} of {claims} sentences supported by the cited passages",
            "judged": self.judged,
        }


# ---- sentences and claims -----------------------------------------------------------------------------------
def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence; markers right after a full stop ("… year. [1]") stay with it."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        end = m.end()
        if m.group().startswith(".") and len(m.group()) == 1:
            word = re.search(r"(\S+)$", text[start : m.start()])
            if word and word.group(1).lower().lstrip("(") in _ABBREVIATIONS:
                continue
        run = _MARKER_RUN.match(text, end)
        if run:
            end = run.end()
        if end > start:
            spans.append((start, end))
        start = end
    if start < len(text):
        spans.append((start, len(text)))
    out: list[tuple[int, int]] = []
    for s, e in spans:  # trim the surrounding white space
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of `text` (markers after a full stop stay with their sentence)."""
    return _sentence_spans(text)


def find_claims(text: str, *, uncited: bool = False) -> list[Claim]:
    """The sentences of `text` that cite passages, in order; with `uncited`, also the sentences that cite
    nothing but state facts (`states_fact`), with no numbers."""
    claims: list[Claim] = []
    previous: Claim | None = None  # the sentence before, cited or not
    for start, end in _sentence_spans(_without_code(text)):
        chunk = text[start:end]
        numbers: list[int] = []
        for m in _MARKER.finditer(chunk):
            numbers.extend(int(x) for x in m.group(1).split(","))
        bare = re.sub(r"\s+", " ", _MARKER.sub("", chunk)).strip()
        bare = re.sub(r"\s+([.,;:!?])", r"\1", bare)
        bare = re.sub(r"([.!?…])[\s,;]+$", r"\1", bare)  # the separators of "… end. [1], [2]"
        if numbers and previous is not None and not re.search(r"\w", bare):
            # only markers and punctuation ("[1], [2]" on a line of its own): they cite the sentence before
            merged = Claim(previous.sentence, previous.start, end, tuple(dict.fromkeys([*previous.numbers, *numbers])))
            if claims and claims[-1] is previous:
                claims[-1] = merged
            else:
                claims.append(merged)
            previous = merged
            continue
        previous = Claim(bare, start, end, tuple(dict.fromkeys(numbers)))
        if numbers and re.search(r"[^\W\d_]", bare) and points_only(bare):  # "This is stated in [2]." says nothing
            continue
        if numbers or (uncited and states_fact(bare)):
            claims.append(previous)
    return claims


def _without_code(text: str) -> str:
    """`text` with code blocks and spans blanked (same length): code is not a claim."""
    return _CODE.sub(lambda m: " " * len(m.group()), text)


def points_only(sentence: str) -> bool:
    """Does the sentence only point at its sources ("This is supported by [1] and [2].")? No figure, and every
    content word is one of pointing (`_META_WORDS`)."""
    terms = content_terms(sentence)
    return not any(t[0].isdigit() for t in terms) and set(terms) <= _META


def states_fact(sentence: str) -> bool:
    """Does an uncited sentence state something checkable? A figure, or at least FACT_MIN_TERMS content words;
    never a question, a line that introduces a list (ends with ':'), a heading or a list item's label, or a
    sentence that says the documents do not cover something."""
    s = sentence.strip().lstrip("#>*-+ ").strip()
    if not s or s.endswith(("?", ":")) or _NOT_COVERED.search(s):
        return False
    terms = content_terms(s)
    return any(t[0].isdigit() for t in terms) or len(set(terms)) >= FACT_MIN_TERMS


# ---- lexical support ------------------------------------------------------------------------------------------
def stem(word: str) -> str:
    """A light stemmer: enough for "holidays"/"holiday", "flows"/"flow", "fermenting"/"ferment"."""
    w = word.lower()
    if w.isdigit() or len(w) <= 3:
        return w
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("edly", ""), ("ed", ""), ("ly", ""), ("es", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)] + repl
            break
    else:
        if w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
    return w[:-1] if len(w) > 4 and w.endswith("e") else w


def content_terms(text: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(_MARKER.sub(" ", text)) if w.lower() not in _STOP]


def passage_terms(passage: str) -> set[str]:
    """The passage's content words; a run of figures joined by commas ("4.50,120" in a CSV row, "1,000") also
    counts as each of its pieces."""
    terms = set(content_terms(passage))
    for t in list(terms):
        if t[0].isdigit() and "," in t:
            terms.update(piece for piece in t.split(",") if piece)
    return terms


_META = META_TERMS = _meta_terms()


def lexical_support(sentence: str, passage: str) -> float:
    """The weighted share of the sentence's content words found in the passage (numbers weigh 2)."""
    terms = content_terms(sentence)
    if not terms:
        return 0.0
    have = passage_terms(passage)
    total = found = 0.0
    for t in dict.fromkeys(terms):
        weight = 2.0 if t[0].isdigit() else 1.0
        total += weight
        if t in have:
            found += weight
    return round(found / total, 3)


def new_numbers(sentence: str, passage: str) -> bool:
    """Does the sentence state a number that the passage does not contain?"""
    figures = {t for t in content_terms(sentence) if t[0].isdigit()}
    return bool(figures - passage_terms(passage))


_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w-]*[A-Za-z][\w-]*\b")


_JOINERS = frozenset("of on for and the in de del der die das des für und y la le el".split())


def acronyms(text: str) -> set[str]:
    """The initials of each run of two or more capitalised words in `text` ("Intergovernmental Panel on Climate
    Change" → "IPCC", also "PC", "CC", "IPC"…), joining words such as "on" and "of" allowed inside a run."""
    out: set[str] = set()
    run: list[str] = []
    for word in [*_WORD.findall(text), ""]:
        if word[:1].isupper():
            run.append(word[0])
            continue
        if word.lower() in _JOINERS and run:
            continue
        out.update("".join(run[i:j]) for i in range(len(run)) for j in range(i + 2, len(run) + 1))
        run = []
    return out


def new_names(sentence: str, passage: str, asked: str = "") -> bool:
    """Does the sentence name something (a capitalised word inside it, an acronym) the passage never mentions?
    An acronym of words the passage spells out ("IPCC" for "Intergovernmental Panel on Climate Change") counts
    as mentioned, and so does a name the question (`asked`) holds: the person asking named it, the model did not
    make it up ("Romans" asked about, a passage on Hadrian's Wall; "Lor Loudoun", the asker's spelling)."""
    words = [*_WORD.findall(passage), *_WORD.findall(asked)]
    have = {w.lower() for w in words} | {stem(w) for w in words}
    initials: set[str] | None = None
    for m in _NAME.finditer(sentence.strip()):
        word = m.group()
        if word.lower() in _STOP or word.lower() in have or stem(word) in have:
            continue
        if word.isupper() and 2 <= len(word) <= 8:
            initials = acronyms(passage) if initials is None else initials
            if word in initials:
                continue
        if all(part.lower() in have or stem(part) in have for part in _WORD.findall(word)):
            continue  # "Oct4", "IC50", "COVID-19": every piece is in the passage
        return True
    return False


def contradicted(sentence: str, passage: str) -> bool:
    """Does a clause of the sentence say the opposite of the passage clause it shares its words with
    (polarity.py)?"""
    passage = passage[: MAX_PASSAGE_CHARS * 2]
    sentences = [passage[s:e] for s, e in _sentence_spans(passage)]
    return contradicts(sentence[:MAX_SENTENCE_CHARS], sentences, content_terms, lexical_support)


def unfounded(sentence: str, passage: str, asked: str = "") -> bool:
    """Facts the passage cannot be what supports: a figure or a name it does not hold (names the question
    `asked` holds are the asker's), or the opposite of what it says."""
    return new_numbers(sentence, passage) or new_names(sentence, passage, asked) or contradicted(sentence, passage)


def verdict_of(lexical: float, similarity: float | None, new_facts: bool = False) -> Verdict:
    """The cheap verdict; `new_facts`: the sentence states a figure or a name its passage does not hold, so the
    passage cannot be what supports it."""
    sim = -1.0 if similarity is None else similarity
    if new_facts or (lexical < LEXICAL_WEAK and sim < SIMILARITY_WEAK):
        return "unsupported"
    if lexical >= LEXICAL_SUPPORTED or sim >= SIMILARITY_SUPPORTED:
        return "supported"
    if (lexical >= LEXICAL_WEAK and sim >= SIMILARITY_SUPPORTED_WITH) or (
        lexical >= LEXICAL_SUPPORTED_WITH and sim >= SIMILARITY_WEAK
    ):
        return "supported"
    return "weak"


# ---- the check --------------------------------------------------------------------------------------------------
async def similarities(embedder: Embedder | None, pairs: list[tuple[str, str]], timeout_s: float) -> list[float | None]:
    if embedder is None or not pairs:
        return [None] * len(pairs)
    sentences = list(dict.fromkeys(s[:MAX_SENTENCE_CHARS] for s, _ in pairs))
    passages = list(dict.fromkeys(p[:MAX_PASSAGE_CHARS] for _, p in pairs))
    local = getattr(embedder, "provider", "") in LOCAL_PROVIDERS
    try:
        work = embedder.embed_documents(sentences + passages)
        vectors = await (work if local else asyncio.wait_for(work, timeout_s))
    except Exception as exc:  # the model away or slow: the lexical score decides
        log.warning("citation check: embeddings failed (%r); lexical scores only", exc)
        return [None] * len(pairs)
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1, norms)
    index = {t: i for i, t in enumerate(sentences)}
    p_index = {t: len(sentences) + i for i, t in enumerate(passages)}
    return [
        round(float(vectors[index[s[:MAX_SENTENCE_CHARS]]] @ vectors[p_index[p[:MAX_PASSAGE_CHARS]]]), 3)
        for s, p in pairs
    ]


async def check_citations(
    text: str,
    passages: Sequence[str],
    embedder: Embedder | None,
    *,
    judge: JudgeLLM | None = None,
    judge_model: str = "",
    judge_timeout_s: float = 30.0,
    embed_timeout_s: float = EMBED_TIMEOUT_S,
    question: str = "",
) -> CitationReport:
    """One check per (citing sentence, cited number); `passages[n - 1]` is passage n's text. With a `judge`, its
    verdicts replace the cheap ones and, given the `question`, it says whether the answer answers it."""
    checks: list[CitationCheck] = []
    pairs: list[tuple[str, str]] = []
    figures: list[bool] = []
    for claim in find_claims(text, uncited=True):
        if not claim.numbers:
            best = max((lexical_support(claim.sentence, p) for p in passages), default=0.0)
            checks.append(CitationCheck(claim.sentence, claim.start, claim.end, 0, "no_source", best, None))
            continue
        for n in claim.numbers:
            if len(checks) >= MAX_CHECKS:
                break
            if not 1 <= n <= len(passages):
                checks.append(CitationCheck(claim.sentence, claim.start, claim.end, n, "missing", 0.0, None))
                continue
            passage = passages[n - 1]
            lexical = lexical_support(claim.sentence, passage)
            checks.append(CitationCheck(claim.sentence, claim.start, claim.end, n, "weak", lexical, None))
            pairs.append((claim.sentence, passage))
            figures.append(unfounded(claim.sentence, passage, question))
    scored = iter(zip(await similarities(embedder, pairs, embed_timeout_s), figures, strict=True))
    for check in checks:
        if check.verdict not in ("missing", "no_source"):
            check.similarity, unknown_figure = next(scored)
            check.verdict = verdict_of(check.lexical, check.similarity, unknown_figure)
    report = CitationReport(checks)
    claims = [c for c in checks if c.verdict not in ("missing", "no_source")]
    if judge is not None and claims:
        triples = [(c.sentence, c.n, passages[c.n - 1]) for c in claims]
        reply = await ask_judge(triples, judge, judge_model, judge_timeout_s, question=question, answer=text)
        if reply is not None:
            for claim, verdict in zip(claims, reply.verdicts, strict=True):
                claim.verdict = verdict
            report.judged = True
            report.answers_question = getattr(reply, "answers_question", None)
    return report
