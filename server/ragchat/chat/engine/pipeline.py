"""The answer pipeline every door runs: the chat page's threads, `POST /api/rag`, `/v1`, MCP `ask` and
`ragchat search --rag`.

    question ─> task (a summary or comparison asked in words reaches the whole-document tools)
             ─> a first question that is plainly a lookup: retrieve first (one search, one model call)
             ─> the model loop (loop.py: search policy already resolved into `ChatContext.options`)
             ─> a failed answer (quality.py) asked once more, then an error, never shown as an answer
             ─> an answer that made no search although one was required: retrieved first and asked again
             ─> verification (verify.py): per-sentence verdicts, citation repair, "not in your documents"

Saving to a thread is the caller's hook around it (service.py); nothing here touches the database.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import Any
from uuid import UUID

from ragchat.chat.engine.citations import find_claims
from ragchat.chat.engine.coverage import NOT_COVERED
from ragchat.chat.engine.faults import ChatFault
from ragchat.chat.engine.loop import ChatContext, ChatEvent, Turn, run_loop
from ragchat.chat.engine.quality import FAILED, Failure, failure_of, previous_exchange
from ragchat.chat.engine.verify import numbered_sources
from ragchat.core.errors import RagchatError

log = logging.getLogger(__name__)

UNSEARCHED_NOTE = "The model answered without searching your documents. Searching them first…"
_SUMMARIZE = re.compile(
    r"\b(?:summari[sz]e|summari[sz]ing|summary|sum up|overview|tl;?dr|zusammenfass\w*|resum\w*|res[uú]men)\b",
    re.IGNORECASE,
)
_COMPARE = re.compile(
    r"\b(?:compare|comparing|comparison|contrast|differences?\s+between|differ|vs\.?|versus|vergleich\w*|compar[ae]r?)\b",
    re.IGNORECASE,
)


class AnswerFailed(RagchatError):
    """The answer failed twice (quality.py): the turn ends as an error the page offers to regenerate; the JSON
    doors answer 502 with this code."""

    status_code = 502
    code = "answer_failed"

    def __init__(self, fault: ChatFault) -> None:
        super().__init__(fault.message)
        self.fault = fault


def task_of(question: str, task: str, document_ids: Sequence[UUID] | None) -> str:
    """The task a question asks for: `summarize` or `compare` when it says so in words and the scope names the
    documents (one or more to summarise; at least two to compare), else `task` unchanged."""
    if task != "answer" or not document_ids or len(question) > 300:
        return task
    ids = list(dict.fromkeys(document_ids))
    if len(ids) >= 2 and _COMPARE.search(question):
        return "compare"
    if _SUMMARIZE.search(question) and len(ids) <= 4:
        return "summarize"
    return task


_LOOKUP = re.compile(
    r"^\s*(?:who|whom|whose|what|which|when|where|why|how|is|are|was|were|do|does|did|can|could|should|will|"
    r"wer|wen|wem|wessen|was|welche[rsnm]?|wann|wo|wie|warum|qui[eé]n(?:es)?|qu[eé]|cu[aá]l(?:es)?|cu[aá]ndo|"
    r"d[oó]nde|c[oó]mo|por qu[eé]|cu[aá]nt[oa]s?)\b|\?\s*$",
    re.IGNORECASE,
)
_NOT_A_LOOKUP = re.compile(
    r"\b(?:which|what|all|every|list|find|how many)\s+(?:of\s+(?:my|the)\s+)?(?:documents?|files?|notes?|papers?)\b",
    re.IGNORECASE,
)


def plain_lookup(ctx: ChatContext, question: str, history: Sequence[dict[str, Any]]) -> bool:
    """Answer retrieve-first (one search with the question, one model call)? CHAT_RETRIEVE_FIRST=auto: a first
    question that asks for a fact (a question word or a question mark, three or more words), not one about the
    documents themselves ("which documents mention …": the document tools answer those), and not a summary."""
    mode = ctx.settings.chat_retrieve_first
    if mode == "never" or not ctx.use_tools or ctx.task != "answer" or history:
        return False
    if mode == "always":
        return True
    words = question.split()
    return 3 <= len(words) <= 60 and bool(_LOOKUP.search(question)) and not _NOT_A_LOOKUP.search(question)


def _unsearched(ctx: ChatContext, turn: Turn) -> bool:
    """The model answered with facts, no search and no document tool ran, and a search was required."""
    if turn.tool_results or turn.finish_reason == NOT_COVERED or not ctx.use_tools or ctx.task != "answer":
        return False
    if not (ctx.settings.chat_search_first or ctx.documents_only):
        return False
    return bool(find_claims(turn.content, uncited=True))


async def run_answer(
    ctx: ChatContext,
    messages: list[dict[str, Any]],
    question: str,
    history: Sequence[dict[str, Any]],
    turn: Turn,
    *,
    check_quality: bool = True,
) -> AsyncGenerator[ChatEvent, None]:
    """The loop's events, with the answer rules applied: a failed answer is asked once more (a `retry` event
    tells the page to drop the failed text), twice failed raises `AnswerFailed`; an answer that skipped a
    required search is replaced by one written after a search with the question. `ctx` is not changed."""
    if plain_lookup(ctx, question, history):
        ctx = replace(ctx, use_tools=False)
    retried = False
    while True:
        async with aclosing(run_loop(ctx, messages, question, turn)) as events:
            async for event in events:
                yield event
        if not check_quality:
            return
        if _unsearched(ctx, turn) and not retried:
            retried = True
            log.info("chat: %s answered without searching: retrieve first, then answer", ctx.model)
            yield ChatEvent("retry", {"reason": "unsearched", "message": UNSEARCHED_NOTE})
            turn.parts.clear()
            ctx = replace(ctx, use_tools=False)
            continue
        if turn.finish_reason == NOT_COVERED:
            return
        passages = [s["content"] for s in numbered_sources(turn.tool_results)]
        failure: Failure | None = failure_of(turn.content, question, previous_exchange(history), passages)
        if failure is None:
            return
        if retried:
            log.warning("chat: the answer failed twice (%s)", failure.reason)
            raise AnswerFailed(ChatFault("answer_failed", failure.message))
        retried = True
        log.info("chat: the answer failed (%s): asking once more", failure.reason)
        yield ChatEvent("retry", {"reason": failure.reason, "message": FAILED[failure.reason] + " Asking again…"})
        messages += [
            {"role": "assistant", "content": turn.content},
            {"role": "user", "content": failure.correction},
        ]
        turn.parts.clear()
