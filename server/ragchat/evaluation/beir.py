"""Loader for datasets in the BEIR folder layout.

A BEIR dataset folder holds::

    corpus.jsonl        {"_id": ..., "title": ..., "text": ...} per line
    queries.jsonl       {"_id": ..., "text": ...} per line
    qrels/<split>.tsv   header ``query-id<TAB>corpus-id<TAB>score``, then one judgement per row

Like BEIR's ``GenericDataLoader``, only queries that have judgements in the chosen split are kept, and a
repeated (query, document) pair keeps its last score. Unlike it, the corpus is not read into memory: use
:func:`iter_corpus` to stream it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["QRELS_HEADER", "BeirDataset", "iter_corpus", "load_beir", "query_categories"]

QRELS_HEADER: tuple[str, str, str] = ("query-id", "corpus-id", "score")
_MAX_LISTED = 5


@dataclass(frozen=True)
class BeirDataset:
    """A BEIR dataset split: queries with judgements, their qrels, and where the corpus lives."""

    path: Path
    queries: dict[str, str]  # only queries that have qrels in the split, in queries.jsonl order
    qrels: dict[str, dict[str, int]]  # query id -> {corpus id: relevance}
    corpus_path: Path


def load_beir(path: Path | str, split: str = "test") -> BeirDataset:
    """Load the queries and ``qrels/<split>.tsv`` of the BEIR dataset at ``path``.

    Raises ``FileNotFoundError`` naming the missing folder or file, and ``ValueError`` naming the file and
    line number of malformed content (or the qrels query ids that have no query text).
    """
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"BEIR dataset folder not found: {root}")
    corpus_path = root / "corpus.jsonl"
    queries_path = root / "queries.jsonl"
    qrels_path = root / "qrels" / f"{split}.tsv"
    for required in (corpus_path, queries_path):
        if not required.is_file():
            raise FileNotFoundError(f"BEIR dataset {root}: missing {required.name} (expected at {required})")
    if not qrels_path.is_file():
        raise FileNotFoundError(
            f"BEIR dataset {root}: missing qrels for split {split!r} (expected at {qrels_path}); "
            f"available splits: {_available_splits(root) or 'none'}"
        )

    qrels = _read_qrels(qrels_path)
    all_queries = _read_queries(queries_path)
    missing = [qid for qid in qrels if qid not in all_queries]
    if missing:
        raise ValueError(
            f"{qrels_path}: {len(missing)} query id(s) have qrels but no entry in {queries_path.name}: "
            f"{_preview(missing)}"
        )
    queries = {qid: text for qid, text in all_queries.items() if qid in qrels}
    return BeirDataset(path=root, queries=queries, qrels=qrels, corpus_path=corpus_path)


def iter_corpus(path: Path | str) -> Iterator[tuple[str, str, str]]:
    """Stream ``(id, title, text)`` from a ``corpus.jsonl`` file (or a dataset folder containing one).

    A missing or null ``title``/``text`` reads as ``""``; a missing ``_id`` or invalid JSON raises
    ``ValueError`` naming the line.
    """
    corpus_path = Path(path)
    if corpus_path.is_dir():
        corpus_path = corpus_path / "corpus.jsonl"
    if not corpus_path.is_file():
        raise FileNotFoundError(f"BEIR corpus file not found: {corpus_path}")
    for lineno, record in _iter_jsonl(corpus_path):
        doc_id = _get_id(record, corpus_path, lineno)
        title = _get_text(record, "title", corpus_path, lineno, required=False)
        text = _get_text(record, "text", corpus_path, lineno, required=False)
        yield doc_id, title, text


def _read_queries(path: Path) -> dict[str, str]:
    """All queries in ``queries.jsonl``, in file order (a repeated id keeps its first position)."""
    queries: dict[str, str] = {}
    for lineno, record in _iter_jsonl(path):
        qid = _get_id(record, path, lineno)
        queries[qid] = _get_text(record, "text", path, lineno, required=True)
    return queries


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Parse a BEIR qrels TSV (optional ``query-id/corpus-id/score`` header) into nested dicts."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8-sig", newline="") as f:
        for lineno, raw in enumerate(f, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if lineno == 1 and tuple(field.strip().lower() for field in fields) == QRELS_HEADER:
                continue
            if len(fields) != 3:
                raise ValueError(
                    f"{path}:{lineno}: expected 3 tab-separated fields (query-id, corpus-id, score), "
                    f"got {len(fields)}: {line!r}"
                )
            qid, doc_id, score_text = (field.strip() for field in fields)
            if not qid or not doc_id:
                raise ValueError(f"{path}:{lineno}: empty query-id or corpus-id: {line!r}")
            try:
                score = int(score_text)
            except ValueError:
                raise ValueError(f"{path}:{lineno}: score must be an integer, got {score_text!r}") from None
            qrels.setdefault(qid, {})[doc_id] = score
    if not qrels:
        raise ValueError(f"{path}: no relevance judgements found")
    return qrels


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSON Lines file."""
    with path.open(encoding="utf-8-sig") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
            yield lineno, record


def _get_id(record: dict[str, Any], path: Path, lineno: int) -> str:
    """The record's ``_id`` as a string (integers are accepted and converted)."""
    value = record.get("_id")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{path}:{lineno}: missing or invalid '_id' (got {value!r})")
    doc_id = str(value)
    if not doc_id:
        raise ValueError(f"{path}:{lineno}: empty '_id'")
    return doc_id


def _get_text(record: dict[str, Any], key: str, path: Path, lineno: int, *, required: bool) -> str:
    """A string field; ``None``/missing becomes ``""`` unless ``required``."""
    value = record.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{path}:{lineno}: missing or invalid {key!r} (got {value!r})")
    return value


def _available_splits(root: Path) -> str:
    """Comma-separated names of the splits present under ``qrels/``."""
    qrels_dir = root / "qrels"
    if not qrels_dir.is_dir():
        return ""
    return ", ".join(sorted(p.stem for p in qrels_dir.glob("*.tsv")))


def _preview(items: list[str]) -> str:
    """The first few items, comma-separated, with a count of the rest."""
    shown = ", ".join(repr(item) for item in items[:_MAX_LISTED])
    rest = len(items) - _MAX_LISTED
    return f"{shown}, ... (+{rest} more)" if rest > 0 else shown


def query_categories(dataset: BeirDataset, key: str = "category") -> dict[str, str]:
    """The category of each query, when ``queries.jsonl`` has one: a top-level ``key`` or ``metadata.key``."""
    found: dict[str, str] = {}
    for lineno, record in _iter_jsonl(dataset.path / "queries.jsonl"):
        qid = _get_id(record, dataset.path / "queries.jsonl", lineno)
        if qid not in dataset.queries:
            continue
        meta = record.get("metadata")
        value = record.get(key, meta.get(key) if isinstance(meta, dict) else None)
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            found[qid] = str(value).strip()[:100]
    return found
