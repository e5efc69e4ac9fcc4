"""SQL fragments for owner scoping and filters, shared by the vector and keyword arms."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from server.core.errors import BadRequest
from server.core.search import SearchFilters


def filter_sql(owner: UUID, filters: SearchFilters | None, alias: str = "c") -> tuple[str, dict[str, Any]]:
    """A WHERE clause over `alias` (document_chunks `c`, or chunk_embeddings `e`: both carry owner_id and
    document_id) with named parameters; always scoped by owner."""
    if alias not in ("c", "e"):
        raise ValueError(f"unknown alias {alias!r}")
    clauses = [f"{alias}.owner_id = %(owner)s"]
    params: dict[str, Any] = {"owner": owner}
    if filters and filters.document_ids:
        clauses.append(f"{alias}.document_id = ANY(%(document_ids)s)")
        params["document_ids"] = list(filters.document_ids)
    if filters and filters.metadata:
        clauses.append(
            f"{alias}.document_id IN (SELECT d.id FROM documents d WHERE d.owner_id = %(owner)s "
            "AND d.metadata @> %(meta)s)"
        )
        params["meta"] = Jsonb(filters.metadata)
    return " AND ".join(clauses), params


def parse_metadata_filters(items: list[str] | None) -> dict[str, str] | None:
    """`["team=geo", "year=2024"]` → `{"team": "geo", "year": "2024"}` (CLI `--filter`, API `filter=`)."""
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadRequest(f"filter must be key=value (got {item!r})")
        out[key] = value
    return out
