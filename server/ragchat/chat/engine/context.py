"""What one assistant turn is made of: its events, what it produced so far (`Turn`), and the clients and
per-request choices the loop and the tools use (`ChatContext`). No logic: loop.py and toolbox.py work on these."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple
from uuid import UUID

from ragchat.chat.engine.document_tools import DocumentTools
from ragchat.chat.engine.llm_budget import MessageBudget
from ragchat.core.principal import Principal
from ragchat.core.search import SearchOptions, SearchService
from ragchat.providers.llm.base import ChatChunk, LLMProvider
from ragchat.settings import LLMSettings


class ChatEvent(NamedTuple):
    """One SSE event: its name and its JSON object."""

    event: str
    data: dict[str, Any]


@dataclass
class Turn:
    """What the assistant produced so far: saved as the assistant message, whatever happens."""

    parts: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "tool_rounds": 0}
    )
    finish_reason: str | None = None
    passages: int = 0  # passages numbered so far (the next search continues at passages + 1)
    searched: dict[tuple[str, tuple[str, ...]], tuple[int, int]] = field(default_factory=dict)  # → passages
    stop_tools: bool = False  # the model repeated a search: the next call goes without tools
    task_text: str | None = None  # a Summarise/Compare task's parts as the model reads them (a retry reuses them)
    _calls: int = 0

    @property
    def content(self) -> str:
        return "".join(self.parts)

    def next_call_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls}"

    def count(self, chunk: ChatChunk) -> None:
        self.usage["prompt_tokens"] += chunk.prompt_tokens
        self.usage["completion_tokens"] += chunk.completion_tokens
        self.finish_reason = chunk.finish_reason or "stop"


@dataclass
class ChatContext:
    """The clients and per-request choices the loop needs."""

    llm: LLMProvider
    search: SearchService
    settings: LLMSettings
    principal: Principal
    options: SearchOptions  # resolved at the entry point; every search of the turn uses them
    model: str  # this turn's chat model (the request's, the user's, or CHAT_MODEL)
    use_tools: bool = True  # false: retrieve-then-answer (CHAT_USE_TOOLS=false, /api/rag)
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    metadata: dict[str, list[str]] | None = None  # document metadata filter (the RAG endpoint's `filters`)
    context_tokens: int | None = None  # the model's window; None: requests are not fitted
    documents_only: bool = False  # nothing matched well enough: refuse (coverage.REFUSAL), never ask the model
    documents: DocumentTools | None = None  # find_documents (chat/engine/document_tools.py); None: search only
    task: str = "answer"  # summarize | compare: summarize_documents over `document_ids`, then the answer
    budget: MessageBudget | None = None  # the LLM work this message may do (llm_budget.py); None: unbounded
