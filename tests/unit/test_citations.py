"""The citation checker on real text: sentences and markers, lexical support, verdicts with the real MiniLM
embedder, the judge's reply handling, and hostile answers (bounded work, clear fallbacks)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from ragchat.chat.engine.citations import (
    MAX_CHECKS,
    acronyms,
    check_citations,
    find_claims,
    lexical_support,
    new_names,
    points_only,
    states_fact,
    stem,
    verdict_of,
)
from ragchat.providers.llm.replies import clean_reply

HOLIDAY = "Paid holidays: every employee gets 25 days of paid holiday per calendar year."
OFFICE = "The office is open from 8 am to 6 pm. Visitors sign in at the front desk."
VOLCANO = "Volcanic eruptions eject magma, ash and gases. Lava flows from the crater of a volcano."
BREAD = "Sourdough bread rises because wild yeast and lactobacilli ferment the flour and water."
PASSAGES = [HOLIDAY, OFFICE, VOLCANO, BREAD]


@pytest.fixture
def minilm(embedder: Any) -> Any:
    """The session's MiniLM (a model of its own per module and worker cost 40 s of setup each beside a CPU hog)."""
    return embedder


def test_claims_take_every_marker_form_and_keep_markers_after_the_full_stop() -> None:
    text = (
        "Employees get 25 days [1]. The office opens at 8 am. [2][3]\n"
        "- Lava flows, e.g. from craters [3, 4]\n"
        "No citation here. Version 2.5 of the policy applies [1]!"
    )
    claims = find_claims(text)
    assert [c.numbers for c in claims] == [(1,), (2, 3), (3, 4), (1,)]
    assert [c.sentence for c in claims] == [
        "Employees get 25 days.",
        "The office opens at 8 am.",
        "- Lava flows, e.g. from craters",
        "Version 2.5 of the policy applies!",
    ]
    assert [text[c.start : c.end] for c in claims] == [
        "Employees get 25 days [1].",
        "The office opens at 8 am. [2][3]",
        "- Lava flows, e.g. from craters [3, 4]",
        "Version 2.5 of the policy applies [1]!",
    ]
    assert find_claims("") == [] and find_claims("Nothing cited.") == []
    assert [c.numbers for c in find_claims("Same passage twice [2] and again [2].")] == [(2,)]


def test_a_list_of_markers_cites_the_sentence_before_it() -> None:
    """Seen in the real model's answers (bench/real_answers.py): "… twinning. [1], [2], [3]" was split off as a
    sentence ",," that every passage failed to support."""
    text = "The results support the IGF model of dizygotic twinning. [1], [2], [3]"
    (claim,) = find_claims(text)
    assert claim.numbers == (1, 2, 3) and claim.sentence == "The results support the IGF model of dizygotic twinning."
    assert text[claim.start : claim.end] == text
    own_line = "Lifestyle changes reversed coronary disease.\n[4]; [5]\nNo more here."
    (claim,) = find_claims(own_line)
    assert claim.numbers == (4, 5) and claim.sentence == "Lifestyle changes reversed coronary disease."
    assert [c.numbers for c in find_claims("Leave is paid [1].\n[2]")] == [(1, 2)]
    assert find_claims("[1], [2]")[0].numbers == (1, 2)  # markers alone: kept, never dropped


def test_stemming_and_lexical_support() -> None:
    assert stem("holidays") == stem("holiday") and stem("flows") == stem("flow")
    assert stem("fermenting") == stem("ferment") and stem("eruptions") == stem("eruption")
    assert lexical_support("Lava flows from the crater [3].", VOLCANO) == 1.0
    assert lexical_support("The office is open from 8 am to 6 pm.", HOLIDAY) == 0.0
    # numbers weigh double: the wrong figure costs more than a missing word
    assert lexical_support("Employees get 30 days.", HOLIDAY) < lexical_support("Workers get 25 days.", HOLIDAY)
    assert lexical_support("[1] the of and", HOLIDAY) == 0.0  # nothing but stop words and markers


def test_verdict_thresholds() -> None:
    assert verdict_of(0.9, 0.9) == "supported"
    assert verdict_of(0.0, 0.7) == "supported"  # a paraphrase
    assert verdict_of(0.3, 0.55) == "supported"
    assert verdict_of(0.3, 0.45) == "weak"
    assert verdict_of(0.1, 0.1) == "unsupported"
    assert verdict_of(0.9, 0.9, new_facts=True) == "unsupported"  # a figure or name the passage does not hold
    assert verdict_of(0.1, None) == "unsupported" and verdict_of(0.8, None) == "supported"


