-- onthedot schema, version 6 (SQLite): the same as PostgreSQL's version 9 (docs/retention.md).
CREATE INDEX onthedot_jobs_done ON onthedot_jobs (name, state, finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');

-- onthedot_jobs_list: the operator's job lists (web admin, `onthedot jobs list`) of a queue
-- and/or states, newest first, one id-ordered range per (queue, state) merged by id
-- (storage/sql/reads.py). Over every row: a claim and a finish each add an entry.
CREATE INDEX onthedot_jobs_list ON onthedot_jobs (queue, state, id);

-- onthedot_job_minutes: jobs finished per (minute, final state), as PostgreSQL's version 9
-- (minute: epoch seconds), one row per group updated in place by row triggers.
CREATE TABLE onthedot_job_minutes (
    minute INTEGER NOT NULL,
    state  TEXT NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (minute, state)
) WITHOUT ROWID;
-- The same index as PostgreSQL's (which has no primary key on the append-only table).
CREATE INDEX onthedot_job_minutes_minute ON onthedot_job_minutes (minute);

CREATE TRIGGER onthedot_jobs_minute_insert AFTER INSERT ON onthedot_jobs
WHEN NEW.state IN ('succeeded', 'failed', 'cancelled') AND NEW.finished_at IS NOT NULL
BEGIN
    INSERT INTO onthedot_job_minutes (minute, state, n)
    VALUES (CAST(NEW.finished_at / 60 AS INTEGER) * 60, NEW.state, 1)
    ON CONFLICT (minute, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER onthedot_jobs_minute_update AFTER UPDATE OF state ON onthedot_jobs
WHEN NEW.state IN ('succeeded', 'failed', 'cancelled')
     AND OLD.state NOT IN ('succeeded', 'failed', 'cancelled') AND NEW.finished_at IS NOT NULL
BEGIN
    INSERT INTO onthedot_job_minutes (minute, state, n)
    VALUES (CAST(NEW.finished_at / 60 AS INTEGER) * 60, NEW.state, 1)
    ON CONFLICT (minute, state) DO UPDATE SET n = n + 1;
END;

INSERT INTO onthedot_job_minutes (minute, state, n)
SELECT CAST(finished_at / 60 AS INTEGER) * 60, state, count(*)
FROM onthedot_jobs
WHERE state IN ('succeeded', 'failed', 'cancelled')
  AND finished_at >= CAST(strftime('%s', 'now') AS INTEGER) - 86400
GROUP BY 1, 2;
