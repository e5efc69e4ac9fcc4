-- Issue 21: answers that outlive their request (server/chat/runs.py), and branches (regenerate, edit).
-- A question and its answer row are written together before the model is called; the answer row is
-- 'streaming' while it is generated, with a heartbeat the running process refreshes (and its text so far).
-- A row left 'streaming' with an old heartbeat belongs to a dead process: it becomes 'incomplete'.

ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_status_check
    CHECK (status IN ('complete', 'incomplete', 'error', 'streaming'));

-- the message this one follows (NULL: the first question of the thread); siblings share a parent
ALTER TABLE messages ADD COLUMN parent_id uuid REFERENCES messages (id) ON DELETE CASCADE;
-- assistant messages: the chat model that answered
ALTER TABLE messages ADD COLUMN model text;
ALTER TABLE messages ADD COLUMN heartbeat_at timestamptz;

-- existing threads are one branch: each message follows the one before it
UPDATE messages m SET parent_id = prev.parent
FROM (
    SELECT id, lag(id) OVER (PARTITION BY thread_id ORDER BY created_at, id) AS parent FROM messages
) prev
WHERE prev.id = m.id AND prev.parent IS NOT NULL;

CREATE INDEX messages_parent_idx ON messages (parent_id);
CREATE INDEX messages_streaming_idx ON messages (thread_id) WHERE status = 'streaming';

-- the last message of the branch the thread shows (and continues); NULL: the newest message
ALTER TABLE threads ADD COLUMN active_leaf_id uuid REFERENCES messages (id) ON DELETE SET NULL;
UPDATE threads t SET active_leaf_id = (
    SELECT id FROM messages WHERE thread_id = t.id ORDER BY created_at DESC, id DESC LIMIT 1
);
