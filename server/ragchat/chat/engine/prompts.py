"""What the model reads: the system prompts, numbered passages, bounded history, and thread titles."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ragchat.chat.engine.citations import content_terms, sentence_spans
from ragchat.core.search import ChunkHit, SearchResult

TITLE_MAX_CHARS = 60
SOURCE_TITLE_CHARS = 80  # document titles in passage headers

SYSTEM_PROMPT = """\
You are ragchat, an assistant that answers questions about the user's own documents \
(papers, manuals, notes, reports).

Rules:
- For ANY question that the user's documents might answer, call the search_documents tool first, \
with a short, specific query. Search again with other words if the results miss the point.
- Answer only from the passages the tool returns. Start with the answer itself, in the first sentence. \
End every sentence with the number of the passage it comes from in square brackets, like [1] or [2][3]. \
Numbers continue across searches: never renumber them. Do not add sentences about the passages themselves \
(such as "This is stated in passage [2]").
- If the passages do not contain the answer, or a search reports insufficient_confidence: true, say plainly \
that the documents don't say. Do not guess and do not use outside knowledge.
- For greetings or questions clearly unrelated to the documents, answer briefly without searching.
- Be concise. Use Markdown when it helps."""

FALLBACK_SYSTEM_PROMPT = """\
You are ragchat, an assistant that answers questions about the user's own documents \
(papers, manuals, notes, reports).

The latest user message comes with numbered passages retrieved from the user's documents.
- Answer only from those passages. Start with the answer itself, in the first sentence. End every \
sentence with the number of the passage it comes from in square brackets, like [1] or [2][3]. Do not add \
sentences about the passages themselves (such as "This is stated in passage [2]").
- If the passages do not contain the answer, or they are marked insufficient_confidence: true, say plainly \
that the documents don't say. Do not guess and do not use outside knowledge.
- Be concise. Use Markdown when it helps.

