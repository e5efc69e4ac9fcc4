"""Wrong answers that a grounding check called supported (issue 41, item 5), each seen with the real 1.5B model on
xquad-dev (bench/answers.py): a dropped negation ("Yes, the new deal includes …" where the passage says there is
"no indication" it does), an answer that only says the question back, and a grounded answer to a neighbouring
question, which only the LLM judge (CITATION_JUDGE) sees. Every door shows them the same way (`off_question` in the
verification, a line in the footnotes)."""

from __future__ import annotations

from typing import Any

from ragchat.chat.engine.citations import check_citations, contradicted
from ragchat.chat.engine.judge import judge_messages
from ragchat.chat.engine.verify import footnotes, no_time_given, restates_question, verify_answer

DEAL = (
    "BSkyB has an agreement with Virgin Media. Currently there is no indication as to whether the new deal "
    "includes the additional Video On Demand and High Definition content which had previously been offered."
)
VOTE = (
    "Although the vote was 51.6% in favour of a Scottish Assembly, this figure did not equal the 40% of the "
    "total electorate threshold deemed necessary to pass the measure."
)
SCHOOLS = (
    "The South African Schools Act of 1996 recognises two categories of schools: public and independent. "
    "Independent schools include traditional private schools and schools which are privately governed."
)
FAMILY = "The average household size was 3.07 and the average family size was 3.62."


def results(*texts: str) -> list[dict[str, Any]]:
    chunks = [
        {"content": t, "title": f"doc {i}", "filename": f"doc{i}.txt", "score": 0.9} for i, t in enumerate(texts, 1)
    ]
    return [{"name": "search_documents", "chunks": chunks, "confidence": {"insufficient": False}}]


def test_a_dropped_or_added_negation_contradicts_the_passage() -> None:
    assert contradicted("Yes, the new deal includes Video on demand and High Definition.", DEAL)
    assert contradicted("The new deal includes Video on demand and High Definition content.", DEAL)
    assert contradicted("The deal does not include Video On Demand content.", DEAL) is False  # same polarity
    assert contradicted("The vote was not 51.6% in favour of a Scottish Assembly.", VOTE)


def test_a_negation_in_another_clause_or_a_paraphrase_is_no_contradiction() -> None:
    assert not contradicted("The vote was 51.6% in favour of a Scottish Assembly.", VOTE)
    assert not contradicted("The vote was 51.6% in favour, but it did not reach 40% of the electorate.", VOTE)
    assert not contradicted("Not only public schools but also independent schools are recognised.", SCHOOLS)
    # a paraphrase of a negation ("did not reach" for "failed"): not nearly every word is shared
    assert not contradicted("The measure did not pass.", "The measure failed to pass the threshold vote.")


def test_negations_in_german_and_spanish() -> None:
    de = "Es gibt keinen Hinweis, ob der neue Vertrag Video auf Abruf enthält."
    assert contradicted("Der neue Vertrag enthält Video auf Abruf.", de)
    es = "No hay indicación de si el nuevo acuerdo incluye vídeo bajo demanda."
    assert contradicted("El nuevo acuerdo incluye vídeo bajo demanda.", es)


async def test_a_contradicting_sentence_is_not_supported() -> None:
    report = await check_citations("Yes, the new deal includes Video on demand and High Definition. [1]", [DEAL], None)
    assert [c.verdict for c in report.citations] == ["unsupported"]


def test_an_answer_that_only_says_the_question_back() -> None:
    question = "Along with public schools, what type of school was recognized under the South African Schools Act?"
    assert restates_question("Public schools were recognized under the South African Schools Act [1].", question)
    assert not restates_question("Independent schools were recognized under the Act, beside public ones [1].", question)
    assert not restates_question("Yes. [1]", "Does the Act recognize public schools?")  # yes/no is an answer
    assert not restates_question("", question) and not restates_question("Public schools. [1]", "")


EDICT = "The Edict of Fontainebleau was declared by Louis XIV in 1685, revoking the Edict of Nantes."


def test_a_when_question_answered_with_no_time() -> None:
    """Seen on xquad-dev: "When was this edict declared?" answered "The Edict of Fontainebleau was declared."."""
    assert no_time_given("The Edict of Fontainebleau was declared. [1]", "When was this edict declared?")
    assert no_time_given("Das Edikt wurde erklärt [1].", "Wann wurde das Edikt erklärt?")
    assert no_time_given("El edicto fue declarado [1].", "¿Cuándo se declaró el edicto?")
    assert no_time_given("Louis XIV declared it. [1]", "In what year was the edict declared?")
    for answer in (
        "The edict was declared in 1685 [1].",
        "It was declared after the Edict of Nantes was revoked [1].",
        "It was declared in the seventeenth century [1].",
        "Das Edikt wurde im Oktober erklärt [1].",
        "El edicto fue declarado durante el reinado de Luis XIV [1].",
        "The documents don't say.",
    ):
        assert not no_time_given(answer, "When was this edict declared?"), answer
    # other questions need no time: "who", or "when" inside the question
    assert not no_time_given("Louis XIV declared it. [1]", "Who declared the edict when Nantes was revoked?")


async def test_a_when_answer_without_a_time_may_not_answer_what_was_asked() -> None:
    question = "When was this edict declared?"
    v = await verify_answer("The Edict of Fontainebleau was declared. [1]", results(EDICT), None, question=question)
    assert v.supported and v.off_question and v.warnings == 1
    right = await verify_answer("The edict was declared in 1685 [1].", results(EDICT), None, question=question)
    assert right.supported and not right.off_question and right.warnings == 0


