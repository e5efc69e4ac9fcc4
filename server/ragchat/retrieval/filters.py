"""SQL fragments for read access and filters, shared by the vector and keyword arms."""

from __future__ import annotations

import json
import math
from typing import Any

from psycopg import sql

from ragchat.core.errors import BadRequest
from ragchat.core.search import LOCATION_FILTER_KEYS, SearchFilters
from ragchat.readscope.sql import ReadScope, column, readable_chunks, scope_params


def filter_sql(
    scope: ReadScope, filters: SearchFilters | None, alias: str = "c"
) -> tuple[sql.Composable, dict[str, Any]]:
    """A WHERE clause over `alias` (document_chunks `c`, or chunk_embeddings `e`: both carry owner_id and
    document_id) with named parameters; always limited to what the reader may read."""
    if alias not in ("c", "e"):
        raise ValueError(f"unknown alias {alias!r}")
    group = "c.share_group" if alias == "c" else None  # chunk rows carry their shared group (0023)
    clauses: list[sql.Composable] = [readable_chunks(scope, f"{alias}.owner_id", f"{alias}.document_id", group)]
    params: dict[str, Any] = scope_params(scope)
    document = column(f"{alias}.document_id")
    if filters and filters.document_ids:
        clauses.append(sql.SQL("{} = ANY(%(document_ids)s)").format(document))
        params["document_ids"] = list(filters.document_ids)
    if filters and filters.collection_ids:
        clauses.append(
            sql.SQL(
                "{} IN (SELECT fc.document_id FROM document_collections fc "
                "WHERE fc.collection_id = ANY(%(collection_ids)s))"
            ).format(document)
        )
        params["collection_ids"] = list(filters.collection_ids)
    if filters and filters.metadata:
        clauses.append(sql.SQL("{} IN (SELECT d.id FROM documents d WHERE d.metadata @? %(meta)s)").format(document))
        params["meta"] = metadata_path(filters.metadata)
    if filters and filters.location:
        where, values = location_sql(filters.location, "lc.location" if alias == "e" else "c.location")
        if alias == "e":  # embeddings carry no location: their chunk's row does
            where = sql.SQL("EXISTS (SELECT 1 FROM document_chunks lc WHERE lc.id = e.chunk_id AND {})").format(where)
        clauses.append(where)
        params.update(values)
    return sql.SQL(" AND ").join(clauses), params


def location_sql(location: dict[str, str], column_name: str) -> tuple[sql.Composable, dict[str, Any]]:
    """Conditions on a chunk's `location` jsonb: sheet, chapter (case-insensitive) and slide are equal to the
    value; `row` lies in row_start..row_end, `t` (seconds) in start_s..end_s. Bad keys or values are a 400."""
    clauses: list[sql.Composable] = []
    params: dict[str, Any] = {}
    col = column(column_name)
    for key, raw in location.items():
        value = raw.strip()
        name = f"loc_{key}"
        bound = sql.Placeholder(name)
        if key == "sheet":
            clauses.append(sql.SQL("{}->>'sheet' = {}").format(col, bound))
            params[name] = value
        elif key == "chapter":
            clauses.append(sql.SQL("lower({}->>'chapter') = lower({})").format(col, bound))
            params[name] = value
        elif key == "slide":
            clauses.append(sql.SQL("{}->>'slide' = {}").format(col, bound))
            params[name] = str(_number(key, value, int))
        elif key in ("row", "t"):
            low, high = ("row_start", "row_end") if key == "row" else ("start_s", "end_s")
            clauses.append(
                sql.SQL("({c}->>{low})::numeric <= {v} AND ({c}->>{high})::numeric >= {v}").format(
                    c=col, low=sql.Literal(low), high=sql.Literal(high), v=bound
                )
            )
            params[name] = _number(key, value, int if key == "row" else float)
        else:
            known = ", ".join(LOCATION_FILTER_KEYS)
            raise BadRequest(f"unknown location filter {key!r}: use {known} (e.g. location=sheet=Q1)")
    return (sql.SQL(" AND ").join(clauses) if clauses else sql.SQL("TRUE")), params


def _number(key: str, value: str, kind: type[int] | type[float]) -> int | float:
    try:
        number = kind(value)
    except ValueError:
        raise BadRequest(f"location filter {key} must be a number (got {value!r})") from None
    if not math.isfinite(number) or number < 0 or number > 1e12:
        raise BadRequest(f"location filter {key} must be a number from 0 (got {value!r})")
    return number


MAX_FILTER_KEYS = 32
MAX_FILTER_VALUES = 100  # per key
MAX_FILTER_CHARS = 1000  # a key or a value


def metadata_path(metadata: dict[str, list[str]]) -> str:
    """The jsonpath a document's metadata must match (`metadata @? path`, served by the GIN jsonb_path_ops
    index): one of each key's values, for every key. In lax mode `@."k" == "v"` also holds when `k` is a list
    with the element "v", so values stored as strings and as lists both match. Keys and values are JSON string
    literals (json.dumps escapes quotes, backslashes and control characters)."""
    terms = []
    for key, values in metadata.items():
        name = json.dumps(key, ensure_ascii=False)
        terms.append("(" + " || ".join(f"@.{name} == {json.dumps(v, ensure_ascii=False)}" for v in values) + ")")
    return "$ ? (" + " && ".join(terms) + ")"


def check_metadata_filters(metadata: dict[str, list[str]], what: str = "filter") -> dict[str, list[str]]:
    """Bounded and printable: at most MAX_FILTER_KEYS keys of MAX_FILTER_VALUES values, no NUL; a 400 else."""
    if len(metadata) > MAX_FILTER_KEYS:
        raise BadRequest(f"at most {MAX_FILTER_KEYS} metadata {what} keys (got {len(metadata)})")
    for key, values in metadata.items():
        if len(values) > MAX_FILTER_VALUES:
            raise BadRequest(f"{what} {key!r} has {len(values)} values: at most {MAX_FILTER_VALUES}")
        for text in (key, *values):
            if not text or len(text) > MAX_FILTER_CHARS or "\x00" in text:
                raise BadRequest(f"{what} keys and values are 1 to {MAX_FILTER_CHARS} characters, no NUL")
    return metadata


def parse_metadata_filters(items: list[str] | None, what: str = "filter") -> dict[str, list[str]] | None:
    """`["subject=Polity", "subject=History", "year=2024"]` → `{"subject": ["Polity", "History"], "year":
    ["2024"]}` (CLI `--filter`, API `filter=`): several values of a key are OR, keys are AND."""
    if not items:
        return None
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise BadRequest(f"{what} must be key=value (got {item[:100]!r})")
        values = out.setdefault(key, [])
        if value not in values:
            values.append(value)
    return check_metadata_filters(out, what)


def parse_location_filters(items: list[str] | None) -> dict[str, str] | None:
    """API `location=sheet=Q1&location=row=12` → `{"sheet": "Q1", "row": "12"}`, keys and numbers checked."""
    if not items:
        return None
    location: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadRequest(f"location must be key=value (got {item[:100]!r})")
        location[key] = value
    if location:
        location_sql(location, "location")  # a bad key or number is a 400 before any search runs
    return location
