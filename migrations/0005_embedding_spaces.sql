-- Embedding spaces: every stored vector belongs to the space of the model that made it. A space's vectors
-- live in chunk_embeddings with a partial HNSW index of their own, cast to the space's dimension, so a
-- model switch builds the new space beside the active one (state 'building'), then flips states in one
-- transaction and drops the old rows and index (see server/vectors/).

CREATE TABLE embedding_spaces (
    id            integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    provider      text NOT NULL,
    model         text NOT NULL,
    dim           integer NOT NULL CHECK (dim BETWEEN 1 AND 2000),  -- pgvector 0.6's HNSW limit
    state         text NOT NULL CHECK (state IN ('active', 'building', 'retired')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    activated_at  timestamptz,
    retired_at    timestamptz
);
CREATE UNIQUE INDEX embedding_spaces_one_active ON embedding_spaces ((true)) WHERE state = 'active';
CREATE UNIQUE INDEX embedding_spaces_one_building ON embedding_spaces ((true)) WHERE state = 'building';

CREATE TABLE chunk_embeddings (
    space_id     integer NOT NULL REFERENCES embedding_spaces (id) ON DELETE CASCADE,
    chunk_id     bigint NOT NULL REFERENCES document_chunks (id) ON DELETE CASCADE,
    document_id  uuid NOT NULL,
    owner_id     uuid NOT NULL,
    content_hash text NOT NULL,
    embedding    vector NOT NULL,
    PRIMARY KEY (space_id, chunk_id)
);
CREATE INDEX chunk_embeddings_chunk_idx ON chunk_embeddings (chunk_id);
CREATE INDEX chunk_embeddings_hash_idx ON chunk_embeddings (space_id, owner_id, content_hash);

-- Vectors already stored move into a space for the model that made them (MiniLM, 384 dims).
DO $$
DECLARE
    sid integer;
    model_name text;
BEGIN
    SELECT embedding_model INTO model_name FROM document_chunks WHERE embedding IS NOT NULL LIMIT 1;
    IF model_name IS NOT NULL THEN
        INSERT INTO embedding_spaces (provider, model, dim, state, activated_at)
        VALUES ('sentence-transformers', model_name, 384, 'active', now()) RETURNING id INTO sid;
        INSERT INTO chunk_embeddings (space_id, chunk_id, document_id, owner_id, content_hash, embedding)
        SELECT sid, id, document_id, owner_id, content_hash, embedding FROM document_chunks
        WHERE embedding IS NOT NULL;
        EXECUTE format(
            'CREATE INDEX chunk_embeddings_hnsw_%s ON chunk_embeddings USING hnsw ((embedding::vector(384)) '
            'vector_cosine_ops) WITH (m = 16, ef_construction = 64) WHERE space_id = %s', sid, sid);
    END IF;
END $$;

DROP INDEX IF EXISTS document_chunks_embedding_idx;
DROP INDEX IF EXISTS document_chunks_hash_idx;
ALTER TABLE document_chunks DROP COLUMN embedding, DROP COLUMN embedding_model;
CREATE INDEX document_chunks_hash_idx ON document_chunks (owner_id, content_hash);
