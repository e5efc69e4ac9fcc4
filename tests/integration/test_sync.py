"""Folder sync (`ragchat sync DIR`) on the real Postgres with the real embedding model, in process: adds,
changes, renames and deletions across runs, a second run that does nothing, content moving between files,
hostile names and links, what cannot be read, the polling fallback of `--watch`. The command itself, in
subprocesses (restart, `--watch`, 10,000 files): test_sync_cli.py."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from ragchat.core.errors import BadRequest, Conflict, DatabaseUnavailable
from ragchat.documents.ingest.pipeline import Progress
from ragchat.documents.sync import scan as sync_scan
from ragchat.documents.sync import service as sync_module
from ragchat.documents.sync.scan import FileEntry, Gone, ReadError, TooBig, read
from ragchat.documents.sync.service import FolderSync, SyncReport
from ragchat.documents.sync.watch import watch
from ragchat.settings import Settings
from tests.integration.test_ingest import rows
from tests.support.services import LOCAL_OWNER_ID, make_pipeline

ALPHA = "Alpha notes. The glacier retreated four kilometres between 1950 and 2020, exposing bare granite."
BRAVO = "# Bravo\n\nSourdough needs a lively starter, flour, water and salt. Proof it overnight in the fridge."
CHARLIE = "Charlie's field log: the heron colony nested on the north bank again this spring."


class Ingest:
    """The pipeline as the sync calls it, recording each call's ids (None: never called)."""

    def __init__(self, pool: Any, embedder: Any, settings: Settings) -> None:
        self.pool, self.embedder, self.settings = pool, embedder, settings
        self.calls: list[list[UUID]] = []
        self.before: Any = None  # called before ingesting (to look at the database mid-way)

    async def __call__(self, ids: Sequence[UUID]) -> Progress:
        self.calls.append(list(ids))
        if self.before is not None:
            self.before()
        return await make_pipeline(self.pool, self.embedder, self.settings).run(ids)


async def run_sync(pool: Any, settings: Settings, root: Path, ingest: Any, **kw: Any) -> tuple[SyncReport, FolderSync]:
    syncer = FolderSync(pool, settings.ingestion, LOCAL_OWNER_ID, root, ingest, **kw)
    async with syncer.locked():
        return await syncer.run(), syncer


def documents(db: str) -> dict[str, dict[str, Any]]:
    """Documents by source_path (relative to nothing: the absolute path), with their chunk ids."""
    out = {}
    for d in rows(
        db,
        """SELECT d.id, d.filename, d.status, d.error, d.metadata->>'source_path' AS source,
                  ARRAY(SELECT c.id FROM document_chunks c WHERE c.document_id = d.id ORDER BY c.id) AS chunk_ids,
                  ARRAY(SELECT c.content FROM document_chunks c WHERE c.document_id = d.id ORDER BY c.chunk_index)
                      AS contents
           FROM documents d""",
    ):
        out[d["source"]] = d
    return out


def real(path: Path) -> str:
    return str(path.resolve())


def write_undecodable_name(folder: Path) -> None:
    """A file whose name is not UTF-8 (b"bad-\\xff-name.txt"), as a Latin-1 system might leave."""
    Path(os.fsdecode(os.fsencode(folder) + b"/bad-\xff-name.txt")).write_bytes(b"latin-1 name")


def delete_all_documents(uri: str) -> None:
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("DELETE FROM documents")


def count(db: str, table: str) -> int:
    return rows(db, f"SELECT count(*) AS n FROM {table}")[0]["n"]


