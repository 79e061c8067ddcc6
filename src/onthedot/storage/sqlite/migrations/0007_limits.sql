-- onthedot schema, version 7 (SQLite): flow control (docs/limits.md); PostgreSQL's version 10.
--
-- A limited job carries its limit keys (`limits`, a JSON array of "NAME|KEY") and the first of
-- them (`limit_key`, its home key). The ready index holds only unlimited jobs, so the claim of
-- unlimited jobs never walks a limited backlog; limited ready jobs have their own index, by
-- queue and home key, that the limited claim reads one key at a time.
ALTER TABLE onthedot_jobs ADD COLUMN limit_key TEXT;
ALTER TABLE onthedot_jobs ADD COLUMN limits TEXT;

DROP INDEX onthedot_jobs_ready;
CREATE INDEX onthedot_jobs_ready ON onthedot_jobs (queue, priority DESC, run_at, id)
    WHERE state = 'queued' AND limit_key IS NULL;
CREATE INDEX onthedot_jobs_ready_limited
    ON onthedot_jobs (queue, limit_key, priority DESC, run_at, id)
    WHERE state = 'queued' AND limit_key IS NOT NULL;
-- The running limited jobs: what the claim counts against each key's concurrency.
CREATE INDEX onthedot_jobs_limited_running ON onthedot_jobs (limit_key)
    WHERE state = 'running' AND limit_key IS NOT NULL;

-- Each limit's effective settings (the code's unless an operator overrode them).
CREATE TABLE onthedot_limits (
    name             TEXT PRIMARY KEY,
    concurrency      INTEGER,
    rate             REAL,
    burst            INTEGER,
    code_concurrency INTEGER,
    code_rate        REAL,
    code_burst       INTEGER,
    overridden       INTEGER NOT NULL DEFAULT 0,
    updated_at       REAL NOT NULL
);

-- Each limit key's token bucket and when a job of it last started (the round-robin order).
CREATE TABLE onthedot_limit_keys (
    lkey        TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    tokens      REAL,
    refilled_at REAL,
    last_start  REAL
);
