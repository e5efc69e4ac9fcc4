"""Chat streaming overhead: ragchat's POST /api/chat versus talking to the (fake) Ollama directly.

Three processes, so each one's CPU is its own: the fake Ollama (tests.fakes.ollama_server) streaming
TOKENS tokens at a fixed pace, the real ragchat server (uvicorn on 127.0.0.1, embedded Postgres in a
temporary RAGCHAT_DATA_DIR, the real embedding model, a tiny corpus uploaded through the API), and this
process as the client. Every chat is one tool round: the model calls search_documents, then streams the
answer.

(a) Sequential: time to first token and total time through ragchat vs the same two model calls made
    directly with the same ollama client. The server's added latency = ragchat time − retrieval time (the
    tool_result's timings.total_ms) − direct time; target < 15 ms.
(b) STREAMS concurrent chats on the one server process: all must complete; inter-token delay at the client
    minus the fake's pace (p99 target < 20 ms), compared with the same number of direct streams; memory per
    open stream = (peak server RSS − RSS before) / STREAMS.

The default pace is 20 ms per token (50 tokens/s per stream; 200 streams = 10,000 tokens/s out of one
fake). At 5 ms (40,000 tokens/s) this 2-core machine is saturated by the fake and the client alone: the
direct baseline's own p99 inter-token delay is ~65 ms, so what the server adds cannot be separated from
what the box cannot do (bench/results/chat_pace5.json keeps that run).

    python bench/chat.py [--runs 30] [--streams 50,200] [--tokens 200] [--pace-ms 20] [--json bench/results/chat.json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import ollama
import psutil
from httpx_sse import aconnect_sse

from bench.common import RESULTS, bench_settings, cpu_context, pct, table, write_json
from ragchat.chat.engine.prompts import SYSTEM_PROMPT
from ragchat.chat.engine.tools import SEARCH_TOOL, TOOL_NAME

MODEL = "llama3.2"
CORPUS = {
    "handbook.md": "# Holidays\n\nEvery employee gets 25 days of paid holiday per calendar year. Unused days "
    "expire on 31 March.\n\n# Office\n\nThe office is open from 8 am to 6 pm; visitors sign in at the front desk.",
    "volcano.txt": "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.",
    "bread.txt": "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.",
    "tides.txt": "Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.",
    "python.md": "# Python\n\nPython lists are mutable sequences; tuples are immutable.",
}
QUESTIONS = [
    "How many holiday days do employees get?",
    "When does the office open?",
    "What makes sourdough bread rise?",
    "What causes ocean tides?",
    "What comes out of a volcano?",
    "Are Python tuples mutable?",
]
LIMITS = httpx.Limits(max_connections=250, max_keepalive_connections=250)


# ---- child processes --------------------------------------------------------------------------------------
def serve_fake(tokens: int, pace_s: float) -> None:
    """The fake Ollama: a tool call for a fresh question, then `tokens` tokens at `pace_s`; until stdin closes."""
    from tests.fakes.ollama_server import FakeOllama, Reply

    answer = [" Employees", " get", " 25", " days", " [1]."] + [f" w{i}" for i in range(max(0, tokens - 5))]

    def respond(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        if body.get("format"):
            return Reply.json({"score": 0.5})
        if not body.get("tools") or any(m.get("role") == "tool" for m in messages):
            return Reply.tokens(answer[:tokens], token_delay=pace_s)
        question = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        return Reply.tool_call(TOOL_NAME, {"query": question[:200]}, token_delay=pace_s)

    fake = FakeOllama().start()
    fake.responder = respond
    print(fake.url, flush=True)
    seen = 0
    for line in sys.stdin:  # "dump": the chat requests since the last dump, with the fake's own timestamps
        if line.strip() == "dump":
            records = fake.chat_requests
            print(json.dumps([_record(r) for r in records[seen:]]), flush=True)
            seen = len(records)
    fake.stop()


def _record(rec: Any) -> dict[str, Any]:
    messages = rec.messages
    return {
        "question": next((m["content"] for m in reversed(messages) if m.get("role") == "user"), ""),
        "answer": any(m.get("role") == "tool" for m in messages),
        "started_at": rec.started_at,  # time.monotonic(): the same clock as perf_counter here (CLOCK_MONOTONIC)
        "first_byte_at": rec.first_byte_at,
        "finished_at": rec.finished_at,
    }


def serve_app(data_dir: str, ollama_url: str, port: int) -> None:
    """The real app, as `ragchat serve` runs it: `create_app(settings)` opens the runtime (embedded Postgres,
    the embedding model, and the Ollama provider `build_llm` makes for OLLAMA_HOST = the fake)."""
    import uvicorn

    from ragchat.app import create_app

    settings = bench_settings(
        Path(data_dir), ollama_host=ollama_url, chat_model=MODEL, log_level="warning", auth="off", rate_chat_per_min=0,
        rate_llm_calls_per_min=0,  # one user's 200 streams: the per-user LLM budget would refuse most of them
    )  # fmt: skip
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning",
                timeout_graceful_shutdown=5)  # fmt: skip


# ---- measurements -----------------------------------------------------------------------------------------
async def rag_chat(client: httpx.AsyncClient, question: str) -> dict[str, Any]:
    """One chat through ragchat: TTFT, total, retrieval ms, token arrival times."""
    started = time.perf_counter()
    tokens: list[float] = []
    count = 0
    retrieval_ms = 0.0
    searched_at = float("nan")
    outcome = "no done"
    async with aconnect_sse(client, "POST", "/api/chat", json={"message": question}) as source:
        async for event in source.aiter_sse():
            if event.event == "token":
                tokens.append(time.perf_counter())
                count += event.data.count(" ")  # every fake token starts with a space; compact JSON has none
            elif event.event == "tool_result":
                retrieval_ms += json.loads(event.data)["timings"]["total_ms"]
                searched_at = time.perf_counter()
            elif event.event == "done":
                outcome = "done"
            elif event.event == "error":
                outcome = json.loads(event.data)["code"]
    ended = time.perf_counter()
    return {
        "ok": outcome == "done",
        "outcome": outcome,
        "started": started,
        "ended": ended,
        "ttft_ms": (tokens[0] - started) * 1000 if tokens else float("nan"),
        "total_ms": (ended - started) * 1000,
        "retrieval_ms": retrieval_ms,
        "tail_ms": (ended - tokens[-1]) * 1000 if tokens else float("nan"),
        "tokens": tokens,  # arrival time of each token event (a coalesced event can carry several tokens)
        "token_count": count,
        "searched_at": searched_at,
    }


async def direct_chat(llm: ollama.AsyncClient, question: str) -> dict[str, Any]:
    """The same two model calls, made directly: the tool call, then the streamed answer."""
    started = time.perf_counter()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    calls: list[Any] = []
    async for part in await llm.chat(model=MODEL, messages=messages, tools=[SEARCH_TOOL], stream=True):
        calls.extend(part.message.tool_calls or [])
    messages.append({"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": c.function.name, "arguments": c.function.arguments}} for c in calls]})  # fmt: skip
    messages.append({"role": "tool", "tool_name": TOOL_NAME, "content": "[1] handbook.md\n25 days of paid holiday"})
    tokens: list[float] = []
    async for part in await llm.chat(model=MODEL, messages=messages, tools=[SEARCH_TOOL], stream=True):
        if part.message.content:
            tokens.append(time.perf_counter())
    ended = time.perf_counter()
    return {
        "ok": True,
        "started": started,
        "ended": ended,
        "ttft_ms": (tokens[0] - started) * 1000 if tokens else float("nan"),
        "total_ms": (ended - started) * 1000,
        "tail_ms": (ended - tokens[-1]) * 1000 if tokens else float("nan"),
        "tokens": tokens,
        "token_count": len(tokens),
    }


def gaps_over_pace(runs: list[dict[str, Any]], pace_ms: float, after: float = float("-inf")) -> list[float]:
    """Delays between consecutive token events beyond the fake's pace (only gaps starting after `after`)."""
    out: list[float] = []
    for run in runs:
        times = run["tokens"]
        out.extend((b - a) * 1000 - pace_ms for a, b in itertools.pairwise(times) if a >= after)
    return out


