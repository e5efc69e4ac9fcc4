"""Request and response models of the chat, threads and RAG routes, and the payloads of the SSE events
(docs/SSE.md). Event payloads are built as plain dicts on the hot path; tests validate every emitted event
against these models, and the OpenAPI document carries them as the `text/event-stream` schema."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, Field, field_validator

from ragchat.core.errors import BadRequest
from ragchat.core.options import SearchModeName
from ragchat.core.schemas import Flag
from ragchat.core.search import Confidence, MetadataFilter, RerankStatus, Timings
from ragchat.httpapi.search import Passage

MAX_QUERY_CHARS = 8000
TITLE_MAX_CHARS = 200
Task = Literal["answer", "summarize", "compare"]
MAX_TASK_DOCUMENTS = 4
MODEL_NAME_PATTERN = r"^[^\x00-\x1f]*[^\s\x00-\x1f][^\x00-\x1f]*$"  # not blank, no control characters


class ChatBody(BaseModel):
    message: str = Field(
        default="",
        description="the question (CHAT_MAX_MESSAGE_CHARS at most); may be empty with regenerate_id or continue_id",
    )
    thread_id: UUID | None = Field(default=None, description="continue this thread; omitted: a new thread")
    document_ids: list[UUID] | None = Field(default=None, description="search only these documents")
    collection_ids: list[UUID] | None = Field(default=None, description="search only these collections")
    search_mode: str | None = Field(
        default=None, description="vector, keyword or hybrid (default: your preference, else SEARCH_MODE)"
    )
    rerank: Flag | None = Field(
        default=None, description="rerank with the LLM (default: your preference, else RERANK_ENABLED)"
    )
    model: str | None = Field(
        default=None, min_length=1, max_length=200, pattern=MODEL_NAME_PATTERN,
        description="the chat model for this answer (default: the user's setting, else CHAT_MODEL)",
    )  # fmt: skip
    documents_only: Flag | None = Field(
        default=None,
        description="true: when no passage matches well enough, say the documents do not cover it instead of "
        "answering from the model's own knowledge (default: the thread's setting as the client sends it, else "
        "your preference, else CHAT_DOCUMENTS_ONLY)",
    )
    regenerate_id: UUID | None = Field(
        default=None, description="an answer of the thread: answer its question again, as a new sibling branch"
    )
    continue_id: UUID | None = Field(
        default=None, description="an incomplete or failed answer of the thread: continue its text in place"
    )
    edit_id: UUID | None = Field(
        default=None, description="a question of the thread: `message` replaces it as a new sibling branch"
    )
    task: Task = Field(
        default="answer",
        description="summarize or compare: read the whole of `document_ids` (1 to 4) with a map-reduce over their "
        "sections (`progress` events), then answer `message` from the parts' summaries; answer: the usual turn",
    )


class BranchBody(BaseModel):
    message_id: UUID = Field(description="show the branch through this message (its newest descendant leaf)")


class Stopped(BaseModel):
    stopped: bool = Field(description="false: no answer was in progress in this process")


class ThreadSettings(BaseModel):
    """The chat's retrieval controls saved with a thread (the client sends them with each question)."""

    document_ids: list[UUID] | None = Field(default=None, max_length=500, description="search only these")
    collection_ids: list[UUID] | None = Field(default=None, max_length=100, description="search only these")
    search_mode: SearchModeName | None = None
    rerank: Flag | None = None
    model: str | None = Field(default=None, min_length=1, max_length=200, pattern=MODEL_NAME_PATTERN)
    documents_only: Flag | None = Field(default=None, description="overrides your preference in this thread")


class ThreadPatch(BaseModel):
    title: str | None = Field(
        default=None, min_length=1, max_length=TITLE_MAX_CHARS, pattern=r"\S", description="spaces are collapsed"
    )
    settings: ThreadSettings | None = Field(default=None, description="replaces the thread's saved settings")


class Thread(BaseModel):
    id: UUID
    title: str
    created_at: datetime
    updated_at: datetime = Field(description="the last question's time (renaming does not change it)")
    settings: ThreadSettings = Field(default_factory=ThreadSettings)


class Feedback(BaseModel):
    """A thumbs up or down (or none) on an answer, with an optional note."""

    message_id: UUID
    rating: Literal["up", "down"] | None
    note: str | None
    updated_at: datetime


