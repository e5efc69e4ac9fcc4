-- Token policy (issue 33): personal API tokens may expire. An expired token is refused (401) and listed as
-- expired; a NULL expiry never expires (tokens made before this migration keep working).
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;

-- Failed logins (issue 33): one row per (username, client address) and one per username. The pair's row holds
-- the time before which that address may not try that name again (a delay that doubles per failure); the
-- username's row drives a global slow-down of at most a few seconds, so nobody can lock the owner out.
-- UNLOGGED like rate_limits: counters, lost on a crash, shared by every server process.
CREATE UNLOGGED TABLE login_failures (
    key              text PRIMARY KEY,
    failures         integer NOT NULL,
    last_failure_at  timestamptz NOT NULL,
    next_at          timestamptz NOT NULL
);
CREATE INDEX login_failures_last_idx ON login_failures (last_failure_at);
