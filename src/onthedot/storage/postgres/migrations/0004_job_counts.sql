-- onthedot schema, version 4 (PostgreSQL): job counts per (queue, name, state, priority), kept
-- by triggers in the transactions that change the jobs, so queue statistics never count the
-- jobs table. The priority is part of a group so that the statistics can read the queued jobs
-- not yet due through the ready index, by its (queue, priority) prefix.
--
-- The table is append-only: each statement on onthedot_jobs adds one row per group it changed, +rows entering, -rows leaving. No row is ever updated, so concurrent
-- claims and finishes never wait on each other here. A reader sums the rows; compaction
-- (the prune pass, or a reader finding many rows) folds them into one row per group.
CREATE TABLE onthedot_job_counts (
    queue text NOT NULL,
    name  text NOT NULL,
    state text NOT NULL,
    priority integer NOT NULL,
    n     bigint NOT NULL
) WITH (autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_scale_factor = 0,
        autovacuum_vacuum_cost_delay = 0);

-- One function for the three triggers (a trigger with transition tables has one event).
CREATE FUNCTION onthedot_count_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
        SELECT queue, name, state, priority, count(*) FROM onthedot_new_rows
        GROUP BY queue, name, state, priority;
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
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION onthedot_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM onthedot_job_counts;
    RETURN NULL;
END
$$;

-- The triggers first: they lock out writers until this migration commits, so the counts
-- filled below are exact.
CREATE TRIGGER onthedot_jobs_count_insert AFTER INSERT ON onthedot_jobs
    REFERENCING NEW TABLE AS onthedot_new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION onthedot_count_jobs();
CREATE TRIGGER onthedot_jobs_count_update AFTER UPDATE ON onthedot_jobs
    REFERENCING OLD TABLE AS onthedot_old_rows NEW TABLE AS onthedot_new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION onthedot_count_jobs();
CREATE TRIGGER onthedot_jobs_count_delete AFTER DELETE ON onthedot_jobs
    REFERENCING OLD TABLE AS onthedot_old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION onthedot_count_jobs();
CREATE TRIGGER onthedot_jobs_count_truncate AFTER TRUNCATE ON onthedot_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION onthedot_count_truncate();

INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
SELECT queue, name, state, priority, count(*) FROM onthedot_jobs
GROUP BY queue, name, state, priority;
