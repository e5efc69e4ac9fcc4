"""Chunking strategies on real text: a receipt, a spreadsheet (csv and xlsx through the parsers) and a
contract with numbered clauses under headings; auto's routing; the guarantees every strategy keeps."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from ragchat.documents.chunking.line import line_chunks
from ragchat.documents.chunking.semantic import gap_similarities, semantic_chunks
from ragchat.documents.chunking.sentences import Chunk
from ragchat.documents.chunking.strategy import Strategy, blocking_embed, chunk_document, route
from ragchat.documents.parsing.parsers import Section, parse

RECEIPT = """FRESHMART SUPERMARKET
12 Harbour Road, Leith
Tel 0131 555 0199

Milk semi-skimmed 2L        1.65
Sourdough loaf              3.20
Free range eggs x12         3.85
Bananas 1.1kg @ 0.77/kg     0.85
Cheddar mature 400g         4.10
Coffee beans 1kg           12.99
Olive oil extra virgin 1L   8.49

SUBTOTAL                   35.13
VAT included                2.41
TOTAL                      35.13

VISA CONTACTLESS ****1234  35.13
Thank you for shopping with us!
"""

CLAUSES = {
    "1. Definitions": [
        "In this Agreement the Supplier means Northwind Components Ltd and the Customer means Harbour Robotics plc.",
        "Goods means the servo motors and controller boards listed in Schedule 1.",
        "Business Day means a day other than a Saturday, Sunday or public holiday in Scotland.",
    ],
    "2. Delivery": [
        "2.1 The Supplier shall deliver the Goods to the Customer's warehouse in Glasgow.",
        "2.2 Delivery shall take place within fourteen Business Days of the order date.",
        "2.3 Risk in the Goods passes to the Customer on completion of delivery.",
        "2.4 Each delivery shall be accompanied by a delivery note stating the order number.",
    ],
    "3. Price and payment": [
        "3.1 The price of the Goods is set out in Schedule 2 and excludes VAT.",
        "3.2 The Supplier shall invoice the Customer on or at any time after delivery.",
        "3.3 The Customer shall pay each invoice within thirty days of the date of the invoice.",
        "3.4 Late payments bear interest at four per cent a year above the Bank of England base rate.",
    ],
    "4. Warranty": [
        "4.1 The Supplier warrants that the Goods shall be free from material defects for twelve months.",
        "4.2 The warranty does not apply to defects caused by fair wear and tear or wilful damage.",
        "4.3 The Customer shall notify the Supplier of any defect in writing within ten Business Days.",
    ],
    "5. Termination": [
        "5.1 Either party may terminate this Agreement by giving ninety days' written notice.",
        "5.2 Either party may terminate at once if the other commits a material breach and fails to remedy it.",
        "5.3 Termination does not affect rights that have accrued before the date of termination.",
    ],
    "6. Governing law": [
        "6.1 This Agreement is governed by the law of Scotland.",
        "6.2 The courts of Scotland have exclusive jurisdiction over any dispute arising from it.",
    ],
}


def contract_markdown(repeat: int = 1) -> bytes:
    parts = ["# Supply Agreement\n"]
    for r in range(repeat):
        for heading, clauses in CLAUSES.items():
            parts.append(f"## {heading}{f' (part {r + 1})' if repeat > 1 else ''}\n")
            parts.append("\n\n".join(clauses) + "\n")
    return "\n".join(parts).encode()


def make_csv() -> bytes:
    rows = ["date,description,category,amount"]
    rows += [f"2026-01-{d:02d},Invoice {1000 + d} Harbour Robotics,consulting,{d * 37.5:.2f}" for d in range(1, 29)]
    return ("\n".join(rows) + "\n").encode()


def make_xlsx() -> bytes:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "Inventory"
    ws.append(["sku", "item", "stock", "unit price"])
    for i in range(40):
        ws.append([f"SKU-{i:04d}", f"Servo motor type {i}", i * 3, 19.5 + i])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def words(text: str) -> list[str]:
    return re.sub(r"\s+", " ", text).split()


def check_guarantees(sections: list[Section], chunks: list[Chunk], count: Any, max_tokens: int, max_chars: int) -> None:
    """Every strategy: within both caps (tokens counted again), nothing dropped or reordered (overlap aside),
    never across a section, and each chunk keeps its section's page, heading and location."""
    assert chunks
    for chunk in chunks:
        assert chunk.token_count <= max_tokens
        assert count([chunk.content])[0] == chunk.token_count
        assert len(chunk.content) <= max_chars
    cursor = 0
    for section in sections:
        if not section.text.strip():
            continue
        mine = []
        while cursor < len(chunks) and (chunks[cursor].section, chunks[cursor].location) == (
            section.heading,
            section.location,
        ):
            mine.append(chunks[cursor])
            cursor += 1
        assert mine, f"no chunk for section {section.heading!r}"
        assert all(c.page == section.page for c in mine)
        assert words(" ".join(c.content for c in mine)) == words(section.text)  # no overlap in line / semantic
        for chunk in mine:
            assert words(chunk.content) == words(chunk.content)  # and no chunk crosses: its words are all here
    assert cursor == len(chunks)


