-- Issue 29: a reader's keyword search at the owner's speed. A shared document's share group (0017) is also kept
-- on its chunk rows, so the keyword arm checks each candidate chunk with an array comparison on the row it has
-- already fetched (`share_group = ANY(reader's groups)`) instead of one bm25_document_groups probe per candidate
-- (up to KEYWORD_CANDIDATES a query: +2 ms at 100k shared chunks). NULL for a document in no collection: only
-- its owner reads it, by owner_id. The vector arm keeps the probe: rewriting vector rows on every membership
-- change would re-insert them into the HNSW graph.
--
-- Kept in the writing transaction: a BEFORE INSERT trigger sets it on new chunks of a document that is in a
-- collection (the common case of an upload into a collection); the chunk statement trigger corrects rows a
-- concurrent membership change moved in between (normally none); a membership change rewrites its documents'
-- chunk rows.

ALTER TABLE document_chunks ADD COLUMN share_group bigint;
CREATE INDEX bm25_group_collections_group_idx ON bm25_group_collections (group_id);

-- The group itself when it is shared (it has a collection), else NULL.
CREATE FUNCTION bm25_shared_group(p_group bigint) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT p_group WHERE EXISTS (SELECT 1 FROM bm25_group_collections gc WHERE gc.group_id = p_group)
$$;

CREATE FUNCTION chunk_share_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM document_collections dc WHERE dc.document_id = NEW.document_id) THEN
        NEW.share_group := bm25_shared_group(bm25_document_group(NEW.document_id, NEW.owner_id));
    ELSE
        NEW.share_group := NULL;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER document_chunks_share_group BEFORE INSERT ON document_chunks
    FOR EACH ROW EXECUTE FUNCTION chunk_share_group();

-- The two trigger functions below are 0017's, restated whole (CREATE OR REPLACE takes the whole body), each
-- with one addition at its end: the share_group correction or rewrite. Doing that in the same functions keeps
-- it in the pass that already holds each document's group, rather than in a second trigger that would look
-- the groups up again on every ingestion.
CREATE OR REPLACE FUNCTION bm25_chunks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s smallint;
    docs uuid[] := '{}';
    groups bigint[] := '{}';
    r record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows) THEN
        RETURN NULL;  -- e.g. re-ingestion's DELETE of a new document's (no) chunks
    END IF;
    s := bm25_shard();
    FOR r IN SELECT DISTINCT document_id, owner_id FROM new_rows ORDER BY document_id LOOP
        docs := docs || r.document_id;
        groups := groups || bm25_document_group(r.document_id, r.owner_id);
    END LOOP;

    INSERT INTO bm25_group_terms AS b (group_id, term, shard, df)
    SELECT m.g, v.lexeme, s, count(*)::integer
    FROM new_rows n JOIN unnest(docs, groups) AS m(doc, g) ON m.doc = n.document_id
    CROSS JOIN LATERAL unnest(n.search_vector) v
    GROUP BY 1, 2 ORDER BY 1, 2  -- a fixed lock order keeps writers sharing a shard from deadlocking
    ON CONFLICT (group_id, term, shard) DO UPDATE SET df = b.df + EXCLUDED.df;

    INSERT INTO bm25_group_stats AS t (group_id, shard, n_chunks, total_len)
    SELECT m.g, s, count(*), coalesce(sum(n.doc_len), 0)
    FROM new_rows n JOIN unnest(docs, groups) AS m(doc, g) ON m.doc = n.document_id
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (group_id, shard) DO UPDATE
        SET n_chunks = t.n_chunks + EXCLUDED.n_chunks, total_len = t.total_len + EXCLUDED.total_len;

    -- the groups are settled now (their rows locked): rows whose BEFORE trigger saw another state move
    -- (one bm25_shared_group lookup per document, not per row: this runs on every ingestion)
    UPDATE document_chunks c SET share_group = x.sg
    FROM (SELECT n.id, m.sg
          FROM new_rows n
          JOIN (SELECT u.doc, bm25_shared_group(u.g) AS sg FROM unnest(docs, groups) AS u(doc, g)) m
            ON m.doc = n.document_id
          WHERE n.share_group IS DISTINCT FROM m.sg) x
    WHERE c.id = x.id;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION bm25_membership_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s smallint;
    docs uuid[] := '{}';
    olds bigint[] := '{}';
    news bigint[] := '{}';
    g_old bigint;
    g_new bigint;
    moved bigint;
    r record;
