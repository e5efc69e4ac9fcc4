"""The data half of `bench/bm25_fields.py`: every chunk's title and body analysed by Postgres, as sparse matrices.

The chunks come from a COPY of the fusion bench's database (`bench/fusion_collect.py` ingested both dev corpora
there): the copy is started as its own embedded server, so the original is never written to. Postgres itself
analyses the text (`to_tsvector(config, …)`), with the extra configurations created in the copy:

- `english`: production (the stored `search_vector`, `doc_len`);
- `simple`: lower-cased words, no stemming, no stop words;
- `bm25f_english_nostop`: `english` whose snowball dictionary has no stop word file;
- `bm25f_english_unaccent`: `english` with `unaccent` before the stemmer (the extension ships with the server).

Per analyser and corpus: the term frequencies (`array_length(positions)`, as production counts them) of three
fields per chunk, `all` (title || ' ' || content, what production stores), `title` (the document's title,
repeated in every chunk of the document, as stored) and `body` (the chunk's content), and every query's
distinct lexemes. Cached as a pickle next to the copy, so a rerun does not analyse again.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import LiteralString, cast

import numpy as np
import psycopg
from psycopg.rows import DictRow, dict_row, tuple_row
from scipy import sparse

from ragchat.db.embedded import read_postmaster, start_embedded
from ragchat.evaluation.beir import BeirDataset
from ragchat.evaluation.runner import eval_owner

ANALYZERS = ("english", "simple", "bm25f_english_nostop", "bm25f_english_unaccent")
FIELDS = {"all": "c.title || ' ' || c.content", "title": "c.title", "body": "c.content"}

_SETUP = """
CREATE EXTENSION IF NOT EXISTS unaccent;
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'bm25f_english_nostop') THEN
        CREATE TEXT SEARCH DICTIONARY bm25f_english_nostop (TEMPLATE = snowball, Language = english);
        CREATE TEXT SEARCH CONFIGURATION bm25f_english_nostop (COPY = english);
        ALTER TEXT SEARCH CONFIGURATION bm25f_english_nostop
            ALTER MAPPING REPLACE english_stem WITH bm25f_english_nostop;
        CREATE TEXT SEARCH CONFIGURATION bm25f_english_unaccent (COPY = english);
        ALTER TEXT SEARCH CONFIGURATION bm25f_english_unaccent
            ALTER MAPPING FOR hword, hword_part, word WITH unaccent, english_stem;
    END IF;
END $$;
"""


@dataclass
class Analysed:
    """One corpus under one analyser: rows are chunks (ascending id), columns the vocabulary."""

    ids: np.ndarray  # chunk ids, ascending
    source: list[str]  # each chunk's corpus id
    vocab: list[str]
    tf: dict[str, sparse.csr_matrix]  # field -> term frequencies
    queries: dict[str, list[int]] = field(default_factory=dict)  # qid -> distinct term columns

    def df(self, fld: str) -> np.ndarray:
        return np.diff(sparse.csc_matrix(self.tf[fld]).indptr)  # stored entries are tf > 0

    def lengths(self, fld: str) -> np.ndarray:
        return np.asarray(self.tf[fld].sum(axis=1)).ravel().astype(np.float64)


def copy_database(cache: Path, work: Path) -> Path:
    """A copy of the fusion bench's data directory (which must not be running) under `work`."""
    src = cache / "data"
    dst = work / "data"
    if (dst / "pgdata").exists():
        return dst
    info = read_postmaster(src / "pgdata")
    if info is not None:
        raise SystemExit(f"the database in {src} is running (pid {info.pid}): wait for the fusion bench to end")
    work.mkdir(parents=True, exist_ok=True)
    # cp -a keeps the owner: the server runs as the package's system user, not as whoever runs the bench
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)
    return dst


def load(cache: Path, work: Path, datasets: dict[str, BeirDataset]) -> dict[str, dict[str, Analysed]]:
    """{corpus: {analyser: Analysed}}, from the pickle under `work` when it is there."""
    out: dict[str, dict[str, Analysed]] = {}
    missing = [(n, a) for n in datasets for a in ANALYZERS if not _pickle(work, n, a).exists()]
    if missing:
        pg = start_embedded(copy_database(cache, work))
        try:
            with psycopg.Connection[DictRow].connect(pg.uri, autocommit=True, row_factory=dict_row) as conn:
                conn.execute(_SETUP)
                for name, analyser in missing:
                    start = time.perf_counter()
                    data = _analyse(conn, datasets[name], analyser)
                    _pickle(work, name, analyser).write_bytes(pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))
                    took = time.perf_counter() - start
                    print(f"{name} / {analyser}: {len(data.ids)} chunks analysed in {took:.0f} s", file=sys.stderr)
        finally:
            pg.stop()
    for name in datasets:
        out[name] = {a: pickle.loads(_pickle(work, name, a).read_bytes()) for a in ANALYZERS}
    return out


def _pickle(work: Path, name: str, analyser: str) -> Path:
    return work / f"analysed-{name}-{analyser}.pickle"


def _analyse(conn: psycopg.Connection[DictRow], dataset: BeirDataset, analyser: str) -> Analysed:
    owner = eval_owner(dataset)
    rows = conn.execute(
        "SELECT c.id, d.metadata->>'source_id' AS source FROM document_chunks c "
        "JOIN documents d ON d.id = c.document_id WHERE c.owner_id = %s ORDER BY c.id",
        (owner,),
    ).fetchall()
    ids = np.array([int(r["id"]) for r in rows], dtype=np.int64)
    row_of = {int(r["id"]): i for i, r in enumerate(rows)}
    vocab: dict[str, int] = {}
    triples: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for fld, expr in FIELDS.items():
        r_idx: list[int] = []
        c_idx: list[int] = []
        vals: list[int] = []
        cur = conn.cursor(row_factory=tuple_row)
        # `expr` is one of the constant FIELDS fragments, never user text
        sql = (
            "SELECT c.id, v.lexeme, coalesce(array_length(v.positions, 1), 1) FROM document_chunks c "
            f"CROSS JOIN LATERAL unnest(to_tsvector(%s::regconfig, {expr})) v WHERE c.owner_id = %s"
        )
        cur.execute(
            cast(LiteralString, sql),
            (analyser, owner),
        )
        for chunk, lexeme, n in cur:
            r_idx.append(row_of[chunk])
            c_idx.append(vocab.setdefault(lexeme, len(vocab)))
            vals.append(n)
        triples[fld] = (np.array(r_idx, np.int64), np.array(c_idx, np.int64), np.array(vals, np.float64))
    qids = list(dataset.queries)
    qrows = conn.execute(
        "SELECT DISTINCT q.ord, v.lexeme FROM unnest(%s::text[]) WITH ORDINALITY AS q(text, ord) "
        "CROSS JOIN LATERAL unnest(to_tsvector(%s::regconfig, q.text)) v",
        ([dataset.queries[q] for q in qids], analyser),
    ).fetchall()
    queries: dict[str, list[int]] = {q: [] for q in qids}
    for r in qrows:
        if r["lexeme"] in vocab:  # a lexeme in no chunk matches nothing (production drops it too: df 0)
            queries[qids[int(r["ord"]) - 1]].append(vocab[r["lexeme"]])
    shape = (len(ids), len(vocab))
    tf = {f: sparse.csr_matrix((v, (r, c)), shape=shape) for f, (r, c, v) in triples.items()}
    source = [str(r["source"]) for r in rows]
    words = [""] * len(vocab)
    for w, i in vocab.items():
        words[i] = w
    return Analysed(ids=ids, source=source, vocab=words, tf=tf, queries=queries)