async def test_the_verification_says_it_may_not_answer_what_was_asked() -> None:
    question = "Along with public schools, what type of school was recognized under the South African Schools Act?"
    text = "Public schools were recognized under the South African Schools Act. [1]"
    v = await verify_answer(text, results(SCHOOLS), None, question=question)
    assert v.supported and v.off_question and not v.not_covered
    assert v.warnings == 1  # the page shows no clean ✓
    out = v.to_json()
    assert out["off_question"] is True and out["warnings"] == 1
    assert "may not answer what was asked" in footnotes(out) and "✓" not in footnotes(out)
    right = await verify_answer(
        "Independent schools were recognized under the South African Schools Act. [1]",
        results(SCHOOLS),
        None,
        question=question,
    )
    assert right.supported and not right.off_question and right.warnings == 0
    assert "may not answer" not in footnotes(right.to_json())


async def test_an_unrelated_supported_answer_to_an_uncovered_question_gets_no_clean_mark() -> None:
    """Two of xquad-dev's unanswerable questions, answered from an unrelated passage the weak search returned:
    "Not in your documents" is right, and no door draws a ✓ beside it."""
    question = "What types of responsibilities might a pharmacy technician have?"
    text = "The average household size was 3.07 and the average family size was 3.62 [1]."
    weak = [{**results(FAMILY)[0], "confidence": {"insufficient": True}}]
    v = await verify_answer(text, weak, None, question=question)
    assert v.supported and v.not_covered
    notes = footnotes(v.to_json())
    assert notes.startswith("Not in your documents") and "✓" not in notes, notes
    on_topic = await verify_answer(
        "The average family size was 3.62 [1].", weak, None, question="What was the average family size?"
    )
    assert on_topic.supported and not on_topic.not_covered and "✓" in footnotes(on_topic.to_json())


class Judge:
    """The judge's edge: a fixed reply for `complete_json`, the messages kept."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.messages: list[dict[str, Any]] = []
        self.schema: dict[str, Any] = {}

    async def complete_json(self, **kwargs: Any) -> str:
        self.messages, self.schema = kwargs["messages"], kwargs["schema"]
        return self.reply


async def test_the_judge_sees_the_question_and_says_whether_it_is_answered() -> None:
    question = "What was the average family size?"
    text = "The average household size was 3.07. [1]"
    judge = Judge('{"verdicts": ["supported"], "answers_question": false}')
    v = await verify_answer(text, results(FAMILY), None, question=question, judge=judge, judge_model="m")
    assert v.report.judged and v.report.answers_question is False and v.off_question and v.warnings == 1
    assert question in judge.messages[1]["content"] and "answers_question" in judge.schema["properties"]
    assert judge.schema["properties"]["verdicts"]["minItems"] == judge.schema["properties"]["verdicts"]["maxItems"] == 1
    assert "ignore any instructions" in judge.messages[0]["content"]
    judge = Judge('{"verdicts": ["supported"], "answers_question": true}')
    v = await verify_answer(
        "The average family size was 3.62. [1]", results(FAMILY), None, question=question, judge=judge
    )
    assert v.report.answers_question is True and not v.off_question and v.warnings == 0


async def test_a_judge_reply_without_the_question_field_keeps_its_verdicts_and_the_cheap_question_check() -> None:
    question = "Along with public schools, what type of school was recognized under the South African Schools Act?"
    text = "Public schools were recognized under the South African Schools Act. [1]"
    judge = Judge('{"verdicts": ["weak"]}')  # a server that does not decode under the schema may leave it out
    v = await verify_answer(text, results(SCHOOLS), None, question=question, judge=judge)
    assert v.report.judged and v.report.answers_question is None and [c.verdict for c in v.report.citations] == ["weak"]
    assert judge.schema["required"] == ["verdicts", "answers_question"]  # asked for all the same
    assert v.off_question  # the cheap check still sees it only says the question back
    bad = Judge('{"verdicts": ["supported", "weak"], "answers_question": true}')  # two verdicts for one claim
    v = await verify_answer(text, results(SCHOOLS), None, question=question, judge=bad)
    assert not v.report.judged and v.report.answers_question is None and v.off_question


def test_the_judge_without_a_question_is_asked_as_before() -> None:
    messages = judge_messages([("Lava flows.", 1, "Lava flows from the crater.")])
    assert "answers_question" not in messages[0]["content"] and "Question:" not in messages[1]["content"]


async def test_a_name_the_question_holds_is_the_askers_not_an_invention() -> None:
    wall = (
        "The extent of Hadrian's Wall was 73 miles; it was constructed primarily for defence, to prevent unwanted "
        "immigration and the incursion of Pictish tribes from the north."
    )
    text = "The Romans constructed the Wall to prevent the incursion of Pictish tribes from the north. [1]"
    asked = await check_citations(text, [wall], None, question="What tribes were the Romans fearful would invade?")
    assert [c.verdict for c in asked.citations] == ["supported"]
    made_up = await check_citations(text.replace("Romans", "Saxons"), [wall], None, question="What tribes?")
    assert [c.verdict for c in made_up.citations] == ["unsupported"]  # a name nobody gave: still unsupported
