-- Evaluation runs kept for comparison: what was measured (dataset, config), the scores (results), and whether
-- the corpus was only partly ingested (`partial`, scored anyway with --allow-partial).
-- `status`: a run started from the web page runs in the background: running -> done | failed (`notes` says why).
CREATE TABLE eval_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    dataset     text NOT NULL,
    config      jsonb NOT NULL DEFAULT '{}'::jsonb,
    results     jsonb NOT NULL DEFAULT '{}'::jsonb,
    partial     boolean NOT NULL DEFAULT false,
    notes       text NOT NULL DEFAULT '',
    status      text NOT NULL DEFAULT 'done' CHECK (status IN ('running', 'done', 'failed')),
    progress    jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX eval_runs_owner_idx ON eval_runs (owner_id, created_at DESC);