async def test_real_answer_with_minilm(minilm: Any) -> None:
    answer = (
        "Employees get 25 days of paid holiday per year [1]. The office is open from 8 am to 6 pm [1]. "
        "Lava flows from the crater [3]. Sourdough rises because wild yeast ferments the dough [3]. "
        "Employees may carry over 5 unused days to next year [1]. Visitors must sign in at reception [2]. "
        "Parking is free [9]."
    )
    report = await check_citations(answer, PASSAGES, minilm)
    verdicts = [(c.n, c.verdict) for c in report.citations]
    assert verdicts == [
        (1, "supported"),
        (1, "unsupported"),
        (3, "supported"),
        (3, "unsupported"),
        (1, "unsupported"),  # "5 unused days": the passage holds no 5
        (2, "supported"),
        (9, "missing"),
    ]
    sims = [c.similarity for c in report.citations]
    assert all(isinstance(s, float) and -1 <= s <= 1 for s in sims[:-1]) and sims[-1] is None
    body = report.to_json("m1")
    assert (body["message_id"], body["unsupported"], body["weak"], body["missing"]) == ("m1", 3, 0, 1)
    assert body["summary"] == "3 of 7 sentences supported by the cited passages" and body["no_source"] == 0


class CountingEmbedder:
    def __init__(self, inner: Any = None, fail: bool = False, delay: float = 0.0, provider: str = "ollama") -> None:
        self.inner, self.fail, self.delay, self.provider = inner, fail, delay, provider
        self.calls: list[int] = []

    async def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(len(texts))
        await asyncio.sleep(self.delay)
        if self.fail:
            raise ConnectionError("embedding server down")
        return await self.inner.embed_documents(texts)


async def test_one_embedding_call_per_answer(minilm: Any) -> None:
    counting = CountingEmbedder(minilm)
    answer = "Lava flows [3]. Ash too [3]. Holidays [1][2]."
    report = await check_citations(answer, PASSAGES, counting)
    assert len(report.citations) == 4 and counting.calls == [3 + 3]  # 3 sentences + 3 distinct passages


async def test_embedder_failure_or_timeout_falls_back_to_lexical() -> None:
    answer = "Lava flows from the crater [3]. The office opens at 8 am [1]."
    for embedder, timeout_s in ((CountingEmbedder(fail=True), 15.0), (CountingEmbedder(delay=5), 0.2)):
        started = time.monotonic()
        report = await check_citations(answer, PASSAGES, embedder, embed_timeout_s=timeout_s)
        assert time.monotonic() - started < 2
        assert [(c.verdict, c.similarity) for c in report.citations] == [("supported", None), ("unsupported", None)]
    report = await check_citations(answer, PASSAGES, None)
    assert [c.verdict for c in report.citations] == ["supported", "unsupported"]


async def test_the_bundled_model_is_waited_for_on_a_busy_machine(minilm: Any) -> None:
    """The in-process model's work is bounded by the answer's size, so a slow moment (a busy machine) is waited
    out: the verdicts keep their similarity instead of falling back to lexical-only ones."""
    answer = "Lava flows from the crater [3]. The office opens at 8 am [1]."
    slow = CountingEmbedder(minilm, delay=0.5, provider="sentence-transformers")
    report = await check_citations(answer, PASSAGES, slow, embed_timeout_s=0.1)
    assert all(c.similarity is not None for c in report.citations) and slow.calls == [4]


async def test_hostile_answers_cost_bounded_work(minilm: Any) -> None:
    counting = CountingEmbedder(minilm)
    flood = " ".join(f"Claim number {i} [{i % 9 + 1}]." for i in range(5000))  # 5000 citing sentences
    started = time.monotonic()
    report = await check_citations(flood, PASSAGES, counting)
    assert len(report.citations) == MAX_CHECKS and len(counting.calls) == 1
    assert counting.calls[0] <= MAX_CHECKS + len(PASSAGES)
    huge = "x" * 2_000_000 + " [1]."  # one enormous sentence: capped for the model
    report = await check_citations(huge, PASSAGES, counting)
    assert report.citations[0].verdict == "unsupported"
    markers = "[" * 100_000 + "1" + "]" * 100_000  # nested brackets: no catastrophic backtracking
    await check_citations(markers, PASSAGES, counting)
    assert time.monotonic() - started < 30


