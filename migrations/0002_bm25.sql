-- BM25 inside Postgres: per-owner document frequencies and length statistics, kept current by
-- statement-level triggers on document_chunks (inserts, deletes and cascaded deletes alike), and each
-- chunk's length in lexeme occurrences. Chunks are never updated in place (re-ingestion deletes and inserts).

CREATE FUNCTION ragchat_token_count(tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    AS $$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest($1) $$;

ALTER TABLE document_chunks
    ADD COLUMN doc_len integer GENERATED ALWAYS AS (
        ragchat_token_count(to_tsvector('english', title || ' ' || content))
    ) STORED;

CREATE TABLE bm25_terms (
    owner_id  uuid NOT NULL,
    term      text NOT NULL,
    df        integer NOT NULL,
    PRIMARY KEY (owner_id, term)
);

CREATE TABLE bm25_stats (
    owner_id   uuid PRIMARY KEY,
    n_chunks   bigint NOT NULL,
    total_len  bigint NOT NULL
);

CREATE FUNCTION bm25_chunks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bm25_terms AS b (owner_id, term, df)
    SELECT n.owner_id, t.lexeme, count(*)::integer
    FROM new_rows n CROSS JOIN LATERAL unnest(n.search_vector) t
    GROUP BY 1, 2 ORDER BY 1, 2  -- a fixed lock order keeps concurrent workers from deadlocking
    ON CONFLICT (owner_id, term) DO UPDATE SET df = b.df + EXCLUDED.df;

    INSERT INTO bm25_stats AS s (owner_id, n_chunks, total_len)
    SELECT owner_id, count(*), coalesce(sum(doc_len), 0) FROM new_rows GROUP BY owner_id ORDER BY owner_id
    ON CONFLICT (owner_id) DO UPDATE
        SET n_chunks = s.n_chunks + EXCLUDED.n_chunks, total_len = s.total_len + EXCLUDED.total_len;
    RETURN NULL;
END $$;

CREATE FUNCTION bm25_chunks_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH gone AS (
        SELECT o.owner_id, t.lexeme AS term, count(*)::integer AS n
        FROM old_rows o CROSS JOIN LATERAL unnest(o.search_vector) t
        GROUP BY 1, 2 ORDER BY 1, 2
    )
    UPDATE bm25_terms b SET df = b.df - gone.n
    FROM gone WHERE b.owner_id = gone.owner_id AND b.term = gone.term;

    DELETE FROM bm25_terms b
    USING (SELECT DISTINCT o.owner_id, t.lexeme AS term
           FROM old_rows o CROSS JOIN LATERAL unnest(o.search_vector) t) gone
    WHERE b.owner_id = gone.owner_id AND b.term = gone.term AND b.df <= 0;

    UPDATE bm25_stats s SET n_chunks = s.n_chunks - g.n, total_len = s.total_len - g.len
    FROM (SELECT owner_id, count(*) AS n, coalesce(sum(doc_len), 0) AS len FROM old_rows GROUP BY owner_id) g
    WHERE s.owner_id = g.owner_id;
    RETURN NULL;
END $$;

CREATE TRIGGER document_chunks_bm25_insert AFTER INSERT ON document_chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chunks_inserted();
CREATE TRIGGER document_chunks_bm25_delete AFTER DELETE ON document_chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chunks_deleted();

-- Keep the stats honest for anything already stored.
INSERT INTO bm25_terms (owner_id, term, df)
SELECT c.owner_id, t.lexeme, count(*) FROM document_chunks c CROSS JOIN LATERAL unnest(c.search_vector) t
GROUP BY 1, 2;
INSERT INTO bm25_stats (owner_id, n_chunks, total_len)
SELECT owner_id, count(*), coalesce(sum(doc_len), 0) FROM document_chunks GROUP BY owner_id;
