"""What an answer showed, for the audit log: the documents and chunks of its `tool_result` events.

A chat turn records it in the transaction that saves the answer (service.save_answer); an answer without a
thread (`/api/rag`, `/v1`, MCP, the CLI) saves nothing else, so it records it alone once the answer ends.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from ragchat.chat.engine.loop import Turn
from ragchat.core.audit import AuditAction, AuditWriter
from ragchat.core.principal import Principal
from ragchat.db.pool import Pool
from ragchat.observability.logs import current_fields

log = logging.getLogger(__name__)
RECORD_TIMEOUT_S = 10.0


def answer_sources(tool_results: list[dict[str, Any]]) -> dict[str, Any]:
    """The chunks (id, document) of every `tool_result`, in the order they were sent, and their documents."""
    chunks = [
        {"chunk_id": chunk.get("id"), "document_id": chunk.get("document_id")}
        for result in tool_results
        for chunk in result.get("chunks") or []
    ]
    return {"chunks": chunks, "document_ids": list(dict.fromkeys(c["document_id"] for c in chunks))}


async def record_answer(pool: Pool, audit: AuditWriter, principal: Principal, turn: Turn, status: str) -> None:
    """An answer without a thread: its row in a transaction of its own, even while the stream is cancelled. A
    failure is logged, never the user's error (the answer was given)."""
    with anyio.move_on_after(RECORD_TIMEOUT_S, shield=True):
        try:
            async with pool.connection(timeout=RECORD_TIMEOUT_S) as conn:
                details = {"route": current_fields().get("route"), "status": status}
                await audit.record(
                    conn, AuditAction.CHAT_ANSWER, principal, details={**details, **answer_sources(turn.tool_results)}
                )
        except Exception as exc:
            log.warning("chat: could not record the answer in the audit log: %s", exc)
