"""What bench/search.py measures beyond latency per mode, for issue 29's million-chunk goal: whether the corpus
has real embeddings' neighbour structure, filtered vector searches (1% and 10% of the documents), and the whole
corpus searched by a reader it is shared with, beside its owner.

- Neighbour structure: the cosine similarity of each sampled chunk to its nearest and 10th-nearest other chunk,
  and of each query to its nearest and 10th-nearest chunk; in the real SciFact corpus (in memory) and in the
  size's database (one streamed pass). Percentiles side by side: a synthetic corpus whose rows sit much closer
  to each other than real chunks do makes HNSW recall look worse than it is, and farther makes it look better.
- Filtered: a metadata filter on `bench_bucket` (1 bucket = 1% of the documents, 10 = 10%), recall@10 of the
  vector arm against an exact filtered scan, answers shorter than asked, DB latency, and the searcher's
  vector and hybrid latency with the filter.
- Reader vs owner: the same queries through the searcher as the owner and as the reader (interleaved, order
  alternating), p50/p95 per mode, and whether the top-10 chunk ids agree.
"""

from __future__ import annotations

import math
import time
import uuid
from typing import Any

import numpy as np

from bench.common import pct
from ragchat.core.options import options_of
from ragchat.core.principal import Principal
from ragchat.core.search import SearchFilters
from ragchat.db.pool import Conn
from ragchat.readscope.sql import read_scope
from ragchat.retrieval.search import HYBRID_ARM_DEPTH, Searcher
from ragchat.retrieval.vector import vector_search
from ragchat.vectors.store import Space, as_array

READER = uuid.UUID("00000000-0000-0000-0000-0000000acce5")
PERCENTILES = (10, 50, 90)


def spread(values: np.ndarray) -> dict[str, float]:
    return {f"p{p}": round(float(np.percentile(values, p)), 4) for p in PERCENTILES} | {
        "mean": round(float(values.mean()), 4)
    }


def top_sims(corpus: np.ndarray, probes: np.ndarray, k: int, self_rows: np.ndarray | None = None) -> np.ndarray:
    """The k best cosine similarities of each probe against `corpus` (unit rows), best first; a probe's own row
    (`self_rows[i]`, -1 for none) is left out."""
    out = np.zeros((len(probes), k), dtype=np.float32)
    for start in range(0, len(probes), 256):
        sims = probes[start : start + 256] @ corpus.T
        if self_rows is not None:
            for i, row in enumerate(self_rows[start : start + 256]):
                if row >= 0:
                    sims[i, row] = -np.inf
        part = -np.partition(-sims, k - 1, axis=1)[:, :k]
        out[start : start + 256] = -np.sort(-part, axis=1)
    return out


def real_structure(vectors: np.ndarray, qvecs: np.ndarray, sample: int, seed: int) -> dict[str, Any]:
    """Nearest-neighbour similarities inside the real corpus: of `sample` chunks (themselves left out) and of
    the queries."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = np.random.default_rng(seed).choice(len(unit), size=min(sample, len(unit)), replace=False)
    chunks = top_sims(unit, unit[rows], 10, rows)
    queries = top_sims(unit, qvecs, 10)
    return {
        "rows": len(unit),
        "chunk_top1": spread(chunks[:, 0]),
        "chunk_top10": spread(chunks[:, 9]),
        "query_top1": spread(queries[:, 0]),
        "query_top10": spread(queries[:, 9]),
    }


def real_growth(vectors: np.ndarray, seed: int, probes: int = 1500) -> dict[str, Any]:
    """How a real corpus' neighbourhoods tighten as it grows: median top-1 and top-10 similarity of random
    subsets of the real chunks (1/16 to all), and a power law fitted to the 10th neighbour's distance
    (1 - cosine ~ a * n^slope) that extrapolates what the same kind of text would give at a larger size."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    points = []
    for share in (16, 8, 4, 2, 1):
        n = len(unit) // share
        subset = unit[rng.choice(len(unit), size=n, replace=False)]
        rows = rng.choice(n, size=min(probes, n), replace=False)
        best = top_sims(subset, subset[rows], 10, rows)
        points.append({"rows": n, "top1_p50": float(np.median(best[:, 0])), "top10_p50": float(np.median(best[:, 9]))})
    slope, intercept = np.polyfit(
        np.log([p["rows"] for p in points]), np.log([1.0 - p["top10_p50"] for p in points]), 1
    )
    return {"points": points, "top10_distance_slope": float(slope), "top10_distance_intercept": float(intercept)}


