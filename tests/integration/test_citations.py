"""Verified citations over real HTTP: the `citations` event, what is saved, the optional LLM judge.

Real Postgres, the real MiniLM embedder and the real app; the LLM is the fake, scripted per test. Searches are
limited to handbook.pdf, whose two pages are passage [1] (holidays) and [2] (office hours).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from tests.fakes.ollama_server import Reply
from tests.fakes.plugin import LLMFake
from tests.support.chat import all_of, chat, first, get_thread, text_of

RIGHT = "Employees get 25 days of paid holiday per calendar year [1]."
WRONG = "The cafeteria serves lunch at noon [1]."  # no passage says so (a true sentence cited wrongly is re-cited)
INVENTED = "Parking is free for visitors [7]."  # there is no passage 7
ANSWER = f"{RIGHT} {WRONG} {INVENTED}"


def _script(llm: LLMFake, answer: str, *after: Reply) -> None:
    llm.fake.enqueue(
        Reply.tool_call("search_documents", {"query": "holiday days and office hours"}),
        Reply.text(answer),
        *after,
    )


async def _ask(server: Any, corpus: dict[str, UUID]) -> list[tuple[str, dict[str, Any]]]:
    body = {"message": "Holidays and office hours?", "document_ids": [str(corpus["handbook.pdf"])]}
    events = await chat(server.url, body)
    chunks = first(events, "tool_result")["chunks"]
    assert "25 days" in chunks[0]["content"] and "office is open" in chunks[1]["content"], "passage order"
    assert len(chunks) == 2
    return events


async def test_right_wrong_and_missing_citations_are_reported_and_saved(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start()
    _script(llm, ANSWER)
    events = await _ask(server, corpus)

    names = [name for name, _ in events]
    assert names[-2:] == ["citations", "done"], names  # after the last token, before done
    assert names.index("citations") > max(i for i, n in enumerate(names) if n == "token")
    report = first(events, "citations")
    assert report["message_id"] == first(events, "thread")["message_id"]
    right, wrong, invented = report["citations"]
    text = text_of(events)
    assert text == ANSWER

    assert right["n"] == 1 and right["verdict"] == "supported", right
    assert right["sentence"] == "Employees get 25 days of paid holiday per calendar year."
    assert text[right["start"] : right["end"]] == RIGHT
    assert right["lexical"] >= 0.75 and right["similarity"] > 0.6

    assert wrong["n"] == 1 and wrong["verdict"] == "unsupported", wrong
    assert text[wrong["start"] : wrong["end"]] == WRONG
    assert wrong["lexical"] < 0.25 and wrong["similarity"] < 0.4

    assert invented["n"] == 7 and invented["verdict"] == "missing" and invented["similarity"] is None
    assert text[invented["start"] : invented["end"]] == INVENTED
    assert (report["unsupported"], report["weak"], report["missing"], report["judged"]) == (1, 0, 1, False)
    assert first(events, "done")["citations"] == {"cited": [1, 7], "invalid": [7]}  # unchanged

    # a reload shows the same marks
    thread = await get_thread(server.url, first(events, "thread")["thread_id"])
    saved = thread["messages"][-1]
    assert saved["status"] == "complete" and saved["content"] == ANSWER
    assert saved["citations"] == report
    assert thread["messages"][0]["citations"] is None  # the question


async def test_an_answer_that_states_nothing_has_a_clean_check(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    """Every answer gets its verification (coverage and search included), but nothing stated means no marks and no
    summary line."""
    server = start()
    _script(llm, "The documents do not say.")
    events = await _ask(server, corpus)
    (report,) = all_of(events, "citations")
    assert [n for n, _ in events][-1] == "done"
    assert report["citations"] == [] and report["summary"] == "" and report["warnings"] == 0
    assert report["searched"] is True and report["content"] is None
    thread = await get_thread(server.url, first(events, "thread")["thread_id"])
    assert thread["messages"][-1]["citations"] == report


async def test_the_llm_judge_overrides_the_cheap_verdicts(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(citation_judge=True, citation_judge_timeout_s=5)
    # the judge answers in a code fence after a think block: cleaned, then validated
    verdicts = '<think>hmm</think>```json\n{"verdicts": ["supported", "weak"]}\n```'
    _script(llm, ANSWER, Reply.json(verdicts))
    events = await _ask(server, corpus)
    report = first(events, "citations")
    assert [c["verdict"] for c in report["citations"]] == ["supported", "weak", "missing"]
    assert (report["unsupported"], report["weak"], report["missing"], report["judged"]) == (0, 1, 1, True)
    judge_request = llm.fake.chat_requests[-1]
    assert llm.json_schema(judge_request) is not None
    prompt = judge_request.messages[-1]["content"]
    assert "Claim 2" in prompt and "Claim 3" not in prompt  # the missing citation is not judged
    assert "cafeteria serves lunch" in prompt and "25 days" in prompt


async def test_a_failing_judge_leaves_the_cheap_verdicts(
    corpus: dict[str, UUID], start: Callable[..., Any], llm: LLMFake
) -> None:
    server = start(citation_judge=True, citation_judge_timeout_s=5)
    _script(llm, ANSWER, Reply.json('{"verdicts": ["supported"]}'))  # one verdict for two claims: ignored
    report = first(await _ask(server, corpus), "citations")
    assert [c["verdict"] for c in report["citations"]] == ["supported", "unsupported", "missing"]
    assert report["judged"] is False

    _script(llm, ANSWER, Reply.hang(10))  # no reply within the timeout
    report = first(await _ask(server, corpus), "citations")
    assert [c["verdict"] for c in report["citations"]] == ["supported", "unsupported", "missing"]

    _script(llm, ANSWER, Reply.error(500))
    report = first(await _ask(server, corpus), "citations")
    assert [c["verdict"] for c in report["citations"]] == ["supported", "unsupported", "missing"]
