"""Where a passage came from, end to end (issue 17 item 5): real files uploaded through the real HTTP server,
ingested by its worker with the real embedding model, searched back with their `location` and its label; a
location filter narrows both search arms; citations carry the label; a hostile twin fails with its reason."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragchat.chat.engine.prompts import format_passages
from ragchat.core.options import options_of
from ragchat.core.search import SearchFilters
from ragchat.mcp.models import SearchOutput, search_text
from ragchat.settings import Settings
from tests.integration.test_http_api import wait_ready
from tests.support.hostile_files import parts_of, write_zip_bomb
from tests.support.services import LOCAL, make_searcher
from tests.unit.test_formats import FILM_SRT, TALK_VTT, make_epub, make_pptx, make_xlsx

RATES_CSV = "City,Per diem,Hotel cap\n" + "\n".join(f"Town {i},EUR {100 + i},EUR {200 + i}" for i in range(1, 61))


def rates_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("Travel policy: daily allowances by city.")
    table = document.add_table(rows=2, cols=2)
    for (r, c), text in {
        (0, 0): "Per diem Berlin",
        (0, 1): "EUR 150",
        (1, 0): "Per diem Paris",
        (1, 1): "EUR 170",
    }.items():
        table.cell(r, c).text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


FILES = {
    "talk.vtt": TALK_VTT.encode(),
    "film.srt": FILM_SRT.encode(),
    "rates.csv": RATES_CSV.encode(),
    "sales.xlsx": make_xlsx(),
    "deck.pptx": make_pptx(),
    "journey.epub": make_epub(),
    "policy.docx": rates_docx(),
}


async def search(client: httpx.AsyncClient, q: str, **params: Any) -> dict[str, Any]:
    response = await client.get("/api/search", params={"q": q, "limit": 10, **params})
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
async def uploaded(live_app: Any) -> Any:
    server = live_app(ingest_workers=1)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        files = [("files", (name, io.BytesIO(data), "application/octet-stream")) for name, data in FILES.items()]
        response = await client.post("/api/documents", files=files)
        assert response.status_code == 201, response.text
        ids = {r["document"]["filename"]: r["document"]["id"] for r in response.json()["results"]}
        for name, doc_id in ids.items():
            doc = await wait_ready(client, doc_id, within_s=120)
            assert doc["status"] == "ready", (name, doc.get("error"))
    return server, ids


async def test_search_returns_locations_with_labels(uploaded: Any) -> None:
    server, _ids = uploaded
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        talk = await search(client, "Alice budget per diem travel", document_ids=_ids["talk.vtt"])
        [hit] = talk["chunks"]
        assert hit["location"]["start_s"] == 751.0 and hit["location"]["end_s"] == 778.25
        assert hit["location"]["label"] == "00:12:31–00:12:58"
        assert hit["content"].startswith("Alice: We should budget EUR 150 per diem")

        deck = await search(client, "Rates per diem table", document_ids=_ids["deck.pptx"])
        labels = {c["location"]["label"] for c in deck["chunks"]}
        assert labels == {"Slide 1", "Slide 2"}
        slide2 = next(c for c in deck["chunks"] if c["location"]["slide"] == 2)
        assert "Per diem Berlin | EUR 150" in slide2["content"] and slide2["section"] == "Rates"

        sheet = await search(client, "Town 42 per diem", document_ids=_ids["rates.csv"], mode="keyword")
        best = sheet["chunks"][0]
        assert best["location"]["sheet"] == "rates"
        assert best["location"]["row_start"] <= 43 <= best["location"]["row_end"]
        assert best["content"].startswith("City | Per diem | Hotel cap")
        assert best["location"]["label"].startswith("Sheet rates, rows ")

        book = await search(client, "Paris smelled of bread", document_ids=_ids["journey.epub"])
        assert book["chunks"][0]["location"] == {**book["chunks"][0]["location"], "chapter": "Arrival"}
        assert book["chunks"][0]["location"]["label"] == "Chapter: Arrival"

        docx = await search(client, "per diem Berlin", document_ids=_ids["policy.docx"], mode="keyword")
        assert "Per diem Berlin | EUR 150" in docx["chunks"][0]["content"]
        assert docx["chunks"][0]["location"] is None and docx["chunks"][0]["url"] is None


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
async def test_location_filter_narrows_results(uploaded: Any, mode: str) -> None:
    server, ids = uploaded
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        everything = await search(client, "per diem", mode=mode)
        assert len({c["document_id"] for c in everything["chunks"]}) > 2

        q2 = await search(client, "per diem", mode=mode, location="sheet=Q2")
        assert q2["chunks"] and {c["location"]["sheet"] for c in q2["chunks"]} == {"Q2"}

        slide = await search(client, "per diem", mode=mode, location=["slide=2"])
        assert [(c["document_id"], c["location"]["slide"]) for c in slide["chunks"]] == [(ids["deck.pptx"], 2)]

        row = await search(client, "Town", mode=mode, location=["sheet=rates", "row=43"])
        assert row["chunks"] and all(
            c["location"]["row_start"] <= 43 <= c["location"]["row_end"] for c in row["chunks"]
        )

        at = await search(client, "budget", mode=mode, location="t=760")
        assert [c["document_id"] for c in at["chunks"]] == [ids["talk.vtt"]]

        chapter = await search(client, "bread", mode=mode, location="chapter=arrival")
        assert {c["location"]["chapter"] for c in chapter["chunks"]} == {"Arrival"}

        bad = await client.get("/api/search", params={"q": "x", "location": "page=3"})
        assert bad.status_code == 400 and "unknown location filter 'page'" in bad.text


async def test_citations_carry_the_label_and_the_source_url(
    uploaded: Any, pool: Any, embedder: Any, settings: Settings
) -> None:
    _server, ids = uploaded
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE documents SET metadata = metadata || %s::jsonb WHERE id = %s",
            ('{"source_url": "https://example.org/talk"}', ids["talk.vtt"]),
        )
    searcher = make_searcher(pool, embedder, settings)
    result = await searcher.search(
        "budget per diem",
        principal=LOCAL,
        options=options_of(searcher.settings, filters=SearchFilters(location={"t": "760"}), limit=3),
    )
    [hit] = result.chunks
    assert hit.url == "https://example.org/talk" and hit.public().url == "https://example.org/talk"
    assert "talk.vtt, at 00:12:31–00:12:58" in format_passages([hit], 1)
    assert "talk.vtt, at 00:12:31–00:12:58 · score" in search_text(SearchOutput.of(result))


async def test_hostile_twin_fails_with_its_reason(live_app: Any, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.xlsx"
    write_zip_bomb(bomb, parts_of(make_xlsx()), "xl/worksheets/sheet1.xml", 300 * 1024 * 1024)
    server = live_app(ingest_workers=1)
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        files = [
            ("files", ("bomb.xlsx", bomb.read_bytes(), "application/octet-stream")),
            ("files", ("slides.epub", make_pptx(), "application/octet-stream")),
        ]
        results = (await client.post("/api/documents", files=files)).json()["results"]
        bombed = await wait_ready(client, results[0]["document"]["id"])
        mislabelled = await wait_ready(client, results[1]["document"]["id"])
    assert bombed["status"] == "failed" and "MAX_ZIP_MEMBER_MB" in bombed["error"]
    assert mislabelled["status"] == "failed" and "looks like a PowerPoint presentation" in mislabelled["error"]
