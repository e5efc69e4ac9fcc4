-- Issue 46, item 3: how fast each chat model reads and writes on this machine, kept across restarts. The
-- provider's SpeedBook (providers/llm/speed.py) measures every streamed call; chat/store/speeds.py restores
-- these figures when the server starts (so the first answer after a restart already shows "about 40 s" and
-- gets a first-token allowance that fits a slow CPU model) and saves them when they moved. Every server
-- process writes its own smoothed figures; the last write wins, which is what a smoothed figure is for.

CREATE TABLE llm_speeds (
    model          text PRIMARY KEY CHECK (length(model) BETWEEN 1 AND 200),
    prompt_tps     double precision CHECK (prompt_tps > 0),
    gen_tps        double precision CHECK (gen_tps > 0),
    answer_tokens  double precision CHECK (answer_tokens > 0),
    samples        integer NOT NULL DEFAULT 0 CHECK (samples >= 0),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
