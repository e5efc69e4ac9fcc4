"""Evaluation end to end on the real Postgres and embedding model, with the fake LLM writing the questions:
a generated run over a few documents, stored and compared; a BEIR corpus that did not fully ingest is refused."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ragchat.cli.evaluation import _beir, _generated
from ragchat.core.principal import local_principal
from ragchat.documents.ingest.registration import register_bytes
from ragchat.evaluation import store
from ragchat.evaluation.report import compare_table, flat_metrics
from ragchat.evaluation.service import GeneratedEval, run_generated
from ragchat.settings import Settings
from tests.fakes.ollama_server import FakeOllama, Reply
from tests.support.services import LOCAL_OWNER_ID, make_pipeline

DOCS = {
    "volcano.txt": ("Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano.", "geo"),
    "bread.txt": ("Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water.", "food"),
    "tides.txt": ("Ocean tides are caused by the gravitational pull of the moon and the sun on the oceans.", "geo"),
    "python.md": ("# Python\n\nPython lists are mutable sequences; tuples are immutable and hashable.", "code"),
    "baking.txt": ("Baking powder makes quick breads and cakes rise without any yeast at all.", "food"),
}
_PASSAGE = re.compile(r'"""\n(.*)\n"""', re.S)


def question_writer(calls: dict[str, int]) -> Any:
    """A fake LLM: a question from the passage's words; for the tides passage garbage always (skipped), for the
    bread passage garbage once (the retry succeeds); rerank requests get a score."""

    def respond(body: dict[str, Any]) -> Reply:
        user = body["messages"][-1]["content"]
        if "How relevant" in user:
            return Reply.json({"score": 0.5})
        passage = (_PASSAGE.search(user) or re.search("(.*)", user, re.S)).group(1)  # type: ignore[union-attr]
        key = next((k for k in ("tides", "Sourdough") if k in passage), "")
        calls[key] = calls.get(key, 0) + 1
        if key == "tides" or (key == "Sourdough" and calls[key] == 1):
            return Reply.json("<think>hmm</think> I cannot do that")
        words = re.findall(r"[A-Za-z]+", passage)[:6]
        return Reply.json(f'<think>ok</think>```json\n{{"question": "What about {" ".join(words)}?"}}\n```')

    return respond


@pytest.fixture
async def library(pool: Any, embedder: Any, settings: Settings) -> None:
    for name, (text, topic) in DOCS.items():
        await register_bytes(pool, LOCAL_OWNER_ID, name, text.encode(), settings.ingestion, metadata={"topic": topic})
    await make_pipeline(pool, embedder, settings).run()


@pytest.fixture
async def rt(settings: Settings, pool: Any, embedder: Any, fake_ollama: FakeOllama) -> AsyncIterator[Any]:
    from ragchat.runtime import Overrides, open_runtime

    app_settings = settings.model_copy(update={"llm_provider": "ollama", "ollama_host": fake_ollama.url})
    async with open_runtime(app_settings, Overrides(pool=pool, embedder=embedder)) as runtime:
        yield runtime


async def test_generated_run_is_measured_stored_and_compared(
    library: None, rt: Any, fake_ollama: FakeOllama, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: dict[str, int] = {}
    fake_ollama.responder = question_writer(calls)
    progress: list[dict[str, Any]] = []
    spec = GeneratedEval(n=5, rerank=(False, True), category_key="topic")
    results, notes = await run_generated(rt, local_principal(), spec, on_progress=progress.append)

    assert calls == {"tides": 2, "Sourdough": 2, "": 3}  # one retry each for the two bad ones
    assert (results["sampled"], results["questions"], results["skipped"]) == (5, 4, 1)
    assert "1 chunks skipped" in notes
    assert set(results["configs"]) == {"vector", "keyword", "hybrid", "vector+rerank", "keyword+rerank",
                                       "hybrid+rerank"}  # fmt: skip
    for name, cfg in results["configs"].items():
        m = cfg["metrics"]
        assert set(m) >= {"recall@1", "recall@5", "recall@10", "ndcg@10", "mrr@10", "chunk_recall@10"}
        assert all(0.0 <= v <= 1.0 for v in m.values()), (name, m)
        assert m["recall@1"] <= m["recall@5"] <= m["recall@10"]
        assert cfg["latency_ms"]["p50"] <= cfg["latency_ms"]["p95"]
        assert set(cfg["by_category"]) == {"geo", "food", "code"}  # tides skipped, volcano left for geo
        assert sum(c["queries"] for c in cfg["by_category"].values()) == 4
    # the questions quote their passage: keyword search finds the source document first every time
    assert results["configs"]["keyword"]["metrics"]["recall@1"] == 1.0
    assert results["configs"]["keyword"]["metrics"]["chunk_recall@1"] == 1.0
    assert progress[-1]["stage"] == "searching" and progress[-1]["done"] == progress[-1]["total"] == 24

    run_a = await store.create_run(rt.pool, LOCAL_OWNER_ID, "library", spec.config(), results=results, notes=notes)
    run_b = await store.create_run(rt.pool, LOCAL_OWNER_ID, "library", spec.config(), results=results)
    stored = await store.get_run(rt.pool, LOCAL_OWNER_ID, run_a)
    assert stored["results"] == json.loads(json.dumps(results)) and stored["notes"] == notes
    assert [r["id"] for r in await store.list_runs(rt.pool, LOCAL_OWNER_ID)] == [run_b, run_a]
    table = compare_table([(f"run {i}", flat_metrics((await store.get_run(rt.pool, None, i))["results"]))
                           for i in (run_a, run_b)])  # fmt: skip
    assert "keyword recall@1" in table and "+0.0000" in table

    # the CLI path: prints the table and stores the run
    args = argparse.Namespace(generate=3, rerank=False, category_key=None, user=None, quiet=True, modes="keyword",
                              fusions=None)  # fmt: skip
    code, run_id, cli_results = await _generated(rt, args)
    assert code == 0 and set(cli_results["configs"]) == {"keyword"}
    kept = (await store.get_run(rt.pool, LOCAL_OWNER_ID, run_id))["results"]
    assert kept["sampled"] == 3 and kept["questions"] + kept["skipped"] == 3
    assert "keyword" in capsys.readouterr().out


async def test_no_documents_and_a_silent_llm_are_clear_errors(rt: Any, fake_ollama: FakeOllama, library: Any) -> None:
    from ragchat.core.errors import BadRequest, ServiceUnavailable

    other = local_principal().__class__(user_id=__import__("uuid").uuid4())
    with pytest.raises(BadRequest, match="no ingested documents"):
        await run_generated(rt, other, GeneratedEval(n=3))
    fake_ollama.responder = lambda body: Reply.error(500, "model runner crashed")
    with pytest.raises(ServiceUnavailable, match="no valid question"):
        await run_generated(rt, local_principal(), GeneratedEval(n=2, rerank=(False,)))


def write_beir(root: Path, corpus: list[dict[str, Any]]) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    queries = [{"_id": "q1", "text": "what makes bread rise", "category": "food"},
               {"_id": "q2", "text": "volcano lava", "metadata": {"category": "geo"}}]  # fmt: skip
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tbread\t1\nq2\tvolcano\t1\n")
    return root


def beir_args(path: Path, allow_partial: bool) -> argparse.Namespace:
    return argparse.Namespace(dataset=str(path), split="test", modes="keyword,hybrid", rerank=False, fusions=None,
                              category_key=None, allow_partial=allow_partial, quiet=True)  # fmt: skip


async def test_partial_corpus_is_refused_with_the_failures_listed(
    rt: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = [{"_id": "bread", "title": "Bread", "text": DOCS["bread.txt"][0]},
              {"_id": "volcano", "title": "Volcano", "text": DOCS["volcano.txt"][0]}]  # fmt: skip
    corpus += [{"_id": f"empty{i}", "title": "", "text": "   "} for i in range(23)]
    path = write_beir(tmp_path / "tiny", corpus)

    code, _, _ = await _beir(rt, beir_args(path, allow_partial=False))
    err = capsys.readouterr().err
    assert code == 1
    assert "2 ready, 23 failed" in err
    assert "empty0: " in err and "no text" in err and "... and 3 more failed documents" in err
    assert sum(1 for line in err.splitlines() if line.startswith("  empty")) == 20

    code, run_id, results = await _beir(rt, beir_args(path, allow_partial=True))
    out = capsys.readouterr().out
    assert code == 0 and "PARTIAL" in out
    run = await store.get_run(rt.pool, None, run_id)
    assert run["partial"] is True and "23 failed" in run["notes"]
    assert results["configs"]["keyword"]["metrics"]["recall@10"] == 1.0
    assert set(results["configs"]["hybrid"]["by_category"]) == {"food", "geo"}
    assert "by category" in out


async def test_a_background_run_interrupted_by_shutdown_is_marked_failed(
    settings: Settings, pool: Any, embedder: Any, fake_ollama: FakeOllama, library: None
) -> None:
    from ragchat.evaluation.service import start_generated
    from ragchat.runtime import Overrides, open_runtime

    fake_ollama.responder = lambda body: Reply.hang(30, then=Reply.json({"question": "What is this about?"}))
    app_settings = settings.model_copy(update={"llm_provider": "ollama", "ollama_host": fake_ollama.url})
    async with open_runtime(app_settings, Overrides(pool=pool, embedder=embedder)) as rt:
        run_id = await start_generated(rt, local_principal(), GeneratedEval(n=2, rerank=(False,)))
        assert (await store.get_run(pool, LOCAL_OWNER_ID, run_id))["status"] == "running"
        assert await fake_ollama.await_until(lambda: fake_ollama.in_flight > 0, timeout=10)
    run = await store.get_run(pool, LOCAL_OWNER_ID, run_id)
    assert run["status"] == "failed" and "interrupted" in run["notes"]
