-- BM25 statistics for any reader's scope, kept per "share group", with no hot rows for concurrent writers.
--
-- A share group is every document of one owner that sits in exactly the same set of collections (none: the
-- owner's private documents). Groups partition the documents, and a reader may read a whole group or none of
-- it (it is theirs, or one of its collections has them as a member), so the reader's statistics are the sum
-- over their readable groups: exact (a document in two readable collections is in one group, counted once),
-- with nothing of what they cannot read, and no per-query scan of the shared chunks.
--
-- Every counter row also carries a shard: a writing transaction takes one of 16 shards (a transaction-level
-- advisory lock, tried from pg_backend_pid() % 16 on) and only adds to rows of its shard, so two ingestion
-- workers never wait on each other's row locks for common words. Readers sum the shards. A shard's count may
-- go negative (a delete in another shard than the insert); only the sum means anything.
--
-- Kept current by statement-level triggers in the writing transaction: chunks inserted or deleted (deletes
-- cascaded from documents included), and documents added to or removed from collections (a collection's
-- deletion cascades to document_collections), which move the document's counts from its old group to its new.

DROP TRIGGER document_chunks_bm25_insert ON document_chunks;
DROP TRIGGER document_chunks_bm25_delete ON document_chunks;
DROP FUNCTION bm25_chunks_inserted();
DROP FUNCTION bm25_chunks_deleted();
DROP TABLE bm25_terms;
DROP TABLE bm25_stats;

CREATE TABLE bm25_groups (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id  uuid NOT NULL,
    key       bytea NOT NULL,  -- sha256 of the sorted collection ids (500 uuids would not fit a btree key)
    UNIQUE (owner_id, key)
);

-- The group's collections: "which groups may this user read" is one join from collection_members.
CREATE TABLE bm25_group_collections (
    collection_id  uuid NOT NULL,
    group_id       bigint NOT NULL REFERENCES bm25_groups (id) ON DELETE CASCADE,
    PRIMARY KEY (collection_id, group_id)
);

-- Each document's group, for every document with chunks. No foreign key to documents: a document's
-- cascaded chunk deletes still find their group after the document row is gone (the row goes last). None
-- to bm25_groups either (groups are never deleted): its check would lock the group's row FOR KEY SHARE in
-- every writer's transaction, one hot row again.
CREATE TABLE bm25_document_groups (
    document_id  uuid PRIMARY KEY,
    group_id     bigint NOT NULL
);
CREATE INDEX bm25_document_groups_group_idx ON bm25_document_groups (group_id);

CREATE TABLE bm25_group_terms (
    group_id  bigint NOT NULL,
    term      text NOT NULL,
    shard     smallint NOT NULL,
    df        integer NOT NULL,
    PRIMARY KEY (group_id, term, shard)
);

CREATE TABLE bm25_group_stats (
    group_id   bigint NOT NULL,
    shard      smallint NOT NULL,
    n_chunks   bigint NOT NULL,
    total_len  bigint NOT NULL,
    PRIMARY KEY (group_id, shard)
);

-- The writing transaction's shard: the first of 16 whose advisory lock it gets (kept for the transaction).
CREATE FUNCTION bm25_shard() RETURNS smallint LANGUAGE plpgsql AS $$
DECLARE
    held text := current_setting('ragchat.bm25_shard', true);
    home integer := pg_backend_pid() % 16;
    s integer;
BEGIN
    IF held IS NOT NULL AND held <> '' THEN
        RETURN held::smallint;
    END IF;
    FOR i IN 0..15 LOOP
        s := (home + i) % 16;
        IF pg_try_advisory_xact_lock(hashtext('ragchat:bm25-shard'), s) THEN
            PERFORM set_config('ragchat.bm25_shard', s::text, true);
            RETURN s;
        END IF;
    END LOOP;
    RETURN home;  -- more than 16 concurrent writers: share a shard (row locks, still correct)
END $$;

-- The group of (owner, collections), created on first use. `collections` sorted and distinct.
-- A group's advisory lock key: its users hold it shared (writers never wait on each other), and an empty
-- group is only collected under it exclusively (never while a transaction is putting a document into it).
CREATE FUNCTION bm25_group_lock_key(p_owner uuid, p_key bytea) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
    SELECT ('x' || substr(encode(sha256(convert_to(p_owner::text, 'UTF8') || p_key), 'hex'), 1, 8))::bit(32)::integer
$$;

CREATE FUNCTION bm25_group(p_owner uuid, p_collections uuid[]) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    k bytea := sha256(convert_to(array_to_string(p_collections, ','), 'UTF8'));
    g bigint;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtext('ragchat:bm25-group'), bm25_group_lock_key(p_owner, k));
    SELECT id INTO g FROM bm25_groups WHERE owner_id = p_owner AND key = k;
    IF g IS NOT NULL THEN
        RETURN g;
    END IF;
    INSERT INTO bm25_groups (owner_id, key) VALUES (p_owner, k) ON CONFLICT (owner_id, key) DO NOTHING
        RETURNING id INTO g;
    IF g IS NULL THEN  -- created by a concurrent transaction (committed by now: the insert waited for it)
        SELECT id INTO g FROM bm25_groups WHERE owner_id = p_owner AND key = k;
    ELSE
        INSERT INTO bm25_group_collections (collection_id, group_id) SELECT unnest(p_collections), g;
    END IF;
    RETURN g;
