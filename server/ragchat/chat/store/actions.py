"""Message actions and thread settings: feedback on answers (set and exported), a thread's title and saved
retrieval choices. SQL with bound parameters; every statement is limited to the caller's own rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from ragchat.chat.schemas import TITLE_MAX_CHARS, FeedbackBody, ThreadPatch
from ragchat.core.errors import BadRequest, Forbidden, NotFound
from ragchat.core.ownership import UserNames
from ragchat.core.principal import Principal
from ragchat.db.pool import Pool
from ragchat.policy.request import Ask, Checked

FEEDBACK_EXPORT_MAX = 50_000  # rows in one export
EXPORT_COLUMNS = [
    "message_id", "thread_id", "thread_title", "question", "answer", "status", "model",
    "rating", "note", "updated_at", "user",
]  # fmt: skip
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

# ---- feedback ------------------------------------------------------------------------------------------------


async def set_feedback(pool: Pool, principal: Principal, message_id: UUID, body: FeedbackBody) -> dict[str, Any]:
    """Rate one of the caller's answers (rating and note replace the previous ones); 404 for anyone else's."""
    note = (body.note or "").replace("\x00", "").strip() or None
    async with pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT role FROM messages WHERE id = %s AND owner_id = %s", (message_id, principal.user_id)
            )
        ).fetchone()
        if row is None:
            raise NotFound(f"message {message_id} not found")
        if row["role"] != "assistant":
            raise BadRequest("feedback is given on answers (assistant messages), not on questions")
        cur = await conn.execute(
            """INSERT INTO message_feedback (message_id, owner_id, rating, note, updated_at)
               VALUES (%s, %s, %s, %s, clock_timestamp())
               ON CONFLICT (message_id) DO UPDATE
                   SET rating = EXCLUDED.rating, note = EXCLUDED.note, updated_at = EXCLUDED.updated_at
               RETURNING message_id, rating, note, updated_at""",
            (message_id, principal.user_id, body.rating, note),
        )
        saved = await cur.fetchone()
    assert saved is not None
    return saved


async def feedback_rows(
    pool: Pool, principal: Principal, names: UserNames, *, everyone: bool = False
) -> list[dict[str, Any]]:
    """The caller's rated answers (admins with `everyone`: all users'), oldest rating first, with the question
    each answers (its parent), the thread, the model that answered and who rated it (`names`: the accounts')."""
    if everyone and not principal.is_admin:
        raise Forbidden("only an admin may export everyone's feedback (all=true)")
    async with pool.connection() as conn:
        cur = await conn.execute(
            """SELECT f.message_id, a.thread_id, t.title AS thread_title, q.content AS question,
                      a.content AS answer, a.status, a.model, f.rating, f.note, f.updated_at, f.owner_id
               FROM message_feedback f
               JOIN messages a ON a.id = f.message_id
               JOIN threads t ON t.id = a.thread_id
               LEFT JOIN messages q ON q.id = a.parent_id
               WHERE (f.rating IS NOT NULL OR f.note IS NOT NULL) AND (%(all)s OR f.owner_id = %(uid)s)
               ORDER BY f.updated_at, f.message_id
               LIMIT %(limit)s""",
            {"all": everyone, "uid": principal.user_id, "limit": FEEDBACK_EXPORT_MAX},
        )
        rows = list(await cur.fetchall())
    named = await names({r["owner_id"] for r in rows})
    for row in rows:
        row["user"] = named.get(row.pop("owner_id"))
    return rows


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet will not run: text starting with = + - @ (or a tab/CR) gets a leading '."""
    text = "" if value is None else value.isoformat() if hasattr(value, "isoformat") else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def feedback_csv(rows: Iterable[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(EXPORT_COLUMNS)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in EXPORT_COLUMNS])
    return out.getvalue()


def feedback_jsonl(rows: Iterable[dict[str, Any]]) -> str:
    def plain(value: Any) -> Any:
        return value.isoformat() if hasattr(value, "isoformat") else str(value) if isinstance(value, UUID) else value

    return "".join(
        json.dumps({c: plain(row.get(c)) for c in EXPORT_COLUMNS}, ensure_ascii=False) + "\n" for row in rows
    )


# ---- thread title and settings -------------------------------------------------------------------------------


def clean_title(raw: str) -> str:
    title = " ".join(raw.replace("\x00", "").split())
    if not title:
        raise BadRequest("title is empty")
    if len(title) > TITLE_MAX_CHARS:
        raise BadRequest(f"title is too long (at most {TITLE_MAX_CHARS} characters)")
    return title


async def update_thread(
    pool: Pool,
    principal: Principal,
    thread_id: UUID,
    patch: ThreadPatch,
    check: Callable[[Principal, Ask], Awaitable[Checked]],
) -> dict[str, Any]:
    """Rename and/or replace the saved settings (their documents and collections must be readable: `check`, the
    request policy's, 404 names the others). Neither moves the thread in the list: `updated_at` changes only
    with new messages."""
    if patch.title is None and patch.settings is None:
        raise BadRequest("nothing to change: send a title, settings, or both")
    title = None if patch.title is None else clean_title(patch.title)
    settings = None
    owner = principal.user_id
    if patch.settings is not None:
        await check(
            principal, Ask(document_ids=patch.settings.document_ids, collection_ids=patch.settings.collection_ids)
        )
    async with pool.connection() as conn:
        exists = await (
            await conn.execute("SELECT 1 FROM threads WHERE id = %s AND owner_id = %s", (thread_id, owner))
        ).fetchone()
        if exists is None:
            raise NotFound(f"thread {thread_id} not found")
        if patch.settings is not None:
            s = patch.settings
            documents = list(dict.fromkeys(s.document_ids or []))
            collections = list(dict.fromkeys(s.collection_ids or []))
            settings = s.model_copy(
                update={
                    "document_ids": documents or None,
                    "collection_ids": collections or None,
                    "model": s.model.strip() if s.model else None,
                }
            ).model_dump(mode="json", exclude_none=True)
        cur = await conn.execute(
            """UPDATE threads SET title = coalesce(%s, title), settings = coalesce(%s, settings)
               WHERE id = %s AND owner_id = %s
               RETURNING id, title, created_at, updated_at, settings""",
            (title, None if settings is None else Jsonb(settings), thread_id, owner),
        )
        row = await cur.fetchone()
    if row is None:
        raise NotFound(f"thread {thread_id} not found")
    return row
