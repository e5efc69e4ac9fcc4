"""One request policy behind every door (issue 41, item 1): the chat page, /api/search, /api/search/documents,
/api/rag, /v1, MCP and the CLI hand what the caller asked to `RequestPolicy.check`, so an id the caller cannot
read is the same 404 with the same words everywhere (the local CLI and /api/search/documents used to search
it and find nothing; /v1 could not scope a question at all), and "the request, else the user's preference,
else the environment" decides alike through every door (MCP `ask` used to ignore the documents_only
preference). Real server, real HTTP, real MCP client, the real CLI in a subprocess; the fake LLM at the edge."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from tests.fakes.script import Reply
from tests.integration.test_accounts import run_cli
from tests.support.accounts import add_user, setup_admin, signed_in, upload

QUESTION = "What were the semiconductor export tariffs in Brazil last quarter?"
OFF_TOPIC = Reply.tool_call("search_documents", {"query": "quarterly semiconductor export tariffs in Brazil"})
ANSWERED = "Brazil's tariffs were 12 percent."

Seen = tuple[int, str, str]  # status, code, message


async def _http(client: httpx.AsyncClient, method: str, path: str, **kw: Any) -> Seen:
    async with client.stream(method, path, **kw) as r:
        body = json.loads(await r.aread()) if r.status_code >= 400 else {}
    if "error" in body:  # /v1 speaks OpenAI's error shape: {"error": {message, type, code, request_id}}
        return r.status_code, body["error"]["code"], body["error"]["message"]
    if body:
        assert set(body) == {"status_code", "code", "detail", "extra", "request_id"}, body
        return r.status_code, body["code"], body["detail"]
    return r.status_code, "", ""


@asynccontextmanager
async def _mcp(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def _tool(session: ClientSession, tool: str, args: dict[str, Any]) -> tuple[bool, str, Any]:
    result = await session.call_tool(tool, args)
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    return result.is_error, text.removeprefix(f"Error executing tool {tool}: "), result.structured_content


async def test_a_forbidden_id_is_the_same_404_through_every_door(
    live_app: Callable[..., Any], fake_ollama: Any, db: str, tmp_path: Path
) -> None:
    fake_ollama.responder = lambda body: "Nothing about that [1]."
    server = live_app(auth="on", ingest_workers=0, ollama_host=fake_ollama.url)
    admin = await setup_admin(server.url)  # the page's client: a session cookie
    await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    secret = await upload(bob, "secret.txt", "Bob's notes: the volcano expedition leaves on Tuesday.")
    token = (await admin.post("/api/auth/tokens", json={"name": "doors"})).json()["token"]
    bearer = {"Authorization": f"Bearer {token}"}
    ids = {"document_ids": [secret]}

    seen: dict[str, Seen] = {}
    seen["page POST /api/chat"] = await _http(admin, "POST", "/api/chat", json={"message": "volcano?", **ids})
    async with httpx.AsyncClient(base_url=server.url, headers=bearer, timeout=60) as api:
        seen["GET /api/search"] = await _http(api, "GET", "/api/search", params={"q": "volcano", **ids})
        seen["POST /api/search"] = await _http(api, "POST", "/api/search", json={"query": "volcano", "filters": ids})
        seen["GET /api/search/documents"] = await _http(
            api, "GET", "/api/search/documents", params={"q": "volcano", **ids}
        )
        seen["POST /api/rag"] = await _http(api, "POST", "/api/rag", json={"query": "volcano?", "filters": ids})
        v1 = {"model": "ragchat", "messages": [{"role": "user", "content": "volcano?"}], **ids}
        seen["POST /v1/chat/completions"] = await _http(api, "POST", "/v1/chat/completions", json=v1)
    async with _mcp(server.url, bearer) as session:
        for tool, args in (("search_documents", {"query": "volcano"}), ("ask", {"question": "volcano?"})):
            failed, text, _ = await _tool(session, tool, {**args, **ids})
            seen[f"MCP {tool}"] = (404 if failed else 200, "not_found" if failed else "", text if failed else "")
    env = {"DATABASE_URL": db, "RAGCHAT_DATA_DIR": str(tmp_path / "cli"), "HF_HUB_OFFLINE": "1"}
    cli = await asyncio.to_thread(run_cli, "search", "volcano", "--document", secret, "--user", "admin", env=env)
    said = [line for line in cli.stderr.splitlines() if line.startswith("ragchat: ") and "using" not in line]
    seen["CLI search"] = (404 if cli.returncode == 2 else cli.returncode, "not_found", said[-1][9:] if said else "")

    expected = (404, "not_found", f"document {secret} not found")
    assert {door: got for door, got in seen.items() if got != expected} == {}, cli.stderr
    # the owner's same request through the same policy is not refused
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as mine:
        r = await mine.get("/api/search", params={"q": "volcano", **ids}, cookies=bob.cookies)
        assert r.status_code == 200, r.text
    assert fake_ollama.chat_requests == []  # every refusal came before the model was asked
    await admin.aclose()
    await bob.aclose()


def _documents_only_script(body: dict[str, Any]) -> Reply:
    if body.get("tools") and body["messages"][-1]["role"] != "tool":
        return OFF_TOPIC
    return Reply.text(ANSWERED)


async def test_the_request_then_the_preference_then_the_environment_through_two_doors(
    corpus: Any, live_app: Callable[..., Any], fake_ollama: Any
) -> None:
    """/api/rag and /api/search, and MCP `ask` and `search_documents`: the preference applies where the request
    says nothing, the request wins where it says, the environment (SEARCH_MODE=hybrid, CHAT_DOCUMENTS_ONLY
    off) when neither does."""
    fake_ollama.responder = _documents_only_script
    # LLM_TIMEOUT_S as in production: the tests' 5 s is too short for the fake's reply on a busy machine
    server = live_app(ollama_host=fake_ollama.url, search_mode="hybrid", chat_documents_only=False, llm_timeout_s=120)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as api, _mcp(server.url, {}) as session:

        async def rag(**body: Any) -> tuple[str, str]:
            r = await api.post("/api/rag", json={"query": QUESTION, **body})
            assert r.status_code == 200, r.text
            return r.json()["finish_reason"], r.json()["debug"]["search_mode"]

        async def mcp(**args: Any) -> tuple[str, str]:
            failed, text, out = await _tool(session, "ask", {"question": QUESTION})
            assert not failed and out is not None, text
            failed, text, found = await _tool(session, "search_documents", {"query": "volcano", **args})
            assert not failed and found is not None, text
            return out["finish_reason"], found["search_mode"]

        async def search(**params: Any) -> str:
            r = await api.get("/api/search", params={"q": "volcano", **params})
            assert r.status_code == 200, r.text
            return str(r.json()["mode"])

        # the environment: nothing asked, nothing preferred
        finished, mode = await mcp()
        assert finished != "not_covered" and mode == "hybrid"
        assert (await rag())[0] != "not_covered" and await search() == "hybrid"

        r = await api.put("/api/preferences", json={"documents_only": True, "search_mode": "keyword"})
        assert r.status_code == 200, r.text
        # the preference, through both doors
        assert await rag() == ("not_covered", "keyword")
        assert await mcp() == ("not_covered", "keyword")
        assert await search() == "keyword"
        # the request over the preference
        finished, mode = await rag(documents_only=False, mode="vector")
        assert finished != "not_covered" and mode == "vector"
        assert (await mcp(mode="vector"))[1] == "vector"
        assert await search(mode="vector") == "vector"
