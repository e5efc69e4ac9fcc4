-- Chat history: threads and their messages. An assistant message keeps its text, the tool calls it made
-- and the exact tool results (chunks with scores, search_mode, reranked), so citations survive a reload.

CREATE TABLE threads (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    title       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX threads_owner_idx ON threads (owner_id, updated_at DESC);

CREATE TABLE messages (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    thread_id     uuid NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    owner_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role          text NOT NULL CHECK (role IN ('user', 'assistant')),
    content       text NOT NULL DEFAULT '',
    status        text NOT NULL DEFAULT 'complete' CHECK (status IN ('complete', 'incomplete', 'error')),
    tool_calls    jsonb NOT NULL DEFAULT '[]'::jsonb,
    tool_results  jsonb NOT NULL DEFAULT '[]'::jsonb,
    error         jsonb,
    usage         jsonb,
    -- clock_timestamp, not now(): two messages written in one transaction still sort in insertion order
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX messages_thread_idx ON messages (thread_id, created_at);
