"""SQL fragments for read access and filters, shared by the vector and keyword arms."""

from __future__ import annotations

import math
from typing import Any

from psycopg.types.json import Jsonb

from server.core.errors import BadRequest
from server.core.search import LOCATION_FILTER_KEYS, SearchFilters
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
    if filters and filters.location:
        where, values = location_sql(filters.location, "lc.location" if alias == "e" else "c.location")
        if alias == "e":  # embeddings carry no location: their chunk's row does
            where = f"EXISTS (SELECT 1 FROM document_chunks lc WHERE lc.id = e.chunk_id AND {where})"
        clauses.append(where)
        params.update(values)
    return " AND ".join(clauses), params


def location_sql(location: dict[str, str], column: str) -> tuple[str, dict[str, Any]]:
    """Conditions on a chunk's `location` jsonb: sheet, chapter (case-insensitive) and slide are equal to the
    value; `row` lies in row_start..row_end, `t` (seconds) in start_s..end_s. Bad keys or values are a 400."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for key, raw in location.items():
        value = raw.strip()
        name = f"loc_{key}"
        if key == "sheet":
            clauses.append(f"{column}->>'sheet' = %({name})s")
            params[name] = value
        elif key == "chapter":
            clauses.append(f"lower({column}->>'chapter') = lower(%({name})s)")
            params[name] = value
        elif key == "slide":
            clauses.append(f"{column}->>'slide' = %({name})s")
            params[name] = str(_number(key, value, int))
        elif key in ("row", "t"):
            low, high = ("row_start", "row_end") if key == "row" else ("start_s", "end_s")
            clauses.append(
                f"({column}->>'{low}')::numeric <= %({name})s AND ({column}->>'{high}')::numeric >= %({name})s"
            )
            params[name] = _number(key, value, int if key == "row" else float)
        else:
            known = ", ".join(LOCATION_FILTER_KEYS)
            raise BadRequest(f"unknown location filter {key!r}: use {known} (e.g. location=sheet=Q1)")
    return " AND ".join(clauses) or "TRUE", params


def _number(key: str, value: str, kind: type[int] | type[float]) -> int | float:
    try:
        number = kind(value)
    except ValueError:
        raise BadRequest(f"location filter {key} must be a number (got {value!r})") from None
    if not math.isfinite(number) or number < 0 or number > 1e12:
        raise BadRequest(f"location filter {key} must be a number from 0 (got {value!r})")
    return number


def parse_metadata_filters(items: list[str] | None, what: str = "filter") -> dict[str, str] | None:
    """`["team=geo", "year=2024"]` → `{"team": "geo", "year": "2024"}` (CLI `--filter`, API `filter=`)."""
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadRequest(f"{what} must be key=value (got {item!r})")
        out[key] = value
    return out


def parse_location_filters(items: list[str] | None) -> dict[str, str] | None:
    """API `location=sheet=Q1&location=row=12` → `{"sheet": "Q1", "row": "12"}`, keys and numbers checked."""
    location = parse_metadata_filters(items, "location")
    if location:
        location_sql(location, "location")  # a bad key or number is a 400 before any search runs
    return location
