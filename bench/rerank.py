"""Rerank parallelism bench: 30 candidates against the fake Ollama at a fixed 200 ms per call, through the
LLM provider the runtime builds (`build_llm` → `OllamaProvider`, whose JSON-schema calls go through
`OllamaShards`).

For each concurrency c the wall time of one `LLMReranker.rerank` is compared with the ideal
`ceil(30 / c) × 200 ms` (target ratio ≤ 1.15) and with the sequential (c = 1) time, once per
RERANK_CLIENT_SHARDS value (`--shards 1 8`: the provider's `json_shards`). `json_shards=1` is one
`ollama.AsyncClient` (one httpx connection pool), i.e. the provider without the shards; the gain column is
wall(1 shard) ÷ wall(N shards) at the same c: `OllamaShards` stays only while that gain is real at c=30.
Runs of the shard settings are interleaved (repeat by repeat) so machine load hits them alike.

The fake Ollama runs in its own process (`--fake process`, the default), as Ollama does: in the bench's
own process (`--fake thread`) its HTTP parsing competes with the client for one GIL. `--fake both` prints
both. Every run uses a fresh reranker (empty score cache) but the same warmed-up provider, so connection
setup is not measured.

    .venv/bin/python bench/rerank.py [--candidates 30] [--latency 0.2] [--concurrency 1 4 8 30] [--repeats 3]
                                     [--shards 1 8]

Writes bench/results/rerank.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragchat.core.search import ChunkHit, Trace  # noqa: E402
from ragchat.providers.llm import build_llm  # noqa: E402
from ragchat.providers.llm.base import LLMProvider  # noqa: E402
from ragchat.retrieval.rerank import LLMReranker  # noqa: E402
from ragchat.settings import Settings  # noqa: E402
from tests.fakes.ollama_server import FakeOllama, Reply  # noqa: E402

TARGET_RATIO = 1.15


def candidates(n: int) -> list[ChunkHit]:
    doc = uuid.uuid4()
    return [
        ChunkHit(
            id=i,
            document_id=doc,
            filename=f"doc{i}.txt",
            title=f"Doc {i}",
            chunk_index=0,
            content=f"Passage number {i} about something moderately relevant. " * 10,
            content_hash=f"hash-{i}",
            score=1 / (60 + i),
            trace=Trace(vector_rank=i, fused_score=1 / (60 + i)),
        )
        for i in range(1, n + 1)
    ]


def responder(body: dict[str, Any]) -> Reply:
    user = body["messages"][-1]["content"]
    return Reply.json({"score": round((sum(map(ord, user)) % 100) / 100, 2)})


QUERY = "how relevant is this?"


class FakeHandle(Protocol):
    url: str

    def fresh(self, latency: float) -> None:
        """Clear the fake's records, then answer every chat after `latency` seconds with `responder`."""

    def stats(self) -> tuple[int, int]:
        """(chat requests, most requests in flight at once) since the last `fresh`."""


class ThreadFake:
    """The fake on a thread of this process (shares the GIL with the client)."""

    def __init__(self) -> None:
        self.fake = FakeOllama().start()
        self.url = self.fake.url

    def fresh(self, latency: float) -> None:
        self.fake.reset()
        self.fake.responder, self.fake.latency = responder, latency

    def stats(self) -> tuple[int, int]:
        return len(self.fake.chat_requests), self.fake.max_concurrent

    def close(self) -> None:
        self.fake.stop()


class ProcessFake:
    """The fake in a child process (`--role fake`), driven over its stdin/stdout, one command per line."""

    def __init__(self) -> None:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--role", "fake"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self._read()

    def _read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the fake Ollama process exited")
        return line.strip()

    def _ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._read()

    def fresh(self, latency: float) -> None:
        self._ask(f"fresh {latency}")

    def stats(self) -> tuple[int, int]:
        requests, peak = self._ask("stats").split()
        return int(requests), int(peak)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def serve_fake() -> None:
    """`--role fake`: serve until stdin closes; `fresh <latency>` and `stats` commands, one per line."""
    fake = ThreadFake()
    print(fake.url, flush=True)
    for line in sys.stdin:
        command, *rest = line.split()
        if command == "fresh":
            fake.fresh(float(rest[0]))
            print("ok", flush=True)
        elif command == "stats":
            print(*fake.stats(), flush=True)
    fake.close()


def provider_settings(url: str, shards: int, concurrency: int = 4) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None, ollama_host=url, rerank_client_shards=shards, rerank_concurrency=concurrency
    )


