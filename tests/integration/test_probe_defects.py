"""The outside probe's reproductions (issue 33, item 5): hostile names are a 400, nothing half-stored."""

from __future__ import annotations

from typing import Any

import httpx

TEXT = b"Glaciers carve U-shaped valleys as they move."


def _multipart(*files: tuple[str, bytes]) -> tuple[bytes, dict[str, str]]:
    """A multipart body with the names as raw UTF-8 (httpx would percent-encode a NUL)."""
    boundary = "probe-boundary-33"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        "Content-Type: text/plain\r\n\r\n".encode()
        + data
        + b"\r\n"
        for name, data in files
    ]
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), {
        "content-type": f"multipart/form-data; boundary={boundary}"
    }


async def _post(client: httpx.AsyncClient, *files: tuple[str, bytes]) -> httpx.Response:
    body, headers = _multipart(*files)
    return await client.post("/api/documents", content=body, headers=headers)


async def _names(client: httpx.AsyncClient) -> set[str]:
    return {d["filename"] for d in (await client.get("/api/documents")).json()["documents"]}


async def test_a_nul_or_over_long_file_name_is_a_400_and_nothing_of_that_file_is_stored(live_app: Any) -> None:
    server = live_app()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        for bad in ("evil\x00name.txt", "n" * 300 + ".txt", "n" * 3000 + ".txt", "n" * 5000 + ".txt"):
            alone = await _post(client, (bad, TEXT))
            assert alone.status_code == 400, (len(bad), alone.status_code, alone.text[:200])
            body = alone.json()
            assert body["code"] == "bad_request" and "file name" in body["detail"], (len(bad), body["detail"][:300])
            if len(bad) < 4000:  # longer ones are refused by the multipart parser (4 KB a header), before any file
                assert [r["status"] for r in body["extra"]["results"]] == ["rejected"]
        assert await _names(client) == set()

        # a bad name after a good file: the good file is stored, the bad one rejected and reported, no 500
        mixed = await _post(client, ("good.txt", TEXT), ("bad\x00.txt", b"other text entirely"))
        assert mixed.status_code == 201, mixed.text[:300]
        results = mixed.json()["results"]
        assert [r["status"] for r in results] == ["queued", "rejected"]
        assert "file name" in results[1]["error"] and results[1]["document"] is None
        assert await _names(client) == {"good.txt"}


async def test_a_nul_in_an_eval_category_key_is_a_400(live_app: Any) -> None:
    server = live_app()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        response = await client.post("/api/eval/runs", json={"category_key": "topic\x00x"})
        assert response.status_code == 400, response.text[:300]
        assert response.json()["code"] == "bad_request"


async def test_the_thread_export_schema_says_json_is_an_object(live_app: Any) -> None:
    server = live_app()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        schema = (await client.get("/schema/openapi.json")).json()
    content = schema["paths"]["/api/threads/{thread_id}/export"]["get"]["responses"]["200"]["content"]
    assert content["application/json"]["schema"]["type"] == "object"
    assert content["text/markdown"]["schema"] == {"type": "string", "format": "binary"}