def extrapolated_top10(growth: dict[str, Any], rows: int) -> float:
    return 1.0 - math.exp(growth["top10_distance_intercept"] + growth["top10_distance_slope"] * math.log(rows))


def growth_lines(growth: dict[str, Any] | None, sizes: list[int]) -> list[str]:
    if not growth:
        return []
    from bench.search_report import md_table

    rows = [[f"{p['rows']:,}", f"{p['top1_p50']:.3f}", f"{p['top10_p50']:.3f}"] for p in growth["points"]]
    rows += [[f"{size:,} (extrapolated)", "", f"{extrapolated_top10(growth, size):.3f}"] for size in sizes]
    return [
        "Real SciFact subsets: how the median nearest and 10th-nearest similarity grow with the corpus, and the",
        f"power law fitted to the 10th neighbour's distance (1 - cos ~ n^{growth['top10_distance_slope']:.3f})",
        "carried to the bench sizes: what a real corpus of the same kind of text would show there (an estimate).",
        "",
        md_table(["real rows", "top-1 p50", "top-10 p50"], rows),
        "",
    ]


def parent_similarities(vectors: np.ndarray, sample: int, seed: int) -> np.ndarray:
    """Top-1 neighbour similarities of `sample` real chunks: what the shaped generator draws from."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = np.random.default_rng(seed).choice(len(unit), size=min(sample, len(unit)), replace=False)
    return top_sims(unit, unit[rows], 1, rows)[:, 0]


async def db_structure(
    conn: Conn, space: Space, owner: uuid.UUID, qvecs: np.ndarray, sample: int, seed: int
) -> dict[str, Any]:
    """The same percentiles over the size's database in one streamed pass: `sample` random chunks of it (real
    and synthetic alike, each without itself) and the queries."""
    probe_rows = await (
        await conn.execute(
            """SELECT chunk_id, embedding FROM chunk_embeddings TABLESAMPLE BERNOULLI (%s) REPEATABLE (%s)
               WHERE space_id = %s LIMIT %s""",
            (min(100.0, 100.0 * 4 * sample / max(1, await _rows(conn, space))), seed, space.id, sample),
        )
    ).fetchall()
    probe_ids = np.array([r["chunk_id"] for r in probe_rows], dtype=np.int64)
    probes = np.stack([as_array(r["embedding"]) for r in probe_rows]).astype(np.float32)
    allq = np.concatenate([probes, qvecs]).astype(np.float32)
    allq /= np.linalg.norm(allq, axis=1, keepdims=True)
    own = np.concatenate([probe_ids, np.full(len(qvecs), -1, dtype=np.int64)])
    best = np.full((len(allq), 10), -np.inf, dtype=np.float32)
    total = 0
    async with conn.transaction(), conn.cursor(name="bench_structure", binary=True) as cur:
        await cur.execute(
            "SELECT chunk_id, embedding FROM chunk_embeddings WHERE space_id = %s AND owner_id = %s",
            (space.id, owner),
        )
        while rows := await cur.fetchmany(20000):
            cids = np.fromiter((r["chunk_id"] for r in rows), dtype=np.int64, count=len(rows))
            vecs = np.stack([as_array(r["embedding"]) for r in rows]).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            sims = allq @ vecs.T
            sims[own[:, None] == cids[None, :]] = -np.inf
            both = np.concatenate([best, sims], axis=1)
            best = -np.partition(-both, 9, axis=1)[:, :10]
            total += len(rows)
    best = -np.sort(-best, axis=1)
    n = len(probes)
    return {
        "rows": total,
        "chunk_top1": spread(best[:n, 0]),
        "chunk_top10": spread(best[:n, 9]),
        "query_top1": spread(best[n:, 0]),
        "query_top10": spread(best[n:, 9]),
    }


async def _rows(conn: Conn, space: Space) -> int:
    row = await (
        await conn.execute("SELECT count(*) AS n FROM chunk_embeddings WHERE space_id = %s", (space.id,))
    ).fetchone()
    return int(row["n"]) if row else 0


def bucket_filter(share: int) -> SearchFilters:
    """Documents in the first `share` of the 100 `bench_bucket` values: `share`% of them."""
    return SearchFilters(metadata={"bench_bucket": [f"{b:02d}" for b in range(share)]})


async def filtered(
    conn: Conn,
    searcher: Searcher,
    principal: Principal,
    space: Space,
    queries: list[str],
    qvecs: list[np.ndarray],
    shares: list[int],
    explore_factors: tuple[float, ...] = (1.0, 4.0),
) -> dict[str, Any]:
    """Per share of the documents: recall@10 and short answers of the vector arm as the searcher runs it
    (HNSW with iterative scans, or exact below EXACT_SCAN_MAX_ROWS) against an exact filtered scan, its DB
    latency at n=10 and n=HYBRID_ARM_DEPTH, and the searcher's vector and hybrid latency with the filter."""
    settings = searcher.settings
    scope = await read_scope(conn, principal.user_id)
    out: dict[str, Any] = {}
    for share in shares:
        filters = bucket_filter(share)
        buckets = [f"{b:02d}" for b in range(share)]
        rows = await (
            await conn.execute(
                """SELECT count(*) AS n FROM chunk_embeddings e WHERE e.space_id = %s
                   AND e.document_id IN (SELECT d.id FROM documents d WHERE d.metadata->>'bench_bucket' = ANY(%s))""",
                (space.id, buckets),
            )
        ).fetchone()
        hits = short10 = short50 = 0
        lat10: list[float] = []
        lat50: list[float] = []
        by_factor = dict.fromkeys(explore_factors, 0)  # recall with other HNSW_FILTERED_EF_FACTOR values

        async def as_searched(q: np.ndarray, n: int, factor: float) -> list[tuple[int, float]]:
            """The vector arm as the searcher runs it, with this filter and filtered-ef factor."""
            return await vector_search(
                conn,
                space,
                q,
                scope=scope,
                n=n,
                filters=filters,  # noqa: B023  # awaited inside this iteration of the loop
                ef_search=settings.hnsw_ef_search,
                exact_max_rows=settings.exact_scan_max_rows,
                ef_growth=settings.hnsw_ef_growth,
                filtered_ef_factor=factor,
            )

        for q in qvecs:
            truth = await vector_search(conn, space, q, scope=scope, n=10, filters=filters, exact_max_rows=10**9)
            for factor in by_factor:
                other = await as_searched(q, 10, factor)
                by_factor[factor] += len({i for i, _ in other} & {i for i, _ in truth})
            start = time.perf_counter()
            got = await as_searched(q, 10, settings.hnsw_filtered_ef_factor)
            lat10.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            got50 = await as_searched(q, HYBRID_ARM_DEPTH, settings.hnsw_filtered_ef_factor)
            lat50.append((time.perf_counter() - start) * 1000)
            hits += len({i for i, _ in got} & {i for i, _ in truth})
            short10 += len(got) < min(10, len(truth))
            short50 += len(got50) < HYBRID_ARM_DEPTH
        searched: dict[str, Any] = {}
        for mode in ("vector", "hybrid"):
            lat: list[float] = []
            for q in queries:
                searcher._vectors.clear()  # pyright: ignore[reportPrivateUsage]  # the embedding is measured
                start = time.perf_counter()
                await searcher.search(
                    q, principal=principal, options=options_of(settings, limit=10, mode=mode, filters=filters)
                )
                lat.append((time.perf_counter() - start) * 1000)
            searched[mode] = pct(lat)
        out[f"{share}%"] = {
            "chunks_in_filter": rows["n"] if rows else None,
            "recall_at_10": round(hits / (10 * len(qvecs)), 4),
            "recall_at_10_by_filtered_ef_factor": {
                str(f): round(h / (10 * len(qvecs)), 4) for f, h in by_factor.items()
            },
            "short_answers_n10": short10,
            "short_answers_n50": short50,
            "db_n10": pct(lat10),
            "db_n50": pct(lat50),
            "searcher": searched,
        }
    return out


