-- Issue 29: which kind of HNSW index a space has. 'vector' is the full-size index every space had so far;
-- 'halfvec' (pgvector >= 0.8) is half the size at the same recall. At start, on pgvector >= 0.8, the app
-- rebuilds each 'vector' space's index as 'halfvec' (ragchat/vectors/indexes.py) and records it here.
ALTER TABLE embedding_spaces
    ADD COLUMN index_type text NOT NULL DEFAULT 'vector' CHECK (index_type IN ('vector', 'halfvec'));
