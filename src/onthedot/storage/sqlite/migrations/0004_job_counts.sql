-- onthedot schema, version 4 (SQLite): job counts per (queue, name, state, priority), kept by
-- triggers in the transactions that change the jobs, so queue statistics never count the jobs
-- table. The priority is part of a group so that the statistics can read the queued jobs not
-- yet due through the ready index, by its (queue, priority) prefix.
-- One row per group, updated in place: SQLite has a single writer, so a shared row costs no
-- contention.
CREATE TABLE onthedot_job_counts (
    queue TEXT NOT NULL,
    name  TEXT NOT NULL,
    state TEXT NOT NULL,
    priority INTEGER NOT NULL,
    n     INTEGER NOT NULL,
    PRIMARY KEY (queue, name, state, priority)
) WITHOUT ROWID;

CREATE TRIGGER onthedot_jobs_count_insert AFTER INSERT ON onthedot_jobs
BEGIN
    INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
    VALUES (NEW.queue, NEW.name, NEW.state, NEW.priority, 1)
    ON CONFLICT (queue, name, state, priority) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER onthedot_jobs_count_update
AFTER UPDATE OF queue, name, state, priority ON onthedot_jobs
WHEN OLD.state IS NOT NEW.state OR OLD.queue IS NOT NEW.queue OR OLD.name IS NOT NEW.name
     OR OLD.priority IS NOT NEW.priority
BEGIN
    -- One statement for both groups: each statement a trigger runs costs more than a row.
    INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
    VALUES (OLD.queue, OLD.name, OLD.state, OLD.priority, -1),
           (NEW.queue, NEW.name, NEW.state, NEW.priority, 1)
    ON CONFLICT (queue, name, state, priority) DO UPDATE SET n = n + excluded.n;
END;

CREATE TRIGGER onthedot_jobs_count_delete AFTER DELETE ON onthedot_jobs
BEGIN
    UPDATE onthedot_job_counts SET n = n - 1
    WHERE queue = OLD.queue AND name = OLD.name AND state = OLD.state
      AND priority = OLD.priority;
END;

INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
SELECT queue, name, state, priority, count(*) FROM onthedot_jobs
GROUP BY queue, name, state, priority;
