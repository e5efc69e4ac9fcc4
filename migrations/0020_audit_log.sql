-- Issue 33: the audit log. Append-only: rows are inserted in the same transaction as the action they record
-- (server/ragchat/audit/), read by admins (GET /api/admin/audit), and removed only by audit_purge() once they
-- are older than AUDIT_RETENTION_DAYS.
--
-- No foreign keys: a row outlives the user, document or collection it names (a deleted user's sign-ins stay),
-- and ON DELETE SET NULL would be an UPDATE, which the guard below refuses.
CREATE TABLE audit_log (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_id     uuid,                                  -- null: a failed sign-in, or the server's own CLI
    actor_name   text NOT NULL CHECK (char_length(actor_name) <= 200),
    client       text CHECK (char_length(client) <= 100),  -- the client's address (behind TRUSTED_PROXIES)
    action       text NOT NULL CHECK (action ~ '^[a-z_]{1,40}\.[a-z_]{1,40}$'),
    target_type  text CHECK (char_length(target_type) <= 40),
    target_id    text CHECK (char_length(target_id) <= 200),
    details      jsonb NOT NULL DEFAULT '{}'::jsonb,
    request_id   text CHECK (char_length(request_id) <= 200)
);
-- newest first by (at, id) (the keyset); each filter has an index in that order, so a filter and a time range
-- together are one index range, however deep the page
CREATE INDEX audit_log_at_idx ON audit_log (at, id);
CREATE INDEX audit_log_actor_idx ON audit_log (actor_id, at, id);
CREATE INDEX audit_log_actor_name_idx ON audit_log (lower(actor_name), at, id);
CREATE INDEX audit_log_action_idx ON audit_log (action, at, id);
CREATE INDEX audit_log_target_idx ON audit_log (target_type, target_id, at, id);

-- The guard: UPDATE is always refused; DELETE only of rows older than the cutoff audit_purge() sets for its own
-- transaction. (TRUNCATE and dropping the trigger need the table's owner: see docs/notes/audit.md.)
CREATE FUNCTION audit_log_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    cutoff text := current_setting('ragchat.audit_purge_before', true);
BEGIN
    IF TG_OP = 'DELETE' AND coalesce(cutoff, '') <> '' AND OLD.at < cutoff::timestamptz THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_guard();

-- Retention: delete up to `batch` rows older than `keep_days` days; returns how many went.
CREATE FUNCTION audit_purge(keep_days integer, batch integer DEFAULT 10000) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    cutoff timestamptz;
    removed bigint;
BEGIN
    IF keep_days IS NULL OR keep_days < 1 THEN
        RAISE EXCEPTION 'audit_purge keeps at least one day' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    cutoff := now() - make_interval(days => keep_days);
    PERFORM set_config('ragchat.audit_purge_before', cutoff::text, true);
    DELETE FROM audit_log WHERE id IN (
        SELECT id FROM audit_log WHERE at < cutoff ORDER BY at LIMIT greatest(batch, 1)
    );
    GET DIAGNOSTICS removed = ROW_COUNT;
    PERFORM set_config('ragchat.audit_purge_before', '', true);
    RETURN removed;
END
$$;
