"""Pure parts of the chat: titles, history bounds, passage formatting, tool-argument checks, fault messages."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import psycopg
import pytest
from ollama import ResponseError
from pydantic import BaseModel

from ragchat.chat.engine.faults import describe_failure
from ragchat.chat.engine.prompts import (
    FALLBACK_INSTRUCTION,
    fallback_user_message,
    history_messages,
    thread_title,
    tool_message,
    trim_passage,
)
from ragchat.chat.engine.toolbox import close_to_best, fewer_when_weak
from ragchat.chat.engine.tools import SEARCH_TOOL, ToolArgumentError, parse_search_args, tool_result_payload
from ragchat.core.search import ChunkHit, SearchResult, Timings
from ragchat.providers.llm.base import LLMError, ToolsUnsupported
from ragchat.providers.llm.ollama import OllamaProvider
from ragchat.retrieval.wording import confidence_of
from tests.fakes.ollama_server import no_tools_message


def hit(n: int, **kw: Any) -> ChunkHit:
    values: dict[str, Any] = {
        "id": n,
        "document_id": uuid.uuid4(),
        "filename": f"doc{n}.pdf",
        "title": f"doc{n}",
        "page": n,
        "chunk_index": 0,
        "content": f"passage {n}",
        "score": 0.5,
        "similarity": 0.5,
    }
    values.update(kw)
    return ChunkHit(**values)


def result(hits: list[ChunkHit], *, insufficient: bool = False, has_embeddings: bool = True) -> SearchResult:
    return SearchResult(
        query="holidays",
        mode="hybrid",
        reranked=False,
        chunks=hits,
        timings=Timings(total_ms=3.0),
        confidence=confidence_of(0.1 if insufficient else 0.8, high=0.6, moderate=0.45, floor=0.35),
        has_embeddings=has_embeddings,
    )


@pytest.mark.parametrize(
    ("message", "title"),
    [
        ("  How many\n holidays?  ", "How many holidays?"),
        ("word " * 30, "word " * 11 + "word…"),
        ("x" * 100, "x" * 59 + "…"),
        (
            "Exactly sixty characters long title for the thread list ok!",
            "Exactly sixty characters long title for the thread list ok!",
        ),
        (
            "What does the employee handbook say about carrying unused, holiday days",
            "What does the employee handbook say about carrying unused…",
        ),
    ],
)
def test_thread_title(message: str, title: str) -> None:
    assert thread_title(message) == title
    assert len(thread_title(message)) <= 60


def test_history_keeps_the_most_recent_within_both_bounds() -> None:
    rows = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1 " * 10},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "", "status": "error"},  # nothing said: skipped
        {"role": "user", "content": "q3"},
        {"role": "assistant", "content": "a3"},
    ]
    assert history_messages(rows, 3, 1000) == [
        {"role": "user", "content": "q2"},
        {"role": "user", "content": "q3"},
        {"role": "assistant", "content": "a3"},
    ]
    assert [m["content"] for m in history_messages(rows, 10, 10)] == ["q2", "q3", "a3"]
    assert history_messages(rows, 0, 1000) == [] and history_messages(rows, 10, 1) == []


def test_tool_message_numbers_passages_with_document_and_page() -> None:
    text = tool_message(result([hit(1), hit(2, title="Staff Handbook", section="Leave")]), start=4)
    assert text.startswith('Results for "holidays" (hybrid search): passages [4] to [5]. confidence: high.')
    assert "\n\n[4] doc1.pdf, page 1\npassage 1" in text
    assert "\n\n[5] Staff Handbook (doc2.pdf), page 2, section: Leave\npassage 2" in text


LONG = (
    "The office opens at 8 am. Visitors sign in at the desk. Paid holidays: every employee gets 25 days a year. "
    "Unused days carry over until March. Parking is free for staff."
)


def test_passages_cut_to_the_sentences_around_the_hit() -> None:
    """CHAT_PASSAGE_SENTENCES: each passage cut to N sentences around the one sharing most words with the search."""
    assert trim_passage(LONG, "holidays", 0) == LONG  # off: whole
    assert (
        trim_passage(LONG, "holidays", 2)
        == "… Paid holidays: every employee gets 25 days a year. Unused days carry over until March. …"
    )
    assert trim_passage(LONG, "holidays", 3).startswith("… Visitors sign in at the desk. Paid holidays")
    assert trim_passage(LONG, "parking", 2) == "… Unused days carry over until March. Parking is free for staff."
    assert trim_passage(LONG, "holidays", 9) == LONG  # shorter than the window: whole
    cut = tool_message(result([hit(1, content=LONG)]), 1, sentences=1)
    assert (
        "[1] doc1.pdf, page 1\n… Visitors" not in cut
        and "\n… Paid holidays: every employee gets 25 days a year. …" in cut
    )
    assert "Paid holidays" in fallback_user_message(
        "How many holidays?", result([hit(1, content=LONG)]), 1, sentences=1
    )


def test_passages_far_below_the_best_are_left_out_when_asked() -> None:
    """CHAT_PASSAGE_MIN_RATIO: passages scoring under R × the best one's score are not sent, shown or numbered."""
    found = result([hit(1, score=0.8), hit(2, score=0.41), hit(3, score=0.39), hit(4, score=0.1)])
    assert [h.id for h in close_to_best(found, 0.5).chunks] == [1, 2]
    assert close_to_best(found, 0.0) is found and close_to_best(found, 0.1) is found  # off / nothing below
    assert [h.id for h in close_to_best(found, 1.0).chunks] == [1]  # the best passage always stays
    flat = result([hit(1, score=0.0), hit(2, score=0.0)])
    assert close_to_best(flat, 0.5) is flat and close_to_best(result([]), 0.5).chunks == []


