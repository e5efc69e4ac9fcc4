"""Search routes (GET /api/search)."""

from __future__ import annotations

from typing import Any


def search_handlers() -> list[Any]:
    return []