class FeedbackBody(BaseModel):
    rating: Literal["up", "down"] | None = Field(description="null: no rating")
    note: str | None = Field(default=None, max_length=2000)


class ThreadList(BaseModel):
    threads: list[Thread]


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0
    tool_rounds: int = 0


class Citations(BaseModel):
    cited: list[int] = Field(description="the [n] markers in the answer, in order of first use")
    invalid: list[int] = Field(description="markers that point past the passages the searches returned")


class CitationCheck(BaseModel):
    """One cited passage checked against the sentence that cites it, or one uncited sentence that states a fact
    (verdict `no_source`, n = 0) (server/ragchat/chat/engine/citations.py)."""

    sentence: str = Field(description="the sentence, markers removed")
    start: int = Field(description="where the sentence (with its markers) starts in the answer, in characters")
    end: int = Field(description="where it ends (exclusive)")
    n: int = Field(description="the cited passage's number; 0 for a sentence that cites nothing")
    verdict: Literal["supported", "weak", "unsupported", "missing", "no_source"] = Field(
        description="missing: the turn has no passage n; no_source: a sentence stating a fact without a citation; "
        "unsupported also when it states a figure or a name its passage lacks, or the opposite of what it says"
    )
    lexical: float = Field(description="share of the sentence's content words found in the passage, 0..1")
    similarity: float | None = Field(description="cosine of sentence and passage embeddings; null: not computed")


class CitationsEvent(BaseModel):
    """`citations`: the citation check of the answer, after its last token and before `done`; saved with it."""

    message_id: UUID | None = Field(default=None, description="chat only")
    citations: list[CitationCheck]
    unsupported: int
    weak: int = 0
    missing: int
    no_source: int = Field(default=0, description="sentences that state a fact and cite nothing")
    sentences: int = Field(default=0, description="sentences that state something (cited, or uncited facts)")
    supported_sentences: int = Field(default=0, description="of those, sentences whose every citation is supported")
    summary: str = Field(default="", description='e.g. "4 of 5 sentences supported by the cited passages"')
    judged: bool = Field(default=False, description="the verdicts are the LLM judge's (CITATION_JUDGE)")
    all_supported: bool = Field(default=False, description="every sentence that states something is supported")
    not_covered: bool | None = Field(
        default=None,
        description='"Not in your documents": nothing found matches well and the answer is not supported '
        "(null: an older release's report; the page then decides from the searches' confidence)",
    )
    searched: bool = Field(default=True, description="a search or a document tool ran; false: not from the documents")
    off_question: bool = Field(
        default=False,
        description="the answer may not give what was asked: it only repeats the question, or the LLM judge "
        "(CITATION_JUDGE) found it answers a neighbouring question",
    )
    repaired: int = Field(default=0, description="markers the check added to uncited sentences a passage supports")
    warnings: int = Field(default=0, description="marks shown under the answer (0: a clean check)")
    content: str | None = Field(default=None, description="the answer's text with the added markers, when any")


AnswerVerification = CitationsEvent  # what the JSON doors (/api/rag, /v1, MCP) return as `verification`


class ToolCall(BaseModel):
    """`tool_call`: the model asked to search."""

    id: str
    name: str
    arguments: dict[str, Any]


class SummaryTally(BaseModel):
    """`summarize_documents`: what the map-reduce did."""

    parts: int = Field(description="parts summarised (each is one of `chunks`, numbered [n])")
    llm_calls: int = Field(description="map and reduce calls")
    notes: list[str] = Field(description='what was cut or failed, e.g. "Summarised the first 200 of 900 sections…"')


class ProgressEvent(BaseModel):
    """`progress`: a long tool (summarize_documents) is working: `stage` read, map (one call per part) or
    reduce (merging part summaries), `done` of `total` at this stage."""

    id: str = Field(description="the tool_call's id")
    stage: Literal["read", "map", "reduce"]
    done: int
    total: int
    message: str = Field(default="", description="the document, part (pages) or level being worked on")


class DocumentsFound(BaseModel):
    """`find_documents`' tally: every matching document is counted; the chunks are the best passages of the
    first ones (most matches first)."""

    total_documents: int
    total_passages: int = Field(description="matching passages scanned")
    complete: bool = Field(description="false: the scan stopped at its bound (`note` says so)")
    note: str | None = None
    matches: list[int] = Field(description="matching passages per listed document, in `chunks` order")
    more: bool = Field(description="more documents match than the model was shown")


