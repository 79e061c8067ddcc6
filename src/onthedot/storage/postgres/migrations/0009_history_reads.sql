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

-- onthedot_job_minutes: jobs finished per (minute, final state), kept as they finish by the
-- counting trigger of migration 0004 (replaced below), so the overview's per-minute chart
-- reads at most 1,440 minutes x 3 states instead of counting a day of finished jobs (0.43-0.56
-- s at 10M finished jobs). A minute keeps its count when its jobs are pruned or retried: the
-- chart says what finished then. Append-only like onthedot_job_counts (one row per finishing
-- statement and minute), folded by the same compaction; minutes older than two days and the
-- retention are pruned.
CREATE TABLE onthedot_job_minutes (
    minute timestamptz NOT NULL,
    state  text NOT NULL,
    n      bigint NOT NULL
) WITH (autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0,
        autovacuum_vacuum_cost_delay = 0);
CREATE INDEX onthedot_job_minutes_minute ON onthedot_job_minutes (minute);

CREATE OR REPLACE FUNCTION onthedot_count_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
        SELECT queue, name, state, priority, count(*) FROM onthedot_new_rows
        GROUP BY queue, name, state, priority;
        INSERT INTO onthedot_job_minutes (minute, state, n)
        SELECT to_timestamp(floor(extract(epoch FROM finished_at) / 60) * 60), state, count(*)
        FROM onthedot_new_rows
        WHERE state IN ('succeeded', 'failed', 'cancelled') AND finished_at IS NOT NULL
        GROUP BY 1, 2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
        SELECT queue, name, state, priority, -count(*) FROM onthedot_old_rows
        GROUP BY queue, name, state, priority;
    ELSE
        -- Most updates (leases, heartbeats) change no group: they add nothing.
        INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
        SELECT queue, name, state, priority, sum(d)
        FROM (SELECT queue, name, state, priority, 1 AS d FROM onthedot_new_rows
              UNION ALL
              SELECT queue, name, state, priority, -1 FROM onthedot_old_rows) AS c
        GROUP BY queue, name, state, priority
        HAVING sum(d) <> 0;
        -- Jobs that finished in this statement (a finish, a cancel): their minute.
        IF EXISTS (SELECT 1 FROM onthedot_new_rows
                   WHERE state IN ('succeeded', 'failed', 'cancelled')) THEN
            INSERT INTO onthedot_job_minutes (minute, state, n)
            SELECT to_timestamp(floor(extract(epoch FROM n.finished_at) / 60) * 60), n.state,
                   count(*)
            FROM onthedot_new_rows n JOIN onthedot_old_rows o ON o.id = n.id
            WHERE n.state IN ('succeeded', 'failed', 'cancelled')
              AND o.state NOT IN ('succeeded', 'failed', 'cancelled')
              AND n.finished_at IS NOT NULL
            GROUP BY 1, 2;
        END IF;
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION onthedot_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM onthedot_job_counts;
    DELETE FROM onthedot_job_minutes;
    RETURN NULL;
END
$$;

-- The last day, counted once (on onthedot_jobs_finished): what the chart shows at once.
INSERT INTO onthedot_job_minutes (minute, state, n)
SELECT to_timestamp(floor(extract(epoch FROM finished_at) / 60) * 60), state, count(*)
FROM onthedot_jobs
WHERE state IN ('succeeded', 'failed', 'cancelled') AND finished_at >= now() - interval '1 day'
GROUP BY 1, 2;

-- onthedot_jobs_finished (finished_at) of migration 1 is replaced by onthedot_jobs_done: the
-- prune and the charts counted from rows read one (job name, state) range of it each. One
-- index fewer that every finish inserts into (at 10M finished jobs a finish descended its
-- three levels: docs/scaling.md, "Where the claim and the finish pay for history").
DROP INDEX onthedot_jobs_finished;