def test_a_weak_search_gives_the_model_only_its_best_passages() -> None:
    """CHAT_WEAK_SEARCH_PASSAGES: when confidence is insufficient, at most N passages (the best, in the search's
    order); a search that matched, a cap of 0 and a result already that short stay as they are."""
    hits = [hit(1, score=0.3), hit(2, score=0.2), hit(3, score=0.33), hit(4, score=0.1)]
    weak = result(hits, insufficient=True)
    assert [h.id for h in fewer_when_weak(weak, 2).chunks] == [1, 3]
    assert [h.id for h in fewer_when_weak(weak, 1).chunks] == [3]
    assert fewer_when_weak(weak, 0) is weak and fewer_when_weak(weak, 4) is weak
    strong = result(hits)
    assert fewer_when_weak(strong, 2) is strong
    assert fewer_when_weak(result([], insufficient=True), 2).chunks == []


def test_the_retrieve_first_prompt_starts_with_what_never_changes() -> None:
    """The instruction leads the user message (with the system prompt, a prefix llama.cpp's prompt cache keeps);
    the question comes after the passages, followed by a short reminder of the answer's form."""
    one = fallback_user_message("How many holidays?", result([hit(1, content=LONG)]), 1)
    two = fallback_user_message("Where is the car park?", result([hit(2)]), 1)
    fixed = FALLBACK_INSTRUCTION + "\n\nPassages from my documents:\n\n"
    assert one.startswith(fixed) and two.startswith(fixed)
    assert one.index("[1] doc1.pdf") < one.index("Question: How many holidays?")
    assert one.rstrip().endswith("say the documents don't say.") and "such as [1]" in one.split("Question:")[1]


def test_tool_message_flags_insufficient_confidence_and_empty_results() -> None:
    assert "insufficient_confidence: true" in tool_message(result([hit(1)], insufficient=True), 1)
    assert "documents don't say" in tool_message(result([], insufficient=True), 1)
    assert "upload documents" in tool_message(result([], has_embeddings=False), 1)
    prompt = fallback_user_message("How many holidays?", result([hit(1)]), 1)
    assert "[1] doc1.pdf, page 1" in prompt and prompt.index("[1]") < prompt.index("Question: How many holidays?")


def test_tool_schema_is_what_ollama_expects() -> None:
    fn = SEARCH_TOOL["function"]
    assert SEARCH_TOOL["type"] == "function" and fn["name"] == "search_documents"
    assert fn["parameters"]["required"] == ["query"]
    assert set(fn["parameters"]["properties"]) == {"query", "filters"}  # small models invent ids: not offered
    json.dumps(SEARCH_TOOL)


