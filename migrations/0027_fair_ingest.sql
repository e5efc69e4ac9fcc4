-- Issue 43 (fair, bounded ingestion). The claim takes turns between owners: each owner's oldest queued
-- documents come from this index (no scan of one user's whole backlog to find another user's one file).
CREATE INDEX documents_queued_owner_idx ON documents (owner_id, created_at) WHERE status = 'queued';

-- Pixels decoded for OCR per owner (OCR_USER_MEGAPIXELS_PER_DAY counts the last 24 hours of it). A row per
-- document read; kept when the document is deleted, so deleting and uploading again does not reset it.
CREATE TABLE ocr_usage (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    document_id uuid,
    pixels bigint NOT NULL CHECK (pixels >= 0),
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ocr_usage_owner_idx ON ocr_usage (owner_id, at);
