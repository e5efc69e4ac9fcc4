"""Every table has one owning domain (issue 28, item 4). The exact check:

for every file under server/ragchat, every `FROM <t>`, `JOIN <t>` (a read) and `INTO <t>`, `UPDATE <t>`,
`DELETE FROM <t>`, `TRUNCATE <t>`, `COPY <t>` (a write) of a table `t` created in migrations/ (SQL keywords in
capitals, as the code writes them) must come from the package that owns `t` (the first folder under
server/ragchat), or be a read by one of `READERS[t]`. What is left over must equal `DEBT` exactly: a new
cross-domain read fails, and so does a debt paid without being struck off the list.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "server" / "ragchat"

OWNERS = {
    "users": "accounts",
    "sessions": "accounts",
    "api_tokens": "accounts",
    "oidc_identities": "accounts",
    "oidc_flows": "accounts",
    "login_failures": "accounts",
    "threads": "chat",
    "messages": "chat",
    "message_feedback": "chat",
    "llm_speeds": "chat",  # the chat models' measured speeds, kept across restarts (migration 0031)
    "documents": "documents",
    "document_blobs": "documents",
    "document_chunks": "documents",
    "collections": "documents",
    "collection_members": "documents",
    "document_collections": "documents",
    "sync_roots": "documents",
    "sync_files": "documents",
    "ocr_usage": "documents",  # pixels decoded for OCR per owner (migration 0027)
    "document_ocr_lines": "documents",  # OCR lines with their boxes, for the scan viewer (migration 0030)
    "eval_runs": "evaluation",
    "bm25_terms": "retrieval",  # the keyword index's statistics (triggers on document_chunks keep them)
    "bm25_stats": "retrieval",
    # per share group since 0017 (triggers on chunks and collection membership keep them)
    "bm25_groups": "retrieval",
    "bm25_group_collections": "retrieval",
    "bm25_document_groups": "retrieval",
    "bm25_group_terms": "retrieval",
    "bm25_group_stats": "retrieval",
    "bm25_owner_configs": "retrieval",  # text-search configurations per owner (0029, kept by a chunk trigger)
    "user_settings": "preferences",
    "chunk_embeddings": "vectors",
    "embedding_spaces": "vectors",
    "audit_log": "audit",  # append-only (migration 0020): every domain writes it through core/audit.py's contract
}

# Reads the owner grants, never writes. `readscope` is the one place that decides what a user may read (it reads
# the documents domain's tables to say so). `retrieval` owns the search read model: it ranks chunks and joins
# their documents, always inside readscope's clause. `vectors` reads the chunk text it embeds again.
READERS = {
    "bm25_groups": {"readscope"},  # readable_chunks(): a chunk's share group decides who reads it (issue 29)
    "bm25_group_collections": {"readscope"},
    "bm25_document_groups": {"readscope"},
    "documents": {"readscope", "retrieval"},
    "document_chunks": {"retrieval", "vectors"},
    "document_collections": {"readscope", "retrieval"},
    "collections": {"readscope"},
    "collection_members": {"readscope"},
    "chunk_embeddings": {"retrieval"},
}

# Cross-domain reads still to be moved behind the owner's function (file, table): empty
# (docs/history/session-9-notes/debt.md says how each was paid: the owner answers through a lookup in
# core/ownership.py or core/preferences.py, or a readscope fragment); keep it empty.
DEBT: set[tuple[str, str]] = set()

_STATEMENT = re.compile(r"\b(DELETE FROM|FROM|JOIN|INTO|UPDATE|TRUNCATE|COPY)\s+([a-z0-9_]+)\b")
_WRITES = {"DELETE FROM", "INTO", "UPDATE", "TRUNCATE", "COPY"}


def tables() -> set[str]:
    sql = "\n".join(p.read_text() for p in (ROOT / "migrations").glob("*.sql"))
    return set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?([a-z0-9_]+)", sql))


def offences(package: Path) -> set[tuple[str, str, str]]:
    """(file, table, "read" | "write") for every statement outside its table's owner and granted readers."""
    known = tables()
    found: set[tuple[str, str, str]] = set()
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        domain = rel.split("/")[0]
        for verb, table in _STATEMENT.findall(path.read_text()):
            if table not in known:
                continue
            kind = "write" if verb in _WRITES else "read"
            if domain == OWNERS[table] or (kind == "read" and domain in READERS.get(table, set())):
                continue
            found.add((rel, table, kind))
    return found


def test_every_table_created_has_an_owner() -> None:
    assert tables() - set(OWNERS) == set()


def test_tables_are_read_and_written_only_by_their_owner() -> None:
    found = offences(PACKAGE)
    writes = {f for f in found if f[2] == "write"}
    assert writes == set(), f"writes outside the owning domain: {sorted(writes)}"
    assert {(f, t) for f, t, _ in found} == DEBT


def test_the_check_sees_a_planted_cross_domain_read_and_write(tmp_path: Path) -> None:
    (tmp_path / "chat").mkdir()
    (tmp_path / "chat" / "x.py").write_text('Q = "SELECT id FROM documents d JOIN user_settings s ON true"\n')
    (tmp_path / "evaluation").mkdir()
    (tmp_path / "evaluation" / "y.py").write_text('Q = "INSERT INTO users (id) VALUES (%s)"\n')
    (tmp_path / "retrieval").mkdir()
    (tmp_path / "retrieval" / "z.py").write_text('Q = "UPDATE documents SET title = %s"\n')
    assert offences(tmp_path) == {
        ("chat/x.py", "documents", "read"),
        ("chat/x.py", "user_settings", "read"),
        ("evaluation/y.py", "users", "write"),
        ("retrieval/z.py", "documents", "write"),
    }
