"""A team under load (issue 30): one Postgres, 2 `ragchat serve` processes and 1 `ragchat worker`, 20 users
over real HTTP while a corpus ingests; then the same with the searches on a streaming replica.

Per mode (`primary`, then `replica`): a fresh PostgreSQL primary (the embedded package's binaries, as
tests/support/replication.py starts them; `replica` adds a `pg_basebackup -R` replica and DATABASE_READ_URL),
the fake Ollama in its own process (bench/chat.py's: a search tool call, then TOKENS tokens at PACE ms each),
two servers (AUTH=on, INGEST_WORKERS=0) and one worker. Setup: an admin, 20 users with API tokens, a shared
collection every user reads, 3 private documents per searching user. Then DOCS documents of a BEIR corpus
(one .jsonl upload into the shared collection) are queued, and for SECONDS (or until they are all ready):

- 10 searching users (half over everything they may read: own + shared; half with the shared collection as
  filter), queries from the corpus's queries.jsonl;
- 5 chatting users (POST /api/chat, SSE read to `done`: time to first token and total);
- 5 browsing users (document list, one document, its chunks, thread list, one thread, collections).

Users alternate between the two servers and think 0.5–1.5 s between requests. Reported per operation: p50/p95
and errors (must be 0), ingest throughput (documents and chunks per second while the load runs), the machine's
load average before and after.

    nice -n 10 python bench/team.py [--docs 1000] [--seconds 600] [--modes primary,replica]
        [--corpus ../shared/data/scifact-dev/corpus.jsonl] [--tokens 60] [--pace-ms 40] [--json bench/results/team.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import psycopg
from httpx_sse import aconnect_sse

from bench.common import DATA, RESULTS, cpu_context, pct, read_jsonl, table, write_json
from tests.support.replication import Cluster

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "correct horse battery"
XACTS = "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'postgres'"
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=100)


@dataclass
class Stats:
    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def ok(self, op: str, ms: float) -> None:
        self.times[op].append(ms)

    def fail(self, op: str, why: str) -> None:
        self.errors[op].append(why[:300])


# ---- the fake LLM (its own process) ----------------------------------------------------------------------
def serve_fake(tokens: int, pace_s: float) -> None:
    """The fake Ollama: a search tool call for a fresh question, then an answer that restates the question with
    a citation, `tokens` tokens at `pace_s` each; until stdin closes. Idle connections are kept as Ollama keeps
    them (the fake's default 5 s would close ones the server is about to reuse)."""
    from ragchat.chat.engine.tools import TOOL_NAME
    from tests.fakes.ollama_server import FakeOllama, Reply

    def respond(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or []
        question = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        if body.get("format"):
            return Reply.json({"score": 0.5})
        if not body.get("tools") or any(m.get("role") == "tool" for m in messages):
            words = [f" {w}" for w in question.split()] + [" [1]."]
            words += [" and", " the", " passage", " says", " so", " [1]."] * (tokens // 6 + 1)
            return Reply.tokens(words[:tokens], token_delay=pace_s)
        return Reply.tool_call(TOOL_NAME, {"query": question[:200]}, token_delay=pace_s)

    FakeOllama.keep_alive_s = 600
    fake = FakeOllama().start()
    fake.responder = respond
    print(fake.url, flush=True)
    for _ in sys.stdin:
        pass
    fake.stop()


# ---- processes --------------------------------------------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env_for(primary: str, replica: str | None, fake_url: str, data_dir: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "DATABASE_URL": primary,
        "RAGCHAT_DATA_DIR": str(data_dir),
        "OLLAMA_HOST": fake_url,
        "CHAT_MODEL": "llama3.2",
        "AUTH": "on",
        "INGEST_WORKERS": "0",
        "LOG_LEVEL": "warning",
        "RATE_LOGIN_PER_MIN": "0",
        # a LAN replica: skipped past 10 s of lag; a user's reads stay on the primary 12 s after their write
        "DATABASE_READ_MAX_LAG": "10",
        "RATE_CHAT_PER_MIN": "0",
        "RATE_SEARCH_PER_MIN": "0",
        "RATE_RERANK_CANDIDATES_PER_MIN": "0",
        "PYTHONPATH": f"{ROOT / 'server'}{os.pathsep}{ROOT}",
    }
    env.pop("DATABASE_READ_URL", None)
    if replica:
        env["DATABASE_READ_URL"] = replica
    return env


def spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("ab")
    return subprocess.Popen([sys.executable, "-m", "ragchat.cli", *args], env=env, stdout=handle, stderr=handle)


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def wait_ready(base: str, proc: subprocess.Popen[Any], seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"a server exited with {proc.returncode}")
            try:
                if (await client.get("/readyz")).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.5)
    raise RuntimeError(f"{base} did not become ready")


# ---- setup ------------------------------------------------------------------------------------------------
async def check(response: httpx.Response, status: int = 200) -> Any:
    if response.status_code != status:
        request = response.request
        raise RuntimeError(f"{request.method} {request.url.path}: {response.status_code} {response.text}")
    return response.json() if response.content else None


async def setup_team(bases: list[str], corpus: list[dict[str, Any]], users: int, searchers: int) -> dict[str, Any]:
    """The admin, `users` users with API tokens, the shared collection; 3 private documents per searching user."""
    async with httpx.AsyncClient(base_url=bases[0], timeout=120) as admin:
        await check(await admin.post("/api/auth/setup", json={"username": "admin", "password": PASSWORD}), 201)
        admin_token = (await check(await admin.post("/api/auth/tokens", json={"name": "bench"}), 201))["token"]
        admin.headers["authorization"] = f"Bearer {admin_token}"
        team = await check(await admin.post("/api/collections/", json={"name": "team"}), 201)
        tokens: list[str] = []
        for i in range(users):
            made = await check(
                await admin.post("/api/admin/users", json={"username": f"user{i}", "password": PASSWORD}), 201
            )
            await check(
                await admin.put(f"/api/collections/{team['id']}/members/{made['id']}", json={"role": "read"}), 204
            )
            async with httpx.AsyncClient(base_url=bases[i % len(bases)], timeout=60) as user:
                await check(await user.post("/api/auth/login", json={"username": f"user{i}", "password": PASSWORD}))
                tokens.append((await check(await user.post("/api/auth/tokens", json={"name": "bench"}), 201))["token"])
    private = corpus[: 3 * searchers]
    for i in range(searchers):  # the searching users' own documents
        async with httpx.AsyncClient(base_url=bases[i % len(bases)], timeout=120) as user:
            user.headers["authorization"] = f"Bearer {tokens[i]}"
            mine = private[3 * i : 3 * i + 3]
            texts = {f"private-{i}-{d['_id']}.txt": f"{d.get('title', '')}\n\n{d['text']}" for d in mine}
            files = [("files", (name, text.encode(), "text/plain")) for name, text in texts.items()]
            await check(await user.post("/api/documents", files=files), 201)
    return {"admin": admin_token, "tokens": tokens, "team": team["id"]}


def count_ready(uri: str, names: str) -> dict[str, int]:
    with psycopg.connect(uri) as conn:
        row = conn.execute(
            """SELECT count(*) FILTER (WHERE status = 'ready') AS ready,
                      count(*) FILTER (WHERE status = 'failed') AS failed, count(*) AS total,
                      (SELECT count(*) FROM document_chunks c JOIN documents d ON d.id = c.document_id
                       WHERE d.filename LIKE %s) AS chunks
               FROM documents WHERE filename LIKE %s""",
            (names, names),
        ).fetchone()
    assert row is not None
    return {"ready": row[0], "failed": row[1], "total": row[2], "chunks": row[3]}


async def wait_private(uri: str, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        counts = await asyncio.to_thread(count_ready, uri, "private-%")
        if counts["ready"] + counts["failed"] >= counts["total"] > 0:
            return
        await asyncio.sleep(1)
    raise RuntimeError("the private documents did not finish ingesting")


# ---- users ------------------------------------------------------------------------------------------------
async def timed(stats: Stats, op: str, call: Any, expect: int = 200) -> Any:
    started = time.perf_counter()
    try:
        response = await call
    except httpx.HTTPError as exc:
        stats.fail(op, f"{type(exc).__name__}: {exc}")
        return None
    ms = (time.perf_counter() - started) * 1000
    if response.status_code != expect:
        stats.fail(op, f"{response.status_code} {response.text[:200]}")
        return None
    stats.ok(op, ms)
    return response.json() if response.content else None


async def searcher(
    client: httpx.AsyncClient, stats: Stats, queries: list[str], shared: str | None, until: float
) -> None:
    rng = random.Random(hash(shared) ^ id(client))
    op = "search (shared collection)" if shared else "search (own + shared)"
    while time.monotonic() < until:
        params: dict[str, Any] = {"q": rng.choice(queries), "limit": 5}
        if shared:
            params["collection_ids"] = shared
        await timed(stats, op, client.get("/api/search", params=params))
        await asyncio.sleep(rng.uniform(0.5, 1.5))


async def chatter(client: httpx.AsyncClient, stats: Stats, queries: list[str], until: float) -> None:
    rng = random.Random(id(client))
    while time.monotonic() < until:
        started = time.perf_counter()
        first: float | None = None
        last = ""
        thread = None
        try:
            async with aconnect_sse(client, "POST", "/api/chat", json={"message": rng.choice(queries)}) as source:
                if source.response.status_code != 200:
                    await source.response.aread()
                    stats.fail("chat: total", f"{source.response.status_code} {source.response.text[:200]}")
                    continue
                async for sse in source.aiter_sse():
                    if not sse.data:
                        continue
                    last = sse.event
                    if sse.event == "thread":
                        thread = json.loads(sse.data)["thread_id"]
                    if sse.event == "token" and first is None:
                        first = time.perf_counter()
                    if sse.event in ("done", "error"):
                        if sse.event == "error":
                            stats.fail("chat: total", sse.data[:200])
                        break
        except httpx.HTTPError as exc:
            stats.fail("chat: total", f"{type(exc).__name__}: {exc}")
            continue
        if last == "done":
            stats.ok("chat: total", (time.perf_counter() - started) * 1000)
            if first is not None:
                stats.ok("chat: first token", (first - started) * 1000)
        elif last != "error":
            stats.fail("chat: total", f"the stream ended after {last!r}")
        if thread is not None:  # read right after the write: the primary
            await timed(stats, "open thread (after chat)", client.get(f"/api/threads/{thread}"))
        await asyncio.sleep(rng.uniform(0.5, 1.5))


async def browser(client: httpx.AsyncClient, stats: Stats, until: float) -> None:
    rng = random.Random(id(client))
    while time.monotonic() < until:
        listing = await timed(stats, "list documents", client.get("/api/documents", params={"limit": 50}))
        docs = (listing or {}).get("documents") or []
        ready = [d for d in docs if d["status"] == "ready"]
        if ready:
            doc = rng.choice(ready)
            await timed(stats, "open document", client.get(f"/api/documents/{doc['id']}"))
            await timed(stats, "document chunks", client.get(f"/api/documents/{doc['id']}/chunks"))
        await timed(stats, "list threads", client.get("/api/threads"))
        await timed(stats, "list collections", client.get("/api/collections/"))
        await asyncio.sleep(rng.uniform(0.5, 1.5))


# ---- one mode ---------------------------------------------------------------------------------------------
async def run_mode(
    mode: str, args: argparse.Namespace, corpus: list[dict[str, Any]], queries: list[str]
) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"ragchat-team-{mode}-"))
    cluster = Cluster(root / "pg")
    procs: list[subprocess.Popen[Any]] = []
    log = root / "processes.log"
    try:
        primary = cluster.start_primary()
        replica = cluster.add_replica() if mode == "replica" else None
        fake = subprocess.Popen(  # noqa: ASYNC220 (once, at the start)
            [sys.executable, str(ROOT / "bench" / "team.py"), "--role", "fake", "--tokens", str(args.tokens),
             "--pace-ms", str(args.pace_ms)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": f"{ROOT / 'server'}{os.pathsep}{ROOT}"},
        )  # fmt: skip
        procs.append(fake)
        assert fake.stdout is not None
        fake_url = fake.stdout.readline().strip()
        env = env_for(primary.uri("ragchat"), replica.uri("ragchat-read") if replica else None, fake_url, root / "data")
        ports = [free_port() for _ in range(args.servers)]
        servers = []
        for i, port in enumerate(ports):
            servers.append(spawn(["serve", "--port", str(port)], env, log))
            if i == 0:  # the first one applies the migrations alone
                await wait_ready(f"http://127.0.0.1:{port}", servers[0])
        procs += servers
        bases = [f"http://127.0.0.1:{p}" for p in ports]
        for base, proc in zip(bases, servers, strict=True):
            await wait_ready(base, proc)
        worker = spawn(["worker"], env, log)
        procs.append(worker)
        users = args.search_users + args.chat_users + args.browse_users
        team = await setup_team(bases, corpus, users, args.search_users)
        await wait_private(primary.uri())
        print(f"[{mode}] servers on {', '.join(bases)}; team ready", flush=True)
        await asyncio.sleep(12)  # the setup's writes are past the read-your-writes window (both modes alike)

        bulk = corpus[3 * args.search_users :]
        body = "\n".join(json.dumps(d) for d in bulk).encode()
        load_before = [round(x, 2) for x in os.getloadavg()]
        async with httpx.AsyncClient(base_url=bases[0], timeout=300) as admin:
            admin.headers["authorization"] = f"Bearer {team['admin']}"
            await check(
                await admin.post(
                    "/api/documents",
                    params={"collection_id": team["team"]},
                    files=[("files", ("bulk.jsonl", body, "application/jsonl"))],
                ),
                201,
            )
        started = time.monotonic()
        until = started + args.seconds
        stats = Stats()
        clients = []
        tasks = []
        tokens = team["tokens"]
        for i, token in enumerate(tokens):
            client = httpx.AsyncClient(
                base_url=bases[i % len(bases)],
                timeout=120,
                limits=LIMITS,
                headers={"authorization": f"Bearer {token}"},
            )
            clients.append(client)
            if i < args.search_users:
                shared = team["team"] if i >= args.search_users // 2 else None
                tasks.append(asyncio.create_task(searcher(client, stats, queries, shared, until)))
            elif i < args.search_users + args.chat_users:
                tasks.append(asyncio.create_task(chatter(client, stats, queries, until)))
            else:
                tasks.append(asyncio.create_task(browser(client, stats, until)))

        ingest: dict[str, Any] = {}
        while time.monotonic() < until:
            await asyncio.sleep(2)
            counts = await asyncio.to_thread(count_ready, primary.uri(), "bulk.jsonl%")
            if counts["ready"] + counts["failed"] >= args.docs and "done_s" not in ingest:
                ingest["done_s"] = round(time.monotonic() - started, 1)
                if args.stop_when_ingested:
                    break
        load_after = [round(x, 2) for x in os.getloadavg()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        elapsed = time.monotonic() - started
        counts = await asyncio.to_thread(count_ready, primary.uri(), "bulk.jsonl%")
        spent = ingest.get("done_s", elapsed)
        ingest.update(
            counts,
            seconds=round(elapsed, 1),
            docs_per_s=round(counts["ready"] / spent, 2),
            chunks_per_s=round(counts["chunks"] / spent, 2),
        )
        replicas: list[Any] = []
        for base in bases:  # each server process's own view and counts
            async with httpx.AsyncClient(base_url=base, timeout=10) as client:
                replicas += (await client.get("/readyz")).json().get("replicas", [])
        replica_xacts = None
        if replica is not None:
            replica_xacts = replica.sql(XACTS)[0][0]
        for client in clients:
            await client.aclose()
        ops = {op: pct(v) for op, v in sorted(stats.times.items())}
        return {
            "mode": mode,
            "ops": ops,
            "errors": {op: len(v) for op, v in stats.errors.items()},
            "error_samples": {op: v[:3] for op, v in stats.errors.items()},
            "ingest": ingest,
            "replicas": replicas,
            "replica_transactions": replica_xacts,
            "load_before": load_before,
            "load_after": load_after,
        }
    finally:
        for proc in reversed(procs):
            if proc is procs[0] and proc.stdin is not None:
                proc.stdin.close()
            stop(proc)
        cluster.close()
        if not args.keep:
            import shutil

            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"[{mode}] kept {root}", flush=True)


def report(results: list[dict[str, Any]]) -> str:
    ops = sorted({op for r in results for op in r["ops"]} | {op for r in results for op in r["errors"]})
    rows = []
    for op in ops:
        row: list[Any] = [op]
        for r in results:
            p = r["ops"].get(op, {})
            row += [p.get("n", 0), p.get("p50_ms", float("nan")), p.get("p95_ms", float("nan")), r["errors"].get(op, 0)]
        rows.append(row)
    headers = ["operation"]
    for r in results:
        headers += [f"{r['mode']}: n", "p50 ms", "p95 ms", "errors"]
    out = [table(headers, rows, "per operation (20 users, 2 servers, 1 worker)")]
    ing = [
        (r["mode"], r["ingest"]["ready"], r["ingest"]["failed"], r["ingest"]["total"], r["ingest"]["seconds"],
         r["ingest"].get("done_s", "-"), r["ingest"]["docs_per_s"], r["ingest"]["chunks_per_s"],
         f"{r['load_before']} → {r['load_after']}")
        for r in results
    ]  # fmt: skip
    headers = ["mode", "ready", "failed", "queued", "load s", "all done s", "docs/s", "chunks/s", "load avg"]
    out.append(table(headers, ing, "ingestion while the users work"))
    for r in results:
        if r["replicas"]:
            reads = sum(x["reads"] for x in r["replicas"])
            fallbacks = sum(x["fallbacks"] for x in r["replicas"])
            lags = [x["lag_s"] for x in r["replicas"] if x["lag_s"] is not None]
            out.append(
                f"{r['mode']}: {reads} reads on the replica ({fallbacks} run again on the primary), replica "
                f"transactions {r['replica_transactions']}, lag at the end {max(lags, default=0):.2f} s"
            )
    return "\n\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=600, help="the load phase's length (at most)")
    parser.add_argument("--stop-when-ingested", action="store_true", help="end the load phase when all are ready")
    parser.add_argument("--modes", default="primary,replica")
    default = DATA if DATA.exists() else Path("/work/shared/data/scifact-dev")  # a worktree's ../shared
    parser.add_argument("--corpus", type=Path, default=default / "corpus.jsonl")
    parser.add_argument("--queries", type=Path, default=None, help="default: queries.jsonl beside the corpus")
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--search-users", type=int, default=10)
    parser.add_argument("--chat-users", type=int, default=5)
    parser.add_argument("--browse-users", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=60, help="tokens per fake answer")
    parser.add_argument("--pace-ms", type=float, default=40, help="the fake's delay per token (25 tokens/s)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories (process logs)")
    parser.add_argument("--json", type=Path, default=RESULTS / "team.json")
    parser.add_argument("--role", choices=["bench", "fake"], default="bench", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "fake":
        serve_fake(args.tokens, args.pace_ms / 1000)
        return 0
    corpus = read_jsonl(args.corpus, 3 * args.search_users + args.docs)
    queries = [q["text"] for q in read_jsonl(args.queries or args.corpus.parent / "queries.jsonl")]
    context = cpu_context()
    results = []
    for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
        results.append(asyncio.run(run_mode(mode, args, corpus, queries)))
        print(f"[{mode}] done: errors {results[-1]['errors']}", flush=True)
    out = {
        "bench": "team",
        "command": " ".join(["python", "bench/team.py", *sys.argv[1:]]),
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "results": results,
        "context": context,
        "context_after": cpu_context(),
    }
    write_json(args.json, out)
    print(report(results))
    print(f"\nload average before: {context['loadavg']}; JSON: {args.json}")
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
