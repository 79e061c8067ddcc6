-- onthedot schema, version 9 (PostgreSQL): retention per state and per job (docs/retention.md).
--
-- onthedot_jobs_done: finished jobs by (name, state, finished_at). The prune reads one range
-- per (job name, final state), each with its own cut-off, oldest first: a batch reads only the
-- rows it deletes, whatever the other jobs keep. It carries the id, so a batch finds its rows
-- by an index-only scan (at 10M finished jobs a batch's search read 35 pages in 0.8 ms; without
-- the id PostgreSQL chose bitmap and filter plans that read 33,000-200,000 heap pages, 1.3-1.8 s).
-- Partial, so a claim never writes to it and a finish adds one entry. Built without
-- CONCURRENTLY (migrations run in a transaction): writers of onthedot_jobs wait for the build,
-- about 3.5 s per million finished jobs (37 s at 10M here).
CREATE INDEX onthedot_jobs_done ON onthedot_jobs (name, state, finished_at) INCLUDE (id)
    WHERE state IN ('succeeded', 'failed', 'cancelled');

-- onthedot_jobs_list: the operator's job lists (web admin, `onthedot jobs list`) of a queue
-- and/or states, newest first, one id-ordered range per (queue, state) merged by id
-- (storage/sql/reads.py). Over every row: a claim and a finish each add an entry.
CREATE INDEX onthedot_jobs_list ON onthedot_jobs (queue, state, id);
