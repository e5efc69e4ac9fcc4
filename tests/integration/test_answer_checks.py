"""The answer checks on the new-user walk's cases (issue 41), with real passages and the real embedding model:
a correct, grounded answer shows no warning; a wrong one still does; "Not in your documents" agrees with the
verdicts; an answer that made no search says so."""

from __future__ import annotations

from typing import Any

import pytest

from ragchat.chat.engine.verify import footnotes, verify_answer

HANDBOOK = {
    "title": "Employee Handbook",
    "filename": "handbook.pdf",
    "section": "Vacation",
    "content": "Full-time employees receive 25 days of paid vacation per calendar year. Up to 5 unused days "
    "may be carried over into the first quarter of the next year.",
}
REPORT = {
    "title": "Quarterly Report Q3",
    "filename": "report.docx",
    "section": None,
    "content": "Revenue grew 12% in the third quarter, driven by new contracts in the logistics segment.",
}
PRICES = {
    "title": "prices.csv",
    "filename": "prices.csv",
    "section": "rows 2–4",
    "content": "product,price,stock\nWidget,4.50,120\nGadget,12.00,8\nGizmo,7.25,0",
}
INSUFFICIENT = {"label": "insufficient", "insufficient": True, "score": 0.3}
HIGH = {"label": "high", "insufficient": False, "score": 0.8}


def search(*chunks: dict[str, Any], confidence: dict[str, Any] = HIGH) -> dict[str, Any]:
    return {"id": "call_1", "name": "search_documents", "chunks": [dict(c) for c in chunks], "confidence": confidence}


def verdicts(v: Any) -> list[str]:
    return [c.verdict for c in v.report.citations]


@pytest.mark.parametrize("answer", [
    "According to the Employee Handbook, full-time employees receive 25 days of paid vacation per year [1].",
    "The handbook.pdf says full-time employees receive 25 days of paid vacation per calendar year [1].",
])  # fmt: skip
async def test_a_verbatim_answer_naming_its_document_is_supported(answer: str, embedder: Any) -> None:
    v = await verify_answer(answer, [search(HANDBOOK)], embedder)
    assert verdicts(v) == ["supported"] and v.warnings == 0 and v.supported and not v.not_covered


async def test_uncited_sentences_a_passage_supports_get_its_marker_not_no_source(embedder: Any) -> None:
    answer = (
        "Full-time employees receive 25 days of paid vacation per calendar year. Revenue grew 12% in the third quarter."
    )
    v = await verify_answer(answer, [search(HANDBOOK, REPORT)], embedder)
    assert v.repaired == 2 and v.warnings == 0, v.to_json()
    assert v.text == (
        "Full-time employees receive 25 days of paid vacation per calendar year. [1] "
        "Revenue grew 12% in the third quarter. [2]"
    )
    assert [(c.n, c.verdict) for c in v.report.citations] == [(1, "supported"), (2, "supported")]
    assert v.to_json()["content"] == v.text


async def test_uncited_sentences_no_passage_supports_are_still_marked(embedder: Any) -> None:
    answer = "Employees may work remotely on Fridays with their manager's approval."
    v = await verify_answer(answer, [search(HANDBOOK, REPORT)], embedder)
    assert v.repaired == 0 and verdicts(v) == ["no_source"] and v.warnings >= 1


async def test_a_wrong_figure_stays_unsupported(embedder: Any) -> None:
    v = await verify_answer(
        "Full-time employees receive 30 days of paid vacation per year [1].", [search(HANDBOOK)], embedder
    )
    assert verdicts(v) == ["unsupported"] and v.warnings >= 1


async def test_a_csv_answer_with_low_search_confidence_is_not_marked_not_covered(embedder: Any) -> None:
    answer = "The Widget costs 4.50 and 120 are in stock [1]."
    v = await verify_answer(answer, [search(PRICES, confidence=INSUFFICIENT)], embedder)
    assert verdicts(v) == ["supported"] and not v.not_covered and v.warnings == 0, v.to_json()


async def test_a_two_document_answer_fully_supported_is_never_not_covered(embedder: Any) -> None:
    answer = (
        "The handbook gives full-time employees 25 days of paid vacation per calendar year [1]. "
        "The Q3 report says revenue grew 12% in the third quarter [2]."
    )
    v = await verify_answer(answer, [search(HANDBOOK, REPORT, confidence=INSUFFICIENT)], embedder)
    assert v.supported and not v.not_covered and v.warnings == 0, v.to_json()


async def test_an_unsupported_answer_over_weak_passages_is_not_covered(embedder: Any) -> None:
    answer = "The cafeteria serves vegan lunches every Tuesday [1]."
    v = await verify_answer(answer, [search(HANDBOOK, confidence=INSUFFICIENT)], embedder)
    assert v.not_covered and v.warnings >= 2
    assert "Not in your documents" in footnotes(v.to_json())


async def test_a_summary_is_checked_against_its_parts_never_no_source(embedder: Any) -> None:
    first_part = "The handbook sets 25 days of paid vacation for full-time staff and lets 5 unused days carry over."
    second_part = "Sick leave needs a doctor's note after three days; remote work is allowed two days a week."
    parts = [
        {**HANDBOOK, "section": "Summary of pages 1–2", "content": first_part},
        {**HANDBOOK, "section": "Summary of pages 3–4", "content": second_part},
    ]
    summary = {"id": "call_1", "name": "summarize_documents", "chunks": parts, "confidence": {}}
    answer = (
        "The handbook gives full-time staff 25 days of paid vacation and lets them carry over 5 unused days. "
        "Sick leave needs a doctor's note after three days. "
        "Staff may work remotely two days a week."
    )
    v = await verify_answer(answer, [summary], embedder)
    assert "no_source" not in verdicts(v), v.to_json()
    assert v.repaired == 3 and v.warnings == 0, v.to_json()
    assert [c.n for c in v.report.citations] == [1, 2, 2]


async def test_an_answer_that_made_no_search_says_so(embedder: Any) -> None:
    v = await verify_answer("The handbook grants 40 days of vacation to every employee.", [], embedder)
    assert not v.searched and v.warnings >= 1
    assert "no search was made" in footnotes(v.to_json())


async def test_small_talk_carries_no_mark(embedder: Any) -> None:
    v = await verify_answer("Hello! How can I help?", [], embedder)
    assert v.warnings == 0 and v.to_json()["summary"] == ""
