"""HTTP routes of the scan viewer (issue 46, item 6): a scanned page as the image OCR read, and the lines OCR
read on it with their boxes, inside the caller's read scope exactly like /file (another user's document: 404)."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any
from uuid import UUID

from litestar import Controller, Response, get
from litestar.params import Parameter
from pydantic import BaseModel, Field

from ragchat.core.audit import ReadAuditor
from ragchat.core.errors import BadRequest, NotFound
from ragchat.core.principal import Principal
from ragchat.documents.api.service import DocumentService
from ragchat.documents.catalog.ocr_lines import ScannedPage, ScanPages
from ragchat.documents.parsing.limits import ParseError, ParseLimits
from ragchat.documents.parsing.ocr import MAX_LINES
from ragchat.documents.parsing.page_image import NotScanned, PageImage, has_page_images, page_image
from ragchat.httpapi.http import error_responses, file_download

MAX_PAGE = 100_000  # a page number past any document's (MAX_PDF_PAGES is far below)
_RENDERS = threading.BoundedSemaphore(2)  # page images decoded at once per process: each holds up to ~12 MB
#: The image's own CSP, should a browser ever open it as a page (as /file's).
IMAGE_CSP = "sandbox; default-src 'none'"

PageNumber = Annotated[int, Parameter(ge=1, le=MAX_PAGE, description="the page, from 1 (a TIFF's frame)")]


class OcrLineOut(BaseModel):
    text: str
    x0: float = Field(description="left edge, in pixels of the page image (0 .. width)")
    y0: float = Field(description="top edge (0 .. height)")
    x1: float = Field(description="right edge")
    y1: float = Field(description="bottom edge")
    confidence: float = Field(ge=0, le=1)


class OcrPageOut(BaseModel):
    document_id: UUID
    page: int
    width: int | None = Field(
        description="the page image's width in pixels, what the boxes are in (None: no lines on this page)"
    )
    height: int | None
    lines: list[OcrLineOut] = Field(
        description=f"in reading order, at most {MAX_LINES:,}; empty for a page OCR did not read, a blank one, "
        "or a document read before OCR lines were kept (the viewer then shows the text)"
    )
    scanned_pages: list[int] = Field(description="the document's pages that have OCR lines, in order")

    @classmethod
    def of(cls, document_id: UUID, page: int, found: ScannedPage | None, pages: list[int]) -> OcrPageOut:
        if found is None:
            return cls(document_id=document_id, page=page, width=None, height=None, lines=[], scanned_pages=pages)
        lines = [OcrLineOut(**vars(line)) for line in found.lines]
        return cls(
            document_id=document_id, page=page, width=found.width, height=found.height, lines=lines, scanned_pages=pages
        )


def _in_range(row: dict[str, Any], page: int) -> None:
    """404 for a page past the document's last (its page count, when known)."""
    count = row.get("page_count")
    if count is not None and page > count:
        raise NotFound(f"the document has {count:,} {'page' if count == 1 else 'pages'}, not {page:,}")


def _render(data: bytes, row: dict[str, Any], page: int, limits: ParseLimits) -> PageImage:
    with _RENDERS:
        return page_image(data, row["content_type"], row["filename"], page, limits)


class ScanController(Controller):
    path = "/api/documents"

    @get("/{document_id:uuid}/pages/{page:int}/ocr", responses=error_responses(400, 404))
    async def ocr_lines(
        self, document_id: UUID, page: PageNumber, documents: DocumentService, principal: Principal, audit: ReadAuditor
    ) -> OcrPageOut:
        """The lines OCR read on a page of a readable document, each with its box in the pixels of the page
        image (`/pages/{page}/image`) and its confidence. No lines (200, `lines: []`) for a page that was not
        scanned or was read before OCR lines were kept; 404 for a document the caller may not read or a page
        past its last."""
        row, found, pages = await ScanPages(documents.catalog.pool).lines(principal, document_id, page, MAX_LINES)
        _in_range(row, page)
        await audit.record_read(principal, "chunks", [document_id], owner_id=row["owner_id"])
        return OcrPageOut.of(document_id, page, found, pages)

    @get(
        "/{document_id:uuid}/pages/{page:int}/image",
        responses=error_responses(400, 404),
        operation_class=file_download("image/png", "image/jpeg"),
    )
    async def page_image(
        self, document_id: UUID, page: PageNumber, documents: DocumentService, principal: Principal, audit: ReadAuditor
    ) -> Response[bytes]:
        """A page of a readable image or PDF as the image OCR read (PNG for a grey page, JPEG for colour; the
        long side at most 2,000 px): an image's frame, or a PDF page rendered as OCR renders it. 404 for a
        document the caller may not read, one without page images (text, office files) or a page past its last;
        400 for an image that cannot be decoded or is over OCR_MAX_PIXELS."""
        row, data = await ScanPages(documents.catalog.pool).original(principal, document_id)
        if not has_page_images(row["content_type"], row["filename"]):
            raise NotFound("this document has no page images (it is neither an image nor a PDF)")
        _in_range(row, page)
        limits = ParseLimits.from_settings(documents.settings)
        try:
            image = await asyncio.to_thread(_render, data, row, page, limits)
        except NotScanned as exc:
            raise NotFound(str(exc)) from None
        except ParseError as exc:
            raise BadRequest(f"page {page} cannot be shown: {exc}") from None
        finally:
            del data
        await audit.record_read(principal, "file", [document_id], owner_id=row["owner_id"])
        return Response(
            image.data,
            media_type=image.media_type,
            headers={
                "Content-Security-Policy": IMAGE_CSP,
                "X-Content-Type-Options": "nosniff",
                "Cache-Control": "private, max-age=3600",  # a document's bytes never change under its id
            },
        )
