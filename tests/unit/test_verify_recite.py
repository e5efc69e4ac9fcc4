"""Citation repair of cited sentences (chat/engine/verify.py): a sentence cited to passages that do not support it,
while another passage of the turn does, gets that passage's number. Seen with the real 1.5B model on xquad-dev
(bench/answers.py): 4 of 8 right answers carried a warning only because a true sentence cited the wrong numbers
("… Western medicine. [4][2]" where [1] says it; "… regimes … [2][3][4]" where only [3] does)."""

from __future__ import annotations

from typing import Any

from ragchat.chat.engine.verify import verify_answer

MEDICINE = "Yin-yang and wuxing philosophy underlay Chinese medicine; they were also the basis of its humoral system."
SCHOOLS = "Independent schools in South Africa are classified under the South African Schools Act of 1996."
BREAD = "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water."
VOLCANO = "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano."


def results(*texts: str, name: str = "search_documents") -> list[dict[str, Any]]:
    chunks = [{"content": t, "title": f"doc {i}", "filename": f"doc{i}.txt"} for i, t in enumerate(texts, 1)]
    return [{"name": name, "chunks": chunks}]


async def test_a_mis_cited_sentence_gets_the_passage_that_supports_it() -> None:
    text = "Yin-yang and wuxing philosophy underlay Chinese medicine. [3][4]"
    v = await verify_answer(text, results(MEDICINE, SCHOOLS, BREAD, VOLCANO), None)
    assert v.text == "Yin-yang and wuxing philosophy underlay Chinese medicine. [1]"
    assert v.repaired == 1 and v.supported and v.warnings == 0


async def test_an_over_cited_sentence_keeps_only_the_passages_that_support_it() -> None:
    text = "Schools in South Africa are classified under the South African Schools Act of 1996 [1][2][3]."
    v = await verify_answer(text, results(MEDICINE, SCHOOLS, BREAD), None)
    assert v.text == "Schools in South Africa are classified under the South African Schools Act of 1996. [2]"
    assert v.supported and v.warnings == 0


async def test_a_sentence_nothing_supports_keeps_its_markers_and_its_warning() -> None:
    text = "The volcano erupted in 1815 and killed 10,000 people. [2]"
    v = await verify_answer(text, results(MEDICINE, VOLCANO), None)
    assert v.text == text and v.repaired == 0 and v.warnings == 1


async def test_a_summarys_parts_are_never_re_cited() -> None:
    text = "Yin-yang and wuxing philosophy underlay Chinese medicine. [2]"
    v = await verify_answer(text, results(MEDICINE, SCHOOLS, name="summarize_documents"), None)
    assert v.text == text


def weak(*texts: str) -> list[dict[str, Any]]:
    """Search results no passage of which matched the question well (the confidence floor not reached)."""
    return [{**r, "confidence": {"insufficient_confidence": True}} for r in results(*texts)]


async def test_an_answer_about_something_else_is_not_in_your_documents() -> None:
    """Seen on xquad-dev: "How many plays was Denver kept out of the end zone …?" answered with a true sentence
    about the Amazon forest: every sentence supported, nothing about the question; "Not in your documents" holds."""
    forest = "Between 1991 and 2000 the forest lost in the Amazon rose from 415,000 to 587,000 square kilometres."
    text = "Between 1991 and 2000 the forest lost in the Amazon rose from 415,000 to 587,000 square kilometres. [1]"
    question = "How many plays was Denver kept out of the end zone after getting the ball from Newton?"
    v = await verify_answer(text, weak(forest), None, question=question)
    assert v.supported and v.not_covered
    on_topic = await verify_answer(text, weak(forest), None, question="How much Amazon forest was lost by 2000?")
    assert on_topic.supported and not on_topic.not_covered  # about what was asked: supported, no flag
    strong = await verify_answer(text, results(forest), None, question=question)
    assert not strong.not_covered  # a search that matched well: never flagged


async def test_a_sentence_citing_a_passage_that_does_not_exist_gets_the_one_that_supports_it() -> None:
    """The model cited [21] (a passage's text held "[21st] century"); passage [2] says it: re-cited, no warning."""
    text = "Independent schools in South Africa are classified under the South African Schools Act of 1996 [21]."
    v = await verify_answer(text, results(MEDICINE, SCHOOLS, BREAD), None)
    assert (
        v.text == "Independent schools in South Africa are classified under the South African Schools Act of 1996. [2]"
    )
    assert v.repaired == 1 and v.supported and v.warnings == 0
    over = await verify_answer(f"{MEDICINE} [1][9]", results(MEDICINE, SCHOOLS), None)
    assert over.text == f"{MEDICINE} [1]" and over.warnings == 0  # the missing number dropped, the right one kept
    nothing = "Parking is free for visitors [7]."  # no passage says so: left as written, reported missing
    v = await verify_answer(nothing, results(MEDICINE, SCHOOLS), None)
    assert v.text == nothing and v.repaired == 0 and [c.verdict for c in v.report.citations] == ["missing"]
