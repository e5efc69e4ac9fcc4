"""The gold-answer scoring of bench/answers.py (bench/answers_score.py) on hand-made cases."""

from __future__ import annotations

from typing import Any

import pytest

from bench.answers_score import (
    asserts_answer,
    citation_precision,
    citation_recall,
    cited_numbers,
    contains_span,
    exact_match,
    is_refusal,
    normalize,
    token_f1,
)


def test_normalize_is_squads_lower_punctuation_articles_whitespace() -> None:
    assert normalize("The  Denver Broncos!") == "denver broncos"
    assert normalize("an apple, a pear") == "apple pear"
    assert normalize("Super Bowl 50 [1].") == "super bowl 50"  # the marker's number is not an answer token


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("Die Universität München", "de", "universität münchen"),
        ("Mu\u0308nchen", "de", "münchen"),  # decomposed ü equals composed ü
        ("„Der Große Plan“", "de", "grosse plan"),  # German quotes removed, ß case-folds to ss
        ("¿Dónde está la Ciudad?", "es", "dónde está ciudad"),
        ("«Los Ángeles»", "es", "ángeles"),
        ("El Niño", "es", "niño"),
    ],
)
def test_normalize_german_and_spanish(text: str, lang: str, expected: str) -> None:
    assert normalize(text, lang) == expected


def test_articles_are_per_language() -> None:
    assert normalize("die Stadt", "en") == "die stadt"  # "die" is an English word
    assert normalize("die Stadt", "de") == "stadt"
    assert normalize("la vie", "es") == "vie"


def test_accents_are_kept() -> None:
    assert not exact_match("Munich", ["Múnich"], "es")
    assert exact_match("múnich.", ["Múnich"], "es")


def test_exact_match_takes_the_best_gold() -> None:
    assert exact_match("the Broncos", ["Denver Broncos", "Broncos"])
    assert not exact_match("The Broncos won", ["Broncos"])


