-- Issue 21: thumbs up/down with a note on answers, per-user settings, and per-thread retrieval choices.

-- One rating per message (by the message's owner); exported with GET /api/feedback/export.
CREATE TABLE message_feedback (
    message_id  uuid PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    owner_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    rating      text CHECK (rating IN ('up', 'down')),
    note        text CHECK (char_length(note) <= 2000),
    updated_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX message_feedback_owner_idx ON message_feedback (owner_id, updated_at);

-- What a user changed on the Settings page ({chat_model, search_mode, rerank, chunk_strategy,
-- metadata_extraction, theme}); a key that is absent takes the environment's default.
CREATE TABLE user_settings (
    user_id     uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    settings    jsonb NOT NULL DEFAULT '{}'::jsonb,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The chat's retrieval controls saved per thread ({document_ids, collection_ids, search_mode, rerank, model}).
ALTER TABLE threads ADD COLUMN settings jsonb NOT NULL DEFAULT '{}'::jsonb;
