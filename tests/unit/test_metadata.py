"""Metadata parsing without a database: a person's metadata, the extractor's reply and merge rule, filters."""

from __future__ import annotations

import json

import pytest

from ragchat.chat.engine.tools import ToolArgumentError, narrow_metadata, parse_search_args
from ragchat.core.errors import BadRequest
from ragchat.core.search import SearchFilters
from ragchat.documents.metadata.extraction import parse_extraction
from ragchat.documents.metadata.fields import (
    apply_patch,
    check_metadata,
    merge_extracted,
    parse_meta_args,
    parse_metadata_field,
)
from ragchat.retrieval.filters import metadata_path, parse_metadata_filters

GOOD = {"title": "T", "summary": "S", "topics": ["a", "b"], "document_type": "Report", "language": "en"}


def test_extraction_reply_is_cleaned_and_validated() -> None:
    for reply in (
        json.dumps(GOOD),
        "<think>the user wants JSON</think>\n" + json.dumps(GOOD),
        "```json\n" + json.dumps(GOOD) + "\n```",
        "Here it is: " + json.dumps(GOOD) + " Hope this helps.",
    ):
        parsed = parse_extraction(reply)
        assert parsed is not None, reply
        assert parsed.as_metadata() == {**GOOD, "document_type": "report"}
    for garbage in (None, "", "not json", "{", json.dumps({**GOOD, "topics": 3}), json.dumps({"title": "only"})):
        assert parse_extraction(garbage) is None, garbage
    long = parse_extraction(
        json.dumps({**GOOD, "topics": "one", "summary": "x " * 1000, "key_dates": [f"d{i}" for i in range(30)]})
    )
    assert long is not None
    assert long.topics == ["one"] and len(long.summary) <= 500 and len(long.key_dates) == 10
    empty = parse_extraction(json.dumps({**GOOD, "topics": [], "language": ""}))
    assert empty is not None and "topics" not in empty.as_metadata() and "language" not in empty.as_metadata()


def test_a_persons_metadata_is_checked() -> None:
    assert check_metadata({" subject ": [" Polity ", "History", "Polity"], "year": "2024"}) == {
        "subject": ["Polity", "History"],
        "year": "2024",
    }
    for bad in (
        [],
        {"source_path": "x"},
        {"": "x"},
        {"a=b": "x"},
        {"k\tx": "x"},
        {"k" * 65: "x"},
        {"k": ""},
        {"k": "x" * 501},
        {"k": ["x"] * 21},
        {"k": []},
        {"k": 1},
        {"k": ["x", 2]},
        {"k": None},
        {f"k{i}": "v" for i in range(51)},
    ):
        with pytest.raises(BadRequest):
            check_metadata(bad)
    assert check_metadata({"k": None}, allow_null=True) == {"k": None}
    assert parse_metadata_field(None) == {} and parse_metadata_field("  ") == {}
    assert parse_metadata_field('{"subject": "Polity"}') == {"subject": "Polity"}
    for field in ("{", "[]", '"x"', '{"k": {"nested": 1}}', " " * (65 * 1024) + "{}"):
        with pytest.raises(BadRequest):
            parse_metadata_field(field)
    assert parse_meta_args(["subject=Polity", "subject=History", "year=2024", "note=a=b"]) == {
        "subject": ["Polity", "History"],
        "year": "2024",
        "note": "a=b",
    }
    with pytest.raises(BadRequest):
        parse_meta_args(["novalue"])


def test_merge_patch_and_extraction_never_overwrite_a_person() -> None:
    current = {"source_path": "/a.txt", "subject": "Polity", "draft": "yes"}
    assert apply_patch(current, {"draft": None, "year": "2024"}) == {
        "source_path": "/a.txt",
        "subject": "Polity",
        "year": "2024",
    }
    first = {"title": "Extracted", "topics": ["a"], "language": "en"}
    merged = merge_extracted({"title": "Mine", "subject": "Polity"}, {}, first)
    assert merged == {"title": "Mine", "subject": "Polity", "topics": ["a"], "language": "en"}
    edited = {**merged, "topics": ["mine"]}  # a person changed a topic: it is theirs now
    again = merge_extracted(edited, first, {"topics": ["b"], "summary": "new"})
    assert again == {"title": "Mine", "subject": "Polity", "topics": ["mine"], "summary": "new"}  # language dropped


def test_filters_are_or_within_a_key_and_and_across() -> None:
    assert parse_metadata_filters(["subject=Polity", "subject=History", "year=2024", "subject=Polity"]) == {
        "subject": ["Polity", "History"],
        "year": ["2024"],
    }
    assert parse_metadata_filters(None) is None
    for bad in (["subject"], ["=x"], ["k="], [f"k{i}=v" for i in range(33)], ["k=" + "x" * 1001], ["k=a\x00"]):
        with pytest.raises(BadRequest):
            parse_metadata_filters(bad)
    path = metadata_path({"subject": ["Polity", 'Hi"st\\ory'], "year": ["2024"]})
    assert path == '$ ? ((@."subject" == "Polity" || @."subject" == "Hi\\"st\\\\ory") && (@."year" == "2024"))'
    assert SearchFilters(metadata={"k": "v"}).metadata == {"k": ["v"]}  # one string is a list of one
    assert SearchFilters(metadata={"k": ["v", "v"], "e": []}).metadata == {"k": ["v"]}


def test_the_chat_tools_filters() -> None:
    args = parse_search_args(
        "search_documents", {"query": "x", "filters": {"subject": ["Polity", "History"], "year": "2024"}}, None
    )
    assert args.metadata == {"subject": ["Polity", "History"], "year": ["2024"]}
    assert parse_search_args("search_documents", {"query": "x", "filters": {}}, None).metadata is None
    for bad in ("x", {"k": 3}, {"k": []}, {"k": [""]}, {f"k{i}": "v" for i in range(9)}):
        with pytest.raises(ToolArgumentError):
            parse_search_args("search_documents", {"query": "x", "filters": bad}, None)
    # the request's filter bounds the model's: never wider
    assert narrow_metadata({"subject": ["Polity"]}, None) == {"subject": ["Polity"]}
    assert narrow_metadata(None, {"year": ["2024"]}) == {"year": ["2024"]}
    assert narrow_metadata({"subject": ["Polity", "History"]}, {"subject": ["History", "Art"], "year": ["2024"]}) == {
        "subject": ["History"],
        "year": ["2024"],
    }
    assert narrow_metadata({"subject": ["Polity"]}, {"subject": ["Art"]}) == {"subject": ["Polity"]}
