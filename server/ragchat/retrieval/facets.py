"""Facet counts for /api/search: for metadata keys of the readable, ready documents in a search's scope, each
value's number of documents (top values per key), computed in SQL.

A key that is filtered on is counted without its own filter (the other filters still apply), so the page can
offer its other values as alternatives (OR within a key); the other keys are counted with every filter.
"""

from __future__ import annotations

from typing import Any

from psycopg import sql

from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters
from ragchat.db.pool import Pool
from ragchat.httpapi.search import Facets, FacetValue
from ragchat.readscope.sql import ReadScope, read_scope, readable, scope_params
from ragchat.retrieval.filters import metadata_path

TOP_VALUES = 20  # per key
DEFAULT_KEYS = 12  # without an explicit list: the keys most documents have
MAX_VALUE_CHARS = 200  # longer values (a summary, a path) are no facet
#: Keys every document has its own value of, set by the server or the extractor: no use as a facet.
HIDDEN_KEYS = ("source_path", "source_id", "source_url", "fetched_at", "title", "summary", "key_dates")
#: What the parsers record about a file (its encoding, a CSV's delimiter, a transcript's cues and length, pages,
#: sheets, slides, chapters): counted only when asked by name (`facets=encoding`), so that by default the facets
#: are the metadata people set or extracted (issue 35: these keys filled the top of the results).
SYSTEM_KEYS = ("encoding", "delimiter", "cues", "duration_s", "page_count", "sheets", "slides", "chapters")

_COUNTS = sql.SQL("""
WITH counted AS (
    SELECT e.key, x #>> '{{}}' AS value, count(*) AS n
    FROM documents d, jsonb_each(d.metadata) e,
         jsonb_array_elements(CASE WHEN jsonb_typeof(e.value) = 'array' THEN e.value
                                   ELSE jsonb_build_array(e.value) END) x
    WHERE {where} AND {key_clause}
      AND jsonb_typeof(x) IN ('string', 'number', 'boolean') AND length(x #>> '{{}}') <= {max_chars}
    GROUP BY 1, 2
),
keys AS (SELECT key FROM counted GROUP BY key ORDER BY sum(n) DESC, key LIMIT %(max_keys)s),
ranked AS (
    SELECT c.key, c.value, c.n, row_number() OVER (PARTITION BY c.key ORDER BY c.n DESC, c.value) AS r
    FROM counted c JOIN keys USING (key)
)
SELECT key, value, n FROM ranked WHERE r <= {top} ORDER BY key, n DESC, value""")


def _scope_sql(
    scope: ReadScope, filters: SearchFilters | None, metadata: dict[str, list[str]] | None
) -> tuple[sql.Composable, dict[str, Any]]:
    clauses: list[sql.Composable] = [sql.SQL("d.status = 'ready'"), readable(scope, "d.owner_id", "d.id")]
    params = scope_params(scope)
    if filters and filters.document_ids:
        clauses.append(sql.SQL("d.id = ANY(%(document_ids)s)"))
        params["document_ids"] = list(filters.document_ids)
    if filters and filters.collection_ids:
        clauses.append(
            sql.SQL(
                "d.id IN (SELECT fc.document_id FROM document_collections fc "
                "WHERE fc.collection_id = ANY(%(collection_ids)s))"
            )
        )
        params["collection_ids"] = list(filters.collection_ids)
    if metadata:
        clauses.append(sql.SQL("d.metadata @? %(meta)s::jsonpath"))
        params["meta"] = metadata_path(metadata)
    return sql.SQL(" AND ").join(clauses), params


async def facet_counts(
    pool: Pool, principal: Principal, filters: SearchFilters | None, keys: list[str] | None = None
) -> Facets:
    """Value → document counts per key: `keys` (in that order), or else the DEFAULT_KEYS keys most documents
    have (HIDDEN_KEYS and SYSTEM_KEYS left out); at most TOP_VALUES values per key, most documents first."""
    metadata = (filters.metadata if filters else None) or {}
    wanted = list(dict.fromkeys(keys)) if keys else None
    counts: dict[str, list[FacetValue]] = {}
    async with pool.connection() as conn:
        scope = await read_scope(conn, principal.user_id)
        # every filtered key alone, without its own filter; then the other keys with all filters
        runs: list[tuple[list[str] | None, dict[str, list[str]]]] = [
            ([key], {k: v for k, v in metadata.items() if k != key})
            for key in metadata
            if wanted is None or key in wanted
        ]
        rest = [k for k in wanted if k not in metadata] if wanted is not None else None
        if rest is None or rest:
            runs.append((rest, metadata))
        for only, applied in runs:
            where, params = _scope_sql(scope, filters, applied)
            if only is None:
                key_clause = sql.SQL("e.key <> ALL(%(hidden)s) AND e.key <> ALL(%(filtered)s)")
                hidden = [*HIDDEN_KEYS, *SYSTEM_KEYS]
                params.update(hidden=hidden, filtered=list(metadata), max_keys=DEFAULT_KEYS)
            else:
                key_clause = sql.SQL("e.key = ANY(%(keys)s)")
                params.update(keys=only, max_keys=len(only))
            query = _COUNTS.format(
                where=where,
                key_clause=key_clause,
                max_chars=sql.Literal(MAX_VALUE_CHARS),
                top=sql.Literal(TOP_VALUES),
            )
            for row in await (await conn.execute(query, params)).fetchall():
                counts.setdefault(row["key"], []).append(FacetValue(value=row["value"], count=int(row["n"])))
    order = wanted or sorted(counts, key=lambda k: (-max(v.count for v in counts[k]), k))
    return {key: counts[key] for key in order if key in counts}
