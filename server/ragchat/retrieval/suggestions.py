"""Example questions for an empty chat, drawn from the reader's own library without calling the LLM.

From the newest readable ready documents (at most `DOCS_SCANNED`): their headings (chunk `section`, in
document order), their most frequent two-word phrases (from the first chunks, counted in SQL, stop words
left out by Postgres' English dictionary) and their titles, put into question templates. The choice is
deterministic (same library, same questions), spread over documents, and bounded: three indexed queries over
at most DOCS_SCANNED documents × a few chunks, whatever the library's size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from ragchat.db.pool import Pool
from ragchat.readscope.sql import read_scope, readable, scope_params

DOCS_SCANNED = 24  # newest readable ready documents looked at
HEADINGS_PER_DOC = 3
PHRASES_PER_DOC = 2
PHRASE_CHUNKS = 3  # the first chunks of a document whose text is counted for phrases
PHRASE_CHARS = 3000  # of each of those chunks
MAX_LIMIT = 12
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_NUMBERING = re.compile(r"^(?:[0-9IVXivx]+[.)]?\s*)+(?=[^\W\d_])")
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W\d_]{3,}")
_DIGITS = re.compile(r"\d{4,}")
_HEXISH = re.compile(r"(?i)[0-9a-f-]{8,}")


@dataclass(frozen=True)
class Suggestion:
    text: str
    document_id: UUID
    document_title: str


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def display_title(title: str, filename: str) -> str:
    """A title for a question: "employee_handbook.pdf" → "employee handbook"."""
    raw = (title or filename or "").strip()
    if raw.lower() == (filename or "").strip().lower():
        raw = _EXTENSION.sub("", raw)
    if " " not in raw:  # a file name's stem: "volcano_notes"
        raw = raw.replace("_", " ")
    return _short(raw, 60) or "this document"


def id_like(title: str) -> bool:
    """A name no person would ask about: "scifact-991139", "doc_00042", a hash or UUID, no word at all."""
    flat = title.strip()
    if not _LETTER.search(flat) or _HEXISH.fullmatch(flat.replace(" ", "")):
        return True
    return len(_WORD.findall(flat)) <= 1 and bool(_DIGITS.search(flat))


def heading_topic(section: str, title: str) -> str | None:
    """The last part of a heading path, its numbering dropped ("2 > 2.1 Leave" → "Leave"); None when it is
    no topic (no letters, a page label, the title again)."""
    last = section.split(" > ")[-1].strip()
    last = _NUMBERING.sub("", last).strip(" :.-–—")
    if len(_LETTER.findall(last)) < 3 or last.lower() == title.lower():
        return None
    if re.fullmatch(r"(?i)(page|slide|sheet|chapter|part|section)\s*\d*", last):
        return None
    return _short(last, 70)


_DOCUMENTS = """SELECT d.id, d.title, d.filename FROM documents d
    WHERE d.status = 'ready' AND {readable}
    ORDER BY d.created_at DESC, d.id LIMIT %(docs)s"""

_HEADINGS = """SELECT document_id, section FROM (
        SELECT DISTINCT ON (c.document_id, c.section) c.document_id, c.section, c.chunk_index
        FROM document_chunks c
        WHERE c.document_id = ANY(%(ids)s) AND c.chunk_index < 400 AND coalesce(c.section, '') <> ''
        ORDER BY c.document_id, c.section, c.chunk_index
    ) s ORDER BY document_id, chunk_index"""

# two-word phrases repeated in a document's first chunks; words of 4+ letters that are not stop words of the
# chunk's own text-search configuration (migrations/0029)
_PHRASES = """WITH words AS (
        SELECT c.document_id, c.text_search_config AS cfg, c.id AS chunk, t.w, t.n
        FROM document_chunks c
        CROSS JOIN LATERAL regexp_split_to_table(lower(left(c.content, %(chars)s)), '[^[:alpha:]]+')
            WITH ORDINALITY AS t(w, n)
        WHERE c.document_id = ANY(%(ids)s) AND c.chunk_index < %(chunks)s
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
    """Up to `limit` (1..MAX_LIMIT) questions, spread over the newest readable ready documents."""
    limit = max(1, min(MAX_LIMIT, limit))
    async with pool.connection() as conn:
        scope = await read_scope(conn, user_id)
        params: dict[str, Any] = {**scope_params(scope), "docs": DOCS_SCANNED}
        sql = _DOCUMENTS.format(readable=readable(scope, "d.owner_id", "d.id"))
        docs = list(await (await conn.execute(sql, params)).fetchall())  # type: ignore[arg-type]
        if not docs:
            return []
        ids = [d["id"] for d in docs]
        headings = list(await (await conn.execute(_HEADINGS, {"ids": ids})).fetchall())
        phrases = list(
            await (
                await conn.execute(
                    _PHRASES,
                    {"ids": ids, "chars": PHRASE_CHARS, "chunks": PHRASE_CHUNKS, "per_doc": PHRASES_PER_DOC},
                )
            ).fetchall()
        )
    return pick(docs, headings, phrases, limit)


def pick(
    docs: list[dict[str, Any]], headings: list[dict[str, Any]], phrases: list[dict[str, Any]], limit: int
) -> list[Suggestion]:
    """Each document's candidates (headings, then phrases, then its title), taken round-robin over documents
    (newest first) so the questions cover several documents; the same question is never offered twice."""
    by_doc: dict[UUID, list[tuple[str, str]]] = {d["id"]: [] for d in docs}
    titles = {d["id"]: display_title(d["title"], d["filename"]) for d in docs}
    heading_count: dict[UUID, int] = {}
    for row in headings:
        doc, title = row["document_id"], titles[row["document_id"]]
        topic = heading_topic(row["section"], title)
        if topic and heading_count.get(doc, 0) < HEADINGS_PER_DOC:
            heading_count[doc] = heading_count.get(doc, 0) + 1
            by_doc[doc].append(("heading", topic))
    for row in phrases:
        by_doc[row["document_id"]].append(("phrase", row["phrase"]))
    for doc in by_doc:
        by_doc[doc].append(("title", ""))

    out: list[Suggestion] = []
    seen: set[str] = set()
    depth = 0
    while len(out) < limit and any(depth < len(c) for c in by_doc.values()):
        for doc, candidates in by_doc.items():
            if depth >= len(candidates) or len(out) >= limit:
                continue
            kind, topic = candidates[depth]
            title = titles[doc]
            named = not id_like(title)  # an id-like file name is never put into a question
            if kind == "heading":
                text = f"What does {title} say about {topic}?" if named else f"What do my documents say about {topic}?"
            elif kind == "phrase":
                text = f"What is meant by “{topic}” in {title}?" if named else f"What is meant by “{topic}”?"
            elif named:
                text = f"What are the key points of {title}?"
            else:
                continue
            if text.lower() not in seen:
                seen.add(text.lower())
                out.append(Suggestion(text, doc, title))
        depth += 1
    return out
