-- onthedot schema, version 4 (SQLite): job counts per (queue, name, state), kept by triggers
-- in the transactions that change the jobs, so queue statistics never count the jobs table.
-- One row per group, updated in place: SQLite has a single writer, so a shared row costs no
-- contention.
CREATE TABLE onthedot_job_counts (
    queue TEXT NOT NULL,
    name  TEXT NOT NULL,
    state TEXT NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (queue, name, state)
) WITHOUT ROWID;

CREATE TRIGGER onthedot_jobs_count_insert AFTER INSERT ON onthedot_jobs
BEGIN
    INSERT INTO onthedot_job_counts (queue, name, state, n)
    VALUES (NEW.queue, NEW.name, NEW.state, 1)
    ON CONFLICT (queue, name, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER onthedot_jobs_count_update AFTER UPDATE OF queue, name, state ON onthedot_jobs
WHEN OLD.state IS NOT NEW.state OR OLD.queue IS NOT NEW.queue OR OLD.name IS NOT NEW.name
BEGIN
    UPDATE onthedot_job_counts SET n = n - 1
    WHERE queue = OLD.queue AND name = OLD.name AND state = OLD.state;
    INSERT INTO onthedot_job_counts (queue, name, state, n)
    VALUES (NEW.queue, NEW.name, NEW.state, 1)
    ON CONFLICT (queue, name, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER onthedot_jobs_count_delete AFTER DELETE ON onthedot_jobs
BEGIN
    UPDATE onthedot_job_counts SET n = n - 1
    WHERE queue = OLD.queue AND name = OLD.name AND state = OLD.state;
END;

INSERT INTO onthedot_job_counts (queue, name, state, n)
SELECT queue, name, state, count(*) FROM onthedot_jobs GROUP BY queue, name, state;

-- Queued jobs by queue and run_at: the oldest queued job of a queue (one index descent) and
-- those not yet due (a range over them), which the statistics read from the jobs themselves.
CREATE INDEX onthedot_jobs_queued_at ON onthedot_jobs (queue, run_at) WHERE state = 'queued';