For example, with these passages:
[1] handbook.pdf, page 2
Every employee gets 25 days of paid leave a year. Unused days carry over until March.
[2] minutes.docx
The board meets on the first Monday of each month.
the question "How much paid leave do staff get?" is answered:
Staff get 25 days of paid leave a year [1]."""

#: The user message's instruction, ahead of its passages: with the system prompt it is the part of every
#: retrieve-first prompt that never changes, which llama.cpp's prompt cache restores only when it is at least a
#: quarter of the prompt it cached (docs/BENCHMARKS.md, session 22); the question ends with a short reminder.
FALLBACK_INSTRUCTION = (
    "Answer my question, which comes after the passages, in one or two sentences using only the facts in the "
    "passages, and end each sentence with the number of the passage it used in square brackets, such as [1]. "
    "If the passages don't answer it, say the documents don't say."
)


def thread_title(message: str, limit: int = TITLE_MAX_CHARS) -> str:
    """The first message, whitespace collapsed, cut on a word boundary to at most `limit` characters."""
    text = " ".join(message.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]  # room for the ellipsis
    if text[limit - 1] != " " and " " in head:
        head = head.rsplit(" ", 1)[0]
    return head.rstrip(" ,.;:!?-–—") + "…"


def history_messages(rows: Iterable[Mapping[str, Any]], max_messages: int, max_chars: int) -> list[dict[str, str]]:
    """Earlier user/assistant messages (oldest first), keeping the most recent within both bounds.

    Assistant answers are sent as text only: their passages are not repeated (the model can search again).
    """
    kept: list[dict[str, str]] = []
    total = 0
    for row in reversed(list(rows)):
        content = (row.get("content") or "").strip()
        if not content or row.get("role") not in ("user", "assistant"):
            continue
        if len(kept) >= max_messages or total + len(content) > max_chars:
            break
        kept.append({"role": str(row["role"]), "content": content})
        total += len(content)
    kept.reverse()
    return kept


def _source_line(number: int, hit: ChunkHit) -> str:
    name = hit.filename
    label = " ".join(hit.title.split()) if hit.title and hit.title != Path(hit.filename).stem else ""
    if len(label) > SOURCE_TITLE_CHARS:
        label = label[: SOURCE_TITLE_CHARS - 1].rstrip() + "…"
    parts = [f"{label} ({name})" if label else name]
    if hit.page is not None:
        parts.append(f"page {hit.page}")
    if hit.section:
        parts.append(f"section: {hit.section}")
    if hit.location and hit.location.label:
        parts.append(f"at {hit.location.label}")
    return f"[{number}] " + ", ".join(parts)


def trim_passage(content: str, query: str, sentences: int) -> str:
    """`content` cut to `sentences` sentences around the one that shares the most words with `query` (the
    passage whole when `sentences` is 0 or it is that short); a cut end is marked "…"."""
    spans = sentence_spans(content)
    if sentences <= 0 or len(spans) <= sentences:
        return content.strip()
    wanted = set(content_terms(query))
    scores = [len(wanted & set(content_terms(content[s:e]))) for s, e in spans]
    best = max(range(len(spans)), key=lambda i: (scores[i], -i))
    lo = hi = best
    while hi - lo + 1 < sentences:  # grow after, then before, the hit
        if hi + 1 < len(spans):
            hi += 1
        if hi - lo + 1 < sentences and lo > 0:
            lo -= 1
    text = content[spans[lo][0] : spans[hi][1]].strip()
    return ("… " if lo > 0 else "") + text + (" …" if hi < len(spans) - 1 else "")


def format_passages(hits: Iterable[ChunkHit], start: int, *, query: str = "", sentences: int = 0) -> str:
    """Passages numbered from `start`, each with its document and page, separated by blank lines; with
    `sentences`, each cut to that many sentences around its best match with `query` (CHAT_PASSAGE_SENTENCES)."""
    return "\n\n".join(
        f"{_source_line(n, hit)}\n{trim_passage(hit.content, query, sentences)}" for n, hit in enumerate(hits, start)
    )


def _confidence_note(result: SearchResult) -> str:
    if result.confidence.insufficient_confidence:
        return (
            "insufficient_confidence: true. None of these passages closely matches the question. "
            "Unless one clearly answers it, tell the user the documents don't say."
        )
    return f"confidence: {result.confidence.label}."


def tool_message(result: SearchResult, start: int, *, sentences: int = 0) -> str:
    """The tool message for one search: a header, a confidence note, then the numbered passages."""
    if not result.chunks:
        if not result.has_embeddings:
            return "No documents are indexed yet. Tell the user to upload documents first; the documents don't say."
        return (
            f'No passages matched "{result.query}". insufficient_confidence: true. '
            "Search again with different words, or tell the user the documents don't say."
        )
    end = start + len(result.chunks) - 1
    return (
        f'Results for "{result.query}" ({result.mode} search): passages [{start}] to [{end}]. '
        f"{_confidence_note(result)}\n\n"
        f"{format_passages(result.chunks, start, query=result.query, sentences=sentences)}"
        f"{CITE_TRAILER.format(n=start)}"
    )


#: Kept last, where small models follow it (Qwen2.5-Coder-1.5B cited nothing when it only led the message).
CITE_TRAILER = (
    "\n\n---\nAnswer the user's question in one or two sentences using only facts from these passages, and end "
    "each sentence with the number of the passage it used in square brackets, such as [{n}]."
)


def fallback_user_message(question: str, result: SearchResult, start: int, *, sentences: int = 0) -> str:
    """Retrieve-then-answer for models without tool support: the passages travel in the user message, after
    the instruction (fixed, so cached) and before the question."""
    if result.chunks:
        passages = format_passages(result.chunks, start, query=question, sentences=sentences)
        context = f"{_confidence_note(result)}\n\n{passages}"
    else:
        context = "No passages matched. insufficient_confidence: true."
    return (
        f"{FALLBACK_INSTRUCTION}\n\nPassages from my documents:\n\n{context}\n\n---\nQuestion: {question}\n\n"
        "Answer in one or two sentences from the passages, ending each with its passage number, such as [1]; "
        "if they don't answer it, say the documents don't say."
    )


CONTINUE_PROMPT = (
    "Your answer above was cut off. Continue it exactly where it stopped: do not repeat any of it, do not "
    "start over, and keep citing the passages by their numbers."
)


def continue_messages(
    history: list[dict[str, str]], question: str, partial: str, tool_results: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Continuing a cut-off answer: the question with the passages it had (same numbers), the partial answer,
    and a request to go on (servers differ on completing a trailing assistant message; this works on all)."""
    chunks = [chunk for result in tool_results for chunk in result.get("chunks") or []]
    content = question
    if chunks:
        passages = "\n\n".join(
            f"[{n}] {chunk.get('filename', '')}"
            + (f", page {chunk['page']}" if chunk.get("page") is not None else "")
            + f"\n{str(chunk.get('content', '')).strip()}"
            for n, chunk in enumerate(chunks, 1)
        )
        content = f"{question}\n\nPassages from my documents:\n\n{passages}"
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        *history,
        {"role": "user", "content": content},
        {"role": "assistant", "content": partial},
        {"role": "user", "content": CONTINUE_PROMPT},
    ]
