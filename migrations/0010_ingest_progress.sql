-- Honest ingestion progress and a retry backoff.
-- `progress_started_at`: when this attempt started embedding (chunks_done / elapsed gives the rate, hence an ETA).
-- `not_before`: a document queued again after a fault that may pass (the model or the database away) waits
-- until then, so a worker does not spin on it; NULL for everything else.
ALTER TABLE documents
    ADD COLUMN progress_started_at timestamptz,
    ADD COLUMN not_before          timestamptz;
