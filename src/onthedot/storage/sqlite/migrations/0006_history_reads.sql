-- onthedot schema, version 6 (SQLite): the same as PostgreSQL's version 9 (docs/retention.md).
CREATE INDEX onthedot_jobs_done ON onthedot_jobs (name, state, finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');

-- onthedot_jobs_list: the operator's job lists (web admin, `onthedot jobs list`) of a queue
-- and/or states, newest first, one id-ordered range per (queue, state) merged by id
-- (storage/sql/reads.py). Over every row: a claim and a finish each add an entry.
CREATE INDEX onthedot_jobs_list ON onthedot_jobs (queue, state, id);