async def reader_vs_owner(
    searcher: Searcher, owner: Principal, reader: Principal, queries: list[str], warmup: list[str]
) -> dict[str, Any]:
    """The same queries as the owner and as the reader the whole corpus is shared with, interleaved (the order
    alternates query by query); p50/p95 per mode, the ratio, and how many top-10 lists differ."""
    settings = searcher.settings
    out: dict[str, Any] = {}
    for mode in ("vector", "keyword", "hybrid"):
        opts = options_of(settings, limit=10, mode=mode)
        for q in warmup:
            for who in (owner, reader):
                await searcher.search(q, principal=who, options=opts)
        lat: dict[str, list[float]] = {"owner": [], "reader": []}
        differ = 0
        for i, q in enumerate(queries):
            order = (("owner", owner), ("reader", reader)) if i % 2 == 0 else (("reader", reader), ("owner", owner))
            tops: dict[str, list[int]] = {}
            for label, who in order:
                searcher._vectors.clear()  # pyright: ignore[reportPrivateUsage]
                start = time.perf_counter()
                result = await searcher.search(q, principal=who, options=opts)
                lat[label].append((time.perf_counter() - start) * 1000)
                tops[label] = [c.id for c in result.chunks]
            differ += tops["owner"] != tops["reader"]
        o, r = pct(lat["owner"]), pct(lat["reader"])
        out[mode] = {
            "owner": o,
            "reader": r,
            "ratio_p50": round(r["p50_ms"] / o["p50_ms"], 3),
            "ratio_p95": round(r["p95_ms"] / o["p95_ms"], 3),
            "top10_lists_differing": differ,
        }
    return out