class ToolResult(BaseModel):
    """`tool_result`: what the search returned, exactly as the model received it."""

    id: str = Field(description="the tool_call's id")
    name: str
    chunks: list[Passage]
    search_mode: SearchModeName
    reranked: bool
    timings: Timings
    confidence: Confidence
    rerank: RerankStatus | None = Field(default=None, description="what the LLM rerank did (absent: older messages)")
    documents: DocumentsFound | None = Field(
        default=None,
        exclude_if=lambda v: v is None,  # search_documents' results keep their shape
        description="find_documents: the tally of every matching document (absent for search_documents)",
    )
    summary: SummaryTally | None = Field(
        default=None, exclude_if=lambda v: v is None, description="summarize_documents: what the map-reduce did"
    )

    @field_validator("confidence", mode="before")
    @classmethod
    def _stored_before_tiers(cls, value: Any) -> Any:
        """A confidence saved (chat history) before `percent`, `text` and `insufficient` existed reads as one."""
        if not isinstance(value, dict) or "text" in value:
            return value
        best = value.get("best_similarity")
        percent = round(min(1.0, max(0.0, float(best))) * 100) if isinstance(best, int | float) else 0
        insufficient = bool(value.get("insufficient_confidence", value.get("insufficient", False)))
        label = "insufficient" if insufficient else value.get("label", "low")
        text = f"{str(label).capitalize()} confidence ({percent}%)"
        return {"percent": percent, "insufficient": insufficient, **value, "label": label, "text": text}


class ErrorEvent(BaseModel):
    """`error`: the stream's last event when the answer fails (the partial answer is saved as incomplete)."""

    code: str
    message: str


class Message(BaseModel):
    id: UUID
    role: Literal["user", "assistant"]
    content: str
    status: Literal["complete", "incomplete", "error", "streaming"] = Field(
        description="streaming: being generated (GET /api/threads/{id}/stream attaches to it)"
    )
    parent_id: UUID | None = Field(default=None, description="the message this one follows (null: first question)")
    siblings: list[UUID] = Field(
        default_factory=list, description="ids of the messages sharing its parent, in creation order, itself included"
    )
    model: str | None = Field(default=None, description="assistant: the chat model that answered")
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list, description="exactly what the model saw")
    error: ErrorEvent | None = Field(
        default=None, description="why the answer failed (error) or stopped (incomplete: stopped, interrupted)"
    )
    citations: CitationsEvent | None = Field(default=None, description="the citation check (complete answers)")
    feedback: Feedback | None = Field(default=None, description="the user's rating of this answer")
    created_at: datetime

    @classmethod
    def of(cls, row: dict[str, Any]) -> Message:
        return cls(**{k: row[k] for k in cls.model_fields if k in row})


class ThreadDetail(Thread):
    messages: list[Message] = Field(description="the active branch, first question first")
    running_message_id: UUID | None = Field(default=None, description="the answer in progress, if any")


class ThreadEvent(BaseModel):
    """`thread`: first event of a chat stream: the thread (new or continued) and the answer's message id."""

    thread_id: UUID
    question_id: UUID | None = Field(default=None, description="the question being answered (saved)")
    message_id: UUID = Field(description="the answer's row (status streaming until done or error)")


class TokenEvent(BaseModel):
    """`token`: the next piece of the answer."""

    delta: str


class DoneEvent(BaseModel):
    """`done`: the answer is complete (and, in chat, saved)."""

    message_id: UUID | None = Field(default=None, description="chat only")
    finish_reason: str | None
    usage: Usage
    citations: Citations
    verification: CitationsEvent | None = Field(
        default=None, description="answers without a thread (/api/rag): the `citations` event's payload again"
    )


class ReadingEvent(BaseModel):
    """`reading`: the model was handed the passages and is reading them (its prompt), before its first token."""

    passages: int = Field(description="passages the model was given so far this turn")


class EstimateEvent(BaseModel):
    """`estimate`: before a model call whose first token is expected to take a while (3 s or more), what it will
    take on this machine, from the prompt's size and the model's measured speed (providers/llm/speed.py)."""

    stage: Literal["thinking", "reading"] = Field(description="reading: the model was handed passages; else thinking")
    passages: int = Field(description="passages the model was given so far this turn")
    prompt_tokens: int = Field(description="the prompt's tokens, estimated from its characters")
    first_token_s: float = Field(description="seconds until the first token: prompt_tokens / prompt_tps")
    total_s: float | None = Field(description="first_token_s + the usual answer's tokens / gen_tps (None: unknown)")
    prompt_tps: float = Field(description="the model's smoothed prompt speed, tokens per second")
    gen_tps: float | None = Field(description="its smoothed generation speed, tokens per second")
    samples: int = Field(description="calls measured so far")


