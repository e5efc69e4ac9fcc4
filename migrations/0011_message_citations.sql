-- Verified citations (server/chat/citations.py): the citation check of an assistant answer, as sent in the
-- `citations` SSE event ({citations: [{sentence, start, end, n, verdict, lexical, similarity}], unsupported,
-- weak, missing, judged}), so a reloaded thread shows the same marks. NULL: not checked (older messages,
-- partial answers).
ALTER TABLE messages ADD COLUMN citations jsonb;
