"""A thread as a file (GET /api/threads/{id}/export): the active branch's questions and answers, each answer's
sources (document title, location, the passage) and citation check, as Markdown or JSON."""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ValidationError

from ragchat.chat.engine.answer import numbered_sources
from ragchat.chat.schemas import Thread
from ragchat.httpapi.search import Passage

ExportFormat = Literal["markdown", "json"]
_SLUG_DROP = re.compile(r"[^A-Za-z0-9]+")


def export_filename(title: str, fmt: ExportFormat) -> str:
    """An ASCII file name from the title ("Holiday rules?" → holiday-rules.md); "thread" when nothing is left."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = _SLUG_DROP.sub("-", ascii_title).strip("-").lower()[:60].strip("-") or "thread"
    return f"{slug}.{'md' if fmt == 'markdown' else 'json'}"


def _where(chunk: dict[str, Any]) -> str:
    """The passage's place: "*Title*, *Section*, page *3*" (the citation line without "Based on")."""
    try:
        return Passage.model_validate(chunk).citation.removeprefix("Based on ")
    except ValidationError:
        return f"*{chunk.get('title') or chunk.get('filename') or 'a document'}*"


def _sources(message: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for s in numbered_sources(message.get("tool_results") or []):
        out.append(
            {
                "n": s["n"],
                "document_id": s.get("document_id"),
                "document_title": s.get("title") or s.get("filename"),
                "filename": s.get("filename"),
                "chunk_id": s.get("id"),
                "page": s.get("page"),
                "section": s.get("section"),
                "location": s.get("location"),
                "where": _where(s),
                "content": s.get("content", ""),
            }
        )
    return out


def _quote(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def thread_json(thread: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """The whole active branch with every source passage in full."""
    doc = {
        "thread": Thread.model_validate(thread).model_dump(mode="json"),
        "exported_at": datetime.now(UTC).isoformat(),
        "messages": [
            {
                "id": str(m["id"]),
                "role": m["role"],
                "content": m["content"],
                "status": m["status"],
                "model": m.get("model"),
                "created_at": m["created_at"].isoformat() if m.get("created_at") else None,
                "error": m.get("error"),
                "sources": _sources(m) if m["role"] == "assistant" else [],
                "citations": m.get("citations"),
                "feedback": m.get("feedback"),
            }
            for m in messages
        ],
    }
    return json.dumps(doc, ensure_ascii=False, indent=2, default=str) + "\n"


def thread_markdown(thread: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """Questions as quotes, answers as written, then their numbered sources and the citation check."""
    title = " ".join(str(thread.get("title") or "Untitled chat").split())
    lines = [f"# {title}", "", f"*Exported from ragchat on {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.*", ""]
    for m in messages:
        if m["role"] == "user":
            lines += ["## Question", "", *(f"> {line}" for line in m["content"].splitlines() or [""]), ""]
            continue
        model = f" ({m['model']})" if m.get("model") else ""
        lines += [f"## Answer{model}", "", m["content"] or "*(no text)*", ""]
        if m["status"] != "complete":
            reason = (m.get("error") or {}).get("message") if isinstance(m.get("error"), dict) else None
            lines += [f"*This answer is {m['status']}{f': {reason}' if reason else '.'}*", ""]
        sources = _sources(m)
        if sources:
            lines += ["### Sources", ""]
            lines += [f"{s['n']}. {s['where']}: “{_quote(s['content'])}”" for s in sources]
            lines.append("")
        checks = (m.get("citations") or {}).get("citations") if isinstance(m.get("citations"), dict) else None
        if checks:
            verdicts = ", ".join(f"[{c['n']}] {c['verdict']}" for c in checks)
            lines += [f"*Citation check: {verdicts}.*", ""]
    return "\n".join(lines).rstrip() + "\n"
