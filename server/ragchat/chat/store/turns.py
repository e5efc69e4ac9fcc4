"""The first transaction of a chat turn: which question is answered, where the answer goes in the thread's
tree of branches, and the history the model reads.

A thread is a tree: every message has a `parent_id` (the message it follows), and messages sharing a parent
are siblings (a regenerated answer, an edited question). The thread shows one branch: the path from its first
question to its active leaf. In one transaction, before the model is called, a turn

- asks a new question: the question (after the active leaf) and an empty answer row ('streaming');
- regenerates an answer: a new answer row, a sibling of the old one, to the same question;
- continues an incomplete or failed answer: that row is 'streaming' again (its text is kept);
- edits a question: the new question as a sibling of the old one, and an answer row after it;

then makes the answer the thread's active leaf. A thread with an answer in progress refuses another (409).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from ragchat.chat.engine.prompts import history_messages, thread_title
from ragchat.chat.store import repository as repo
from ragchat.core.errors import BadRequest, Conflict, NotFound
from ragchat.core.principal import Principal
from ragchat.core.search import SearchOptions
from ragchat.db.pool import Pool
from ragchat.settings import LLMSettings

DB_TIMEOUT_S = 10.0  # waiting for a pooled connection before the model runs (the pool's own default)
BUSY = "this thread already has an answer in progress: wait for it, or stop it (POST /api/threads/{id}/stop)"


@dataclass(frozen=True)
class ChatRequest:
    """A validated POST /api/chat body."""

    message: str
    thread_id: UUID | None = None
    document_ids: list[UUID] | None = None
    collection_ids: list[UUID] | None = None
    options: SearchOptions | None = None  # the turn's search options (None: the environment's, for tests)
    model: str | None = None  # None: CHAT_MODEL
    regenerate_id: UUID | None = None
    continue_id: UUID | None = None
    edit_id: UUID | None = None
    documents_only: bool = False  # refuse instead of answering from the model's own knowledge
    task: str = "answer"  # summarize | compare (the Summarise action): see ChatBody.task


@dataclass(frozen=True)
class TurnPlan:
    """What begin_turn saved and what the model is asked."""

    thread_id: UUID
    question_id: UUID
    message_id: UUID  # the answer's row
    question: str
    history: list[dict[str, str]]
    model: str
    continued: dict[str, Any] | None = None  # the saved answer being continued
    first: bool = False  # the thread's first exchange (its title may be generated after the answer)
    title: str = ""  # the thread's title when the turn began


async def _message(conn: Any, principal: Principal, thread_id: UUID, message_id: UUID, role: str) -> dict[str, Any]:
    row = await repo.get_message(conn, principal.user_id, message_id)
    if row is None or row["thread_id"] != thread_id:
        raise NotFound(f"message {message_id} not found in thread {thread_id}")
    if row["role"] != role:
        raise BadRequest(f"message {message_id} is not {'an' if role == 'assistant' else 'a'} {role} message")
    return row


async def _save_question(conn: Any, thread_id: UUID, owner: UUID, text: str, parent_id: UUID | None) -> UUID:
    """A new question under `parent_id` (None: the thread's first); returns its id."""
    question_id = uuid4()
    await repo.insert_message(
        conn, message_id=question_id, thread_id=thread_id, owner=owner, role="user", content=text, parent_id=parent_id
    )
    return question_id


async def _history(conn: Any, principal: Principal, settings: LLMSettings, leaf: UUID | None) -> list[dict[str, str]]:
    if leaf is None or settings.chat_history_messages <= 0:
        return []
    rows = await repo.path_to(conn, principal.user_id, leaf, settings.chat_history_messages)
    return history_messages(rows, settings.chat_history_messages, settings.chat_history_chars)


async def begin_turn(pool: Pool, settings: LLMSettings, principal: Principal, req: ChatRequest) -> TurnPlan:
    """One transaction: the thread (created, titled from the message), the question, the answer's row."""
    owner = principal.user_id
    model = req.model or settings.chat_model
    answer_id = uuid4()
    async with pool.connection(timeout=DB_TIMEOUT_S) as conn:
        await repo.relax_commit(conn)
        if req.thread_id is None:
            thread = await repo.create_thread(conn, owner, thread_title(req.message))
        else:
            thread = await repo.get_thread(conn, owner, req.thread_id, for_update=True)
            if thread is None:
                raise NotFound(f"thread {req.thread_id} not found")
            if await repo.running_message(conn, thread["id"]) is not None:
                raise Conflict(BUSY)
        thread_id: UUID = thread["id"]
        continued = None
        if req.regenerate_id is not None:
            old = await _message(conn, principal, thread_id, req.regenerate_id, "assistant")
            question = await _message(conn, principal, thread_id, old["parent_id"], "user")
            question_id, text = question["id"], question["content"]
            history = await _history(conn, principal, settings, question["parent_id"])
        elif req.continue_id is not None:
            continued = await _message(conn, principal, thread_id, req.continue_id, "assistant")
            if continued["status"] not in ("incomplete", "error"):
                raise BadRequest("only an incomplete or failed answer can be continued")
            question = await _message(conn, principal, thread_id, continued["parent_id"], "user")
            question_id, text, answer_id = question["id"], question["content"], continued["id"]
            history = await _history(conn, principal, settings, question["parent_id"])
        elif req.edit_id is not None:
            old = await _message(conn, principal, thread_id, req.edit_id, "user")
            text = req.message
            question_id = await _save_question(conn, thread_id, owner, text, old["parent_id"])
            history = await _history(conn, principal, settings, old["parent_id"])
        else:
            leaf = None if req.thread_id is None else await repo.active_leaf(conn, thread_id)
            text = req.message
            question_id = await _save_question(conn, thread_id, owner, text, leaf)
            history = await _history(conn, principal, settings, leaf)
        if continued is not None:
            await repo.restart_message(conn, answer_id)
        else:
            await repo.insert_message(
                conn,
                message_id=answer_id,
                thread_id=thread_id,
                owner=owner,
                role="assistant",
                content="",
                status="streaming",
                parent_id=question_id,
                model=model,
            )
        await repo.set_active_leaf(conn, thread_id, answer_id)
        await repo.touch_thread(conn, thread_id)
    if continued is not None and req.model is None and continued["model"]:
        model = continued["model"]
    first = req.thread_id is None
    return TurnPlan(thread_id, question_id, answer_id, text, history, model, continued, first, str(thread["title"]))