def test_token_f1() -> None:
    assert token_f1("Denver Broncos", ["Denver Broncos"]) == 1.0
    # 1 token shared of 2 predicted and 1 gold: P 0.5, R 1.0
    assert token_f1("the Broncos team", ["Broncos"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("Carolina", ["Denver Broncos"]) == 0.0
    assert token_f1("anything", []) == 0.0
    assert token_f1("Die Bayern München", ["FC Bayern München"], "de") == pytest.approx(0.8)


def test_contains_span_is_a_contiguous_token_run() -> None:
    answer = "The game was won by the Denver Broncos [1], in February 2016."
    assert contains_span(answer, ["Denver Broncos"])
    assert contains_span(answer, ["February 2016"])
    assert not contains_span(answer, ["Broncos Denver"])  # order matters
    assert not contains_span(answer, ["Den"])  # whole tokens only
    assert not contains_span("It cites [1].", ["1"])  # a marker is not an answer
    assert not contains_span(answer, [""])  # an empty gold never counts


def test_contains_span_german_and_spanish() -> None:
    assert contains_span("Sie wurde 1888 in Straßburg gegründet [2].", ["Strassburg"], "de")
    assert contains_span("Der Vertrag wurde „im Jahr 1919“ unterzeichnet.", ["im Jahr 1919"], "de")
    assert contains_span("¿La respuesta? Fue en Cádiz, España.", ["en Cádiz"], "es")
    assert not contains_span("Fue en Cadiz.", ["Cádiz"], "es")


def test_citation_precision_and_recall() -> None:
    cited = ["The Broncos beat the Panthers 24–10.", "Levi's Stadium is in Santa Clara."]
    assert citation_precision(cited, ["Broncos"]) == (1, 2)
    assert citation_precision([], ["Broncos"]) == (0, 0)
    assert citation_recall(["p-1", "p-7"], "p-7")
    assert not citation_recall(["p-1"], "p-7")


def test_cited_numbers() -> None:
    assert cited_numbers("A [2]. B [1, 3] and [2][4].") == [2, 1, 3, 4]
    assert cited_numbers("No markers (1999).") == []


@pytest.mark.parametrize(
    "text",
    [
        "The documents do not mention who won the 2014 World Cup.",
        "None of the passages mention pharmacy technicians.",  # seen on xquad-dev
        "I couldn't find this in the provided documents.",
        "There is no information about that in the passages [1].",
        "Your documents don't cover this: none of the passages found matches the question closely enough.",
        "Die Dokumente enthalten keine Informationen darüber.",
        "Das wird in den Texten nicht erwähnt.",
        "Los documentos no mencionan quién ganó.",
        "No hay información sobre eso en los documentos.",
    ],
)
def test_refusals(text: str) -> None:
    assert is_refusal(text)
    assert not asserts_answer(text)


@pytest.mark.parametrize(
    "text",
    [
        "The Denver Broncos won Super Bowl 50 [1].",
        "Die Schlacht fand 1066 statt.",
        "La capital es Madrid.",
        "Notably, the information age began in 1970.",  # "not" inside words, "information" alone
    ],
)
def test_answers_are_not_refusals(text: str) -> None:
    assert not is_refusal(text)
    assert asserts_answer(text)


def test_an_empty_answer_asserts_nothing() -> None:
    assert not asserts_answer("")
    assert not asserts_answer(" [1] ")


def _row(kind: str, answer: str, **extra: Any) -> dict[str, Any]:
    passages = [
        {"doc": "a01-p02", "content": "The Broncos won Super Bowl 50."},
        {"doc": "a03-p00", "content": "Other."},
    ]
    return {"arm": "ragchat", "kind": kind, "answer": answer, "golds": ["Broncos"], "gold_doc": "a01-p02",
            "passages": passages, "ttft_s": 1.0, "total_s": 2.0, "loadavg": [1.0, 1.0, 1.0], **extra}  # fmt: skip


def test_score_and_summary_of_lines() -> None:
    from bench.answers_score import score, summarize

    right = _row("answerable", "The Broncos won [1].", verifier={"citations": [{"verdict": "supported"}]},
                 not_covered=False)  # fmt: skip
    wrong = _row("answerable", "The Panthers won [2].", verifier={"citations": [{"verdict": "unsupported"}]},
                 not_covered=False)  # fmt: skip
    repaired = _row("answerable", "The Broncos won.", done_cited=[1], verifier=None, not_covered=False)
    refused = _row("unanswerable", "The documents do not say.", verifier=None, not_covered=True)
    rows = [right, wrong, repaired, refused]
    for r in rows:
        r["scores"] = score(r)
    assert (right["scores"]["contains"], right["scores"]["cited_gold_doc"], right["scores"]["warning"]) == (
        True, True, False)  # fmt: skip
    assert (wrong["scores"]["cited_gold_span"], wrong["scores"]["warning_kinds"]) == (0, ["unsupported"])
    assert repaired["scores"]["cited_gold_doc"]  # a citation the check added counts
    assert refused["scores"]["warning_kinds"] == ["not_covered"] and not refused["scores"]["asserts"]
    s = summarize(rows)
    assert s["citation_precision"] == {"k": 2, "n": 3, "value": 0.6667}
    assert s["not_in_documents_precision"]["value"] == 1.0 and s["not_in_documents_recall"]["value"] == 1.0
    assert s["warned_right"]["value"] == 0.0 and s["warned_wrong"] == {"k": 1, "n": 1, "value": 1.0}


def test_every_mark_the_page_draws_counts_as_a_warning() -> None:
    """ "It may not answer what was asked" and "no search was made" draw ⚠ on the page (Citations.tsx), so they
    are warnings here too; "may not answer" under "Not in your documents" is that one mark."""
    from bench.answers_score import score

    supported = {"citations": [{"verdict": "supported"}], "sentences": 1, "searched": True}
    restated = _row("answerable", "The Panthers won [1].", verifier={**supported, "off_question": True},
                    not_covered=False)  # fmt: skip
    assert score(restated)["warning_kinds"] == ["off_question"]
    unsearched = _row("answerable", "The Broncos won.", verifier={**supported, "searched": False}, not_covered=False)
    assert score(unsearched)["warning_kinds"] == ["unsearched"]
    elsewhere = _row("unanswerable", "The Panthers won [1].", verifier={**supported, "off_question": True},
                     not_covered=True)  # fmt: skip
    assert score(elsewhere)["warning_kinds"] == ["not_covered"]
    clean = _row("answerable", "The Broncos won [1].", verifier=supported, not_covered=False)
    assert score(clean)["warning"] is False


def test_paired_compares_groups_on_the_questions_all_answered() -> None:
    from bench.answers_score import paired, score

    def line(data: str, qid: str, answer: str, error: str | None = None) -> dict[str, Any]:
        r = _row("answerable", answer, data=data, lang="en", qid=qid, error=error, verifier=None, not_covered=False)
        return {**r, "scores": score(r)}

    rows = [
        line("s1", "q1", "The Broncos won [1]."),
        line("s1", "q2", "The Panthers won [2]."),
        line("s1", "q3", "The Broncos won [1]."),  # s2 never asked q3
        line("s2", "q1", "The Panthers won [2]."),
        line("s2", "q2", "", error="timeout"),  # an error leaves q2 out of both
    ]
    text = paired(rows, ["s1/en/ragchat", "s2/en/ragchat"])
    assert text.startswith("Paired: the 1 questions all of these answered")
    assert "| s1/en/ragchat | 1 | 1.00 (1/1) |" in text and "| s2/en/ragchat | 1 | 0.00 (0/1) |" in text
    with pytest.raises(ValueError, match="no lines for s3/en/ragchat"):
        paired(rows, ["s1/en/ragchat", "s3/en/ragchat"])