def scale_markdown(out: dict[str, Any], sizes: list[int]) -> str:
    """The neighbour structure, filtered and reader-vs-owner tables of a shaped run (empty for isotropic)."""
    kind = out.get("synthetic", {}).get("kind")
    if kind not in ("shaped", "tree"):
        return ""
    from bench.search_report import md_table

    structure = [["real SciFact", *_structure_cells(out["real_structure"])]]
    for size in sizes:
        structure.append(
            [f"{size:,} (real + {kind} synthetic)", *_structure_cells(out["details"][str(size)]["structure"])]
        )
    filtered_rows = [
        _filtered_cells(size, share, f) for size in sizes for share, f in out["details"][str(size)]["filtered"].items()
    ]
    reader_rows = [
        _reader_cells(size, mode, r)
        for size in sizes
        for mode, r in out["details"][str(size)]["reader_vs_owner"].items()
    ]
    return "\n".join(
        [
            "## Neighbour structure (cosine similarity, p10 / p50 / p90)",
            "",
            "A chunk's nearest and 10th-nearest other chunk; a query's nearest and 10th-nearest chunk. Synthetic",
            "rows: a parent vector plus noise with the real vectors' covariance, scaled so the similarity to",
            "that parent follows the real top-1 distribution; the parent is a random real vector (`shaped`) or any",
            "row made before it, real or synthetic (`tree`, the default).",
            "",
            md_table(["corpus", "rows", "chunk top-1", "chunk top-10", "query top-1", "query top-10"], structure),
            "",
            *growth_lines(out.get("real_growth"), sizes),
            "## Filtered vector search (a metadata filter on a share of the documents; ms)",
            "",
            md_table(FILTERED_HEAD, filtered_rows),
            "",
            "## The whole corpus shared with a reader: reader vs owner (ms, same run, interleaved)",
            "",
            md_table(READER_HEAD, reader_rows),
            "",
        ]
    )


FILTERED_HEAD = [
    "chunks",
    "filter",
    "rows in filter",
    "recall@10",
    "recall@10 at factor 1 / 4",
    "short n=10",
    "short n=50",
    "DB p50",
    "DB p95",
]
FILTERED_HEAD += ["vector p50", "hybrid p50", "hybrid p95"]
READER_HEAD = ["chunks", "mode", "owner p50", "owner p95", "reader p50", "reader p95", "ratio p50", "ratio p95"]
READER_HEAD += ["top-10 lists differing"]


def _spread_cell(s: dict[str, float]) -> str:
    return f"{s['p10']:.3f} / {s['p50']:.3f} / {s['p90']:.3f}"


def _structure_cells(s: dict[str, Any]) -> list[str]:
    keys = ("chunk_top1", "chunk_top10", "query_top1", "query_top10")
    return [f"{s['rows']:,}", *(_spread_cell(s[k]) for k in keys)]


def _filtered_cells(size: int, share: str, f: dict[str, Any]) -> list[Any]:
    db, searched = f["db_n10"], f["searcher"]
    return [
        f"{size:,}",
        share,
        f"{f['chunks_in_filter']:,}",
        f["recall_at_10"],
        " / ".join(f"{v}" for v in f.get("recall_at_10_by_filtered_ef_factor", {}).values()),
        f["short_answers_n10"],
        f["short_answers_n50"],
        db["p50_ms"],
        db["p95_ms"],
        searched["vector"]["p50_ms"],
        searched["hybrid"]["p50_ms"],
        searched["hybrid"]["p95_ms"],
    ]


def _reader_cells(size: int, mode: str, r: dict[str, Any]) -> list[Any]:
    o, rd = r["owner"], r["reader"]
    cells = [f"{size:,}", mode, o["p50_ms"], o["p95_ms"], rd["p50_ms"], rd["p95_ms"], r["ratio_p50"], r["ratio_p95"]]
    return [*cells, r["top10_lists_differing"]]