@pytest.fixture(scope="module")
def embed(embedder: Any) -> Any:
    fn = blocking_embed(embedder, None)
    assert fn is not None
    return fn


# ------------------------------------------------------------------------------------------------- line


def test_receipt_lines_are_kept_whole_and_blocks_together(embedder: Any) -> None:
    sections = parse(RECEIPT.encode(), "receipt.txt").sections
    chunks = line_chunks(sections, embedder.count_tokens, max_tokens=40)
    check_guarantees(sections, chunks, embedder.count_tokens, 40, 2000)
    lines = [line.strip() for line in RECEIPT.splitlines() if line.strip()]
    for chunk in chunks:  # every chunk is whole lines
        for line in chunk.content.split("\n"):
            assert not line or re.sub(r"\s+", " ", line) in {re.sub(r"\s+", " ", x) for x in lines}
    # the totals block (SUBTOTAL, VAT, TOTAL) fits in 40 tokens: it is never split across chunks
    holder = [c for c in chunks if "SUBTOTAL" in c.content]
    assert len(holder) == 1 and "VAT included" in holder[0].content and "TOTAL 35.13" in holder[0].content
    # the item block (65 tokens) fits in 70 but not after the header (15): it starts a chunk of its own
    wider = line_chunks(sections, embedder.count_tokens, max_tokens=70)
    assert [c.content.split("\n")[0] for c in wider] == [
        "FRESHMART SUPERMARKET",
        "Milk semi-skimmed 2L 1.65",
        "SUBTOTAL 35.13",
    ]
    assert wider[1].content.endswith("Olive oil extra virgin 1L 8.49")


def test_line_cuts_an_over_long_line_but_keeps_every_word(embedder: Any) -> None:
    long_line = " ".join(f"item{i} 0.{i % 100:02d}" for i in range(300))
    sections = [Section("HEADER\n" + long_line + "\nFOOTER 1.00")]
    chunks = line_chunks(sections, embedder.count_tokens, max_tokens=50, max_chars=300)
    check_guarantees(sections, chunks, embedder.count_tokens, 50, 300)


@pytest.mark.parametrize(("name", "make"), [("ledger.csv", make_csv), ("stock.xlsx", make_xlsx)])
def test_spreadsheet_rows_stay_whole(embedder: Any, name: str, make: Any) -> None:
    parsed = parse(make(), name)
    assert route(parsed.sections, name).strategy == "line"
    result = chunk_document(
        parsed.sections, name, embedder.count_tokens, None, strategy="auto", max_tokens=64, overlap=16, max_chars=2000
    )
    assert result.record["strategy"] == "line" and "spreadsheet" in result.record["reason"]
    check_guarantees(parsed.sections, result.chunks, embedder.count_tokens, 64, 2000)
    rows = {line for s in parsed.sections for line in s.text.split("\n\n")}
    for chunk in result.chunks:
        assert all(row in rows for row in chunk.content.split("\n\n")), "a row was cut"
        assert chunk.location and "row_start" in chunk.location


# -------------------------------------------------------------------------------------------- semantic


def test_gap_similarity_is_low_where_the_topic_changes() -> None:
    import numpy as np

    a, b = np.eye(4, dtype=np.float32)[0], np.eye(4, dtype=np.float32)[1]
    sims = gap_similarities(np.vstack([a, a, a, b, b, b]))
    assert sims.argmin() == 2 and sims[2] == 0.0 and sims[0] == 1.0


def test_semantic_cuts_a_contract_between_clauses(embedder: Any, embed: Any) -> None:
    parsed = parse(contract_markdown(), "contract.md")
    flat = [Section("\n\n".join(s.text for s in parsed.sections))]  # one section: only meaning can cut it
    chunks = semantic_chunks(flat, embedder.count_tokens, embed, max_tokens=120)
    check_guarantees(flat, chunks, embedder.count_tokens, 120, 2000)
    sentences = {c for clauses in CLAUSES.values() for c in clauses}
    for chunk in chunks:  # never inside a clause
        for part in chunk.content.split("\n\n"):
            assert part in sentences or part.startswith("#") or part in {h for h in CLAUSES}, part
    assert len(chunks) >= 4


