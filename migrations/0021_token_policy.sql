-- Token policy (issue 33): personal API tokens may expire. An expired token is refused (401) and listed as
-- expired; a NULL expiry never expires (tokens made before this migration keep working).
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
