-- Issue 42: documents in other languages. Each chunk is analysed with its document's Postgres text-search
-- configuration (`german`, `spanish`, …, `simple` when no stemmer fits), detected at ingest; queries are analysed
-- with every configuration present in the reader's scope (retrieval/keyword.py).
--
-- Upgrade without rewriting the chunks: the new columns default to 'english' (a constant default: no table
-- rewrite), and the two generated columns become plain columns that keep their stored values (DROP EXPRESSION
-- changes the catalog only for a STORED column), kept from now on by a BEFORE trigger that computes exactly what
-- the generated expressions computed, with the row's own configuration. An English document keeps its index.

ALTER TABLE documents
    ADD COLUMN language text,  -- ISO 639-1 code the detector named (NULL: not detected, e.g. before 0029)
    ADD COLUMN text_search_config regconfig NOT NULL DEFAULT 'english';

ALTER TABLE document_chunks ADD COLUMN text_search_config regconfig NOT NULL DEFAULT 'english';
ALTER TABLE document_chunks ALTER COLUMN search_vector DROP EXPRESSION;
ALTER TABLE document_chunks ALTER COLUMN doc_len DROP EXPRESSION;

CREATE FUNCTION chunk_search_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_vector := to_tsvector(NEW.text_search_config, NEW.title || ' ' || NEW.content);
    NEW.doc_len := ragchat_token_count(NEW.search_vector);
    RETURN NEW;
END $$;

-- BEFORE triggers run in name order: this one needs nothing the share-group trigger sets, nor the reverse.
-- The BM25 statement triggers (AFTER) read search_vector and doc_len of the transition rows, set here.
CREATE TRIGGER document_chunks_search_vector
    BEFORE INSERT OR UPDATE OF title, content, text_search_config ON document_chunks
    FOR EACH ROW EXECUTE FUNCTION chunk_search_vector();

-- Which configurations an owner's chunks use: the keyword arm analyses a query with those of the owners whose
-- chunks the reader may search (own + shared groups' owners), so an English-only scope costs what it did. Kept
-- by an AFTER INSERT statement trigger; never shrunk on delete (a configuration left over only adds a query
-- analysis whose lexemes match nothing: statistics come from bm25_group_terms, never from here).
CREATE TABLE bm25_owner_configs (
    owner_id  uuid NOT NULL,
    config    regconfig NOT NULL,
    PRIMARY KEY (owner_id, config)
);

CREATE FUNCTION bm25_configs_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bm25_owner_configs (owner_id, config)
    SELECT DISTINCT n.owner_id, n.text_search_config FROM new_rows n
    WHERE NOT EXISTS (
        SELECT 1 FROM bm25_owner_configs o WHERE o.owner_id = n.owner_id AND o.config = n.text_search_config
    )
    ORDER BY 1, 2
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER document_chunks_configs AFTER INSERT ON document_chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bm25_configs_inserted();

-- Every owner with chunks today has English ones (the only configuration before 0029): one pass over the
-- groups, not the chunks.
INSERT INTO bm25_owner_configs (owner_id, config)
SELECT DISTINCT g.owner_id, 'english'::regconfig FROM bm25_groups g
ON CONFLICT DO NOTHING;
