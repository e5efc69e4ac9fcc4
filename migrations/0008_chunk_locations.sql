-- Where a chunk came from inside its file, beyond page and section: a transcript's time span
-- {"start_s", "end_s"}, a sheet's rows {"sheet", "row_start", "row_end"}, a slide {"slide"}, a chapter
-- {"chapter"}. NULL for formats without one and for chunks stored before this migration.
ALTER TABLE document_chunks ADD COLUMN location jsonb;
