"""Thread and feedback export formatting: file names from titles, CSV cells a spreadsheet never runs."""

from __future__ import annotations

import csv
import io
import json
import uuid
from datetime import UTC, datetime

from ragchat.chat.api.export import export_filename, thread_markdown
from ragchat.chat.store.actions import EXPORT_COLUMNS, feedback_csv, feedback_jsonl


def test_file_names_from_titles() -> None:
    assert export_filename("Holiday rules?", "markdown") == "holiday-rules.md"
    assert export_filename("Ünïcödé — 2025 / Q1", "json") == "unicode-2025-q1.json"
    assert export_filename("", "markdown") == "thread.md"
    assert export_filename("漢字だけ", "json") == "thread.json"
    assert export_filename('a"; filename="evil.exe', "markdown") == "a-filename-evil-exe.md"
    long = export_filename("word " * 40, "markdown")
    assert len(long) <= 63 and not long.startswith("-") and "--" not in long


def test_csv_cells_never_run_as_formulas() -> None:
    row = {c: None for c in EXPORT_COLUMNS}
    notes = ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\t=x", "\rboom", "fine = ok", "", None]
    rows = [
        {**row, "message_id": uuid.uuid4(), "note": n, "updated_at": datetime(2025, 1, 2, tzinfo=UTC)} for n in notes
    ]
    table = list(csv.DictReader(io.StringIO(feedback_csv(rows))))
    assert [r["note"] for r in table] == [
        "'=1+1",
        "'+SUM(A1)",
        "'-2+3",
        "'@cmd",
        "'\t=x",
        "'\rboom",
        "fine = ok",
        "",
        "",
    ]
    assert table[0]["updated_at"] == "2025-01-02T00:00:00+00:00"
    lines = feedback_jsonl(rows).splitlines()
    assert json.loads(lines[0])["note"] == "=1+1"  # JSON is data, not a spreadsheet: kept as written
    assert list(json.loads(lines[0])) == EXPORT_COLUMNS


def test_markdown_of_an_incomplete_answer() -> None:
    thread = {"id": uuid.uuid4(), "title": "Line one\nline two", "created_at": datetime.now(UTC)}
    messages = [
        {"id": uuid.uuid4(), "role": "user", "content": "Why?\nReally?", "status": "complete"},
        {
            "id": uuid.uuid4(),
            "role": "assistant",
            "content": "Because",
            "status": "incomplete",
            "error": {"code": "stopped", "message": "Stopped — this answer is incomplete."},
            "tool_results": [],
        },
    ]
    text = thread_markdown(thread, messages)
    assert text.startswith("# Line one line two\n")
    assert "> Why?\n> Really?" in text
    assert "*This answer is incomplete: Stopped — this answer is incomplete.*" in text
