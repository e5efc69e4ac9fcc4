"""/api/eval/runs over HTTP on a live server with accounts: a run started in the background, polled to its
results; another user's run id is a 404; bad bodies are 400s."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from tests.fakes.ollama_server import FakeOllama, Reply
from tests.support.accounts import add_user, setup_admin, signed_in, upload, wait_ready


def writer(body: dict[str, Any]) -> Reply:
    user = body["messages"][-1]["content"]
    if "How relevant" in user:
        return Reply.json({"score": 0.5})
    words = re.findall(r"[A-Za-z]+", user.split('"""')[1])[:6]
    return Reply.json({"question": f"What about {' '.join(words)}?"})


async def test_runs_api(live_app: Any, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = writer
    server = live_app(auth="on", ingest_workers=1, ollama_host=fake_ollama.url)
    admin = await setup_admin(server.url)
    await add_user(admin, "bob")
    bob = await signed_in(server.url, "bob")
    try:
        ids = [
            await upload(admin, "bread.txt", "Sourdough bread rises because wild yeast ferments the flour and water."),
            await upload(admin, "tides.txt", "Ocean tides are caused by the gravitational pull of the moon and sun."),
        ]
        await wait_ready(admin, ids)
        r = await admin.post("/api/eval/runs", json={"n": 2, "rerank": True})
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        # a run that moves is waited for (minutes on a busy machine); one whose progress stands for 120 s is stuck
        deadline, progress = time.monotonic() + 120, None
        while True:
            run = (await admin.get(f"/api/eval/runs/{run_id}")).json()
            if run["status"] != "running" or time.monotonic() > deadline:
                break
            if run.get("progress") != progress:
                deadline, progress = time.monotonic() + 120, run.get("progress")
            await asyncio.sleep(0.2)
        assert run["status"] == "done", run
        assert run["progress"]["stage"] == "finished"
        assert run["results"]["questions"] == 2
        assert set(run["results"]["configs"]) == {"vector", "keyword", "hybrid", "vector+rerank", "keyword+rerank",
                                                  "hybrid+rerank"}  # fmt: skip
        assert run["results"]["configs"]["keyword"]["metrics"]["recall@1"] == 1.0
        listed = (await admin.get("/api/eval/runs")).json()["runs"]
        assert [x["id"] for x in listed] == [run_id]

        # another user's run is not there at all
        assert (await bob.get(f"/api/eval/runs/{run_id}")).status_code == 404
        assert (await bob.get("/api/eval/runs")).json()["runs"] == []
        # bob has no documents: his run fails with the reason, it does not hang
        r = await bob.post("/api/eval/runs", json={"n": 3})
        assert r.status_code == 202
        bob_id = r.json()["id"]
        bob_run: dict[str, Any] = {}
        deadline = time.monotonic() + 120  # at once on an idle machine; seconds on a busy one
        while True:
            bob_run = (await bob.get(f"/api/eval/runs/{bob_id}")).json()
            if bob_run["status"] != "running" or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert bob_run["status"] == "failed" and "no ingested documents" in bob_run["notes"]

        for body in ({"n": 0}, {"n": 501}, {"n": "many"}, {"rerank": "x"}, {"category_key": "k" * 101}):
            r = await admin.post("/api/eval/runs", json=body)
            assert r.status_code == 400, (body, r.text)
        assert (await admin.get("/api/eval/runs/999999")).status_code == 404
        assert (await admin.get("/api/eval/runs/abc")).status_code in (400, 404)
        anonymous = await admin.__class__(base_url=server.url).get("/api/eval/runs")
        assert anonymous.status_code == 401
    finally:
        await admin.aclose()
        await bob.aclose()
