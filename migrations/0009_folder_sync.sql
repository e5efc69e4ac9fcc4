-- Folder sync (`ragchat sync DIR`): the folders an owner mirrors into their library, and what each file was
-- when last seen, so a second run only hashes files whose size or mtime changed and a restart resumes.

CREATE TABLE sync_roots (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    root_path     text NOT NULL,  -- absolute, symlinks resolved
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_scan_at  timestamptz,
    UNIQUE (owner_id, root_path)
);

-- One row per synced file. `document_id` is the document holding its content (several identical files share
-- one: documents are unique per owner and sha256); NULL once that document was deleted some other way (the
-- next change to the file registers it again).
CREATE TABLE sync_files (
    root_id      uuid NOT NULL REFERENCES sync_roots (id) ON DELETE CASCADE,
    rel_path     text NOT NULL,
    size         bigint NOT NULL CHECK (size >= 0),
    mtime_ns     bigint NOT NULL,
    sha256       text NOT NULL,
    document_id  uuid REFERENCES documents (id) ON DELETE SET NULL,
    synced_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (root_id, rel_path)
);
CREATE INDEX sync_files_sha256_idx ON sync_files (root_id, sha256);
CREATE INDEX sync_files_document_idx ON sync_files (document_id) WHERE document_id IS NOT NULL;
