-- onthedot schema, version 6 (SQLite): the same as PostgreSQL's version 9 (docs/retention.md).
CREATE INDEX onthedot_jobs_done ON onthedot_jobs (name, state, finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