def test_parse_search_args() -> None:
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    assert parse_search_args("search_documents", {"query": " x "}, None).query == "x"
    assert parse_search_args("search_documents", {"query": "x", "document_ids": []}, None).document_ids is None
    assert parse_search_args("search_documents", {"query": "x"}, [a, b]).document_ids == [a, b]
    assert parse_search_args(
        "search_documents", {"query": "x", "document_ids": [str(b), str(c)]}, [a, b]
    ).document_ids == [b]
    assert parse_search_args("search_documents", {"query": "x", "document_ids": [str(c)]}, None).document_ids == [c]
    assert len(parse_search_args("search_documents", {"query": "q" * 5000}, None).query) == 1000
    # invented ids (`["document1", "file1.pdf"]`, a string) are ignored, not an error that costs a turn
    for invented in ("abc", ["document1", "file1.pdf"], [3]):
        parsed = parse_search_args("search_documents", {"query": "x", "document_ids": invented}, [a])
        assert parsed.document_ids == [a]
    bad: list[tuple[str, Any, str]] = [
        ("lookup", {"query": "x"}, "no tool named 'lookup'"),
        ("search_documents", {}, '"query"'),
        ("search_documents", {"query": 3}, '"query"'),
        ("search_documents", {"query": "  "}, '"query"'),
        ("search_documents", "query", "JSON object"),
        ("search_documents", {"query": "x", "document_ids": [str(c)]}, "selected"),
    ]
    for name, args, message in bad:
        with pytest.raises(ToolArgumentError, match=message.replace("(", r"\(")):
            parse_search_args(name, args, [a] if message == "selected" else None)


def test_tool_result_payload_is_the_protocol_shape() -> None:
    payload = tool_result_payload("call_1", result([hit(1)]))
    assert set(payload) == {"id", "name", "chunks", "search_mode", "reranked", "timings", "confidence", "rerank"}
    assert payload["chunks"][0]["page"] == 1 and "similarity" not in payload["chunks"][0]
    json.dumps(payload)


class _Model(BaseModel):
    x: int


def _validation_error() -> Exception:
    try:
        _Model.model_validate({"x": "no"})
    except Exception as exc:
        return exc
    raise AssertionError


@pytest.mark.parametrize(
    ("exc", "code", "advice"),
    [
        (httpx.ConnectError("refused"), "llm_unreachable", "ollama serve"),
        (ConnectionError("Failed to connect to Ollama"), "llm_unreachable", "http://ollama:11434"),
        (httpx.ConnectTimeout("slow"), "llm_unreachable", "OLLAMA_HOST"),
        (httpx.ReadTimeout("slow"), "llm_timeout", "LLM_TIMEOUT_S"),
        (ResponseError('{"error":"model \\"llama3.2\\" not found"}', 404), "model_not_found", "ollama pull llama3.2"),
        (ResponseError("boom", 500), "llm_error", "ollama serve"),
        (ResponseError("unexpected EOF"), "llm_error", "unexpected EOF"),
        (json.JSONDecodeError("Expecting value", "<html>", 0), "llm_bad_response", "OLLAMA_HOST"),
        (_validation_error(), "llm_bad_response", "OLLAMA_HOST"),
        (httpx.RemoteProtocolError("peer closed"), "llm_bad_response", "ollama serve"),
    ],
)
def test_ollama_failures_say_the_fix(exc: Exception, code: str, advice: str) -> None:
    fault = describe_failure(OllamaProvider("http://ollama:11434").map_error(exc, "llama3.2"))
    assert fault.code == code and advice in fault.message
    assert fault.to_json() == {"code": code, "message": fault.message}


@pytest.mark.parametrize(
    ("exc", "code", "advice"),
    [
        (psycopg.OperationalError("connection refused"), "database_unavailable", "DATABASE_URL"),
        (RuntimeError("odd"), "internal_error", "odd"),
        (LLMError("the fix"), "llm_error", "the fix"),
    ],
)
def test_describe_failure(exc: Exception, code: str, advice: str) -> None:
    fault = describe_failure(exc)
    assert fault.code == code and advice in fault.message


def test_no_tools_error_is_recognised() -> None:
    provider = OllamaProvider("http://ollama:11434")
    no_tools = ResponseError(json.dumps({"error": no_tools_message("gemma2")}), 400)
    assert isinstance(provider.map_error(no_tools, "gemma2"), ToolsUnsupported)
    assert not isinstance(provider.map_error(ResponseError("model not found", 404), "x"), ToolsUnsupported)
