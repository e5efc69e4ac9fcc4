"""Example questions for an empty chat, from the documents the reader chose to ask about, without the LLM.

Which documents: the largest (by chunk count, then bytes) of the newest SIZE_WINDOW readable ready documents.
(Most-read first was tried and left out: what was read lives in the chat domain's tables, which retrieval may
not read; it needs a contract in core wired by the runtime.) A document with fewer than MIN_DOC_CHARS
characters of text (one-line notes, tiny records) is never used; with nothing left there are no questions,
and the page keeps its empty-state text.

What is asked: a document's biggest sections' headings (the most chunks), its LLM-extracted topics (metadata,
when extraction is on), two-word phrases its opening repeats, then what it is about; worded as "What does the
employee handbook say about remote work?", with no file extension, numbering or id-like name in it. Taken
round-robin over the documents in that order, deterministic (same library and history, same questions).

Bounded whatever the library's size: every query is an index walk with a LIMIT (documents by owner and date,
chunks by document), so the rows read do not grow with the library (tests/integration/test_suggestions.py
counts them at 10,000 documents). The price: a large document older than the newest SIZE_WINDOW documents is
not looked at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg import sql

from ragchat.db.pool import Conn, Pool
from ragchat.readscope.sql import SHARED_DOCUMENTS, ReadScope, owned, read_scope, readable, scope_params

MAX_LIMIT = 12
MIN_DOC_CHARS = 1000  # characters of text below which a document is a note, never asked about
FLOOR_CHUNKS = 16  # chunks of a document whose characters are counted for that floor (any 16 suffice)
SIZE_WINDOW = 2000  # newest readable ready documents (per arm: own, shared) whose largest are candidates
LARGEST_DOCS = 24  # largest documents of that window kept as candidates
HEADING_CHUNKS = 200  # chunks of a chosen document whose headings are counted
HEADINGS_PER_DOC = 3
TOPICS_PER_DOC = 3
PHRASE_CHUNKS = 3  # the first chunks of a chosen document whose text is counted for phrases
PHRASE_CHARS = 3000  # of each of those chunks
PHRASES_PER_DOC = 2

_EXTENSION = re.compile(
    r"(?i)\.(?:pdf|docx?|odt|rtf|txt|md|markdown|rst|html?|xhtml|epub|pptx?|xlsx?|csv|tsv|json|xml|eml|msg|"
    r"png|jpe?g|tiff?|gif|bmp|webp)$"
)
_PRODUCER = re.compile(r"(?i)^(?:microsoft\s+(?:word|powerpoint|excel)|untitled)\s*-\s*")
_NUMBERING = re.compile(
    r"^(?:(?:[0-9]{1,3}|[IVXivx]+)[.)]\s*|[A-Za-z]\)\s*|[0-9]{1,3}(?:\.[0-9]{1,3})*\s+)+(?=[^\W\d_])"
)
_PART = re.compile(r"(?i)^(?:chapter|section|part|appendix|article|step|unit|lesson)\s+[0-9IVXivx]+[.:)]?\s*[-–—:]?\s*")
_LEADER = re.compile(r"\s*(?:\.{2,}|…)\s*\d*\s*$")  # a table of contents' "Leave ..... 12"
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W\d_]{3,}")
_NUMBERISH = re.compile(r"\d{4,}|#\s*\d|(?<![\w.])\d{2,}(?![\w.])")
_HEXISH = re.compile(r"(?i)[0-9a-f-]{8,}")
_NO_TOPIC = re.compile(
    r"(?i)(?:page|slide|sheet|chapter|part|section|table|figure|appendix)\s*[0-9ivx]*|(?:table of )?contents|"
    r"introduction|overview|summary|abstract|preface|foreword|acknowledge?ments?|references|bibliography|index|"
    r"glossary|conclusions?|background|about|notes?|disclaimer|copyright|untitled|document|title|toc|front matter"
)


@dataclass(frozen=True)
class Suggestion:
    text: str
    document_id: UUID
    document_title: str


def display_title(title: str, filename: str) -> str:
    """A title to name in a question: "employee_handbook.pdf" → "employee handbook", "03 Budget.docx" → "Budget"."""
    raw = _PRODUCER.sub("", " ".join((title or filename or "").split()))
    raw = _EXTENSION.sub("", raw).strip()
    if " " not in raw:  # a file name's stem: "volcano_notes", "q3-budget"
        raw = re.sub(r"[_-]+", " ", raw).strip()
    raw = _NUMBERING.sub("", raw).strip() or raw
    return raw if len(raw) <= 60 else raw[:59].rstrip() + "…"


def id_like(title: str) -> bool:
    """A name no person would ask about: "scifact-991139", "doc_00042", "Invoice #56", a hash or UUID, no word."""
    flat = title.strip()
    if not _LETTER.search(flat) or _HEXISH.fullmatch(flat.replace(" ", "")):
        return True
    return len(_WORD.findall(flat)) <= 1 and bool(_NUMBERISH.search(flat))


def named(title: str) -> str:
    """The title inside a sentence: "the employee handbook" (a file name's words), “Staff Handbook” (a title)."""
    return f"the {title}" if title[:1].islower() else f"“{title}”"


def _sentence_case(topic: str) -> str:
    """Inside a sentence "Remote work" becomes "remote work"; "Paid Holidays", "GDPR rules", "iPhone" stay."""
    words = topic.split()
    first = words[0]
    title_case = len(words) > 1 and all(w[:1].isupper() for w in words if len(w) > 3)
    if first[:1].isupper() and first[1:].islower() and not title_case:
        return first[:1].lower() + topic[1:]
    return topic


def heading_topic(section: str, title: str) -> str | None:
    """The last part of a heading path without its numbering ("2 > 2.1 Paid leave" → "Paid leave"); None when it
    is no topic to ask about (no letters, a page or chapter label, "Introduction", the title again, a sentence)."""
    last = section.split(" > ")[-1].strip()
    last = _LEADER.sub("", _PART.sub("", _NUMBERING.sub("", last))).strip(" :.-–—")
    if len(_LETTER.findall(last)) < 3 or last.lower() == title.lower() or _NO_TOPIC.fullmatch(last):
        return None
    if len(last) > 60 or len(last.split()) > 8 or id_like(last):
        return None
    return last


def question_from_heading(section: str) -> str | None:
    """A heading that is itself a question ("How do I request leave?") is asked as it is."""
    last = _NUMBERING.sub("", section.split(" > ")[-1].strip()).strip()
    return last if last.endswith("?") and 3 <= len(last.split()) <= 14 and not id_like(last) else None


# ---- which documents ------------------------------------------------------------------------------------------

# The newest SIZE_WINDOW documents of an arm (an index walk of documents_owner_idx for the reader's own), their
# LARGEST_DOCS largest.
_LARGEST = """(SELECT w.id FROM (
        SELECT d.id, d.chunks_total, d.byte_size FROM documents d
        WHERE {where} AND d.status = 'ready' ORDER BY d.created_at DESC LIMIT %(window)s
    ) w ORDER BY w.chunks_total DESC NULLS LAST, w.byte_size DESC, w.id LIMIT %(largest)s)"""

# Candidates that pass the floor: characters of at most FLOOR_CHUNKS chunks each (a primary-key walk of
# document_chunks_document_idx with a LIMIT, whatever the document's size).
_CANDIDATES = """WITH candidates AS (
        SELECT d.id FROM documents d WHERE d.id = ANY(%(read)s) AND d.status = 'ready' AND {readable}
        UNION {arms}
    )
    SELECT d.id, d.title, d.filename, coalesce(d.chunks_total, 0) AS chunks, d.metadata -> 'topics' AS topics,
           s.chars
    FROM candidates k JOIN documents d ON d.id = k.id
    CROSS JOIN LATERAL (
        SELECT coalesce(sum(length(x.content)), 0) AS chars
        FROM (SELECT c.content FROM document_chunks c WHERE c.document_id = d.id LIMIT %(floor_chunks)s) x
    ) s
    WHERE s.chars >= %(min_chars)s"""


def _candidates_sql(scope: ReadScope) -> sql.Composed:
    arms = [sql.SQL(_LARGEST).format(where=owned("d.owner_id"))]
    if scope.shared:  # others' documents shared with the reader: at most SIZE_WINDOW of them looked at
        shared = sql.SQL("d.id IN ({} LIMIT %(window)s) AND d.owner_id <> %(uid)s").format(SHARED_DOCUMENTS)
        arms.append(sql.SQL(_LARGEST).format(where=shared))
    return sql.SQL(_CANDIDATES).format(
        readable=readable(scope, "d.owner_id", "d.id"), arms=sql.SQL(" UNION ").join(arms)
    )


# ---- what to ask about them -------------------------------------------------------------------------------------

# headings by the chunks under them (the biggest sections first), from at most HEADING_CHUNKS chunks per document
_HEADINGS = """SELECT d.doc AS document_id, h.section, count(*) AS chunks, min(h.chunk_index) AS first
    FROM unnest(%(ids)s::uuid[]) AS d(doc)
    CROSS JOIN LATERAL (
        SELECT c.section, c.chunk_index FROM document_chunks c
        WHERE c.document_id = d.doc AND coalesce(c.section, '') <> '' LIMIT %(chunks)s
    ) h
    GROUP BY d.doc, h.section ORDER BY d.doc, count(*) DESC, min(h.chunk_index)"""

# two-word phrases repeated in a document's first chunks; words of 4+ letters that are not stop words of the
# chunk's own text-search configuration (migrations/0029)
_PHRASES = """WITH words AS (
        SELECT f.document_id, f.cfg, f.chunk, t.w, t.n
        FROM unnest(%(ids)s::uuid[]) AS d(doc)
        CROSS JOIN LATERAL (
            SELECT c.document_id, c.text_search_config AS cfg, c.id AS chunk, c.content FROM document_chunks c
            WHERE c.document_id = d.doc AND c.chunk_index < %(chunks)s LIMIT %(chunks)s
        ) f
        CROSS JOIN LATERAL regexp_split_to_table(lower(left(f.content, %(chars)s)), '[^[:alpha:]]+')
            WITH ORDINALITY AS t(w, n)
    ), pairs AS (
        SELECT document_id, cfg, w AS w1, lead(w) OVER (PARTITION BY chunk ORDER BY n) AS w2 FROM words
    ), counted AS (
        SELECT document_id, cfg, w1, w2, count(*) AS freq FROM pairs
        WHERE length(w1) >= 4 AND length(w2) >= 4 AND w1 <> w2
        GROUP BY 1, 2, 3, 4 HAVING count(*) >= 2
    ), ranked AS (
        SELECT document_id, w1 || ' ' || w2 AS phrase, freq,
               row_number() OVER (PARTITION BY document_id ORDER BY freq DESC, w1, w2) AS r
        FROM counted
        WHERE to_tsvector(cfg, w1) <> ''::tsvector AND to_tsvector(cfg, w2) <> ''::tsvector
    )
    SELECT document_id, phrase FROM ranked WHERE r <= %(per_doc)s ORDER BY document_id, r"""


async def suggest(pool: Pool, user_id: UUID, limit: int = 4) -> list[Suggestion]:
    """Up to `limit` (1..MAX_LIMIT) questions about the reader's largest readable documents."""
    async with pool.connection() as conn:
        return await suggest_on(conn, user_id, limit)


async def suggest_on(conn: Conn, user_id: UUID, limit: int = 4) -> list[Suggestion]:
    """`suggest` on a connection the caller holds."""
    limit = max(1, min(MAX_LIMIT, limit))
    scope = await read_scope(conn, user_id)
    params: dict[str, Any] = scope_params(scope)
    reads: dict[UUID, int] = {}  # most-read first: not yet (the module docstring)
    found = await conn.execute(
        _candidates_sql(scope),
        {
            **params,
            "read": list(reads),
            "window": SIZE_WINDOW,
            "largest": LARGEST_DOCS,
            "floor_chunks": FLOOR_CHUNKS,
            "min_chars": MIN_DOC_CHARS,
        },
    )
    docs = sorted(
        await found.fetchall(), key=lambda d: (-reads.get(d["id"], 0), -d["chunks"], -d["chars"], str(d["id"]))
    )[:limit]
    if not docs:
        return []
    ids = [d["id"] for d in docs]
    headings = await (await conn.execute(_HEADINGS, {"ids": ids, "chunks": HEADING_CHUNKS})).fetchall()
    phrases = await (
        await conn.execute(
            _PHRASES, {"ids": ids, "chars": PHRASE_CHARS, "chunks": PHRASE_CHUNKS, "per_doc": PHRASES_PER_DOC}
        )
    ).fetchall()
    return pick(docs, headings, phrases, limit)


def _topics(value: Any) -> list[str]:
    """LLM-extracted `metadata.topics` (documents/metadata/extraction.py), whatever a user may have put there."""
    items = value if isinstance(value, list) else []
    return [" ".join(t.split()) for t in items if isinstance(t, str) and 3 <= len(t.strip()) <= 60][:TOPICS_PER_DOC]


def _candidates(
    doc: dict[str, Any], title: str, headings: list[dict[str, Any]], phrases: list[dict[str, Any]]
) -> list[tuple[str, str]]:
    """A document's questions to offer, best first: ("ask", question) or ("topic", topic) or ("about", "")."""
    out: list[tuple[str, str]] = []
    seen = {title.lower()}
    for row in headings:
        if len(out) >= HEADINGS_PER_DOC:
            break
        asked = question_from_heading(row["section"])
        topic = heading_topic(row["section"], title)
        if asked and asked.lower() not in seen:
            seen.add(asked.lower())
            out.append(("ask", asked))
        elif topic and topic.lower() not in seen:
            seen.add(topic.lower())
            out.append(("topic", topic))
    topics = _topics(doc.get("topics"))
    if len(out) + len(topics) < 2:  # repeated phrases ("costs fell" too) only for a document without headings
        topics += [r["phrase"] for r in phrases]
    for topic in topics:
        if topic.lower() not in seen and topic.lower() not in title.lower() and not id_like(topic):
            seen.add(topic.lower())
            out.append(("topic", topic))
    out.append(("about", ""))
    return out


def pick(
    docs: list[dict[str, Any]], headings: list[dict[str, Any]], phrases: list[dict[str, Any]], limit: int
) -> list[Suggestion]:
    """Each document's questions (headings, topics, phrases, then what it is about), taken round-robin over the
    documents in the order given, so the questions cover several; the same question is never offered twice."""
    titles = {d["id"]: display_title(d["title"], d["filename"]) for d in docs}
    by_doc = {
        d["id"]: _candidates(
            d,
            titles[d["id"]],
            [h for h in headings if h["document_id"] == d["id"]],
            [p for p in phrases if p["document_id"] == d["id"]],
        )
        for d in docs
    }
    out: list[Suggestion] = []
    seen: set[str] = set()
    depth = 0
    while len(out) < limit and any(depth < len(c) for c in by_doc.values()):
        for doc, candidates in by_doc.items():
            if depth >= len(candidates) or len(out) >= limit:
                continue
            text = _question(*candidates[depth], titles[doc])
            if text and text.lower() not in seen:
                seen.add(text.lower())
                out.append(Suggestion(text, doc, titles[doc]))
        depth += 1
    return out


def _question(kind: str, topic: str, title: str) -> str | None:
    if kind == "ask":
        return topic
    if id_like(title) or not title:  # an id-like name is never put into a question
        return f"What do my documents say about {_sentence_case(topic)}?" if kind == "topic" else None
    if kind == "topic":
        return f"What does {named(title)} say about {_sentence_case(topic)}?"
    return f"What is {named(title)} about?"