class RetryEvent(BaseModel):
    """`retry`: the finished answer failed a check (only citation markers, a repeat of the previous answer, off
    the question, or facts with no search although one was required); the page drops the text so far and the
    model is asked once more (after a search with the question, for `unsearched`)."""

    reason: Literal["only_citations", "repeated", "off_topic", "unsearched"]
    message: str


class ChatStream(BaseModel):
    """The `text/event-stream` of POST /api/chat (and /api/rag with stream): each property is an SSE event
    name and its `data:` JSON. Order: thread, then model calls and searches: before each model call reading?
    (passages handed over) and estimate? (its expected time), then its token*, then (tool_call, tool_result)* of
    its searches; a retry starts that again; then citations?, then done or error."""

    thread: ThreadEvent | None = None
    tool_call: ToolCall | None = None
    tool_result: ToolResult | None = None
    reading: ReadingEvent | None = None
    estimate: EstimateEvent | None = None
    progress: ProgressEvent | None = None
    retry: RetryEvent | None = None
    token: TokenEvent | None = None
    citations: CitationsEvent | None = None
    done: DoneEvent | None = None
    error: ErrorEvent | None = None


class RagFilters(BaseModel):
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    metadata: MetadataFilter | None = Field(
        default=None, max_length=32, description='{"subject": ["Polity", "History"], "year": "2024"}: OR within a key'
    )


class RagBody(BaseModel):
    query: str = Field(max_length=MAX_QUERY_CHARS * 2)
    top_k: int = Field(default=5, ge=1, le=50)
    mode: str | None = None
    filters: RagFilters | None = None
    rerank: Flag | None = None
    debug: Flag = True
    stream: Flag = Field(default=False, description="true: the chat SSE events instead of JSON")
    task: Task = Field(
        default="answer",
        description="summarize or compare the whole of `filters.document_ids` (1 to 4; `query` is the request, "
        'e.g. "Summarise this report"), citing each part; answer: retrieve, then answer',
    )
    documents_only: Flag | None = Field(
        default=None, description="refuse when nothing matches well enough (default: your preference)"
    )


class Source(Passage):
    n: int = Field(description="the passage's number, as cited [n] in the answer")


class ArmHit(BaseModel):
    id: int
    document_id: UUID
    filename: str
    rank: int
    score: float | None


class RerankedHit(BaseModel):
    id: int
    filename: str
    score: float


class RagDebug(BaseModel):
    search_mode: SearchModeName | None
    reranked: bool
    vectorResults: list[ArmHit]
    keywordResults: list[ArmHit]
    rerankedResults: list[RerankedHit]
    stats: dict[str, float] = Field(description="per-stage milliseconds: embed, vector, keyword, fuse, answer…")


class RagAnswer(BaseModel):
    answer: str
    chunks: list[Source] = Field(description="every passage the model saw, numbered from 1")
    citations: Citations
    verification: AnswerVerification | None = Field(
        default=None, description="per-sentence verdicts and coverage; null when the check itself failed"
    )
    usage: Usage
    finish_reason: str | None
    debug: RagDebug | None = None


class ChatModel(BaseModel):
    """A model the LLM server offers."""

    name: str
    size: int | None = Field(default=None, description="bytes on disk (Ollama)")
    family: str | None = Field(default=None, description="e.g. llama (Ollama)")


class ChatModels(BaseModel):
    """GET /api/models: what the chat's model picker offers."""

    models: list[ChatModel]
    default: str = Field(description="the model answers use when none is chosen (your setting, else CHAT_MODEL)")
    provider: Literal["ollama", "openai"]


def check_task(task: str, document_ids: list[UUID] | None, field: str) -> None:
    """A summary or comparison names what to read: 1 to MAX_TASK_DOCUMENTS documents (compare: at least 2)."""
    if task == "answer":
        return
    ids = list(dict.fromkeys(document_ids or []))
    least = 2 if task == "compare" else 1
    if not least <= len(ids) <= MAX_TASK_DOCUMENTS:
        raise BadRequest(f"task {task} needs {least} to {MAX_TASK_DOCUMENTS} {field} (got {len(ids)})")
