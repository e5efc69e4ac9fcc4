"""Does a sentence say the opposite of the passage it leans on? A cheap contradiction check for the citation
verdicts (issue 41, item 5: checks calibrated on gold answers).

A grounded answer can still be wrong by dropping a negation: "Yes, the new deal includes Video on demand and
High Definition." leans on "there is no indication as to whether the new deal includes … Video On Demand and
High Definition" (xquad-dev, recorded by bench/answers.py). Word overlap and embeddings both call that
supported. Here each clause of the sentence is paired with the passage clause that shares most of its words
(`overlap`: the share of the sentence clause's content words the passage clause holds); when they share at
least CLAUSE_OVERLAP (nearly every word: "did not win" beside "lost" is a paraphrase, not a
contradiction) and exactly one of the two is negated, the sentence contradicts the passage.

Clauses, not sentences: "Although the vote was 51.6% in favour, this figure did not equal the 40%" holds a
negation, but not in the clause that says 51.6%; a comma before "whether", "ob", "si" … does not end the clause
("Es gibt keinen Hinweis, ob der Vertrag … enthält"). "Not only … but also" is no negation. Negation words in
English, German and Spanish (the languages the benchmarks ask in).
"""

from __future__ import annotations

import re
from collections.abc import Callable

CLAUSE_OVERLAP = 0.8  # share of a sentence clause's content words its passage clause holds
CLAUSE_MIN_TERMS = 3  # a shorter clause ("and not only") says too little to pair

_NEGATION = re.compile(
    r"\b(?:not|no|never|neither|nor|without|none|nobody|nothing|cannot|"
    r"nicht|kein|keine|keinen|keinem|keiner|keines|nie|niemals|ohne|weder|"
    r"nunca|sin|ni|ningún|ninguno|ninguna|nadie|nada|jamás|tampoco)\b|n't\b",
    re.IGNORECASE,
)
_NOT_NEGATION = re.compile(
    r"\bnot only\b|\bno (?:doubt|longer)\b|\bnicht nur\b|\bno sólo\b|\bno solo\b|\bno\.\s*\d", re.IGNORECASE
)
_CLAUSE = re.compile(
    r"[,;:()](?!\s*(?:whether|if|that|ob|dass|si|que)\b)\s*|\s[-–—]\s|"
    r"\s+(?:but|although|though|while|whereas|however|yet|aber|obwohl|während|jedoch|pero|aunque|mientras|sino)\s+",
    re.IGNORECASE,
)


def negated(text: str) -> bool:
    return bool(_NEGATION.search(_NOT_NEGATION.sub(" ", text)))


def clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE.split(text) if c and c.strip()]


def contradicts(
    sentence: str,
    passage_sentences: list[str],
    terms: Callable[[str], list[str]],
    overlap: Callable[[str, str], float],
) -> bool:
    """Does a clause of `sentence` pair with a passage clause of the other polarity? `terms` gives a text's
    content words and `overlap(clause, passage_clause)` the share of the clause's words the other holds (the
    citation check's own `content_terms` and `lexical_support`)."""
    theirs = [c for s in passage_sentences for c in clauses(s)]
    if not theirs:
        return False
    for mine in clauses(sentence):
        if len(set(terms(mine))) < CLAUSE_MIN_TERMS:
            continue
        score, best = max(((overlap(mine, c), c) for c in theirs), key=lambda x: x[0])
        if score >= CLAUSE_OVERLAP and negated(mine) != negated(best):
            return True
    return False