def bump(path: Path, text: str | None = None) -> None:
    """Rewrite (or only touch) a file with an mtime surely different from the last one seen."""
    if text is not None:
        path.write_text(text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "My Notes"
    (root / "sub dir").mkdir(parents=True)
    (root / "alpha.txt").write_text(ALPHA)
    (root / "bravo.md").write_text(BRAVO)
    (root / "sub dir" / "charlie ü 日本.txt").write_text(CHARLIE)
    (root / ".hidden.txt").write_text("secret dotfile")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.txt").write_text("ref: refs/heads/main")
    (root / "photo.xyz").write_bytes(b"\x00\x01binary")
    (root / "empty.txt").write_bytes(b"")
    (root / "huge.txt").write_text("x " * 8000)  # 16 KB, over the test's 10 KB cap
    return root


@pytest.fixture
def small_cap(settings: Settings) -> Settings:
    return settings.model_copy(update={"max_upload_mb": 10 / 1024})


async def test_add_change_touch_rename_delete_across_runs(
    pool: Any, embedder: Any, small_cap: Settings, db: str, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = small_cap
    ingest = Ingest(pool, embedder, settings)
    src = real(folder)

    # 1. the first run adds the three supported files and says why the rest were skipped
    report, _ = await run_sync(pool, settings, folder, ingest)
    assert sorted(report.added) == ["alpha.txt", "bravo.md", "sub dir/charlie ü 日本.txt"]
    skipped = dict(report.skipped)
    assert skipped[".hidden.txt"] == skipped[".git"] == "hidden"
    assert "unsupported file type '.xyz'" in skipped["photo.xyz"]
    assert skipped["empty.txt"] == "file is empty"
    assert "MAX_UPLOAD_MB" in skipped["huge.txt"]
    assert not report.failed and not report.updated and not report.removed
    docs = documents(db)
    assert set(docs) == {f"{src}/alpha.txt", f"{src}/bravo.md", f"{src}/sub dir/charlie ü 日本.txt"}
    assert {d["status"] for d in docs.values()} == {"ready"}
    assert docs[f"{src}/sub dir/charlie ü 日本.txt"]["filename"] == "charlie ü 日本.txt"
    embeddings = count(db, "chunk_embeddings")
    assert embeddings == count(db, "document_chunks") >= 3

    # 2. nothing changed: no file is read (hashed), nothing is ingested
    reads: list[str] = []
    real_read = sync_module.read
    monkeypatch.setattr(
        sync_module, "read", lambda root, entry, *a, **k: reads.append(entry.rel) or real_read(root, entry, *a, **k)
    )
    calls = len(ingest.calls)
    report, _ = await run_sync(pool, settings, folder, ingest)
    assert not report.changed and report.unchanged == 3
    assert reads == [] and len(ingest.calls) == calls
    assert documents(db) == docs

    # 3. alpha changed, bravo only touched (same bytes, new mtime)
    old_alpha = docs[f"{src}/alpha.txt"]
    bump(folder / "alpha.txt", ALPHA.replace("four kilometres", "eleven kilometres"))
    bump(folder / "bravo.md")
    report, _ = await run_sync(pool, settings, folder, ingest)
    assert report.updated == ["alpha.txt"] and report.unchanged == 2 and not report.added
    assert sorted(reads) == ["alpha.txt", "alpha.txt", "bravo.md"]  # hashed, then read to register
    after = documents(db)
    assert len(after) == 3
    new_alpha = after[f"{src}/alpha.txt"]
    assert new_alpha["id"] != old_alpha["id"] and new_alpha["status"] == "ready"
    assert "eleven kilometres" in " ".join(new_alpha["contents"])
    assert not rows(db, "SELECT 1 FROM documents WHERE id = %s", (old_alpha["id"],))
    assert after[f"{src}/bravo.md"]["id"] == docs[f"{src}/bravo.md"]["id"]

    # 4. charlie moved to another folder and renamed: same document, same chunks, nothing embedded
    (folder / "archive").mkdir()
    (folder / "sub dir" / "charlie ü 日本.txt").rename(folder / "archive" / "heron log.txt")
    embeddings = count(db, "chunk_embeddings")
    calls = len(ingest.calls)
    report, _ = await run_sync(pool, settings, folder, ingest)
    assert report.renamed == [("sub dir/charlie ü 日本.txt", "archive/heron log.txt")]
    assert not report.added and not report.removed and len(ingest.calls) == calls
    moved = documents(db)[f"{src}/archive/heron log.txt"]
    old_charlie = docs[f"{src}/sub dir/charlie ü 日本.txt"]
    assert moved["id"] == old_charlie["id"] and moved["chunk_ids"] == old_charlie["chunk_ids"]
    assert moved["filename"] == "heron log.txt"
    assert count(db, "chunk_embeddings") == embeddings

    # 5. bravo deleted: its document, chunks and vectors go
    (folder / "bravo.md").unlink()
    report, _ = await run_sync(pool, settings, folder, ingest)
    assert report.removed == ["bravo.md"] and report.documents_deleted == 1
    assert set(documents(db)) == {f"{src}/alpha.txt", f"{src}/archive/heron log.txt"}
    assert (
        count(db, "document_chunks")
        == count(db, "chunk_embeddings")
        == len(new_alpha["chunk_ids"]) + len(moved["chunk_ids"])
    )
    assert {r["rel_path"] for r in rows(db, "SELECT rel_path FROM sync_files")} == {
        "alpha.txt",
        "archive/heron log.txt",
    }


async def test_a_changed_file_replaces_its_old_version_only_once_the_new_one_is_ready(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text(ALPHA)
    ingest = Ingest(pool, embedder, settings)
    await run_sync(pool, settings, tmp_path, ingest)
    [old] = documents(db).values()
    bump(tmp_path / "a.txt", CHARLIE)
    seen: list[list[tuple[UUID, str, int]]] = []
    ingest.before = lambda: seen.append(
        [
            (r["id"], r["status"], r["n"])
            for r in rows(
                db,
                "SELECT d.id, d.status, (SELECT count(*) FROM document_chunks c WHERE c.document_id = d.id) AS n "
                "FROM documents d ORDER BY d.created_at",
            )
        ]
    )
    report, _ = await run_sync(pool, settings, tmp_path, ingest)
    assert report.updated == ["a.txt"]
    # while the new version waited for ingestion, search still had the old one, whole
    [(old_id, old_status, old_chunks), (new_id, new_status, new_chunks)] = seen[0]
    assert (old_id, old_status, old_chunks) == (old["id"], "ready", len(old["chunk_ids"]))
    assert new_status == "queued" and new_chunks == 0
    [now] = documents(db).values()
    assert now["id"] == new_id and now["status"] == "ready" and "heron" in " ".join(now["contents"])


async def test_a_version_an_interrupted_run_left_queued_never_outlives_a_newer_one(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text(ALPHA)
    ingest = Ingest(pool, embedder, settings)
    await run_sync(pool, settings, tmp_path, ingest)
    [first] = documents(db).values()

    async def interrupted(ids: Sequence[UUID]) -> Progress:
        raise KeyboardInterrupt

    bump(tmp_path / "a.txt", BRAVO)
    with pytest.raises(KeyboardInterrupt):
        await run_sync(pool, settings, tmp_path, interrupted)
    assert sorted(r["status"] for r in rows(db, "SELECT status FROM documents")) == ["queued", "ready"]
    bump(tmp_path / "a.txt", CHARLIE)

    async def then_a_late_worker(ids: Sequence[UUID]) -> Progress:
        progress = await ingest(ids)
        await make_pipeline(pool, embedder, settings).run()  # a server's worker, taking up whatever is queued
        return progress

    report, _ = await run_sync(pool, settings, tmp_path, then_a_late_worker)
    assert report.updated == ["a.txt"] and report.resumed == 0  # the new version's store replaced both
    assert count(db, "documents") == 1  # the first version replaced, the unfinished second one gone
    [now] = documents(db).values()
    assert now["id"] != first["id"] and now["status"] == "ready" and "heron" in " ".join(now["contents"])


async def test_a_change_that_fails_keeps_the_old_version_and_says_why(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "report.pdf").write_bytes(make_pdf(["The quarterly report covers glaciers."]))
    ingest = Ingest(pool, embedder, settings)
    await run_sync(pool, settings, tmp_path, ingest)
    bump_bytes(tmp_path / "report.pdf", b"%PDF-1.4 this is not really a pdf")
    report, _ = await run_sync(pool, settings, tmp_path, ingest)
    assert [rel for rel, _ in report.failed] == ["report.pdf"] and not report.updated
    statuses = sorted(d["status"] for d in rows(db, "SELECT status FROM documents"))
    assert statuses == ["failed", "ready"]  # the old version still answers searches
    again, _ = await run_sync(pool, settings, tmp_path, ingest)
    assert not again.changed and again.failed_before == 1  # not retried, but still mentioned
    assert again.failed_before_examples[0][0] == "report.pdf"
    (tmp_path / "report.pdf").unlink()
    gone, _ = await run_sync(pool, settings, tmp_path, ingest, allow_empty=True)
    assert gone.removed == ["report.pdf"] and gone.documents_deleted == 2 and count(db, "documents") == 0


async def test_identical_copies_share_one_document_until_the_last_goes(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text(ALPHA)
    (tmp_path / "copy of a.txt").write_text(ALPHA)
    ingest = Ingest(pool, embedder, settings)
    report, _ = await run_sync(pool, settings, tmp_path, ingest)
    assert sorted(report.added) == ["a.txt", "copy of a.txt"]
    [doc] = rows(db, "SELECT id, metadata->>'source_path' AS source FROM documents")
    (tmp_path / "a.txt").unlink()
    report, _ = await run_sync(pool, settings, tmp_path, ingest)
    assert report.removed == ["a.txt"] and report.documents_deleted == 0
    [kept] = rows(db, "SELECT id, filename, metadata->>'source_path' AS source FROM documents")
    assert kept["id"] == doc["id"] and kept["source"] == str(tmp_path / "copy of a.txt")
    assert kept["filename"] == "copy of a.txt"
    (tmp_path / "copy of a.txt").unlink()
    report, _ = await run_sync(pool, settings, tmp_path, ingest, allow_empty=True)
    assert report.removed == ["copy of a.txt"] and count(db, "documents") == 0


async def test_content_moving_between_files_is_not_embedded_again(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    """a.txt gets new text while b.txt appears with a.txt's old text: b.txt takes over the old document."""
    (tmp_path / "a.txt").write_text(ALPHA)
    ingest = Ingest(pool, embedder, settings)
    await run_sync(pool, settings, tmp_path, ingest)
    [old] = documents(db).values()
    bump(tmp_path / "a.txt", BRAVO)
    (tmp_path / "b.txt").write_text(ALPHA)
    report, _ = await run_sync(pool, settings, tmp_path, ingest)
    assert report.updated == ["a.txt"] and report.added == ["b.txt"]
    docs = documents(db)
    assert docs[str(tmp_path / "b.txt")]["id"] == old["id"]
    assert docs[str(tmp_path / "b.txt")]["chunk_ids"] == old["chunk_ids"]
    assert "Sourdough" in " ".join(docs[str(tmp_path / "a.txt")]["contents"])
    assert len(docs) == 2


async def test_a_document_deleted_elsewhere_comes_back_and_a_moved_folder_finds_its_documents(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    folder = tmp_path / "first"
    folder.mkdir()
    (folder / "a.txt").write_text(ALPHA)
    ingest = Ingest(pool, embedder, settings)
    await run_sync(pool, settings, folder, ingest)
    delete_all_documents(db)  # as the page's Delete would
    report, _ = await run_sync(pool, settings, folder, ingest)
    assert report.added == ["a.txt"] and count(db, "documents") == 1
    [doc] = documents(db).values()
    embedded = count(db, "chunk_embeddings")
    moved = tmp_path / "second"
    folder.rename(moved)
    calls = len(ingest.calls)
    report, _ = await run_sync(pool, settings, moved, ingest)
    assert report.added == ["a.txt"] and len(ingest.calls) == calls  # the same content: nothing to ingest
    [again] = documents(db).values()
    assert again["id"] == doc["id"] and count(db, "chunk_embeddings") == embedded
    assert count(db, "sync_roots") == 2


async def test_hostile_names_and_links(pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "inner").mkdir(parents=True)
    (root / "inner" / "real.txt").write_text(ALPHA)
    (root / "  spaces  and\ttabs .txt").write_text(BRAVO)
    (root / "loop").symlink_to(root / "loop")  # a symlink to itself
    (root / "up").symlink_to(root)  # a folder loop
    (root / "etc").symlink_to("/etc")
    (root / "passwd.txt").symlink_to("/etc/passwd")
    (root / "outside.txt").symlink_to(tmp_path / "secret.txt")
    (tmp_path / "secret.txt").write_text("a secret outside the folder")
    (root / "alias.txt").symlink_to(root / "inner" / "real.txt")  # inside: followed, same content
    (root / "dangling.txt").symlink_to(root / "nowhere.txt")
    os.mkfifo(root / "pipe.txt")
    write_undecodable_name(root)
    ingest = Ingest(pool, embedder, settings)
    started = time.monotonic()
    report, _ = await asyncio.wait_for(run_sync(pool, settings, root, ingest), timeout=120)
    elapsed = time.monotonic() - started
    skipped = dict(report.skipped)
    assert sorted(report.added) == ["  spaces  and\ttabs .txt", "alias.txt", "inner/real.txt"], report
    assert "outside the folder" in skipped["etc"] and "outside the folder" in skipped["passwd.txt"]
    assert "outside the folder" in skipped["outside.txt"]
    assert "symlink loop" in skipped["loop"] and "symlink to a folder" in skipped["up"]
    assert "broken symlink" in skipped["dangling.txt"]
    assert "not a regular file" in skipped["pipe.txt"]
    assert skipped["bad-\\xff-name.txt"] == "the name is not valid UTF-8"
    assert not report.failed
    contents = " ".join(" ".join(d["contents"]) for d in documents(db).values())
    assert "secret" not in contents and "root:" not in contents
    assert count(db, "documents") == 2  # alias.txt shares real.txt's document
    print(f"hostile folder synced in {elapsed:.1f}s")


def test_reads_refuse_what_escapes_the_folder_and_stop_at_the_cap(tmp_path: Path) -> None:
    """The last line of defence, when a file was swapped after the walk looked at it."""
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("outside")
    (root / "link.txt").symlink_to(tmp_path / "outside.txt")
    (root / "big.txt").write_bytes(b"x" * 5000)
    os.mkfifo(root / "fifo.txt")
    base = str(root)

    def entry(name: str, path: str | None = None) -> FileEntry:
        return FileEntry(name, path or f"{base}/{name}", 0, 0)

    with pytest.raises(ReadError, match="outside the folder"):  # a path outside, however it got there
        read(base, entry("x", str(tmp_path / "outside.txt")), 4096)
    with pytest.raises(ReadError, match="cannot open"):  # a symlink swapped in: not followed
        read(base, entry("link.txt"), 4096)
    with pytest.raises(ReadError, match="not a regular file"):  # a FIFO: opened without blocking, refused
        read(base, entry("fifo.txt"), 4096)
    with pytest.raises(Gone):
        read(base, entry("deleted.txt"), 4096)
    with pytest.raises(TooBig):
        read(base, entry("big.txt"), 4096)
    content = read(base, entry("big.txt"), 5000, keep=True)
    assert content.size == 5000 and content.data == b"x" * 5000 and len(content.sha256) == 64


async def test_what_cannot_be_read_keeps_its_documents(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A changed file that cannot be read, and a folder that cannot be listed, remove nothing (a permissions
    glitch must not empty the library); a file replaced by a pipe is no file: removed, never opened."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text(ALPHA)
    (tmp_path / "p.txt").write_text(CHARLIE)
    (tmp_path / "sub" / "b.txt").write_text(BRAVO)
    ingest = Ingest(pool, embedder, settings)
    await run_sync(pool, settings, tmp_path, ingest)
    bump(tmp_path / "a.txt", ALPHA + " More.")
    (tmp_path / "p.txt").unlink()
    os.mkfifo(tmp_path / "p.txt")

    def unreadable(*_a: Any, **_k: Any) -> Any:
        raise ReadError("cannot open: Permission denied")

    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        if str(path).endswith("/sub"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(sync_module, "read", unreadable)
    monkeypatch.setattr(sync_scan.os, "scandir", scandir)
    report, _ = await asyncio.wait_for(run_sync(pool, settings, tmp_path, ingest), timeout=60)
    assert dict(report.failed) == {
        "a.txt": "cannot open: Permission denied",
        "sub": "cannot list the folder: Permission denied",
    }
    assert report.removed == ["p.txt"]
    assert sorted(d["filename"] for d in rows(db, "SELECT filename FROM documents")) == ["a.txt", "b.txt"]
    assert sorted(r["rel_path"] for r in rows(db, "SELECT rel_path FROM sync_files")) == ["a.txt", "sub/b.txt"]


async def test_an_empty_folder_removes_nothing_unless_allowed(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text(ALPHA)
    (tmp_path / "b.txt").write_text(BRAVO)
    ingest = Ingest(pool, embedder, settings)
    await run_sync(pool, settings, tmp_path, ingest)
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).unlink()
    report, _ = await run_sync(pool, settings, tmp_path, ingest)
    assert not report.removed and "unmounted drive" in report.failed[0][1] and count(db, "documents") == 2
    report, _ = await run_sync(pool, settings, tmp_path, ingest, allow_empty=True)
    assert sorted(report.removed) == ["a.txt", "b.txt"] and count(db, "documents") == 0


async def test_dry_run_changes_nothing(pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(ALPHA)
    ingest = Ingest(pool, embedder, settings)
    report, _ = await run_sync(pool, settings, tmp_path, ingest, dry_run=True)
    assert report.added == ["a.txt"] and report.dry_run
    assert count(db, "documents") == count(db, "sync_roots") == 0 and not ingest.calls
    await run_sync(pool, settings, tmp_path, ingest)
    (tmp_path / "a.txt").rename(tmp_path / "b.txt")
    report, _ = await run_sync(pool, settings, tmp_path, ingest, dry_run=True)
    assert report.renamed == [("a.txt", "b.txt")]
    assert [r["rel_path"] for r in rows(db, "SELECT rel_path FROM sync_files")] == ["a.txt"]


async def test_one_sync_of_a_folder_at_a_time(pool: Any, embedder: Any, settings: Settings, tmp_path: Path) -> None:
    ingest = Ingest(pool, embedder, settings)
    first = FolderSync(pool, settings.ingestion, LOCAL_OWNER_ID, tmp_path, ingest)
    second = FolderSync(pool, settings.ingestion, LOCAL_OWNER_ID, tmp_path, ingest)
    async with first.locked():
        with pytest.raises(Conflict, match="another `ragchat sync`"):
            async with second.locked():
                pass
    async with second.locked():  # released
        pass
    with pytest.raises(BadRequest, match="not a folder"):
        FolderSync(pool, settings.ingestion, LOCAL_OWNER_ID, tmp_path / "missing", ingest)


async def test_watch_survives_a_failed_sync_and_the_next_one_finishes_its_work(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text(ALPHA)
    ingest = Ingest(pool, embedder, settings)
    real = ingest.__call__
    outages = [DatabaseUnavailable()]

    async def flaky(ids: Sequence[UUID]) -> Progress:
        if outages:
            raise outages.pop()
        return await real(ids)

    syncer = FolderSync(pool, settings.ingestion, LOCAL_OWNER_ID, tmp_path, flaky)
    stop = asyncio.Event()
    reports: list[SyncReport] = []
    notes: list[str] = []
    async with syncer.locked():
        task = asyncio.create_task(watch(syncer, stop, interval_s=0.3, on_report=reports.append, on_note=notes.append))
        started = time.monotonic()
        while not reports:
            assert time.monotonic() - started < 60 and not task.done()
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(task, 10)
    assert notes[0].startswith("the sync failed (The database (Postgres) is unavailable")
    assert reports[0].resumed == 1 and not reports[0].changed  # registered by the failed run, ingested now
    assert [r["status"] for r in rows(db, "SELECT status FROM documents")] == ["ready"]


async def test_watch_falls_back_to_polling_when_the_folder_cannot_be_watched(
    pool: Any, embedder: Any, settings: Settings, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import watchfiles

    def no_watching(*_a: Any, **_k: Any) -> Any:
        raise OSError(28, "OS file watch limit reached")

    monkeypatch.setattr(watchfiles, "awatch", no_watching)
    (tmp_path / "a.txt").write_text(ALPHA)
    syncer = FolderSync(pool, settings.ingestion, LOCAL_OWNER_ID, tmp_path, Ingest(pool, embedder, settings))
    stop = asyncio.Event()
    reports: list[SyncReport] = []
    notes: list[str] = []
    async with syncer.locked():
        task = asyncio.create_task(watch(syncer, stop, interval_s=0.3, on_report=reports.append, on_note=notes.append))
        while not notes:
            assert not task.done()
            await asyncio.sleep(0.05)
        (tmp_path / "b.txt").write_text(BRAVO)
        started = time.monotonic()
        while not any("b.txt" in r.added for r in reports):
            assert time.monotonic() - started < 30 and not task.done()
            await asyncio.sleep(0.05)
        stop.set()
        await asyncio.wait_for(task, 10)
    assert "cannot watch the folder for changes" in notes[0] and "watch limit" in notes[0]
    assert reports[0].added == ["a.txt"] and count(db, "documents") == 2


def make_pdf(pages: list[str]) -> bytes:
    from tests.integration.test_ingest import make_pdf as make

    return make(pages)


def bump_bytes(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    bump(path)
