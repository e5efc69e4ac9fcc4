"""GET /api/suggestions: example questions for an empty chat, from the caller's readable documents."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from litestar import get
from litestar.params import Parameter
from pydantic import BaseModel

from ragchat.core.principal import Principal
from ragchat.retrieval.search import Searcher
from ragchat.retrieval.suggestions import MAX_LIMIT, suggest


class SuggestedQuestion(BaseModel):
    text: str
    document_id: UUID
    document_title: str


class Suggestions(BaseModel):
    questions: list[SuggestedQuestion]


@get("/api/suggestions")
async def suggestions(
    searcher: Searcher,
    principal: Principal,
    limit: Annotated[int, Parameter(ge=1, le=MAX_LIMIT, description="how many questions")] = 4,
) -> Suggestions:
    """Questions drawn from your newest ready documents (headings, key phrases, titles), without the LLM."""
    found = await searcher.reads.run(principal.user_id, lambda pool: suggest(pool, principal.user_id, limit))
    return Suggestions(
        questions=[
            SuggestedQuestion(text=s.text, document_id=s.document_id, document_title=s.document_title) for s in found
        ]
    )


def suggestion_handlers() -> list[Any]:
    return [suggestions]