def phases(run: dict[str, Any], calls: list[dict[str, Any]], retrieval_ms: float = 0.0) -> dict[str, float]:
    """Where one chat's time went, from the client's and the fake's timestamps (one clock, in ms)."""
    ask = next(c for c in calls if not c["answer"])
    answer = next(c for c in calls if c["answer"])
    return {
        "before_model": (ask["started_at"] - run["started"]) * 1000,  # request, first DB write, prompt
        "between_calls": (answer["started_at"] - ask["finished_at"]) * 1000 - retrieval_ms,  # tool round
        "first_token_relay": (run["tokens"][0] - answer["first_byte_at"]) * 1000,
        "after_model": (run["ended"] - answer["finished_at"]) * 1000,  # last chunk -> end (save, `done`)
        "fake_stream": (answer["finished_at"] - answer["first_byte_at"]) * 1000,  # the fake's own pacing
    }


async def sequential(base: str, fake_url: str, runs: int, pace_ms: float, dump: Callable[[], Any]) -> dict[str, Any]:
    timeout = httpx.Timeout(120.0)
    async with httpx.AsyncClient(base_url=base, timeout=timeout) as client, ollama.AsyncClient(
        host=fake_url, timeout=timeout
    ) as llm:  # fmt: skip
        for i in range(5):  # warm-up: connections, caches, code paths
            await rag_chat(client, f"warm up {i}: {QUESTIONS[i % len(QUESTIONS)]}")
            await direct_chat(llm, "warm up")
        pairs = []
        for i in range(runs):
            question = QUESTIONS[i % len(QUESTIONS)]
            rag = await rag_chat(client, f"{question} (run {i})")  # a fresh query: no embedding cache hit
            direct = await direct_chat(llm, f"{question} (direct {i})")
            if not rag["ok"]:
                raise RuntimeError(f"chat failed: {rag['outcome']}")
            pairs.append((rag, direct))
    records = await asyncio.to_thread(dump)
    rag_runs = [r for r, _ in pairs]
    direct_runs = [d for _, d in pairs]

    def med(key: str, rows: list[dict[str, Any]]) -> float:
        return round(median(r[key] for r in rows), 2)

    def gaps(rows: list[dict[str, Any]]) -> str:
        p = pct(gaps_over_pace(rows, pace_ms))
        return f"{p['p50_ms']} / {p['p99_ms']}"

    added: dict[str, list[float]] = {}
    for i, (rag, direct) in enumerate(pairs):
        question = QUESTIONS[i % len(QUESTIONS)]
        mine = phases(rag, [c for c in records if c["question"].endswith(f"{question} (run {i})")], rag["retrieval_ms"])
        theirs = phases(direct, [c for c in records if c["question"] == f"{question} (direct {i})"])
        for key in mine:
            added.setdefault(key, []).append(mine[key] - theirs[key])
    first_token = [
        sum(v) for v in zip(*(added[k] for k in ("before_model", "between_calls", "first_token_relay")), strict=True)
    ]
    whole = [sum(v) for v in zip(*(added[k] for k in ("before_model", "between_calls", "after_model")), strict=True)]
    return {
        "runs": runs,
        "ragchat": {"ttft_ms": med("ttft_ms", rag_runs), "total_ms": med("total_ms", rag_runs),
                    "retrieval_ms": med("retrieval_ms", rag_runs), "tail_ms": med("tail_ms", rag_runs),
                    "gap_p50_p99": gaps(rag_runs)},
        "direct": {"ttft_ms": med("ttft_ms", direct_runs), "total_ms": med("total_ms", direct_runs),
                   "tail_ms": med("tail_ms", direct_runs), "gap_p50_p99": gaps(direct_runs)},
        "ratio_ttft": round(median(r["ttft_ms"] / d["ttft_ms"] for r, d in pairs), 3),
        "ratio_total": round(median(r["total_ms"] / d["total_ms"] for r, d in pairs), 3),
        # server-added latency excluding retrieval, measured against the fake's own timestamps, per phase
        "added_ms": {key: round(median(values), 2) for key, values in added.items()},
        "added_ttft_ms_excl_retrieval": round(median(first_token), 2),
        "added_total_ms_excl_retrieval": round(median(whole), 2),
        "added_total_ms_excl_retrieval_pct": pct(whole),
        # the naive version (end-to-end difference): also counts the fake's pacing drift under CPU contention
        "naive_added_total_ms_excl_retrieval": round(
            median(r["total_ms"] - r["retrieval_ms"] - d["total_ms"] for r, d in pairs), 2
        ),
    }  # fmt: skip


