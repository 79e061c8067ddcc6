-- onthedot schema, version 9 (PostgreSQL): retention per state and per job (docs/retention.md).
--
-- onthedot_jobs_done: finished jobs by (name, state, finished_at). The prune reads one range
-- per (job name, final state), each with its own cut-off, oldest first: a batch reads only the
-- rows it deletes, whatever the other jobs keep. Partial, so a claim never writes to it and a
-- finish adds one entry. Built without CONCURRENTLY (migrations run in a transaction): writers
-- of onthedot_jobs wait for the build, about 2 s per million finished jobs.
CREATE INDEX onthedot_jobs_done ON onthedot_jobs (name, state, finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
