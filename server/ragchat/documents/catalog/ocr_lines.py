"""The lines OCR read on a document's scanned pages, with their boxes (migration 0030): written with the
document's chunks, read back a page at a time for the scan viewer, always inside the reader's scope."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg import sql

from ragchat.core.errors import NotFound
from ragchat.core.principal import Principal
from ragchat.db.pool import Conn, Pool
from ragchat.documents.catalog import repository as repo
from ragchat.documents.catalog.repository import READABLE
from ragchat.documents.parsing.ocr import OcrLine, PageLayout

MAX_PAGES = 100_000  # pages listed with lines (OCR_MAX_PAGES is far below it)


@dataclass(frozen=True)
class ScannedPage:
    """One page's OCR lines as stored: the page image's size and the lines in reading order."""

    page: int
    width: int
    height: int
    lines: list[OcrLine]


async def replace_lines(conn: Conn, document_id: UUID, pages: Sequence[tuple[int, PageLayout]]) -> int:
    """Replace the document's OCR lines with those of `pages` ((page number, layout), in the caller's
    transaction: the chunk store's); returns how many lines were written."""
    await conn.execute("DELETE FROM document_ocr_lines WHERE document_id = %s", (document_id,))
    written = 0
    if not any(layout.lines for _, layout in pages):
        return 0
    async with conn.cursor().copy(
        """COPY document_ocr_lines (document_id, page, line_no, page_width, page_height, text, x0, y0, x1, y1,
                                    confidence) FROM STDIN"""
    ) as copy:
        for page, layout in pages:
            for number, line in enumerate(layout.lines):
                await copy.write_row(
                    (
                        document_id,
                        page,
                        number,
                        layout.width,
                        layout.height,
                        line.text,
                        line.x0,
                        line.y0,
                        line.x1,
                        line.y1,
                        line.confidence,
                    )
                )
                written += 1
    return written


_PAGE = sql.SQL("""SELECT l.page_width, l.page_height, l.text, l.x0, l.y0, l.x1, l.y1, l.confidence
    FROM document_ocr_lines l JOIN documents d ON d.id = l.document_id
    WHERE d.id = %(id)s AND l.page = %(page)s AND {}
    ORDER BY l.line_no LIMIT %(limit)s""").format(READABLE)

_PAGES = sql.SQL("""SELECT l.page FROM document_ocr_lines l JOIN documents d ON d.id = l.document_id
    WHERE d.id = %(id)s AND l.line_no = 0 AND {} ORDER BY l.page LIMIT %(limit)s""").format(READABLE)


async def page_lines(conn: Conn, reader: UUID, document_id: UUID, page: int, limit: int) -> ScannedPage | None:
    """Page `page`'s lines (at most `limit`) of a document `reader` may read; None when it has none (not read
    by OCR, read before migration 0030, blank) or the document is not readable (the caller tells which)."""
    rows = await (
        await conn.execute(_PAGE, {"uid": reader, "id": document_id, "page": page, "limit": limit})
    ).fetchall()
    if not rows:
        return None
    lines = [OcrLine(r["text"], r["x0"], r["y0"], r["x1"], r["y1"], r["confidence"]) for r in rows]
    return ScannedPage(page, rows[0]["page_width"], rows[0]["page_height"], lines)


async def scanned_pages(conn: Conn, reader: UUID, document_id: UUID, limit: int) -> list[int]:
    """The pages of a readable document that have OCR lines, in order (at most `limit`)."""
    rows = await (await conn.execute(_PAGES, {"uid": reader, "id": document_id, "limit": limit})).fetchall()
    return [r["page"] for r in rows]


class ScanPages:
    """What the scan viewer reads of a document the principal may read (NotFound for anything else: missing,
    another user's, no difference): its row, a page's OCR lines, its original bytes."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def lines(
        self, principal: Principal, document_id: UUID, page: int, limit: int
    ) -> tuple[dict[str, Any], ScannedPage | None, list[int]]:
        """The document, page `page`'s lines (None: none stored) and the pages that have lines."""
        async with self.pool.connection() as conn:
            row = await self._readable(conn, principal, document_id)
            found = await page_lines(conn, principal.user_id, document_id, page, limit)
            pages = await scanned_pages(conn, principal.user_id, document_id, MAX_PAGES)
        return row, found, pages

    async def original(self, principal: Principal, document_id: UUID) -> tuple[dict[str, Any], bytes]:
        """The document and its original file's bytes (NotFound when they are gone)."""
        async with self.pool.connection() as conn:
            row = await self._readable(conn, principal, document_id)
            data = await repo.blob(conn, document_id)
        if data is None:
            raise NotFound(f"the file of document {document_id} is gone")
        return row, data

    @staticmethod
    async def _readable(conn: Conn, principal: Principal, document_id: UUID) -> dict[str, Any]:
        row = await repo.get_document(conn, principal.user_id, document_id)
        if row is None:
            raise NotFound(f"document {document_id} not found")
        return row
