"""The Markdown report of bench/search.py: per size the latency per mode, recall, build times, sizes, memory
and load average, then the tuning tables (ef_search, keyword_candidates) and the goal check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

GOAL = {"hybrid_p95_ms": 50.0, "recall_at_10": 0.95}


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.2f}" if abs(v) < 1000 else f"{v:,.0f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines)


def load_seconds(b: dict[str, Any]) -> str:
    """The load's wall time as recorded (a resumed load says so; `reused`: this run skipped the load)."""
    if "load_total_s" in b:
        text = str(b["load_total_s"])
    else:
        parts = [b.get("load_real_s"), b.get("load_synthetic_wall_s", b.get("copy_synthetic_s"))]
        text = f"{sum(p for p in parts if isinstance(p, (int, float))):.0f}"
    return text + (" (reused)" if b.get("reused") else "")


def _mb(mem: dict[str, Any], key: str) -> Any:
    return mem.get(key, "-")


def markdown(out: dict[str, Any], sizes: list[int]) -> str:
    pg = out.get("postgres", {})
    parts = [
        "# Search at scale (bench/search.py)",
        "",
        f"PostgreSQL {pg.get('server_version', '?')} + pgvector {pg.get('pgvector', '?')} (embedded), "
        f"shared_buffers {pg.get('shared_buffers', '?')}, {out['cpu_context_start'].get('cpus')} cores shared "
        f"with other work. Load average (1/5/15 min) at start {out['cpu_context_start']['loadavg']}, at end "
        f"{out.get('cpu_context_end', {}).get('loadavg')}. HNSW ef_search {out['hnsw_ef_search']} at 100k rows "
        f"(growth {out.get('hnsw_ef_growth', 0)}, so {out.get('ef_search_by_size', {})} by size; filtered scans "
        f"×{out.get('hnsw_filtered_ef_factor', 1)}), "
        f"keyword_candidates {out['keyword_candidates']}; {out['queries']['measured']} SciFact queries per mode "
        f"after {out['queries']['warmup']} warm-up ones; latency of `Searcher.search()` including the query "
        "embedding; recall@10 of the vector arm against an exact scan.",
        "",
    ]
    for size in sizes:
        warm = out["details"][str(size)].get("prewarm")
        parts += [f"{size:,} chunks: prewarmed with pg_prewarm before measuring (blocks): {warm}", ""] if warm else []
    rows = []
    for size in sizes:
        s, d = out[str(size)], out["details"][str(size)]
        for mode in ("vector", "keyword", "hybrid", "keyword_common"):
            m = s[mode]
            rows.append(
                [
                    f"{size:,}",
                    mode,
                    m["p50_ms"],
                    m["p95_ms"],
                    m["p99_ms"],
                    d["recall_at_10"] if mode == "vector" else "",
                ]
            )
    parts += ["## Latency per mode (ms)", "", md_table(["chunks", "mode", "p50", "p95", "p99", "recall@10"], rows), ""]

    rows = []
    for size in sizes:
        b, d = out["build"][str(size)], out["details"][str(size)]
        rows.append(
            [
                f"{size:,}",
                load_seconds(b),
                b["create_gin_s"],
                b["create_hnsw_s"],
                b.get("maintenance_work_mem", "?"),
                b.get("database", "?"),
                b.get("table_total", "?"),
                b.get("vectors_total", "?"),
                b.get("hnsw", "?"),
                b.get("gin", "?"),
                f"{b.get('loadavg_before_indexes', '?')} → {b.get('loadavg_after_indexes', '?')}",
                f"{d.get('loadavg_measure_start', '?')} → {d.get('loadavg_measure_end', '?')}",
            ]
        )
    parts += [
        "## Build and size",
        "",
        "Load = streamed COPY of chunks (text, generated tsvector, BM25 trigger) and vectors; index builds "
        "after the load. `reused`: this run found the size already built (bench_meta) and skipped the load; "
        "the build times are those of the run that built it.",
        "",
        md_table(
            [
                "chunks",
                "load s",
                "GIN s",
                "HNSW s",
                "maint. mem",
                "database",
                "chunks table+idx",
                "vectors table+idx",
                "HNSW",
                "GIN",
                "load avg (index build)",
                "load avg (measure)",
            ],
            rows,
        ),
        "",
    ]

    rows = []
    for size in sizes:
        mem = out.get("memory", {}).get(str(size), {})
        for when in ("after_build", "after_measure"):
            m = mem.get(when, {})
            rows.append(
                [
                    f"{size:,}",
                    when.replace("_", " "),
                    _mb(m, "postgres_processes"),
                    _mb(m, "postgres_rss_mb"),
                    _mb(m, "postgres_pss_mb"),
                    _mb(m, "python_rss_mb"),
                    _mb(m, "python_peak_rss_mb"),
                ]
            )
    parts += [
        "## Memory (MB)",
        "",
        "Postgres: the postmaster and all its children (RSS counts shared buffers once per process; PSS splits "
        "them). Python: this bench process (the MiniLM model, the runtime, the SciFact sentences).",
        "",
        md_table(["chunks", "when", "pg processes", "pg RSS", "pg PSS", "python RSS", "python peak RSS"], rows),
        "",
    ]

    for size in sizes:
        d = out["details"][str(size)]
        vd = d["vector_db"]
        rows = [
            [
                ef,
                v["recall_at_10"],
                v["db_n10"]["p50_ms"],
                v["db_n10"]["p95_ms"],
                v["db_n50"]["p50_ms"],
                v["db_n50"]["p95_ms"],
            ]
            for ef, v in vd.items()
            if ef != "exact_scan_db"
        ]
        rows.append(["exact scan", 1.0, vd["exact_scan_db"]["p50_ms"], vd["exact_scan_db"]["p95_ms"], "-", "-"])
        parts += [
            f"## {size:,} chunks: ef_search trade-off (vector arm, DB only, ms)",
            "",
            md_table(["ef_search", "recall@10", "p50 n=10", "p95 n=10", "p50 n=50", "p95 n=50"], rows),
            "",
        ]
        rows = [
            [
                c,
                v["queries_db_n50"]["p50_ms"],
                v["queries_db_n50"]["p95_ms"],
                v["common_db_n50"]["p50_ms"],
                v["common_db_n50"]["p95_ms"],
            ]
            for c, v in d["keyword_db"].items()
        ]
        parts += [
            f"## {size:,} chunks: keyword_candidates trade-off (keyword arm, DB only, n=50, ms)",
            "",
            f"Common-word query: `{d['common_query']['query']}`.",
            "",
            md_table(["keyword_candidates", "queries p50", "queries p95", "common p50", "common p95"], rows),
            "",
        ]
        ex = d.get("explore_searcher", {})
        if ex and "error" not in ex:
            s = out[str(size)]
            rows = [
                [
                    "current",
                    s["keyword"]["p50_ms"],
                    s["keyword"]["p95_ms"],
                    s["hybrid"]["p50_ms"],
                    s["hybrid"]["p95_ms"],
                ]
            ]
            rows += [
                [k, v["keyword"]["p50_ms"], v["keyword"]["p95_ms"], v["hybrid"]["p50_ms"], v["hybrid"]["p95_ms"]]
                for k, v in ex.items()
            ]
            parts += [
                f"## {size:,} chunks: Searcher.search() with other keyword_candidates (ms)",
                "",
                md_table(["setting", "keyword p50", "keyword p95", "hybrid p50", "hybrid p95"], rows),
                "",
            ]

    big = max(sizes)
    s, d = out[str(big)], out["details"][str(big)]
    ok_lat = s["hybrid"]["p95_ms"] <= GOAL["hybrid_p95_ms"]
    ok_rec = d["recall_at_10"] >= GOAL["recall_at_10"]
    parts += [
        "## Goal at the largest size",
        "",
        f"{big:,} chunks: hybrid p95 {s['hybrid']['p95_ms']} ms (goal ≤ {GOAL['hybrid_p95_ms']:g}: "
        f"{'met' if ok_lat else 'MISSED'}), recall@10 {d['recall_at_10']} (goal ≥ {GOAL['recall_at_10']}: "
        f"{'met' if ok_rec else 'MISSED'}), measured at load average {d.get('loadavg_measure_start')} → "
        f"{d.get('loadavg_measure_end')} on {out['cpu_context_start'].get('cpus')} cores.",
        "",
    ]
    return "\n".join(parts)


