-- How a document is chunked: the strategy requested (auto | line | sentence | semantic) and the one used, the
-- token budget, the overlap and why (auto's routing). Set at upload / `ingest --chunk` / re-chunk with the
-- request ({"requested", "tokens"}), completed by the ingestion worker when it stores the chunks.
ALTER TABLE documents ADD COLUMN chunking jsonb;