async def concurrent(
    base: str, fake_url: str, streams: int, tokens: int, pace_ms: float, server_pid: int
) -> dict[str, Any]:
    server = psutil.Process(server_pid)
    timeout = httpx.Timeout(300.0)
    open_now = peak_open = 0
    rss_before = server.memory_info().rss
    rss_peak = rss_before
    sampling = True

    async def sample() -> None:
        nonlocal rss_peak
        while sampling:
            rss_peak = max(rss_peak, server.memory_info().rss)
            await asyncio.sleep(0.02)

    async def tracked(client: httpx.AsyncClient, i: int) -> dict[str, Any]:
        nonlocal open_now, peak_open
        open_now += 1
        peak_open = max(peak_open, open_now)
        try:
            return await rag_chat(client, f"{QUESTIONS[i % len(QUESTIONS)]} (stream {i})")
        finally:
            open_now -= 1

    sampler = asyncio.create_task(sample())
    began = time.perf_counter()
    cpu_before = sum(server.cpu_times()[:2])
    async with httpx.AsyncClient(base_url=base, timeout=timeout, limits=LIMITS) as client:
        results = await asyncio.gather(*(tracked(client, i) for i in range(streams)), return_exceptions=True)
    wall_s = time.perf_counter() - began
    server_cpu_s = sum(server.cpu_times()[:2]) - cpu_before
    sampling = False
    await sampler
    rag = [r for r in results if isinstance(r, dict)]
    failures = [repr(r) for r in results if not isinstance(r, dict)] + [r["outcome"] for r in rag if not r["ok"]]
    ok = [r for r in rag if r["ok"]]
    delivered = sum(r["token_count"] for r in ok)

    async with ollama.AsyncClient(host=fake_url, timeout=timeout, limits=LIMITS) as llm:
        direct = await asyncio.gather(*(direct_chat(llm, f"direct {i}") for i in range(streams)))
    rag_gaps, direct_gaps = gaps_over_pace(ok, pace_ms), gaps_over_pace(direct, pace_ms)
    rag_p, direct_p = pct(rag_gaps), pct(direct_gaps)
    # the same, once every search has finished: the relay alone, without query embeddings competing for the CPU
    last_search = max(r["searched_at"] for r in ok) if ok else 0.0
    relay_p = pct(gaps_over_pace(ok, pace_ms, after=last_search))
    return {
        "streams": streams,
        "completed": len(ok),
        "failures": failures[:10],
        "all_tokens_delivered": all(r["token_count"] == tokens for r in ok),
        "peak_open_streams": peak_open,
        "wall_s": round(wall_s, 2),
        "tokens_delivered": delivered,
        "token_events": sum(len(r["tokens"]) for r in ok),
        "server_cpu_s": round(server_cpu_s, 2),
        "server_cpu_us_per_token": round(server_cpu_s * 1e6 / max(1, delivered), 1),
        "ragchat_ttft": pct([r["ttft_ms"] for r in ok]),
        "ragchat_total": pct([r["total_ms"] for r in ok]),
        "ragchat_retrieval": pct([r["retrieval_ms"] for r in ok]),
        "ragchat_gap_over_pace": rag_p,
        "direct_gap_over_pace": direct_p,
        "ragchat_gap_over_pace_after_last_search": relay_p,
        "server_added_gap_p50_ms": round(rag_p["p50_ms"] - direct_p["p50_ms"], 2),
        "server_added_gap_p99_ms": round(rag_p["p99_ms"] - direct_p["p99_ms"], 2),
        "rss_before_mb": round(rss_before / 2**20, 1),
        "rss_peak_mb": round(rss_peak / 2**20, 1),
        "rss_per_stream_kb": round((rss_peak - rss_before) / streams / 1024, 1),
    }


