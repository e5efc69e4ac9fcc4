"""The "not in your documents" flag in languages the embedding model does not cover (issue 42): the bundled
English model puts any Spanish or German text 0.4-0.6 from any question in that language, above CONFIDENCE_FLOOR, so a
question the documents never mention looked answerable. In a scope whose documents are all in such languages, a
search whose keyword hits hold less than CONFIDENCE_KEYWORD_FLOOR of the question's term weight is insufficient
too. Real Postgres, the real embedding model, the product's Searcher."""

from __future__ import annotations

from typing import Any

from ragchat.core.options import options_of
from ragchat.core.search import SearchResult
from ragchat.readscope.sql import ReadScope
from ragchat.retrieval.keyword import keyword_arm
from ragchat.settings import Settings
from tests.support.services import LOCAL, LOCAL_OWNER_ID, ingest_texts, make_searcher

SPANISH = {
    "puerto.txt": (
        "Los pescadores comieron pan y queso en el puerto antes de salir al mar. Las barcas volvieron por la tarde "
        "cargadas de sardinas, y las mujeres vendieron el pescado en el mercado de la plaza."
    ),
    "catedral.txt": (
        "La catedral de la ciudad fue construida en el siglo trece por orden del obispo. Sus torres de piedra "
        "dominan el valle y sus campanas suenan cada domingo desde hace siete siglos."
    ),
}
ENGLISH = {
    "lighthouse.txt": (
        "The lighthouse keeper climbed the stairs every evening to light the lamp. Ships passing the rocky coast "
        "were warned by its beam, and the keeper wrote each passing vessel into his logbook."
    ),
}
ANSWERABLE = "¿Qué vendieron las mujeres en el mercado de la plaza?"
NOT_COVERED = "¿Cuántos satélites tiene el planeta Júpiter según los astrónomos?"


async def search(pool: Any, embedder: Any, settings: Settings, query: str, **update: Any) -> SearchResult:
    s = settings.model_copy(update=update) if update else settings
    searcher = make_searcher(pool, embedder, s)
    return await searcher.search(query, principal=LOCAL, options=options_of(s.retrieval, mode="hybrid", limit=5))


async def test_a_question_the_spanish_documents_never_mention_is_insufficient(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    await ingest_texts(pool, embedder, settings, SPANISH)
    before = await search(pool, embedder, settings, NOT_COVERED, confidence_keyword_floor=0.0)
    # the defect: the English model's similarity alone calls it answerable
    assert before.confidence.best_similarity is not None
    assert before.confidence.best_similarity >= settings.retrieval.confidence_floor
    assert not before.confidence.insufficient

    now = await search(pool, embedder, settings, NOT_COVERED)
    assert now.confidence.insufficient and now.confidence.insufficient_confidence
    assert now.confidence.label == "insufficient"
    assert now.confidence.best_similarity == before.confidence.best_similarity  # the similarity is still told
    assert now.confidence.percent < before.confidence.percent  # the shown share is the words found
    assert [c.id for c in now.chunks] == [c.id for c in before.chunks]  # the passages are the same

    answered = await search(pool, embedder, settings, ANSWERABLE)
    assert not answered.confidence.insufficient
    assert answered.chunks[0].filename == "puerto.txt"


async def test_the_keyword_coverage_of_a_question(pool: Any, embedder: Any, settings: Settings) -> None:
    await ingest_texts(pool, embedder, settings, SPANISH)
    scope = ReadScope(LOCAL_OWNER_ID)
    async with pool.connection() as conn:
        answered = await keyword_arm(conn, ANSWERABLE, scope=scope, n=10)
        unknown = await keyword_arm(conn, "Júpiter astrónomos satélites", scope=scope, n=10)
        stopwords = await keyword_arm(conn, "¿y de la el en?", scope=scope, n=10)
        ts_rank = await keyword_arm(conn, ANSWERABLE, scope=scope, n=10, scorer="ts_rank")
    assert answered.configs == ("spanish",)
    assert answered.coverage is not None and answered.coverage >= 0.8  # mujeres, vend, mercado, plaza: all there
    assert unknown.hits == [] and unknown.coverage == 0.0  # words found nowhere: nothing covered
    assert stopwords.coverage is None  # nothing to weigh: the similarity decides
    assert ts_rank.coverage is None


async def test_scopes_the_model_covers_are_judged_by_similarity_alone(
    pool: Any, embedder: Any, settings: Settings
) -> None:
    await ingest_texts(pool, embedder, settings, ENGLISH)
    query = "How many moons does the planet Jupiter have?"
    strict = await search(pool, embedder, settings, query, confidence_keyword_floor=1.0)
    off = await search(pool, embedder, settings, query, confidence_keyword_floor=0.0)
    assert strict.confidence == off.confidence

    await ingest_texts(pool, embedder, settings, SPANISH)  # English and Spanish: the model covers part of it
    mixed_strict = await search(pool, embedder, settings, NOT_COVERED, confidence_keyword_floor=1.0)
    mixed_off = await search(pool, embedder, settings, NOT_COVERED, confidence_keyword_floor=0.0)
    assert mixed_strict.confidence == mixed_off.confidence


async def test_a_multilingual_embedding_model_turns_it_off(pool: Any, embedder: Any, settings: Settings) -> None:
    await ingest_texts(pool, embedder, settings, SPANISH)
    result = await search(pool, embedder, settings, NOT_COVERED, embed_languages="*")
    off = await search(pool, embedder, settings, NOT_COVERED, confidence_keyword_floor=0.0)
    assert result.confidence == off.confidence
