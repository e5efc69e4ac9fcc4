"""Search that speaks more than English (issue 42): each document's language detected at ingest, its chunks
analysed with the matching Postgres text-search configuration, queries analysed with every configuration in the
reader's scope, BM25 statistics right across configurations, the configuration in the document's details, and
an existing data directory upgraded without rewriting its English chunks."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

from ragchat.db.migrate import migrate, migration_files
from ragchat.documents.ingest.language import SIMPLE, LanguageDetection
from ragchat.documents.ingest.registration import register_bytes
from ragchat.readscope.sql import ReadScope
from ragchat.retrieval.exhaustive import find_documents
from ragchat.retrieval.fusion import vector_weight
from ragchat.retrieval.keyword import analyse_query, keyword_search
from ragchat.settings import Settings
from tests.support.services import LOCAL_OWNER_ID, make_pipeline

GERMAN = (
    "Die Häuser der Altstadt wurden im Mittelalter aus Holz gebaut. Nach dem großen Brand bauten die Bürger "
    "ihre Wohnungen aus Stein, und die Stadtmauer schützte die Kaufleute vor den Räubern des Waldes."
)
SPANISH = (
    "Los pescadores comieron pan y queso en el puerto antes de salir al mar. Las barcas volvieron por la "
    "tarde cargadas de sardinas, y las mujeres vendieron el pescado en el mercado de la plaza."
)
ENGLISH = (
    "The lighthouse keeper climbed the stairs every evening to light the lamp. Ships passing the rocky "
    "coast were warned by its beam, and the keeper wrote each passing vessel into his logbook."
)
SCOPE = ReadScope(LOCAL_OWNER_ID)


async def ingest(pool: Any, embedder: Any, settings: Settings, docs: dict[str, str]) -> dict[str, uuid.UUID]:
    ids = {}
    for name, text in docs.items():
        [registered] = await register_bytes(pool, LOCAL_OWNER_ID, name, text.encode(), settings.ingestion)
        assert registered.document_id is not None, registered
        ids[name] = registered.document_id
    await make_pipeline(pool, embedder, settings).run()
    return ids


async def configs_of(pool: Any, ids: dict[str, uuid.UUID]) -> dict[str, tuple[Any, str, set[str]]]:
    """{name: (language, document configuration, the configurations of its chunks)}."""
    out = {}
    async with pool.connection() as conn:
        for name, doc in ids.items():
            row = await (
                await conn.execute(
                    """SELECT d.language, d.text_search_config::text AS cfg,
                              ARRAY(SELECT DISTINCT c.text_search_config::text FROM document_chunks c
                                    WHERE c.document_id = d.id) AS chunk_cfgs
                       FROM documents d WHERE d.id = %s""",
                    (doc,),
                )
            ).fetchone()
            assert row is not None
            out[name] = (row["language"], row["cfg"], set(row["chunk_cfgs"]))
    return out


async def top_document(pool: Any, query: str) -> uuid.UUID | None:
    async with pool.connection() as conn:
        hits = await keyword_search(conn, query, scope=SCOPE, n=5)
        if not hits:
            return None
        row = await (
            await conn.execute("SELECT document_id FROM document_chunks WHERE id = %s", (hits[0][0],))
        ).fetchone()
    return row["document_id"] if row else None


async def test_each_language_is_detected_and_stemmed_with_its_own_configuration(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    ids = await ingest(pool, embedder, settings, {"de.txt": GERMAN, "es.txt": SPANISH, "en.txt": ENGLISH})
    assert await configs_of(pool, ids) == {
        "de.txt": ("de", "german", {"german"}),
        "es.txt": ("es", "spanish", {"spanish"}),
        "en.txt": ("en", "english", {"english"}),
    }
    # inflections only the language's own stemmer joins: Häuser ~ Haus, comieron ~ comer, Räubern ~ Räuber
    assert await top_document(pool, "Haus") == ids["de.txt"]
    assert await top_document(pool, "Räuber im Wald") == ids["de.txt"]
    assert await top_document(pool, "comer") == ids["es.txt"]
    assert await top_document(pool, "lighthouses") == ids["en.txt"]
    # the query was analysed with every configuration in scope, and no other
    async with pool.connection() as conn:
        analysis = await analyse_query(conn, "Haus", SCOPE)
    assert analysis.configs == ("english", "german", "spanish")


async def test_an_english_only_scope_analyses_the_query_once_as_before(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    await ingest(pool, embedder, settings, {"en.txt": ENGLISH})
    async with pool.connection() as conn:
        analysis = await analyse_query(conn, "Die Leuchttürme der Küste", SCOPE)  # a query in another language
        assert analysis.configs == ("english",)
        assert analysis.terms == []  # no German lexeme is in the English documents: nothing, and no error
        english = await analyse_query(conn, "lighthouse keepers", SCOPE)
    assert {t.term for t in english.terms} == {"lighthous", "keeper"}


async def test_a_query_in_another_language_than_the_documents(pool: Any, embedder: Any, settings: Settings) -> None:
    ids = await ingest(pool, embedder, settings, {"de.txt": GERMAN})
    async with pool.connection() as conn:
        assert (await analyse_query(conn, "x", SCOPE)).configs == ("german",)
    # English words that are spelled the same in the German text still match (Holz is not; Mittelalter is)
    assert await top_document(pool, "What happened in the Mittelalter?") == ids["de.txt"]
    assert await top_document(pool, "lighthouse keeper") is None  # no German lexeme: the keyword arm is empty


async def test_a_document_in_two_languages_gets_its_main_language_and_both_halves_match(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    mixed = f"{GERMAN} {GERMAN.replace('Holz', 'Eichenholz')}\n\n{ENGLISH}"
    ids = await ingest(pool, embedder, settings, {"mixed.txt": mixed})
    language, cfg, chunk_cfgs = (await configs_of(pool, ids))["mixed.txt"]
    assert (language, cfg, chunk_cfgs) == ("de", "german", {"german"})
    assert await top_document(pool, "Häuser") == ids["mixed.txt"]
    # the English half is analysed as German, and so is the query: the same words match
    assert await top_document(pool, "logbook vessel") == ids["mixed.txt"]


async def test_a_language_the_detector_cannot_name_and_a_one_word_document_are_simple(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    docs = {
        "codes.txt": "4711 0815 XK-22 9001 3.14159 2718 1618 ZZ-9 42 1024 2048 4096",
        "word.txt": "Photosynthesis",
        "japanese.txt": "東京は日本の首都であり、世界で最も人口の多い都市圏の一つです。多くの人が電車で通勤します。",
    }
    ids = await ingest(pool, embedder, settings, docs)
    found = await configs_of(pool, ids)
    assert {name: found[name][:2] for name in docs} == {n: (None, SIMPLE) for n in docs}
    assert await top_document(pool, "photosynthesis") == ids["word.txt"]  # simple: the word as written
    assert await top_document(pool, "XK-22") == ids["codes.txt"]


async def test_bm25_statistics_are_right_across_configurations(pool: Any, embedder: Any, settings: Settings) -> None:
    await ingest(pool, embedder, settings, {"de.txt": GERMAN, "es.txt": SPANISH, "en.txt": ENGLISH, "w.txt": "Haus"})
    query = "Häuser comieron keeper Haus"
    async with pool.connection() as conn:
        analysis = await analyse_query(conn, query, SCOPE)
        truth = await (
            await conn.execute(
                """SELECT count(*) AS n, sum(doc_len) AS len,
                          sum(cardinality(tsvector_to_array(search_vector))) AS distinct_terms,
                          bool_and(search_vector = to_tsvector(text_search_config, title || ' ' || content)
                                   AND doc_len = ragchat_token_count(search_vector)) AS analysed_as_stored
                   FROM document_chunks WHERE owner_id = %s""",
                (LOCAL_OWNER_ID,),
            )
        ).fetchone()
        dfs = await (
            await conn.execute(
                """SELECT t.lexeme, count(*) AS df FROM document_chunks c CROSS JOIN LATERAL unnest(c.search_vector) t
                   WHERE c.owner_id = %s GROUP BY 1""",
                (LOCAL_OWNER_ID,),
            )
        ).fetchall()
    assert truth is not None and truth["analysed_as_stored"]
    assert analysis.n_chunks == truth["n"]
    assert abs(analysis.avgdl - truth["len"] / truth["n"]) < 1e-9
    recount = {r["lexeme"]: r["df"] for r in dfs}
    assert {t.term: t.df for t in analysis.terms} == {t.term: recount[t.term] for t in analysis.terms}
    # 'haus' is the German lexeme of both Häuser (german) and the one-word document (simple): one df of 2
    assert {t.term: t.df for t in analysis.terms}["haus"] == 2
    assert {"haus", "com", "keeper"} <= {t.term for t in analysis.terms}


async def test_exhaustive_search_matches_in_every_language_in_scope(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    from ragchat.core.matches import MatchRequest

    ids = await ingest(pool, embedder, settings, {"de.txt": GERMAN, "en.txt": ENGLISH})
    for match in ("all", "any"):
        found = await find_documents(pool, SCOPE, MatchRequest(query="Häuser", match=match), settings.retrieval)
        assert [d.document_id for d in found.documents] == [ids["de.txt"]], match
    found = await find_documents(pool, SCOPE, MatchRequest(query="keepers", match="all"), settings.retrieval)
    assert [d.document_id for d in found.documents] == [ids["en.txt"]]


async def test_a_fixed_configuration_setting_skips_detection(pool: Any, embedder: Any, settings: Settings) -> None:
    fixed = settings.model_copy(update={"text_search_config": "english"})
    ids = await ingest(pool, embedder, fixed, {"de.txt": GERMAN})
    assert (await configs_of(pool, ids))["de.txt"] == (None, "english", {"english"})
    assert LanguageDetection({"english", "simple"}, fixed="klingon").fixed == SIMPLE  # not on this server


def test_documents_in_languages_the_model_does_not_cover_weight_the_keyword_arm(settings: Settings) -> None:
    s = settings.retrieval.model_copy(update={"fusion_vector_weight_other_languages": 0.3})
    assert vector_weight(s, ["english"]) == s.fusion_vector_weight
    assert vector_weight(s, ["english", "german"]) == s.fusion_vector_weight  # the model covers some of it
    assert vector_weight(s, ["german", "spanish"]) == 0.3
    assert vector_weight(s, ["german", "simple"]) == 0.3
    assert vector_weight(s, ["simple"]) == s.fusion_vector_weight  # unknown language decides nothing
    multilingual = s.model_copy(update={"embed_languages": "*"})
    assert vector_weight(multilingual, ["german"]) == s.fusion_vector_weight


async def test_the_configuration_is_in_the_document_details(
    pool: Any, embedder: Any, settings: Settings, live_app: Any
) -> None:
    ids = await ingest(pool, embedder, settings, {"es.txt": SPANISH, "en.txt": ENGLISH})
    server = live_app()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        es = (await client.get(f"/api/documents/{ids['es.txt']}")).json()
        en = (await client.get(f"/api/documents/{ids['en.txt']}")).json()
        listed = (await client.get("/api/documents")).json()["documents"]
    assert (es["language"], es["text_search_config"]) == ("es", "spanish")
    assert (en["language"], en["text_search_config"]) == ("en", "english")
    assert {d["text_search_config"] for d in listed} == {"spanish", "english"}


def test_an_existing_database_upgrades_without_rewriting_english_chunks(pg_uri: str, tmp_path: Path) -> None:
    """Migrate to 0028, store English chunks, then apply 0029: the table is not rewritten (same file, same row
    versions), every chunk keeps its tsvector as 'english', and new chunks are analysed by their own config."""
    before = tmp_path / "migrations"
    before.mkdir()
    for path in migration_files():
        if path.name[:4] <= "0028":
            shutil.copy(path, before / path.name)
    with psycopg.connect(pg_uri, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS upgrade_languages WITH (FORCE)")
        conn.execute("CREATE DATABASE upgrade_languages")
    uri = make_conninfo(pg_uri, dbname="upgrade_languages")
    owner = uuid.uuid4()
    try:
        with psycopg.connect(uri, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        migrate(uri, before)
        with psycopg.connect(uri, row_factory=dict_row) as conn:
            conn.execute("INSERT INTO users (id, name) VALUES (%s, 'old')", (owner,))
            doc = conn.execute(
                """INSERT INTO documents (owner_id, filename, title, content_type, byte_size, sha256, status)
                   VALUES (%s, 'old.txt', 'Old', 'text/plain', 1, 'x', 'ready') RETURNING id""",
                (owner,),
            ).fetchone()
            assert doc is not None
            conn.execute(
                """INSERT INTO document_chunks (document_id, owner_id, chunk_index, title, content, token_count,
                                                content_hash)
                   SELECT %s, %s, i, 'Old', %s || ' ' || i, 1, 'h' || i FROM generate_series(0, 49) i""",
                (doc["id"], owner, ENGLISH),
            )
            conn.commit()
            snapshot = (
                "SELECT id, ctid::text AS ctid, search_vector::text AS sv, doc_len FROM document_chunks ORDER BY id"
            )
            old_rows = conn.execute(snapshot).fetchall()
            old_file = conn.execute("SELECT pg_relation_filenode('document_chunks') AS f").fetchone()
        assert migrate(uri)[:1] == ["0029_text_search_languages.sql"]  # and the ones after it
        with psycopg.connect(uri, row_factory=dict_row) as conn:
            assert conn.execute(snapshot).fetchall() == old_rows  # no row rewritten, same tsvectors
            assert conn.execute("SELECT pg_relation_filenode('document_chunks') AS f").fetchone() == old_file
            cfgs = conn.execute(
                "SELECT DISTINCT text_search_config::text AS c FROM document_chunks UNION ALL "
                "SELECT text_search_config::text FROM documents"
            ).fetchall()
            assert {r["c"] for r in cfgs} == {"english"}
            owned = conn.execute("SELECT owner_id, config::text AS c FROM bm25_owner_configs").fetchall()
            assert [(r["owner_id"], r["c"]) for r in owned] == [(owner, "english")]
            # a new chunk is analysed with its own configuration, and the statistics count it
            conn.execute(
                """INSERT INTO document_chunks (document_id, owner_id, chunk_index, title, content, token_count,
                                                content_hash, text_search_config)
                   VALUES (%s, %s, 99, '', 'Die Häuser', 1, 'g', 'german')""",
                (doc["id"], owner),
            )
            row = conn.execute(
                "SELECT search_vector::text AS sv, doc_len FROM document_chunks WHERE chunk_index = 99"
            ).fetchone()
            assert row == {"sv": "'haus':2", "doc_len": 1}
            df = conn.execute("SELECT sum(df) AS df FROM bm25_group_terms WHERE term = 'haus'").fetchone()
            assert df == {"df": 1}
            owned = conn.execute("SELECT config::text AS c FROM bm25_owner_configs ORDER BY 1").fetchall()
            assert [r["c"] for r in owned] == ["english", "german"]
    finally:
        with psycopg.connect(pg_uri, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS upgrade_languages WITH (FORCE)")