# ---- orchestration ----------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_ready(base: str, proc: subprocess.Popen[Any], seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=base, timeout=2) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited with {proc.returncode}")
            try:
                if (await client.get("/api/health")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.5)
    raise RuntimeError("the server did not start")


async def upload_corpus(base: str) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        files = [("files", (name, text.encode(), "text/plain")) for name, text in CORPUS.items()]
        response = await client.post("/api/documents", files=files)
        response.raise_for_status()
        for _ in range(600):
            docs = (await client.get("/api/documents")).json()["documents"]
            if len(docs) == len(CORPUS) and all(d["status"] == "ready" for d in docs):
                return
            if any(d["status"] == "failed" for d in docs):
                raise RuntimeError(f"ingestion failed: {docs}")
            await asyncio.sleep(0.2)
    raise RuntimeError("ingestion did not finish")


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def start_processes(
    args: argparse.Namespace, data_dir: str
) -> tuple[subprocess.Popen[str], subprocess.Popen[str], str, str]:
    """The fake Ollama and the ragchat server, each in its own process; returns (fake, server, fake_url, base)."""
    me = str(Path(__file__).resolve())
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    fake = subprocess.Popen(
        [sys.executable, me, "--role", "fake", "--tokens", str(args.tokens), "--pace-ms", str(args.pace_ms)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert fake.stdout is not None
    fake_url = fake.stdout.readline().strip()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, me, "--role", "server", "--data-dir", data_dir, "--ollama", fake_url, "--port", str(port)],
        env=env,
        text=True,
    )
    return fake, server, fake_url, f"http://127.0.0.1:{port}"