def test_semantic_under_headings_never_crosses_a_section(embedder: Any, embed: Any) -> None:
    sections = parse(contract_markdown(), "contract.md").sections
    chunks = semantic_chunks(sections, embedder.count_tokens, embed, max_tokens=48)
    check_guarantees(sections, chunks, embedder.count_tokens, 48, 2000)


def test_semantic_llm_choice_is_used_and_ignored_when_it_fails(embedder: Any, embed: Any) -> None:
    flat = [Section(contract_markdown(3).decode())]
    plain = semantic_chunks(flat, embedder.count_tokens, embed, max_tokens=200)
    asked: list[int] = []

    def last(pairs: list[tuple[str, str]]) -> int:
        asked.append(len(pairs))
        return len(pairs) - 1

    chosen = semantic_chunks(flat, embedder.count_tokens, embed, max_tokens=200, choose=last)
    check_guarantees(flat, chosen, embedder.count_tokens, 200, 2000)

    def broken(pairs: list[tuple[str, str]]) -> int:
        raise TimeoutError("the model took too long")

    assert [c.content for c in semantic_chunks(flat, embedder.count_tokens, embed, max_tokens=200, choose=broken)] == [
        c.content for c in plain
    ]
    assert asked and all(2 <= n <= 3 for n in asked)  # asked only between 2-3 candidates, and obeyed
    assert [c.content for c in chosen] != [c.content for c in plain]


# ----------------------------------------------------------------------------------------------- auto


def test_auto_routes_by_type_and_shape(embedder: Any, embed: Any) -> None:
    receipt = parse(RECEIPT.encode(), "scan.txt").sections
    assert route(receipt, "scan.txt").strategy == "line"
    assert "receipt-like" in route(receipt, "scan.txt").reason
    short_contract = parse(contract_markdown(), "contract.md").sections
    assert route(short_contract, "contract.md").strategy == "sentence"
    headed = parse(contract_markdown(repeat=8), "report.md").sections  # its headings separate its topics
    assert route(headed, "report.md").strategy == "sentence" and "headings cut it up" in route(headed, "r.md").reason
    report = parse(contract_markdown(repeat=8).replace(b"#", b""), "report.txt").sections  # no headings
    decision = route(report, "report.txt")
    assert decision.strategy == "sentence" and "per heading" in decision.reason and "semantic" in decision.reason
    result = chunk_document(
        report, "report.txt", embedder.count_tokens, embed, strategy="auto", max_tokens=128, overlap=0, max_chars=2000
    )
    assert result.record == {
        "requested": "auto",
        "strategy": "sentence",
        "tokens": 128,
        "overlap": 0,
        "reason": decision.reason,
    }
    check_guarantees(report, result.chunks, embedder.count_tokens, 128, 2000)
    prose = [Section("The committee met on Tuesday. It discussed the harbour budget at length.")]
    assert route(prose, "minutes.txt").strategy == "sentence"


def test_semantic_without_an_embedder_falls_back_to_sentence(embedder: Any) -> None:
    sections = parse(contract_markdown(), "contract.md").sections
    result = chunk_document(
        sections, "c.md", embedder.count_tokens, None, strategy="semantic", max_tokens=64, overlap=16, max_chars=2000
    )
    assert result.record["strategy"] == "sentence" and "needs an embedder" in result.record["reason"]
    assert result.record["overlap"] == 16


@pytest.mark.parametrize("strategy", ["line", "sentence", "semantic"])
def test_every_strategy_keeps_caps_on_hostile_text(embedder: Any, embed: Any, strategy: Strategy) -> None:
    text = "Normal words first.\n\n" + "x" * 5000 + "\n\n" + "https://e.org/" + "/".join(["seg"] * 800) + " end."
    sections = [Section(text, page=3, heading="H", location={"sheet": "S", "row_start": 1, "row_end": 2})]
    result = chunk_document(
        sections, "f.txt", embedder.count_tokens, embed, strategy=strategy, max_tokens=60, overlap=0, max_chars=300
    )
    assert result.record["strategy"] == strategy
    for chunk in result.chunks:
        assert chunk.token_count <= 60 and len(chunk.content) <= 300
        assert (chunk.page, chunk.section, chunk.location) == (3, "H", sections[0].location)
    assert "".join("".join(c.content.split()) for c in result.chunks) == "".join(text.split())
