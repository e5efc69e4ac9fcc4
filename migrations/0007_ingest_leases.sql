-- Leases on the documents queue: a worker claims a document until `lease_until` and renews it while it works
-- (a heartbeat), so a slow document is never taken by another worker and a killed worker's document is taken
-- again once its lease runs out. `worker_id` names the holder; only the holder may store or fail the document.
ALTER TABLE documents
    ADD COLUMN lease_until timestamptz,
    ADD COLUMN worker_id   text;

-- Workers look for expired leases on every claim: only `processing` rows, by expiry.
CREATE INDEX documents_lease_idx ON documents (lease_until) WHERE status = 'processing';
