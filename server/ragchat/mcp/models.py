"""What the MCP tools return: structured outputs (their JSON schemas are the tools' output schemas) and the
readable text a model gets beside them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ragchat.core.options import SearchModeName
from ragchat.core.search import ChunkHit, Confidence, RerankStatus, SearchResult, Trace


class Passage(BaseModel):
    """One search hit, numbered for citation as [number]."""

    number: int = Field(description="cite this passage as [number]")
    id: int = Field(description="the chunk's id")
    document_id: str
    title: str
    filename: str
    page: int | None = None
    section: str | None = None
    chunk_index: int = Field(description="position in the document (read_document's start_chunk)")
    content: str
    score: float = Field(
        description="0..1, never rising down the list: the rerank relevance when reranked, else the fused "
        "(hybrid), similarity (vector) or normalised BM25 (keyword) figure"
    )
    trace: Trace
    location: str | None = Field(default=None, description='where in the file: "00:12:31–00:12:58", "Slide 3"…')
    url: str | None = Field(default=None, description="the document's source web page, if any")

    @classmethod
    def of(cls, number: int, hit: ChunkHit) -> Passage:
        label = hit.location.label if hit.location else None
        return cls(
            number=number, location=label or None, url=hit.url, **hit.model_dump(mode="json", include=_HIT_FIELDS)
        )


_HIT_FIELDS = {"id", "document_id", "title", "filename", "page", "section", "chunk_index", "content", "score", "trace"}


class SearchOutput(BaseModel):
    query: str
    search_mode: SearchModeName
    reranked: bool
    rerank: RerankStatus = Field(default_factory=RerankStatus, description="what the LLM rerank did")
    confidence: Confidence
    chunks: list[Passage]

    @classmethod
    def of(cls, result: SearchResult) -> SearchOutput:
        return cls(
            query=result.query,
            search_mode=result.mode,
            reranked=result.reranked,
            rerank=result.rerank,
            confidence=result.confidence,
            chunks=[Passage.of(n, hit) for n, hit in enumerate(result.chunks, 1)],
        )


class DocumentInfo(BaseModel):
    id: str
    filename: str
    title: str
    status: str = Field(description="queued, processing, ready or failed")
    chunks: int
    pages: int | None = None
    owner: str
    access: Literal["owner", "write", "read"]
    collection_ids: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, row: dict[str, Any]) -> DocumentInfo:
        return cls(
            id=str(row["id"]),
            filename=row["filename"],
            title=row["title"],
            status=row["status"],
            chunks=int(row["chunks_total"] or 0),
            pages=row["page_count"],
            owner=row["owner_name"] or "",
            access=row["access"],
            collection_ids=[str(c) for c in row["collection_ids"] or []],
        )


class DocumentList(BaseModel):
    documents: list[DocumentInfo]
    total: int = Field(description="how many documents matched (more than listed when the limit cut the list)")


class Source(BaseModel):
    """A passage the answer cites as [number]."""

    number: int
    document_id: str
    title: str
    filename: str
    page: int | None = None
    section: str | None = None
    chunk_index: int | None = None
    score: float | None = None
    content: str = ""
    location: str | None = None
    url: str | None = None

    @classmethod
    def of(cls, number: int, chunk: dict[str, Any]) -> Source:
        location = chunk.get("location")
        return cls(
            number=number,
            document_id=str(chunk.get("document_id", "")),
            title=chunk.get("title") or "",
            filename=chunk.get("filename") or "",
            page=chunk.get("page"),
            section=chunk.get("section"),
            chunk_index=chunk.get("chunk_index"),
            score=chunk.get("score"),
            content=chunk.get("content") or "",
            location=(location.get("label") or None) if isinstance(location, dict) else None,
            url=chunk.get("url"),
        )


class AskOutput(BaseModel):
    answer: str = Field(description="the answer, citing sources as [n]")
    sources: list[Source]
    finish_reason: str | None = None
    usage: dict[str, Any] = Field(default_factory=dict)
    verification: dict[str, Any] | None = Field(
        default=None,
        description="per-sentence verdicts (supported / weak / unsupported / no_source with the passage n), "
        "not_covered, searched: the same checks the chat page shows",
    )


def where(filename: str, page: int | None, section: str | None = None, location: str | None = None) -> str:
    """`handbook.pdf, page 3, § Holidays`, `talk.vtt, at 00:12:31–00:12:58`."""
    parts = [filename]
    if page is not None:
        parts.append(f"page {page}")
    if section:
        parts.append(f"§ {section}")
    if location:
        parts.append(f"at {location}")
    return ", ".join(parts)


def search_text(out: SearchOutput) -> str:
    """Numbered passages with where they are and their score, for the model to read and cite."""
    mode = out.search_mode + (" + reranked" if out.reranked else "")
    head = f'{len(out.chunks)} passages for "{out.query}" ({mode}, confidence {out.confidence.label}).'
    if out.rerank.warning:
        head += f" {out.rerank.warning}"
    if not out.chunks:
        return head + " Nothing matched: try other words, or list_documents to see what there is."
    if out.confidence.insufficient_confidence:
        head += " Nothing matched closely: the documents may not answer this."
    blocks = [
        f"[{p.number}] {where(p.filename, p.page, p.section, p.location)} · score {p.score:.3f}\n"
        f"(document_id {p.document_id}, chunk {p.chunk_index}: {p.title})\n{p.content}"
        for p in out.chunks
    ]
    return "\n\n".join([head, *blocks])


def documents_text(out: DocumentList, query: str | None) -> str:
    if not out.documents:
        return f"No document matches {query!r}." if query else "No documents yet."
    lines = [
        f"- {d.title} ({d.filename}) · id {d.id} · {d.status}, {d.chunks} chunk{'' if d.chunks == 1 else 's'}"
        + (f", {d.pages} pages" if d.pages else "")
        + f" · owner {d.owner} ({d.access})"
        for d in out.documents
    ]
    head = f"{out.total} documents" + (f" matching {query!r}" if query else "")
    if out.total > len(out.documents):
        head += f" (the first {len(out.documents)}; narrow with query, or raise limit)"
    return "\n".join([head + ":", *lines])


def ask_text(out: AskOutput) -> str:
    if not out.sources:
        return out.answer
    lines = [
        f"[{s.number}] {where(s.filename, s.page, s.section, s.location)} (document_id {s.document_id})"
        for s in out.sources
    ]
    return "\n".join([out.answer.rstrip(), "", "Sources:", *lines])
