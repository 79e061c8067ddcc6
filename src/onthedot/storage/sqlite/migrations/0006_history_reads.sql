-- onthedot schema, version 6 (SQLite): the same as PostgreSQL's version 9 (docs/retention.md).
CREATE INDEX onthedot_jobs_done ON onthedot_jobs (name, state, finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');

-- onthedot_jobs_list: the operator's job lists (web admin, `onthedot jobs list`) of a queue
-- and/or states, newest first, one id-ordered range per (queue, state) merged by id
-- (storage/sql/reads.py). Over every row: a claim and a finish each add an entry.
CREATE INDEX onthedot_jobs_list ON onthedot_jobs (queue, state, id);

-- onthedot_job_minutes: the same table as PostgreSQL's version 9, kept empty on SQLite: the
-- chart counts its rows (`job_counts`), as before. A row trigger keeping it per finish made
-- the drain's finish superlinear in a first measurement here (19 -> 145 us a job at 20,000
-- jobs in the table), for a reason not found in the time of that change; SQLite's tables are
-- one machine's, and the overview reads its day incrementally (web/throughput.py).
CREATE TABLE onthedot_job_minutes (
    minute INTEGER NOT NULL,
    state  TEXT NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (minute, state)
) WITHOUT ROWID;
CREATE INDEX onthedot_job_minutes_minute ON onthedot_job_minutes (minute);

-- onthedot_jobs_finished (finished_at) of migration 1 is replaced by onthedot_jobs_done: the
-- prune and the charts counted from rows read one (job name, state) range of it each. One
-- index fewer that every finish inserts into (at 10M finished jobs a finish descended its
-- three levels: docs/scaling.md, "Where the claim and the finish pay for history").
DROP INDEX onthedot_jobs_finished;
