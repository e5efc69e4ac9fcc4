"""The MCP server over both transports, driven by the official `mcp` SDK's client: streamable HTTP at `/mcp` on a
live server (a personal API token per request) and stdio (`python -m ragchat.cli mcp`, a real subprocess)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client, ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from ragchat.core.errors import BadRequest
from ragchat.core.principal import LOCAL_OWNER_ID, local_principal
from ragchat.mcp import tools
from ragchat.mcp.server import McpState, build_server, fixed_lifespan
from tests.fakes.script import Reply
from tests.support.accounts import add_user, setup_admin, signed_in, upload, wait_ready

ROOT = Path(__file__).resolve().parents[2]
TIDES = "Ocean tides are caused mainly by the gravity of the moon, and partly by the sun."
BREAD = "Sourdough bread rises because wild yeast ferments the dough overnight."
SECRET = "Bob's private notes: the volcano expedition leaves on Tuesday."
TOOLS = {"search_documents", "find_documents", "list_documents", "read_document", "ask", "summarize_documents"}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture
async def served(live_app: Callable[..., Any], fake_ollama: Any) -> AsyncIterator[dict[str, Any]]:
    """A live server (auth on): admin owns tides.txt and bread.txt, bob owns secret.txt; an API token for admin."""
    server = live_app(auth="on", ingest_workers=1, ollama_host=fake_ollama.url)
    admin = await setup_admin(server.url)
    await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    docs = {name: await upload(admin, name, text) for name, text in [("tides.txt", TIDES), ("bread.txt", BREAD)]}
    docs["secret.txt"] = await upload(bob, "secret.txt", SECRET)
    await wait_ready(admin, [docs["tides.txt"], docs["bread.txt"]])
    await wait_ready(bob, [docs["secret.txt"]])
    token = (await admin.post("/api/auth/tokens", json={"name": "mcp"})).json()["token"]
    yield {"server": server, "url": server.url, "token": token, "docs": docs}
    await admin.aclose()
    await bob.aclose()


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def check_tools(session: ClientSession) -> None:
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    search = tools["search_documents"]
    assert search.input_schema["required"] == ["query"]
    assert {"query", "mode", "limit", "document_ids", "filters", "collection_ids", "rerank"} <= set(
        search.input_schema["properties"]
    )
    assert search.output_schema is not None
    assert {"chunks", "search_mode", "reranked", "confidence"} <= set(search.output_schema["properties"])
    assert tools["ask"].output_schema is not None and tools["list_documents"].output_schema is not None
    assert tools["read_document"].input_schema["required"] == ["document_id"]
    assert all(t.description for t in tools.values())


async def test_http_tools_search_list_read_and_isolation(served: dict[str, Any]) -> None:
    docs = served["docs"]
    async with http_session(served["url"], served["token"]) as session:
        await check_tools(session)

        found = await session.call_tool("search_documents", {"query": "what causes ocean tides", "limit": 3})
        assert not found.is_error, text(found)
        out = found.structured_content
        assert out is not None and out["search_mode"] == "hybrid" and out["reranked"] is False
        top = out["chunks"][0]
        assert top["filename"] == "tides.txt" and top["document_id"] == docs["tides.txt"] and top["number"] == 1
        assert {"title", "page", "section", "score", "trace"} <= set(top)
        assert out["confidence"]["label"] in ("high", "moderate", "low")
        assert all(c["document_id"] != docs["secret.txt"] for c in out["chunks"])
        assert "[1] tides.txt · score" in text(found) and "gravity of the moon" in text(found)

        scoped = await session.call_tool(
            "search_documents", {"query": "yeast", "mode": "keyword", "document_ids": [docs["bread.txt"]]}
        )
        assert [c["filename"] for c in scoped.structured_content["chunks"]] == ["bread.txt"]  # type: ignore[index]

        listed = await session.call_tool("list_documents", {})
        names = {d["filename"]: d for d in listed.structured_content["documents"]}  # type: ignore[index]
        assert set(names) == {"tides.txt", "bread.txt"}
        assert names["tides.txt"]["owner"] == "admin" and names["tides.txt"]["access"] == "owner"
        assert names["tides.txt"]["status"] == "ready" and names["tides.txt"]["chunks"] == 1
        filtered = await session.call_tool("list_documents", {"query": "TIDE"})
        assert [d["id"] for d in filtered.structured_content["documents"]] == [docs["tides.txt"]]  # type: ignore[index]

        read = await session.call_tool("read_document", {"document_id": docs["tides.txt"]})
        assert not read.is_error and TIDES in text(read) and "End of the document" in text(read)
        assert read.structured_content is None

        for doc_id in (docs["secret.txt"], "00000000-0000-0000-0000-00000000abcd"):
            denied = await session.call_tool("read_document", {"document_id": doc_id})
            assert denied.is_error and f"document {doc_id} not found" in text(denied)
        denied = await session.call_tool("search_documents", {"query": "volcano", "document_ids": [docs["secret.txt"]]})
        assert denied.is_error and "not found" in text(denied)

        empty = await session.call_tool("search_documents", {"query": "   "})
        assert empty.is_error and "empty" in text(empty)
        long = await session.call_tool("search_documents", {"query": "x" * 2001})
        assert long.is_error and "too long" in text(long)
        # the session survives its tool errors
        again = await session.call_tool("list_documents", {"query": "bread"})
        assert not again.is_error


async def test_http_find_documents_lists_every_readable_match(served: dict[str, Any]) -> None:
    docs = served["docs"]
    async with http_session(served["url"], served["token"]) as session:
        found = await session.call_tool("find_documents", {"query": "moon sourdough", "match": "any"})
        assert not found.is_error, text(found)
        out = found.structured_content
        assert out is not None and out["complete"] and out["total_documents"] == 2
        assert {d["document_id"] for d in out["documents"]} == {docs["tides.txt"], docs["bread.txt"]}
        assert "every matching document" in text(found) and "[1] " in text(found) and "[2] " in text(found)
        # bob's volcano note is never listed, and naming it is an error
        none = await session.call_tool("find_documents", {"query": "volcano expedition"})
        assert none.structured_content["total_documents"] == 0  # type: ignore[index]
        denied = await session.call_tool("find_documents", {"query": "volcano", "document_ids": [docs["secret.txt"]]})
        assert denied.is_error and "not found" in text(denied)
        bad = await session.call_tool("find_documents", {"query": "moon", "cursor": "%%%"})
        assert bad.is_error and "cursor" in text(bad)
        paged = await session.call_tool("find_documents", {"query": "moon sourdough", "match": "any", "page_size": 1})
        assert paged.structured_content["next_cursor"] and "more pages follow" in text(paged)  # type: ignore[index]


async def test_http_summarize_documents_reads_them_whole(served: dict[str, Any], fake_ollama: Any) -> None:
    docs = served["docs"]
    fake_ollama.enqueue(
        Reply.text("Tides come from the moon's gravity."),  # the map call of tides.txt's one part
        Reply.text("Ocean tides are caused by the moon [1]."),
    )
    async with http_session(served["url"], served["token"]) as session:
        out = await session.call_tool("summarize_documents", {"document_ids": [docs["tides.txt"]]})
        assert not out.is_error, text(out)
        body = out.structured_content
        assert body is not None and body["answer"] == "Ocean tides are caused by the moon [1]."
        assert body["sources"][0]["filename"] == "tides.txt" and "moon's gravity" in body["sources"][0]["content"]
        mapped = fake_ollama.chat_requests[0].messages[-1]["content"]
        assert TIDES in mapped and "Part [1]" in mapped
        denied = await session.call_tool("summarize_documents", {"document_ids": [docs["secret.txt"]]})
        assert denied.is_error and "not found" in text(denied)
        one = await session.call_tool("summarize_documents", {"document_ids": [docs["tides.txt"]], "compare": True})
        assert one.is_error and "compare needs 2 to 4" in text(one)


async def test_http_ask_answers_with_citations(served: dict[str, Any], fake_ollama: Any) -> None:
    fake_ollama.enqueue(
        Reply.tool_call("search_documents", {"query": "ocean tides cause"}),
        Reply.text("Tides come from the moon's gravity [1]."),
    )
    async with http_session(served["url"], served["token"]) as session:
        result = await session.call_tool("ask", {"question": "What causes ocean tides?"})
        assert not result.is_error, text(result)
        out = result.structured_content
        assert out is not None and out["answer"] == "Tides come from the moon's gravity [1]."
        assert out["sources"][0]["number"] == 1 and out["sources"][0]["filename"] == "tides.txt"
        assert out["finish_reason"] == "stop"
        assert "[1] tides.txt" in text(result) and "Sources:" in text(result)


async def test_http_auth_and_browser_protections(served: dict[str, Any]) -> None:
    url = f"{served['url']}/mcp"
    async with httpx.AsyncClient(timeout=30) as http:
        for headers in ({}, {"Authorization": "Bearer rc_not-a-token"}, {"Authorization": "Basic abc"}):
            r = await http.post(url, json=INIT, headers={**MCP_HEADERS, **headers})
            assert r.status_code == 401, r.text
            body = r.json()
            assert body["status_code"] == 401 and body["code"] == "unauthorized" and body["detail"]
        auth = {"Authorization": f"Bearer {served['token']}"}
        ok = await http.post(url, json=INIT, headers={**MCP_HEADERS, **auth})
        assert ok.status_code == 200, ok.text
        assert ok.json()["result"]["serverInfo"]["name"] == "ragchat"
        same_origin = {**MCP_HEADERS, **auth, "Origin": served["url"]}
        assert (await http.post(url, json=INIT, headers=same_origin)).status_code == 200
        foreign = await http.post(url, json=INIT, headers={**MCP_HEADERS, **auth, "Origin": "https://evil.example"})
        assert foreign.status_code == 403 and foreign.json()["code"] == "cross_origin"
    with pytest.raises(ExceptionGroup) as failed:  # the SDK's client: the handshake's POST got a 401
        async with http_session(served["url"], "rc_revoked-or-unknown"):
            pass
    assert failed.group_contains(MCPError, depth=None)


async def test_stdio_serves_the_install_user(served: dict[str, Any], db: str, tmp_path: Path, fake_ollama: Any) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ragchat.cli", "mcp"],  # acts as the install's first user: the admin
        cwd=str(ROOT),
        env={
            "DATABASE_URL": db,
            "RAGCHAT_DATA_DIR": str(tmp_path / "data"),
            "HF_HUB_OFFLINE": "1",
            "QUERY_EMBED_PRECISION": "fp32",  # no bf16 calibration at start: a faster test
            "OLLAMA_HOST": fake_ollama.url,
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),  # a checkout's own code, as the test process runs it
        },
    )
    docs = served["docs"]
    with (tmp_path / "stderr.log").open("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await check_tools(session)
            found = await session.call_tool("search_documents", {"query": "sourdough yeast"})
            assert not found.is_error, text(found)
            assert found.structured_content["chunks"][0]["filename"] == "bread.txt"  # type: ignore[index]
            listed = await session.call_tool("list_documents", {})
            assert {d["filename"] for d in listed.structured_content["documents"]} == {  # type: ignore[index]
                "tides.txt",
                "bread.txt",
            }
            read = await session.call_tool("read_document", {"document_id": docs["bread.txt"], "start_chunk": 0})
            assert BREAD in text(read)
            denied = await session.call_tool("read_document", {"document_id": docs["secret.txt"]})
            assert denied.is_error and "not found" in text(denied)
            # the product's default (CHAT_RETRIEVE_FIRST=auto): a plain lookup is searched first, one model call
            fake_ollama.enqueue(Reply.text("Wild yeast [1]."))
            asked = await session.call_tool("ask", {"question": "Why does sourdough rise?"})
            assert asked.structured_content["answer"] == "Wild yeast [1]."  # type: ignore[index]
            assert asked.structured_content["sources"][0]["filename"] == "bread.txt"  # type: ignore[index]
            assert asked.structured_content["verification"]["all_supported"] is True  # type: ignore[index]


async def test_read_document_is_bounded_and_says_how_to_read_on(runtime: Any, pool: Any) -> None:
    """120 chunks on 12 pages: 60 short ones, then 60 of 1,500 characters (the 40k cap bites first there)."""
    async with pool.connection() as conn:
        row = await (
            await conn.execute(
                """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status,
                                          chunks_total, chunks_done, page_count)
                   VALUES (%s, 'long.pdf', 'A long report', 'application/pdf', 1, 'x', 'ready', 120, 120, 12)
                   RETURNING id""",
                (LOCAL_OWNER_ID,),
            )
        ).fetchone()
        for i in range(120):
            content = f"<{i}>" + ("s" * 96 if i < 60 else "L" * 1496)
            await conn.execute(
                """INSERT INTO document_chunks (document_id, owner_id, chunk_index, content, page, token_count,
                                                content_hash) VALUES (%s, %s, %s, %s, %s, 1, %s)""",
                (row["id"], LOCAL_OWNER_ID, i, content, i // 10 + 1, str(i)),
            )
    doc = row["id"]
    caller = tools.Caller(runtime, local_principal())

    def shown(out: str) -> list[int]:
        return [int(m) for m in re.findall(r"\[chunk (\d+), page \d+\]", out)]

    first = await tools.read_document(caller, doc)
    assert shown(first) == list(range(50)) and "start_chunk=50." in first and "120 chunks" in first
    second = await tools.read_document(caller, doc, start_chunk=50)
    assert shown(second) == list(range(50, 86)) and "start_chunk=86." in second  # 10 × 100 + 26 × 1,500 = 40k
    page = await tools.read_document(caller, doc, page=3)
    assert shown(page) == list(range(20, 30)) and "End of the requested text" in page
    last = await tools.read_document(caller, doc, start_chunk=110)
    assert shown(last) == list(range(110, 120)) and "End of the document" in last
    assert "No text at chunk 500" in await tools.read_document(caller, doc, start_chunk=500)
    with pytest.raises(BadRequest):
        await tools.read_document(caller, doc, start_chunk=10, end_chunk=5)
    ranged = await tools.read_document(caller, doc, start_chunk=3, end_chunk=4)
    assert shown(ranged) == [3, 4]


async def test_failures_are_tool_errors_and_the_session_goes_on(runtime: Any) -> None:
    """In process (the SDK's in-memory client): the LLM unreachable, bad arguments; the session keeps working."""
    server = build_server(fixed_lifespan(McpState(runtime, local_principal())))
    async with Client(server) as client:
        asked = await client.call_tool("ask", {"question": "What causes tides?"})
        assert asked.is_error and "127.0.0.1:9" in text(asked), text(asked)  # settings' unreachable OLLAMA_HOST
        bad_id = await client.call_tool("read_document", {"document_id": "not-an-id"})
        assert bad_id.is_error and "document_id" in text(bad_id)
        bad_mode = await client.call_tool("search_documents", {"query": "tides", "mode": "fuzzy"})
        assert bad_mode.is_error and "mode" in text(bad_mode)
        listed = await client.call_tool("list_documents", {})
        assert not listed.is_error and text(listed) == "No documents yet."