async def measure(fake: FakeHandle, hits: list[ChunkHit], args: argparse.Namespace) -> dict[str, Any]:
    """Rows per shard setting: {shards: [row per concurrency]}."""
    widest = max(args.concurrency)
    providers: dict[int, LLMProvider] = {
        s: build_llm(provider_settings(fake.url, s).llm, json_shards=s) for s in args.shards
    }
    try:
        for shards, provider in providers.items():  # warm-up: open the keep-alive connections the widest run uses
            fake.fresh(0.0)
            warm = provider_settings(fake.url, shards, widest)
            await LLMReranker(provider, warm.retrieval, warm.llm.effective_rerank_model).rerank(
                "warm-up", hits, len(hits)
            )
        rows: dict[int, list[dict[str, Any]]] = {s: [] for s in args.shards}
        for c in args.concurrency:
            walls: dict[int, list[float]] = {s: [] for s in args.shards}
            peaks: dict[int, list[int]] = {s: [] for s in args.shards}
            for _ in range(args.repeats):
                for shards, provider in providers.items():
                    fake.fresh(args.latency)
                    s = provider_settings(fake.url, shards, c)
                    reranker = LLMReranker(provider, s.retrieval, s.llm.effective_rerank_model)  # fresh cache
                    start = time.perf_counter()
                    result = await reranker.rerank(QUERY, hits, len(hits))
                    walls[shards].append(time.perf_counter() - start)
                    assert len(result) == len(hits) and all(h.trace.rerank_score is not None for h in result)
                    requests, peak = fake.stats()
                    assert requests == len(hits)
                    peaks[shards].append(peak)
            ideal = math.ceil(len(hits) / c) * args.latency
            for shards in args.shards:
                wall = statistics.median(walls[shards])
                rows[shards].append(
                    {
                        "concurrency": c,
                        "wall_s": round(wall, 4),
                        "wall_runs_s": [round(w, 4) for w in walls[shards]],
                        "ideal_s": round(ideal, 4),
                        "ratio": round(wall / ideal, 4),
                        "max_in_flight": max(peaks[shards]),
                    }
                )
        calls = {s: list(getattr(getattr(p, "json_client", None), "calls", [])) for s, p in providers.items()}
    finally:
        for provider in providers.values():
            await provider.close()
    out: dict[str, Any] = {}
    for shards, shard_rows in rows.items():
        sequential = shard_rows[0]["wall_s"] if shard_rows[0]["concurrency"] == 1 else len(hits) * args.latency
        for row in shard_rows:
            row["speedup"] = round(sequential / row["wall_s"], 2)
            row["ok"] = row["ratio"] <= TARGET_RATIO and row["max_in_flight"] <= row["concurrency"]
        out[str(shards)] = {"rows": shard_rows, "calls_per_shard": calls[shards]}
    base = str(min(args.shards))
    for shards in out:
        for row, ref in zip(out[shards]["rows"], out[base]["rows"], strict=True):
            row["gain_vs_one_pool"] = round(ref["wall_s"] / row["wall_s"], 3)
    return out


async def run(args: argparse.Namespace) -> dict[str, Any]:
    hits = candidates(args.candidates)
    kinds = ["process", "thread"] if args.fake == "both" else [args.fake]
    by_fake: dict[str, Any] = {}
    for kind in kinds:
        fake = ProcessFake() if kind == "process" else ThreadFake()
        try:
            by_fake[kind] = await measure(fake, hits, args)
        finally:
            fake.close()
    main = by_fake[kinds[0]]
    target = str(max(args.shards))
    at_widest = {s: next(r for r in main[s]["rows"] if r["concurrency"] == max(args.concurrency)) for s in main}
    return {
        "bench": "rerank",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "candidates": len(hits),
        "latency_s": args.latency,
        "repeats": args.repeats,
        "fake": kinds[0],
        "shards": args.shards,
        "target_ratio": TARGET_RATIO,
        "sequential_s": main[target]["rows"][0]["wall_s"],
        "rows": main[target]["rows"],
        "shards_gain_at_max_concurrency": {
            "concurrency": max(args.concurrency),
            "wall_s": {s: r["wall_s"] for s, r in at_widest.items()},
            "gain": at_widest[target]["gain_vs_one_pool"],
        },
        "all_ok": all(r["ok"] for r in main[target]["rows"]),
        "by_fake": by_fake,
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"rerank: {report['candidates']} candidates, {report['latency_s'] * 1000:.0f} ms per call, "
          f"median of {report['repeats']}, load average {report['loadavg']}")  # fmt: skip
    for kind, result in report["by_fake"].items():
        print(f"fake Ollama in its own {kind}"
              + ("  <- the target" if kind == report["fake"] else ""))  # fmt: skip
        print(f"{'shards':>6} {'c':>3} {'wall ms':>8} {'ideal ms':>9} {'ratio':>6} {'speed-up':>9} {'in flight':>9} "
              f"{'gain vs 1':>9}  ok")  # fmt: skip
        for shards, res in result.items():
            for r in res["rows"]:
                print(
                    f"{shards:>6} {r['concurrency']:>3} {r['wall_s'] * 1000:>8.0f} {r['ideal_s'] * 1000:>9.0f} "
                    f"{r['ratio']:>6.3f} {r['speedup']:>8.2f}x {r['max_in_flight']:>9} "
                    f"{r['gain_vs_one_pool']:>8.3f}x  {'yes' if r['ok'] else 'NO'}"
                )
            print(f"{'':>6} calls per shard: {res['calls_per_shard']}")
    g = report["shards_gain_at_max_concurrency"]
    print(
        f"OllamaShards at c={g['concurrency']}: wall {g['wall_s']} s by shards → gain {g['gain']}x "
        f"(wall with 1 pool ÷ wall with {max(report['shards'])})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 30])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--fake",
        choices=["process", "thread", "both"],
        default="process",
        help="where the fake Ollama runs; with both, the process one is the target",
    )
    parser.add_argument(
        "--shards",
        type=int,
        nargs="+",
        default=sorted({1, Settings.model_fields["rerank_client_shards"].default}),
        help="RERANK_CLIENT_SHARDS values to compare (the provider's json_shards; default 1 and the default)",
    )
    parser.add_argument("--role", choices=["bench", "fake"], default="bench", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "rerank.json")
    args = parser.parse_args()
    if args.role == "fake":
        serve_fake()
        return 0
    report = asyncio.run(run(args))
    print_table(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}")
    return 0 if report["all_ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
