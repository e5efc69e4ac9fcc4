"""SQL fragments for read access and filters, shared by the vector and keyword arms."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from server.core.errors import BadRequest
from server.core.search import SearchFilters
from server.db.access import ReadScope, readable, scope_params


def filter_sql(scope: ReadScope, filters: SearchFilters | None, alias: str = "c") -> tuple[str, dict[str, Any]]:
    """A WHERE clause over `alias` (document_chunks `c`, or chunk_embeddings `e`: both carry owner_id and
    document_id) with named parameters; always limited to what the reader may read."""
    if alias not in ("c", "e"):
        raise ValueError(f"unknown alias {alias!r}")
    clauses = [readable(scope, f"{alias}.owner_id", f"{alias}.document_id")]
    params: dict[str, Any] = scope_params(scope)
    if filters and filters.document_ids:
        clauses.append(f"{alias}.document_id = ANY(%(document_ids)s)")
        params["document_ids"] = list(filters.document_ids)
    if filters and filters.collection_ids:
        clauses.append(
            f"{alias}.document_id IN (SELECT fc.document_id FROM document_collections fc "
            "WHERE fc.collection_id = ANY(%(collection_ids)s))"
        )
        params["collection_ids"] = list(filters.collection_ids)
    if filters and filters.metadata:
        clauses.append(f"{alias}.document_id IN (SELECT d.id FROM documents d WHERE d.metadata @> %(meta)s)")
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
