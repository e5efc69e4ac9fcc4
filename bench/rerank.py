"""Rerank parallelism bench: 30 candidates against the fake Ollama at a fixed 200 ms per call.

For each concurrency c the wall time of one `LLMReranker.rerank` is compared with the ideal
`ceil(30 / c) × 200 ms` (target ratio ≤ 1.15) and with the sequential (c = 1) time.

The fake Ollama runs in its own process (`--fake process`, the default), as Ollama does: in the bench's
own process (`--fake thread`) its HTTP parsing competes with the client for one GIL; measured, that makes
little difference here. `--fake both` prints both. Every run uses a fresh
reranker (empty score cache) but the same warmed-up HTTP client, so connection setup is not measured.
The reranker talks through the client the app builds for it (`OllamaShards`, RERANK_CLIENT_SHARDS small
connection pools, see server/chat/clients.py). Each run is followed by a control: the same chat requests
sent straight through one `ollama.AsyncClient` with the same bound (`one client`), which is what the
reranker used before and shows what the shards save.

    .venv/bin/python bench/rerank.py [--candidates 30] [--latency 0.2] [--concurrency 1 4 8 30] [--repeats 3]

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

import ollama  # noqa: E402
from server.chat.clients import rerank_client  # noqa: E402

from server.core.search import ChunkHit, Trace  # noqa: E402
from server.retrieval.rerank import RERANK_SCHEMA, LLMReranker, build_messages  # noqa: E402
from server.settings import Settings  # noqa: E402
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


async def raw_calls(client: ollama.AsyncClient, settings: Settings, hits: list[ChunkHit], c: int) -> None:
    """The transport floor: the same chat requests through the same client and bound, without the reranker."""
    semaphore = asyncio.Semaphore(c)

    async def call(hit: ChunkHit) -> Any:
        async with semaphore:
            return await client.chat(
                model=settings.effective_rerank_model,
                messages=build_messages(QUERY, hit.content, settings.rerank_passage_chars),
                stream=False,
                format=RERANK_SCHEMA,
                options={"temperature": 0},
                think=False,
            )

    await asyncio.gather(*(call(h) for h in hits))


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


async def measure(fake: FakeHandle, hits: list[ChunkHit], args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    base = {"ollama_host": fake.url, "rerank_client_shards": args.shards}
    shards = rerank_client(Settings(_env_file=None, **base))  # type: ignore[call-arg]  # what the app builds
    async with ollama.AsyncClient(host=fake.url) as client:
        # warm-up: open the keep-alive connections the widest run will use
        fake.fresh(0.0)
        warm = Settings(_env_file=None, rerank_concurrency=max(args.concurrency), **base)  # type: ignore[call-arg]
        await LLMReranker(shards, warm).rerank("warm-up", hits, len(hits))
        await raw_calls(client, warm, hits, max(args.concurrency))
        for c in args.concurrency:
            settings = Settings(_env_file=None, rerank_concurrency=c, **base)  # type: ignore[call-arg]
            walls, floors, peaks = [], [], []
            for _ in range(args.repeats):
                fake.fresh(args.latency)
                reranker = LLMReranker(shards, settings)  # fresh cache
                start = time.perf_counter()
                result = await reranker.rerank(QUERY, hits, len(hits))
                walls.append(time.perf_counter() - start)
                assert len(result) == len(hits) and all(h.trace.rerank_score is not None for h in result)
                requests, peak = fake.stats()
                assert requests == len(hits)
                peaks.append(peak)
                fake.fresh(args.latency)
                start = time.perf_counter()
                await raw_calls(client, settings, hits, c)
                floors.append(time.perf_counter() - start)
            wall, floor = statistics.median(walls), statistics.median(floors)
            ideal = math.ceil(len(hits) / c) * args.latency
            rows.append(
                {
                    "concurrency": c,
                    "wall_s": round(wall, 4),
                    "wall_runs_s": [round(w, 4) for w in walls],
                    "ideal_s": round(ideal, 4),
                    "ratio": round(wall / ideal, 4),
                    "one_client_s": round(floor, 4),
                    "ratio_vs_one_client": round(wall / floor, 4),
                    "max_in_flight": max(peaks),
                }
            )
    await shards.close()
    sequential = rows[0]["wall_s"] if rows[0]["concurrency"] == 1 else len(hits) * args.latency
    for row in rows:
        row["speedup"] = round(sequential / row["wall_s"], 2)
        row["ok"] = row["ratio"] <= TARGET_RATIO and row["max_in_flight"] <= row["concurrency"]
    return rows


async def run(args: argparse.Namespace) -> dict[str, Any]:
    hits = candidates(args.candidates)
    kinds = ["process", "thread"] if args.fake == "both" else [args.fake]
    by_fake: dict[str, Any] = {}
    for kind in kinds:
        fake = ProcessFake() if kind == "process" else ThreadFake()
        try:
            rows = await measure(fake, hits, args)
        finally:
            fake.close()
        by_fake[kind] = {"rows": rows}
    main = by_fake[kinds[0]]
    return {
        "bench": "rerank",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "candidates": len(hits),
        "latency_s": args.latency,
        "repeats": args.repeats,
        "fake": kinds[0],
        "client_shards": args.shards,
        "target_ratio": TARGET_RATIO,
        "sequential_s": main["rows"][0]["wall_s"],
        "rows": main["rows"],
        "all_ok": all(r["ok"] for r in main["rows"]),
        "by_fake": by_fake,
    }


def print_table(report: dict[str, Any]) -> None:
    print(f"rerank: {report['candidates']} candidates, {report['latency_s'] * 1000:.0f} ms per call, "
          f"median of {report['repeats']}")  # fmt: skip
    for kind, result in report["by_fake"].items():
        print(f"fake Ollama in its own {kind}"
              + ("  <- the target" if kind == report["fake"] else ""))  # fmt: skip
        print(
            f"{'c':>3} {'wall ms':>8} {'ideal ms':>9} {'ratio':>6} {'speed-up':>9} {'in flight':>9} "
            f"{'one client ms':>13} {'vs one':>7}  ok"
        )
        for r in result["rows"]:
            print(
                f"{r['concurrency']:>3} {r['wall_s'] * 1000:>8.0f} {r['ideal_s'] * 1000:>9.0f} {r['ratio']:>6.3f} "
                f"{r['speedup']:>8.2f}x {r['max_in_flight']:>9} {r['one_client_s'] * 1000:>13.0f} "
                f"{r['ratio_vs_one_client']:>7.3f}  {'yes' if r['ok'] else 'NO'}"
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
    parser.add_argument("--shards", type=int, default=Settings.model_fields["rerank_client_shards"].default)
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