BEGIN
    FOR r IN
        SELECT d.id, d.owner_id FROM documents d
        WHERE d.id IN (SELECT document_id FROM changed_rows)
        ORDER BY d.id  -- a deleted document (cascade) is gone here: its chunk deletes settle its counts
    LOOP
        g_old := bm25_document_group(r.id, r.owner_id);
        g_new := bm25_current_group(r.id, r.owner_id);
        IF g_new <> g_old THEN
            docs := docs || r.id;
            olds := olds || g_old;
            news := news || g_new;
        END IF;
    END LOOP;
    IF cardinality(docs) = 0 THEN
        RETURN NULL;
    END IF;
    s := bm25_shard();
    UPDATE bm25_document_groups g SET group_id = m.g_new
    FROM unnest(docs, news) AS m(doc, g_new) WHERE g.document_id = m.doc;

    INSERT INTO bm25_group_terms AS b (group_id, term, shard, df)
    SELECT x.g, x.term, s, sum(x.n)::integer
    FROM (
        SELECT u.g, v.lexeme AS term, u.sign AS n
        FROM unnest(docs, olds, news) AS m(doc, g_old, g_new)
        JOIN document_chunks c ON c.document_id = m.doc
        CROSS JOIN LATERAL unnest(c.search_vector) v
        CROSS JOIN LATERAL (VALUES (m.g_old, -1), (m.g_new, 1)) AS u(g, sign)
    ) x
    GROUP BY 1, 2 HAVING sum(x.n) <> 0 ORDER BY 1, 2
    ON CONFLICT (group_id, term, shard) DO UPDATE SET df = b.df + EXCLUDED.df;

    DELETE FROM bm25_group_terms b WHERE b.shard = s AND b.df = 0 AND b.group_id = ANY(olds || news);

    INSERT INTO bm25_group_stats AS t (group_id, shard, n_chunks, total_len)
    SELECT u.g, s, sum(u.sign), sum(u.sign * c.doc_len)
    FROM unnest(docs, olds, news) AS m(doc, g_old, g_new)
    JOIN document_chunks c ON c.document_id = m.doc
    CROSS JOIN LATERAL (VALUES (m.g_old, -1), (m.g_new, 1)) AS u(g, sign)
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (group_id, shard) DO UPDATE
        SET n_chunks = t.n_chunks + EXCLUDED.n_chunks, total_len = t.total_len + EXCLUDED.total_len;

    UPDATE document_chunks c SET share_group = x.sg
    FROM (SELECT m.doc, bm25_shared_group(m.g_new) AS sg FROM unnest(docs, news) AS m(doc, g_new)) x
    WHERE c.document_id = x.doc AND c.share_group IS DISTINCT FROM x.sg;
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved >= 500 THEN
        -- the rewritten rows' lexemes wait in the GIN index's pending list, which every keyword search scans
        -- (+15 ms a query after sharing 11k chunks): merge them now, in the sharing transaction, not later
        BEGIN
            PERFORM gin_clean_pending_list('document_chunks_search_idx'::regclass);
        EXCEPTION WHEN insufficient_privilege OR undefined_table THEN
            NULL;  -- not the index's owner (a managed database's restricted role): autovacuum will merge them
        END;
    END IF;
    PERFORM bm25_collect(olds);
    RETURN NULL;
END $$;

-- Backfill: the chunks of every document in a shared group.
UPDATE document_chunks c SET share_group = dg.group_id
FROM bm25_document_groups dg
WHERE dg.document_id = c.document_id AND bm25_shared_group(dg.group_id) IS NOT NULL;