def index_rows(indexes: dict[str, Any]) -> list[list[Any]]:
    """One row per index kind and run of bench/search_pgvector.py: kind, size, build s, filter, iterative scan,
    ef_search, recall@10, short answers, p50, p95."""
    return [
        [
            kind,
            b["size"],
            b["create_s"],
            r["filter"],
            r["iterative_scan"],
            r["ef_search"],
            r["recall_at_10"],
            r["short_answers"],
            r["p50_ms"],
            r["p95_ms"],
        ]
        for kind, b in indexes.items()
        for r in b["runs"].values()
    ]


def pgvector_section(pv: dict[str, Any], out: dict[str, Any], sizes: list[int]) -> str:
    """What a newer pgvector changes, from bench/search_pgvector.py's run (same vectors, another server) and
    this run's float32 index sizes."""
    idx = pv.get("indexes", {})
    rows = index_rows(idx)
    parts = [
        "## A newer pgvector (external PostgreSQL)",
        "",
        f"bench/search_pgvector.py: the {pv['copy']['rows']:,} vectors of `bench_{pv['size']}` copied into "
        f"PostgreSQL {pv['target']['server_version'].split(' on ')[0].replace('PostgreSQL ', '')} with pgvector "
        f"{pv['target']['pgvector']}, indexed as `vector` and as `halfvec`; filters keep 10 % / 1 % of the rows; "
        f"{pv['queries']} queries, DB-only latency; load average {pv['loadavg_start']} → {pv['loadavg_end']}. "
        "`short` = queries that got fewer than 10 rows.",
        "",
        md_table(
            ["index", "size", "build s", "filter", "iterative scan", "ef", "recall@10", "short", "p50 ms", "p95 ms"],
            rows,
        ),
        "",
    ]
    if "vector" in idx and "halfvec" in idx:
        ratio = idx["halfvec"]["bytes"] / idx["vector"]["bytes"]
        big = max(sizes)
        b = out["build"][str(big)]
        est = b["hnsw_bytes"] * ratio
        parts += [
            f"halfvec / vector HNSW size: {ratio:.2f} at {pv['copy']['rows']:,} vectors. Applied to this run's "
            f"pgvector 0.6 float32 HNSW at {big:,} chunks ({b['hnsw']}), a halfvec index would be about "
            f"{est / 2**30:.2f} GB; the `chunk_embeddings` heap ({b.get('vectors_heap', '?')}) halves too if the "
            "column itself is stored as halfvec.",
            "",
        ]
    return "\n".join(parts)
