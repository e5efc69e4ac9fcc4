-- Accounts: users with argon2 password hashes, sessions and personal API tokens (both stored as SHA-256 of
-- a random secret), collections shared with users, and rate-limit counters shared by every server process.

ALTER TABLE users
    ADD COLUMN username       text,
    ADD COLUMN password_hash  text,
    ADD COLUMN is_admin       boolean NOT NULL DEFAULT false,
    ADD COLUMN disabled       boolean NOT NULL DEFAULT false,
    ADD COLUMN updated_at     timestamptz NOT NULL DEFAULT now();
-- The built-in local owner (AUTH=off, and the owner of everything stored before accounts existed) is an
-- admin with no password: the first account created on first visit takes it over, data and all.
UPDATE users SET is_admin = true WHERE id = '00000000-0000-0000-0000-000000000001';
CREATE UNIQUE INDEX users_username_idx ON users (lower(username)) WHERE username IS NOT NULL;

CREATE TABLE sessions (
    token_hash    bytea PRIMARY KEY,
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    user_agent    text NOT NULL DEFAULT '',
    ip            text NOT NULL DEFAULT ''
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
CREATE INDEX sessions_expires_idx ON sessions (expires_at);

CREATE TABLE api_tokens (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name          text NOT NULL,
    prefix        text NOT NULL,
    token_hash    bytea NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, created_at DESC);

CREATE TABLE collections (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner_id, name)
);

-- Everyone with access, the owner included (role 'owner'), so "what may this user read" is one join.
CREATE TABLE collection_members (
    collection_id  uuid NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role           text NOT NULL CHECK (role IN ('owner', 'write', 'read')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, user_id)
);
CREATE INDEX collection_members_user_idx ON collection_members (user_id, collection_id);

CREATE TABLE document_collections (
    collection_id  uuid NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    document_id    uuid NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    added_by       uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, document_id)
);
CREATE INDEX document_collections_document_idx ON document_collections (document_id);

-- Fixed-window counters: key (e.g. 'chat:user:<id>'), window start; one upsert per request.
CREATE UNLOGGED TABLE rate_limits (
    key           text NOT NULL,
    window_start  timestamptz NOT NULL,
    count         integer NOT NULL,
    PRIMARY KEY (key, window_start)
);