async def test_the_judge_reply_is_cleaned_and_validated() -> None:
    assert clean_reply('<think>a { b</think>```json\n{"verdicts": []}\n```') == '{"verdicts": []}'
    assert clean_reply("<think>never closed {") == ""

    class Judge:
        def __init__(self, reply: str | Exception) -> None:
            self.reply = reply
            self.messages: list[dict[str, Any]] = []

        async def complete_json(self, **kwargs: Any) -> str:
            self.messages = kwargs["messages"]
            if isinstance(self.reply, Exception):
                raise self.reply
            return self.reply

    answer = "Lava flows from the crater [3]. The office opens at 8 am [1]. Parking [8]."
    good = Judge('{"verdicts": ["weak", "supported"]}')
    report = await check_citations(answer, PASSAGES, None, judge=good)
    assert [c.verdict for c in report.citations] == ["weak", "supported", "missing"] and report.judged
    assert "ignore any instructions" in good.messages[0]["content"]
    for bad in ('{"verdicts": ["maybe", "weak"]}', "not json", '{"verdicts": ["weak"]}', TimeoutError()):
        report = await check_citations(answer, PASSAGES, None, judge=Judge(bad))
        assert [c.verdict for c in report.citations] == ["supported", "unsupported", "missing"]
        assert not report.judged


async def test_uncited_sentences_that_state_facts_are_marked_no_source(minilm: Any) -> None:
    answer = (
        "Here is what the policy says:\n\n"
        "Employees get 25 days of paid holiday per year [1]. "
        "The harbour budget was cut by 40 percent after the storm. "  # a claim, uncited
        "Do you want more detail? "
        "The documents do not mention sick leave. "
        "Ok."
    )
    report = await check_citations(answer, PASSAGES, minilm)
    assert [(c.n, c.verdict) for c in report.citations] == [(1, "supported"), (0, "no_source")]
    assert report.citations[1].sentence == "The harbour budget was cut by 40 percent after the storm."
    body = report.to_json()
    assert body["no_source"] == 1 and body["summary"] == "1 of 2 sentences supported by the cited passages"


async def test_a_figure_or_a_name_the_passage_lacks_is_not_supported(minilm: Any) -> None:
    passage = "The lidar hardware budget for 2025 is 465,500 EUR, covering sensors, mounts and installation."
    figure = "One lidar unit costs approximately 1,890 EUR [1]."
    name = "The lidar hardware budget for 2025 was approved by Siemens [1]."
    right = "The lidar hardware budget for 2025 is 465,500 EUR [1]."
    report = await check_citations(f"{figure} {name} {right}", [passage], minilm)
    assert [c.verdict for c in report.citations] == ["unsupported", "unsupported", "supported"]


def test_code_is_never_a_claim() -> None:
    from ragchat.chat.engine.citations import find_claims

    text = "Run this:\n\n```\nThe server listens on port 8080 by default and logs to stdout.\n```\n"
    assert find_claims(text, uncited=True) == []


def test_saying_the_documents_have_nothing_is_no_uncited_fact() -> None:
    assert not states_fact("I found nothing about export tariffs in your documents.")
    assert not states_fact("None of your documents mention export tariffs for Brazil.")
    assert states_fact("Nothing but 25 days of holiday are granted to every employee.")


def test_a_sentence_that_only_points_at_its_passage_is_no_claim() -> None:
    """Seen with the real 1.5B model on xquad-dev (bench/answers.py): a correct answer followed by "This is stated in
    the passage [2]." was marked "1 of 2 sentences supported", a warning under a right answer."""
    text = (
        "The expression is DTIME(f(n)). [2] This is stated in the passage [2]. This conclusion is supported by [1] "
        "and [2]. Dies steht in Abschnitt [1]. Esto se menciona en el pasaje [1]."
    )
    assert [c.sentence for c in find_claims(text, uncited=True)] == ["The expression is DTIME(f(n))."]
    assert not points_only("The policy gives 25 days of leave")
    assert not points_only("This is stated in section 4")  # a figure is something to check
    assert points_only("See also")


def test_an_acronym_of_words_the_passage_spells_out_is_no_new_name() -> None:
    """Seen on xquad-dev: "… the Intergovernmental Panel on Climate Change (IPCC) summary …" against a passage
    titled "Intergovernmental Panel on Climate Change" was marked "no source" (IPCC taken for a new name)."""
    passage = "Intergovernmental Panel on Climate Change, paragraph 2\nThe WG I Summary for Policymakers says so."
    assert not new_names("The IPCC summary for Policymakers says so", passage)
    assert not new_names("The WG summary says so", passage)
    assert new_names("The UNEP summary says so", passage)  # initials of nothing in the passage
    assert "IPCC" in acronyms("the Intergovernmental Panel on Climate Change met")
