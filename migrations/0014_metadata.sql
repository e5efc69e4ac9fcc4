-- Metadata users set and filter on, and the LLM extraction of title, summary, topics, type, language and dates.
-- `metadata_status`: NULL (never extracted: with METADATA_EXTRACTION on, the extractor takes ready ones, newest
--   first) | pending (asked again) | running | done | failed (`metadata_error` says why; the document is ready
--   either way).
-- `metadata_extracted`: what the last extraction wrote into `metadata`; a key whose value still equals it is the
--   extractor's (a re-run replaces it), any other key is the user's (never overwritten).
ALTER TABLE documents
    ADD COLUMN metadata_status     text CHECK (metadata_status IN ('pending', 'running', 'done', 'failed')),
    ADD COLUMN metadata_error      text,
    ADD COLUMN metadata_extracted  jsonb NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN metadata_claimed_at timestamptz;
-- The extractor's queues, found without a scan: asked for (pending) or running; never extracted yet.
CREATE INDEX documents_metadata_queue_idx ON documents (metadata_claimed_at NULLS FIRST, created_at)
    WHERE metadata_status IN ('pending', 'running');
CREATE INDEX documents_metadata_new_idx ON documents (created_at DESC)
    WHERE metadata_status IS NULL AND status = 'ready';
