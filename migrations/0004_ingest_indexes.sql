-- Re-ingesting a path replaces the document that came from it: look it up by index, not by scanning
-- every document of the owner (quadratic over a large re-ingest).
CREATE INDEX documents_source_path_idx ON documents (owner_id, (metadata->>'source_path'));
