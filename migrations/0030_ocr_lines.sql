-- Issue 46, item 6: a scan shown as the scan. The lines OCR read on each scanned page (a scanned PDF page, an
-- image, a TIFF frame), each with its box in the pixels of the page image OCR read (page_width × page_height,
-- what GET /api/documents/{id}/pages/{page}/image serves) and its confidence, in reading order, so the viewer
-- can draw the cited passage's boxes over the image. Written with the document's chunks (in the same
-- transaction, replaced on a re-ingest), at most ocr.MAX_LINES a page; gone with the document.
-- A document ingested before 0030 has none: the viewer shows its text as before.

CREATE TABLE document_ocr_lines (
    document_id  uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    page         integer NOT NULL CHECK (page >= 1),
    line_no      integer NOT NULL CHECK (line_no >= 0),
    page_width   integer NOT NULL CHECK (page_width > 0),
    page_height  integer NOT NULL CHECK (page_height > 0),
    text         text NOT NULL,
    x0           real NOT NULL,
    y0           real NOT NULL,
    x1           real NOT NULL,
    y1           real NOT NULL,
    confidence   real NOT NULL,
    PRIMARY KEY (document_id, page, line_no)
);