END $$;

-- Groups left without documents go (a document moved through 500 collections one by one must not leave
-- 500 groups whose collection rows every reader's lookup joins): only those no transaction is using.
CREATE FUNCTION bm25_collect(p_groups bigint[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT g.id, g.owner_id, g.key FROM bm25_groups g WHERE g.id = ANY(p_groups) ORDER BY g.id LOOP
        IF NOT EXISTS (SELECT 1 FROM bm25_document_groups WHERE group_id = r.id)
           AND pg_try_advisory_xact_lock(hashtext('ragchat:bm25-group'), bm25_group_lock_key(r.owner_id, r.key))
           AND NOT EXISTS (SELECT 1 FROM bm25_document_groups WHERE group_id = r.id) THEN
            DELETE FROM bm25_group_terms WHERE group_id = r.id;
            DELETE FROM bm25_group_stats WHERE group_id = r.id;
            DELETE FROM bm25_groups WHERE id = r.id;  -- its collection rows cascade
        END IF;
    END LOOP;
END $$;

-- The group a document's current collections put it in.
CREATE FUNCTION bm25_current_group(p_document uuid, p_owner uuid) RETURNS bigint LANGUAGE sql AS $$
    SELECT bm25_group(p_owner, ARRAY(
        SELECT DISTINCT collection_id FROM document_collections WHERE document_id = p_document ORDER BY 1))
$$;

-- The document's recorded group, its row locked until commit: chunk writes and membership changes of one
-- document take turns, so a move never misses chunks written concurrently.
CREATE FUNCTION bm25_document_group(p_document uuid, p_owner uuid) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    g bigint;
BEGIN
    -- a new document (the common case: ingestion) inserts its row, which stays locked until commit
    INSERT INTO bm25_document_groups (document_id, group_id)
        VALUES (p_document, bm25_current_group(p_document, p_owner))
        ON CONFLICT (document_id) DO NOTHING
        RETURNING group_id INTO g;
    IF g IS NULL THEN  -- it had one (or a concurrent transaction, committed by now, made it)
        SELECT group_id INTO g FROM bm25_document_groups WHERE document_id = p_document FOR UPDATE;
    END IF;
    RETURN g;
END $$;

CREATE FUNCTION bm25_chunks_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
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
    RETURN NULL;
END $$;

CREATE FUNCTION bm25_chunks_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s smallint;
    docs uuid[] := '{}';
    groups bigint[] := '{}';
    r record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM old_rows) THEN
        RETURN NULL;  -- e.g. re-ingestion's DELETE of a new document's (no) chunks
    END IF;
    s := bm25_shard();
    FOR r IN SELECT DISTINCT document_id, owner_id FROM old_rows ORDER BY document_id LOOP
        docs := docs || r.document_id;
        groups := groups || bm25_document_group(r.document_id, r.owner_id);
    END LOOP;

    INSERT INTO bm25_group_terms AS b (group_id, term, shard, df)
    SELECT m.g, v.lexeme, s, -count(*)::integer
    FROM old_rows o JOIN unnest(docs, groups) AS m(doc, g) ON m.doc = o.document_id
    CROSS JOIN LATERAL unnest(o.search_vector) v
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (group_id, term, shard) DO UPDATE SET df = b.df + EXCLUDED.df;

    DELETE FROM bm25_group_terms b
    USING (SELECT DISTINCT m.g, v.lexeme
           FROM old_rows o JOIN unnest(docs, groups) AS m(doc, g) ON m.doc = o.document_id
           CROSS JOIN LATERAL unnest(o.search_vector) v) gone
    WHERE b.group_id = gone.g AND b.term = gone.lexeme AND b.shard = s AND b.df = 0;

    INSERT INTO bm25_group_stats AS t (group_id, shard, n_chunks, total_len)
    SELECT m.g, s, -count(*), -coalesce(sum(o.doc_len), 0)
    FROM old_rows o JOIN unnest(docs, groups) AS m(doc, g) ON m.doc = o.document_id
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (group_id, shard) DO UPDATE
        SET n_chunks = t.n_chunks + EXCLUDED.n_chunks, total_len = t.total_len + EXCLUDED.total_len;

    -- a deleted document's chunks went first (its cascades run before the row's own statement ends)
    DELETE FROM bm25_document_groups g USING unnest(docs) d(id)
    WHERE g.document_id = d.id AND NOT EXISTS (SELECT 1 FROM documents x WHERE x.id = d.id);
    PERFORM bm25_collect(groups);
    RETURN NULL;
END $$;

-- Documents added to or removed from collections: each moves, with its chunks' counts, to its new group.
CREATE FUNCTION bm25_membership_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s smallint;
    docs uuid[] := '{}';
    olds bigint[] := '{}';
    news bigint[] := '{}';
    g_old bigint;
    g_new bigint;
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
    PERFORM bm25_collect(olds);
    RETURN NULL;
END $$;

CREATE TRIGGER document_chunks_bm25_insert AFTER INSERT ON document_chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chunks_inserted();
CREATE TRIGGER document_chunks_bm25_delete AFTER DELETE ON document_chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_chunks_deleted();
CREATE TRIGGER document_collections_bm25_insert AFTER INSERT ON document_collections
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_membership_changed();
CREATE TRIGGER document_collections_bm25_delete AFTER DELETE ON document_collections
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_membership_changed();
-- no trigger on UPDATE: document_collections rows are inserted and deleted, never updated

-- Backfill: every document with chunks gets its group; the counts go to shard 0.
INSERT INTO bm25_document_groups (document_id, group_id)
SELECT d.id, bm25_current_group(d.id, d.owner_id) FROM documents d
WHERE EXISTS (SELECT 1 FROM document_chunks c WHERE c.document_id = d.id);

INSERT INTO bm25_group_terms (group_id, term, shard, df)
SELECT m.group_id, v.lexeme, 0, count(*)
FROM document_chunks c JOIN bm25_document_groups m ON m.document_id = c.document_id
CROSS JOIN LATERAL unnest(c.search_vector) v
GROUP BY 1, 2;

INSERT INTO bm25_group_stats (group_id, shard, n_chunks, total_len)
SELECT m.group_id, 0, count(*), coalesce(sum(c.doc_len), 0)
FROM document_chunks c JOIN bm25_document_groups m ON m.document_id = c.document_id
GROUP BY 1;
