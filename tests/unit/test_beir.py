"""Tests for the BEIR-format dataset loader (ragchat.evaluation.beir)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from ragchat.evaluation.beir import BeirDataset, iter_corpus, load_beir

CORPUS = [
    {"_id": "d1", "title": "Cats", "text": "Cats purr."},
    {"_id": "d2", "title": "", "text": "Dogs bark."},
    {"_id": "d3", "text": "No title here."},
]
QUERIES = [
    {"_id": "q1", "text": "what do cats do"},
    {"_id": "q2", "text": "no judgements for me"},  # not in qrels/test.tsv -> excluded
    {"_id": "q3", "text": "dogs"},
]
TEST_QRELS = "query-id\tcorpus-id\tscore\nq3\td2\t1\nq1\td1\t2\nq1\td3\t0\n"


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _make_dataset(root: Path, qrels: dict[str, str] | None = None) -> Path:
    """Write a tiny BEIR dataset into ``root`` and return it."""
    root.mkdir(parents=True, exist_ok=True)
    _write_jsonl(root / "corpus.jsonl", CORPUS)
    _write_jsonl(root / "queries.jsonl", QUERIES)
    (root / "qrels").mkdir(exist_ok=True)
    for split, text in (qrels if qrels is not None else {"test": TEST_QRELS}).items():
        (root / "qrels" / f"{split}.tsv").write_text(text, encoding="utf-8")
    return root


def test_load_beir_reads_queries_and_qrels(tmp_path: Path) -> None:
    root = _make_dataset(tmp_path / "tiny")
    ds = load_beir(root)
    assert isinstance(ds, BeirDataset)
    assert ds.path == root
    assert ds.corpus_path == root / "corpus.jsonl"
    # q2 has no qrels -> excluded; order follows queries.jsonl (q1 before q3), not the qrels file.
    assert ds.queries == {"q1": "what do cats do", "q3": "dogs"}
    assert list(ds.queries) == ["q1", "q3"]
    # score-0 judgements are kept, as BEIR does; the metrics treat them as non-relevant.
    assert ds.qrels == {"q3": {"d2": 1}, "q1": {"d1": 2, "d3": 0}}


def test_load_beir_accepts_str_path_and_other_split(tmp_path: Path) -> None:
    root = _make_dataset(tmp_path / "tiny", {"test": TEST_QRELS, "dev": "query-id\tcorpus-id\tscore\nq2\td2\t1\n"})
    ds = load_beir(str(root), split="dev")
    assert ds.queries == {"q2": "no judgements for me"}
    assert ds.qrels == {"q2": {"d2": 1}}


def test_dataset_is_frozen(tmp_path: Path) -> None:
    ds = load_beir(_make_dataset(tmp_path / "tiny"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.path = tmp_path  # type: ignore[misc]


def test_qrels_without_header_crlf_and_duplicates(tmp_path: Path) -> None:
    # No header, Windows line endings, a blank line, and a repeated pair (last score wins, as in BEIR).
    root = _make_dataset(tmp_path / "tiny", {"test": "q1\td1\t1\r\n\r\nq1\td1\t2\r\nq3\td2\t1\r\n"})
    assert load_beir(root).qrels == {"q1": {"d1": 2}, "q3": {"d2": 1}}


def test_missing_qrels_file_names_split_and_path(tmp_path: Path) -> None:
    root = _make_dataset(tmp_path / "tiny")
    with pytest.raises(FileNotFoundError) as excinfo:
        load_beir(root, split="dev")
    message = str(excinfo.value)
    assert "split 'dev'" in message
    assert str(root / "qrels" / "dev.tsv") in message
    assert "available splits: test" in message


@pytest.mark.parametrize("name", ["corpus.jsonl", "queries.jsonl"])
def test_missing_jsonl_file_is_named(tmp_path: Path, name: str) -> None:
    root = _make_dataset(tmp_path / "tiny")
    (root / name).unlink()
    with pytest.raises(FileNotFoundError, match=f"missing {name}"):
        load_beir(root)


def test_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="folder not found"):
        load_beir(tmp_path / "nope")


@pytest.mark.parametrize(
    ("qrels_text", "pattern"),
    [
        ("query-id\tcorpus-id\tscore\nq1\td1\tone\n", r"test\.tsv:2: score must be an integer, got 'one'"),
        ("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1 d2 1\n", r"test\.tsv:3: expected 3 tab-separated fields"),
        ("q1\t0\td1\t1\n", r"test\.tsv:1: expected 3 tab-separated fields .* got 4"),  # TREC format
        ("query-id\tcorpus-id\tscore\n", r"test\.tsv: no relevance judgements"),
    ],
)
def test_bad_qrels_lines_are_named(tmp_path: Path, qrels_text: str, pattern: str) -> None:
    root = _make_dataset(tmp_path / "tiny", {"test": qrels_text})
    with pytest.raises(ValueError, match=pattern):
        load_beir(root)


def test_qrels_query_without_query_text(tmp_path: Path) -> None:
    root = _make_dataset(tmp_path / "tiny", {"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq404\td1\t1\n"})
    with pytest.raises(ValueError, match=r"no entry in queries\.jsonl: 'q404'"):
        load_beir(root)


def test_bad_queries_line_is_named(tmp_path: Path) -> None:
    root = _make_dataset(tmp_path / "tiny")
    with (root / "queries.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"_id": "q4", "text": \n')
    with pytest.raises(ValueError, match=r"queries\.jsonl:4: invalid JSON"):
        load_beir(root)
    _write_jsonl(root / "queries.jsonl", [{"_id": "q1"}])
    with pytest.raises(ValueError, match=r"queries\.jsonl:1: missing or invalid 'text'"):
        load_beir(root)


def test_iter_corpus_yields_id_title_text(tmp_path: Path) -> None:
    root = _make_dataset(tmp_path / "tiny")
    expected = [("d1", "Cats", "Cats purr."), ("d2", "", "Dogs bark."), ("d3", "", "No title here.")]
    assert list(iter_corpus(root / "corpus.jsonl")) == expected
    assert list(iter_corpus(load_beir(root).corpus_path)) == expected
    assert list(iter_corpus(root)) == expected  # a dataset folder works too


def test_iter_corpus_int_ids_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    _write_jsonl(path, [{"_id": 5, "title": None, "text": "five"}])
    assert list(iter_corpus(path)) == [("5", "", "five")]
    path.write_text('{"_id": "a", "text": "ok"}\n\n{"title": "no id"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"corpus\.jsonl:3: missing or invalid '_id'"):
        list(iter_corpus(path))
    with pytest.raises(FileNotFoundError, match="corpus file not found"):
        list(iter_corpus(tmp_path / "missing.jsonl"))