async def measure(
    args: argparse.Namespace, server: subprocess.Popen[str], fake_url: str, base: str, dump: Callable[[], Any]
) -> dict[str, Any]:
    await wait_ready(base, server)
    await upload_corpus(base)
    print(f"server ready on {base}; fake Ollama on {fake_url}", flush=True)
    seq = await sequential(base, fake_url, args.runs, args.pace_ms, dump)
    print("sequential done", flush=True)
    conc = []
    for streams in args.streams:
        conc.append(await concurrent(base, fake_url, streams, args.tokens, args.pace_ms, server.pid))
        print(f"{streams} concurrent done", flush=True)
    return {
        "bench": "chat",
        "tokens": args.tokens,
        "pace_ms": args.pace_ms,
        "sequential": seq,
        "concurrent": conc,
        "context": cpu_context(),
    }


def report(result: dict[str, Any]) -> str:
    s = result["sequential"]
    rows_a = [
        ("time to first token (ms)", s["ragchat"]["ttft_ms"], s["direct"]["ttft_ms"], s["ratio_ttft"]),
        ("total (ms)", s["ragchat"]["total_ms"], s["direct"]["total_ms"], s["ratio_total"]),
        ("last token -> end of stream (ms)", s["ragchat"]["tail_ms"], s["direct"]["tail_ms"], "-"),
        ("retrieval inside ragchat (ms)", s["ragchat"]["retrieval_ms"], "-", "-"),
        ("inter-token delay over pace p50 / p99 (ms)", s["ragchat"]["gap_p50_p99"], s["direct"]["gap_p50_p99"], "-"),
        ("server-added, excl. retrieval (ms):", "", "", ""),
        ("  before the first model call", s["added_ms"]["before_model"], "-", "-"),
        ("  between the model calls", s["added_ms"]["between_calls"], "-", "-"),
        ("  relaying the first answer token", s["added_ms"]["first_token_relay"], "-", "-"),
        ("  after the last model chunk", s["added_ms"]["after_model"], "-", "-"),
        ("  = to the first token", s["added_ttft_ms_excl_retrieval"], "-", "target < 15"),
        ("  = to the end of the answer", s["added_total_ms_excl_retrieval"], "-", "target < 15"),
        ("  (naive: total - retrieval - direct total)", s["naive_added_total_ms_excl_retrieval"], "-", "-"),
        ("  (of which the fake streaming slower)", s["added_ms"]["fake_stream"], "-", "-"),
    ]
    title = (
        f"(a) {s['runs']} sequential chats, 1 tool round + {result['tokens']} tokens at {result['pace_ms']} ms/token"
    )
    out = [table(["medians", "ragchat", "direct", "ratio"], rows_a, title=title)]
    for c in result["concurrent"]:
        rg, dg = c["ragchat_gap_over_pace"], c["direct_gap_over_pace"]
        relay = c["ragchat_gap_over_pace_after_last_search"]
        rows_b = [
            ("completed / all tokens delivered", f"{c['completed']}/{c['streams']} / {c['all_tokens_delivered']}", "-"),
            ("token events (coalesced from tokens)", f"{c['token_events']} ({c['tokens_delivered']})", "-"),
            ("inter-event delay over pace p50 (ms)", rg["p50_ms"], dg["p50_ms"]),
            ("inter-event delay over pace p99 (ms)", rg["p99_ms"], dg["p99_ms"]),
            ("server-added p99 (ragchat - direct)", c["server_added_gap_p99_ms"], "target < 20"),
            ("  same, once all searches are done: p50 / p99 (ms)", f"{relay['p50_ms']} / {relay['p99_ms']}", "-"),
            (
                "time to first token p50 / p99 (ms)",
                f"{c['ragchat_ttft']['p50_ms']} / {c['ragchat_ttft']['p99_ms']}",
                "-",
            ),
            (
                "retrieval p50 / p99 (ms)",
                f"{c['ragchat_retrieval']['p50_ms']} / {c['ragchat_retrieval']['p99_ms']}",
                "-",
            ),
            ("total p50 / p99 (ms)", f"{c['ragchat_total']['p50_ms']} / {c['ragchat_total']['p99_ms']}", "-"),
            ("server RSS before -> peak (MB)", f"{c['rss_before_mb']} -> {c['rss_peak_mb']}", "-"),
            ("memory per open stream (KB)", c["rss_per_stream_kb"], "-"),
            ("server CPU per token, all work incl. retrieval (us)", c["server_cpu_us_per_token"], "-"),
        ]
        title = f"(b) {c['streams']} concurrent chats on one server process, wall {c['wall_s']} s"
        out.append(table(["", "ragchat", "direct"], rows_b, title=title))
    return "\n\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=["bench", "fake", "server"], default="bench", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--streams", type=lambda v: [int(x) for x in v.split(",")], default=[200],
                        help="concurrent chats for (b); a comma-separated list runs each")  # fmt: skip
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--pace-ms", type=float, default=20.0)
    parser.add_argument("--json", type=Path, default=RESULTS / "chat.json")
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--ollama", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "fake":
        serve_fake(args.tokens, args.pace_ms / 1000)
        return 0
    if args.role == "server":
        serve_app(args.data_dir, args.ollama, args.port)
        return 0
    data_dir = tempfile.mkdtemp(prefix="ragchat-bench-chat-")
    fake, server, fake_url, base = start_processes(args, data_dir)
    try:

        def dump() -> Any:
            assert fake.stdin is not None and fake.stdout is not None
            fake.stdin.write("dump\n")
            fake.stdin.flush()
            return json.loads(fake.stdout.readline())

        result = asyncio.run(measure(args, server, fake_url, base, dump))
    finally:
        stop(server)
        if fake.stdin:
            fake.stdin.close()
        stop(fake)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(report(result))
    write_json(args.json, result)
    print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
