"""Query expansion's pure parts: the term cleaning, and the option resolved once (request over QUERY_EXPANSION)."""

from __future__ import annotations

import pytest

from ragchat.core.errors import BadRequest
from ragchat.core.options import options_of, parse_expansion
from ragchat.core.search import ExpansionStatus
from ragchat.retrieval.expansion import clean_terms, cut_passage, keyword_text, vector_text
from ragchat.settings import RetrievalSettings


def test_terms_are_words_deduplicated_capped_and_new() -> None:
    raw = ["Yeast", "yeast", "bread", "baking-soda", "a:* & b", "x" * 100, "one two three four five", "", "__"]
    assert clean_terms(raw, "why does bread rise", 8) == [
        "Yeast",
        "baking-soda",
        "a b",
        "x" * 40,
        "one two three four",
    ]
    assert clean_terms([f"t{i}" for i in range(100)], "q", 3) == ["t0", "t1", "t2"]
    assert clean_terms(["'; DROP TABLE x; --"], "q", 3) == ["DROP TABLE x"]


def test_the_texts_only_change_when_the_expansion_worked() -> None:
    ok = ExpansionStatus(requested="keywords", status="ok", terms=["yeast", "flour"])
    failed = ExpansionStatus(requested="keywords", status="timeout", warning="w")
    hyde = ExpansionStatus(requested="hyde", status="ok", passage="Yeast ferments.")
    assert keyword_text("bread", ok) == "bread yeast flour" and keyword_text("bread", failed) == "bread"
    assert vector_text("bread", hyde) == "bread\n\nYeast ferments." and vector_text("bread", ok) == "bread"


def test_the_request_overrides_the_setting() -> None:
    settings = RetrievalSettings(query_expansion="hyde")
    assert options_of(settings).expansion == "hyde"
    assert options_of(settings, expansion="off").expansion == "off"
    assert options_of(settings, expansion=" Keywords ").expansion == "keywords"
    assert options_of(RetrievalSettings()).expansion == "off"  # the default until measured otherwise
    assert parse_expansion("") is None and parse_expansion(None) is None
    with pytest.raises(BadRequest, match="unknown expansion"):
        parse_expansion("hyde; DROP TABLE")


def test_a_cut_passage_is_read_as_far_as_it_goes_and_nothing_else_is() -> None:
    text = "Yeast ferments the sugars in dough and the gas makes it rise"
    assert cut_passage('{"passage": "' + text) == text
    assert cut_passage('{ "passage" : "' + text + "\\") == text  # a cut escape
    assert cut_passage('{"passage": "' + text + "\\u00") == ""  # a cut unicode escape: not guessed at
    assert cut_passage('{"passage": "short') == ""  # too little to search with
    assert cut_passage('{"terms": ["' + text) == "" and cut_passage(None) == "" and cut_passage("x" * 10_000) == ""
