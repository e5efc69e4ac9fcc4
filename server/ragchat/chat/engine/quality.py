"""Answers that failed though the model finished: caught by cheap checks, retried once, then shown as failed.

A small local model sometimes "answers" with nothing but citation markers ("[1], [2], … [6]" when the passages
were near-duplicates), repeats its previous answer word for word instead of answering the new question, or
writes about something the question and the passages never mention. `failure_of` names such an answer (or
returns None); the chat service then asks the model once more with `CORRECTION` (the `retry` event tells the
page to drop the failed text) and, if the second answer fails too, saves the turn as an error
(`answer_failed`) so the page offers Regenerate instead of showing it as an answer.

Every check is cheap (no model call) and conservative: a short answer, a refusal ("the documents do not say")
or an answer that shares words with the question or the passages is never failed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from ragchat.chat.engine.citations import content_terms

MIN_LETTERS = 1  # no letter or digit left once markers, punctuation and spaces are gone: only markers
REPEAT_RATIO = 0.9  # this similar to the previous answer (and long enough to matter): a repeat
REPEAT_MIN_CHARS = 40
SAME_QUESTION_RATIO = 0.8  # the question asked again (or nearly): the same answer is right
OFF_TOPIC_MIN_TERMS = 12  # only answers with at least this many content words are checked for topic

_MARKERS = re.compile(r"\[\d{1,3}(?:\s*,\s*\d{1,3})*\]")
_LETTERS = re.compile(r"[^\W_]", re.UNICODE)  # letters and digits ("25 [1]." is an answer)

CORRECTION = {
    "only_citations": (
        "Your answer contained only citation markers. Answer the question in words, using facts from the "
        "passages, and put the passage number in square brackets after each sentence."
    ),
    "repeated": (
        "Your answer repeated your previous answer. Answer the new question itself, from the passages, citing "
        "them by number; if the passages do not answer it, say that the documents do not cover it."
    ),
    "off_topic": (
        "Your answer did not address the question. Answer the question that was asked, from the passages, "
        "citing them by number; if they do not answer it, say that the documents do not cover it."
    ),
}
FAILED = {
    "only_citations": "The model answered with citation markers only.",
    "repeated": "The model repeated its previous answer instead of answering the question.",
    "off_topic": "The model's answer did not address the question.",
}


@dataclass(frozen=True)
class Failure:
    reason: str  # a key of CORRECTION

    @property
    def correction(self) -> str:
        return CORRECTION[self.reason]

    @property
    def message(self) -> str:
        return f"{FAILED[self.reason]} It was asked again and failed again: try Regenerate, or a larger model."


def failure_of(answer: str, question: str, previous: tuple[str, str] | None, passages: Sequence[str]) -> Failure | None:
    """The way `answer` failed, or None when it looks like an answer. `previous`: the last (question, answer)
    the model was shown; repeating that answer is a failure only when the question changed."""
    text = answer.strip()
    if not text:
        return None  # an empty answer is the loop's own error (LLMBadResponse)
    if len(_LETTERS.findall(_MARKERS.sub(" ", text))) < MIN_LETTERS and _MARKERS.search(text):
        return Failure("only_citations")
    if (
        previous
        and len(text) >= REPEAT_MIN_CHARS
        and _similar(text, previous[1]) >= REPEAT_RATIO
        and _similar(question, previous[0]) < SAME_QUESTION_RATIO
    ):
        return Failure("repeated")
    terms = set(content_terms(text))
    if passages and len(terms) >= OFF_TOPIC_MIN_TERMS:  # without passages it may be small talk
        context = set(content_terms(question))
        for passage in passages:
            context.update(content_terms(passage))
        if context and not terms & context:
            return Failure("off_topic")
    return None


def _similar(a: str, b: str) -> float:
    norm_a, norm_b = " ".join(_MARKERS.sub("", a).lower().split()), " ".join(_MARKERS.sub("", b).lower().split())
    return SequenceMatcher(None, norm_a[:4000], norm_b[:4000], autojunk=False).ratio()


def previous_exchange(history: Sequence[dict[str, str]]) -> tuple[str, str] | None:
    """The last (question, answer) the model was shown, if any."""
    answer = None
    for message in reversed(history):
        if answer is None and message.get("role") == "assistant" and message.get("content"):
            answer = message["content"]
        elif answer is not None and message.get("role") == "user":
            return message.get("content", ""), answer
    return ("", answer) if answer is not None else None
