-- Issue 43, item 9: the audit log only grows, whoever the app's role is.
--
-- 0020 let a DELETE through whenever the transaction had set `ragchat.audit_purge_before` (any role can set a
-- custom setting: `SET LOCAL` was a switch for everyone), and `INSERT ... OVERRIDING SYSTEM VALUE` took any id
-- and time. Now:
--   * ids and times are the database's: a trigger gives every new row the next id and clock_timestamp(),
--     whatever the INSERT said (the identity becomes a plain sequence the trigger alone draws from);
--   * a DELETE passes only inside audit_purge(), which runs as the table's owner (SECURITY DEFINER) and first
--     writes an `audit.purge` row naming its transaction and cutoff: the guard lets a row go only when the
--     current role is the table's owner AND such a row of this transaction exists AND the row is older than
--     its cutoff (at least a day old). A role that is not the owner (an app role with INSERT/SELECT/UPDATE/
--     DELETE) can run the purge but cannot delete a row itself, nor forge the marker (it is not the owner);
--   * both triggers fire ALWAYS, also under `session_replication_role = replica` (a setting, not a schema
--     change).
-- The owner (and any superuser) can still drop or disable a trigger or TRUNCATE: that is a schema change no
-- trigger can refuse (docs/notes/audit.md). Existing rows are kept as they are.

-- ids: from a sequence the stamp trigger alone draws from (an identity column accepts OVERRIDING SYSTEM VALUE)
ALTER TABLE audit_log ALTER COLUMN id DROP IDENTITY IF EXISTS;
CREATE SEQUENCE audit_log_id_seq OWNED BY audit_log.id;
SELECT setval('audit_log_id_seq', greatest(coalesce((SELECT max(id) FROM audit_log), 0), 0) + 1, false);
REVOKE ALL ON SEQUENCE audit_log_id_seq FROM PUBLIC;
REVOKE TRUNCATE ON audit_log FROM PUBLIC;

-- SECURITY DEFINER: a role allowed to INSERT needs no right on the sequence (as with the identity before)
CREATE FUNCTION audit_log_stamp() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    NEW.id := nextval('audit_log_id_seq');
    NEW.at := clock_timestamp();
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_log_stamp BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_stamp();

-- The guard: UPDATE always refused; DELETE only of rows older than the cutoff of an `audit.purge` row written in
-- this transaction, by the table's owner (in practice: inside audit_purge(), a SECURITY DEFINER function).
CREATE OR REPLACE FUNCTION audit_log_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    owner name;
    cutoff timestamptz;
BEGIN
    IF TG_OP = 'DELETE' THEN
        SELECT pg_catalog.pg_get_userbyid(c.relowner) INTO owner FROM pg_catalog.pg_class c WHERE c.oid = TG_RELID;
        IF current_user = owner THEN
            SELECT (l.details ->> 'cutoff')::timestamptz INTO cutoff
              FROM audit_log l
             WHERE l.action = 'audit.purge' AND l.at >= now()
               AND l.details ->> 'xact' = pg_catalog.pg_current_xact_id()::text
             ORDER BY l.at DESC LIMIT 1;
            IF cutoff IS NOT NULL AND cutoff <= now() - interval '1 day' AND OLD.at < cutoff THEN
                RETURN OLD;
            END IF;
        END IF;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_append_only;
ALTER TABLE audit_log ENABLE ALWAYS TRIGGER audit_log_stamp;

-- Retention: delete up to `batch` rows older than `keep_days` days (at least 1), after recording the purge itself
-- (who ran it, the cutoff, how many rows); returns how many went. One purge at a time (a transaction lock).
CREATE OR REPLACE FUNCTION audit_purge(keep_days integer, batch integer DEFAULT 10000) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    cutoff timestamptz;
    doomed bigint[];
    removed bigint;
BEGIN
    IF keep_days IS NULL OR keep_days < 1 THEN
        RAISE EXCEPTION 'audit_purge keeps at least one day' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('ragchat:audit-purge'));
    cutoff := now() - make_interval(days => keep_days);
    SELECT array_agg(s.id) INTO doomed FROM (
        SELECT l.id FROM audit_log l WHERE l.at < cutoff ORDER BY l.at LIMIT greatest(batch, 1)
    ) s;
    IF doomed IS NULL THEN
        RETURN 0;
    END IF;
    INSERT INTO audit_log (actor_id, actor_name, action, target_type, details)
    VALUES (NULL, 'system', 'audit.purge', 'audit_log', jsonb_build_object(
        'xact', pg_catalog.pg_current_xact_id()::text, 'cutoff', cutoff, 'keep_days', keep_days,
        'removed', cardinality(doomed), 'role', session_user));
    DELETE FROM audit_log WHERE id = ANY(doomed);
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END
$$;

-- The functions run with a fixed search_path (this schema first after the catalog, temporary objects last: a
-- caller's temporary table or sequence cannot stand in for ours), and belong to the table's owner (the role
-- the guard checks), whoever applies this migration.
DO $$
DECLARE
    schema_name text := (SELECT c.relnamespace::regnamespace::text FROM pg_class c WHERE c.oid = 'audit_log'::regclass);
    owner_name text := (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = 'audit_log'::regclass);
    path text;
BEGIN
    path := format('pg_catalog, %s, pg_temp', schema_name);
    EXECUTE format('ALTER FUNCTION audit_log_stamp() SET search_path = %s', path);
    EXECUTE format('ALTER FUNCTION audit_log_guard() SET search_path = %s', path);
    EXECUTE format('ALTER FUNCTION audit_purge(integer, integer) SET search_path = %s', path);
    EXECUTE format('ALTER FUNCTION audit_log_stamp() OWNER TO %I', owner_name);
    EXECUTE format('ALTER FUNCTION audit_log_guard() OWNER TO %I', owner_name);
    EXECUTE format('ALTER FUNCTION audit_purge(integer, integer) OWNER TO %I', owner_name);
END
$$;
