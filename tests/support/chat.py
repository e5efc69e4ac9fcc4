"""Helpers for the chat integration tests (no tests here): a small ingested corpus and an SSE reader."""

from __future__ import annotations

import io
import json
import typing
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from ragchat.chat.schemas import ChatStream
from ragchat.settings import Settings
from tests.support.corpus import Corpus, ingest_files

HOLIDAY_PAGE = "Paid holidays: every employee gets 25 days of paid holiday per calendar year."
OFFICE_PAGE = "The office is open from 8 am to 6 pm. Visitors sign in at the front desk."
VOLCANO = "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano."
BREAD = "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water."

Events = list[tuple[str, dict[str, Any]]]


def make_pdf(pages: list[str]) -> bytes:
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=letter, invariant=True)  # the same bytes each time (no timestamp, no id)
    for text in pages:
        pdf.drawString(72, 740, text)
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


async def ingest_corpus(pool: Any, embedder: Any, settings: Settings) -> Corpus:
    """handbook.pdf (2 pages), volcano.txt, bread.txt through the real pipeline; returns filename -> id."""
    return await ingest_files(pool, embedder, settings, chat_files())


def chat_files() -> dict[str, bytes | str]:
    return {"handbook.pdf": make_pdf([HOLIDAY_PAGE, OFFICE_PAGE]), "volcano.txt": VOLCANO, "bread.txt": BREAD}


async def chat(base_url: str, body: dict[str, Any], *, read_timeout: float = 30.0) -> Events:
    """POST /api/chat and read every event (pings, which httpx-sse turns into empty messages, skipped)."""
    async with (
        httpx.AsyncClient(base_url=base_url, timeout=read_timeout) as client,
        aconnect_sse(client, "POST", "/api/chat", json=body) as source,
    ):
        assert source.response.status_code == 200, source.response.status_code
        assert source.response.headers["content-type"].startswith("text/event-stream")
        events = [(e.event, json.loads(e.data)) async for e in source.aiter_sse() if e.data or e.event != "message"]
    for name, data in events:
        check_event(name, data)
    return events


def check_event(name: str, data: dict[str, Any]) -> None:
    """Every event is one the contract documents (ChatStream in the OpenAPI document), in its typed shape."""
    assert name in ChatStream.model_fields, f"undocumented event {name!r}"
    ChatStream.model_validate({name: data})
    model = typing.get_args(ChatStream.model_fields[name].annotation)[0]
    assert set(data) <= set(model.model_fields), f"{name}: undocumented fields {set(data) - set(model.model_fields)}"


def names(events: Events) -> list[str]:
    """Event names with runs of `token` collapsed to one; the `citations` check (test_citations.py), the
    `reading` notes (test_chat_quality.py) and the `estimate` of a slow model call (test_llm_stream_limits.py:
    a busy machine makes even a fake model slow enough to get one) left out."""
    out: list[str] = []
    for name, _ in events:
        if name in ("citations", "reading", "estimate"):
            continue
        if not (name == "token" and out and out[-1] == "token"):
            out.append(name)
    return out


def text_of(events: Events) -> str:
    return "".join(data["delta"] for name, data in events if name == "token")


def first(events: Events, name: str) -> dict[str, Any]:
    return next(data for n, data in events if n == name)


def all_of(events: Events, name: str) -> list[dict[str, Any]]:
    return [data for n, data in events if n == name]


async def get_thread(base_url: str, thread_id: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url) as client:
        response = await client.get(f"/api/threads/{thread_id}")
    assert response.status_code == 200, response.text
    return response.json()
