"""Chat routes (POST /api/chat over SSE, threads)."""

from __future__ import annotations

from typing import Any


def chat_handlers() -> list[Any]:
    return []
