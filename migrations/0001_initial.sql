-- Core schema: owners, documents (one row per uploaded file or record), their raw bytes,
-- and the chunks that retrieval searches (pgvector embedding + full-text tsvector).

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE users (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- The single built-in local owner used until accounts exist.
INSERT INTO users (id, name) VALUES ('00000000-0000-0000-0000-000000000001', 'local');

CREATE TABLE documents (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    filename      text NOT NULL,
    title         text NOT NULL,
    content_type  text NOT NULL,
    byte_size     bigint NOT NULL CHECK (byte_size >= 0),
    sha256        text NOT NULL,
    status        text NOT NULL DEFAULT 'queued'
                  CHECK (status IN ('queued', 'processing', 'ready', 'failed')),
    chunks_total  integer,
    chunks_done   integer NOT NULL DEFAULT 0,
    page_count    integer,
    error         text,
    metadata      jsonb NOT NULL DEFAULT '{}'::jsonb,
    attempts      integer NOT NULL DEFAULT 0,
    locked_at     timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner_id, sha256)
);
CREATE INDEX documents_owner_idx ON documents (owner_id, created_at DESC);
CREATE INDEX documents_queued_idx ON documents (created_at) WHERE status = 'queued';
CREATE INDEX documents_metadata_idx ON documents USING gin (metadata jsonb_path_ops);

-- Raw bytes, so any worker process (on any machine) can parse a queued document and re-chunking is possible.
CREATE TABLE document_blobs (
    document_id  uuid PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
    data         bytea NOT NULL
);

CREATE TABLE document_chunks (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id      uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    owner_id         uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    chunk_index      integer NOT NULL,
    title            text NOT NULL DEFAULT '',
    content          text NOT NULL,
    page             integer,
    section          text,
    token_count      integer NOT NULL,
    content_hash     text NOT NULL,
    embedding        vector(384),
    embedding_model  text,
    search_vector    tsvector GENERATED ALWAYS AS (
                         to_tsvector('english', title || ' ' || content)
                     ) STORED,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (document_id, chunk_index)
);
CREATE INDEX document_chunks_embedding_idx ON document_chunks
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX document_chunks_search_idx ON document_chunks USING gin (search_vector);
CREATE INDEX document_chunks_owner_idx ON document_chunks (owner_id);
CREATE INDEX document_chunks_document_idx ON document_chunks (document_id);
CREATE INDEX document_chunks_hash_idx ON document_chunks (content_hash, embedding_model);
