-- The current body of every onthedot function (PostgreSQL), in one place.
--
-- `onthedot migrate` applies the numbered migrations, then this file, every time (under the
-- migration lock, in the same transaction): each statement is a CREATE OR REPLACE, so the
-- database always holds the bodies written here, whatever migration last touched them. The
-- migrations keep the history (the body each one installed, as it was); this file is where a
-- function is read and changed. To change a function: edit it here and add a migration (its
-- number tells workers that the schema moved on; it may hold only a comment naming the
-- change, or what the new body needs, such as a column or an index). A function whose
-- argument list changes needs its old signature dropped in that migration. A function's
-- settings (SET name = value) are written in its CREATE here, never in an ALTER FUNCTION: a
-- CREATE OR REPLACE resets the settings it does not name.

-- onthedot_notify_jobs: last changed by migration 0001_initial.sql.
-- Wake idle workers once per statement (not per row), naming each queue that got ready work.
CREATE OR REPLACE FUNCTION onthedot_notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    q text;
BEGIN
    FOR q IN SELECT DISTINCT queue FROM onthedot_new_rows
             WHERE state = 'queued' AND run_at <= now() LOOP
        PERFORM pg_notify('onthedot_jobs', q);
    END LOOP;
    RETURN NULL;
END
$$;

-- onthedot_count_jobs: last changed by migration 0009_history_reads.sql.
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

-- onthedot_count_truncate: last changed by migration 0009_history_reads.sql.
CREATE OR REPLACE FUNCTION onthedot_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM onthedot_job_counts;
    DELETE FROM onthedot_job_minutes;
    RETURN NULL;
END
$$;

-- onthedot_queue_priorities: last changed by migration 0010_limits.sql.
-- The priorities of a queue's unlimited ready jobs (the ready index now holds only those).
-- No sequential scan, whatever the statistics (migration 0006 set it with ALTER FUNCTION; a
-- CREATE OR REPLACE resets what its own SET clauses do not name, so it is written here).
CREATE OR REPLACE FUNCTION onthedot_queue_priorities(for_queue text) RETURNS SETOF integer
LANGUAGE plpgsql STABLE ROWS 2 SET enable_seqscan = off AS $$
DECLARE
    p integer;
BEGIN
    SELECT j.priority INTO p FROM onthedot_jobs j
    WHERE j.state = 'queued' AND j.limit_key IS NULL AND j.queue = for_queue
    ORDER BY j.priority DESC LIMIT 1;
    WHILE p IS NOT NULL LOOP
        RETURN NEXT p;
        SELECT j.priority INTO p FROM onthedot_jobs j
        WHERE j.state = 'queued' AND j.limit_key IS NULL AND j.queue = for_queue
          AND j.priority < p
        ORDER BY j.priority DESC LIMIT 1;
    END LOOP;
END
$$;

-- onthedot_claim_jobs: last changed by migration 0010_limits.sql.
-- The claim of unlimited jobs, as in migration 0007, reading the ready index's new predicate.
CREATE OR REPLACE FUNCTION onthedot_claim_jobs(
    p_worker text, p_now timestamptz, p_lease float8, p_charge boolean, p_queue text,
    p_shared boolean, p_any_name boolean, p_names text[], p_limit integer)
RETURNS TABLE (id bigint, name text, args text, kwargs text, queue text, attempts integer,
               max_attempts integer, timeout float8, schedule_key text, slot timestamptz,
               priority integer, run_at float8, unique_key text)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH claimed AS (
        UPDATE onthedot_jobs j
        SET state = 'running', worker_id = p_worker, attempts = j.attempts + 1,
            started_at = COALESCE(p_now, now()),
            lease_until = COALESCE(p_now, now()) + p_lease * interval '1 second',
            charged = p_charge, began = p_charge
        WHERE j.id = ANY (ARRAY(
            SELECT c.id FROM onthedot_queue_priorities(p_queue) AS prio(priority), LATERAL (
                SELECT q.id FROM onthedot_jobs q
                WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = p_queue
                  AND q.priority = prio.priority
                  AND q.run_at <= COALESCE(p_now, now())
                  AND (NOT p_shared OR NOT q.solo)
                  AND (p_any_name OR q.name = ANY(p_names))
                  AND (q.lock_key IS NULL OR (
                      NOT EXISTS (SELECT 1 FROM onthedot_jobs r
                                  WHERE r.lock_key = q.lock_key AND r.state = 'running'
                                  OFFSET 0)
                      AND q.id = (SELECT min(o.id + 0) FROM onthedot_jobs o
                                  WHERE o.lock_key = q.lock_key AND o.state = 'queued')))
                ORDER BY q.run_at, q.id
                LIMIT p_limit
                FOR UPDATE SKIP LOCKED) c
            -- The priorities come highest first and each LATERAL runs only while the LIMIT
            -- still wants rows: the jobs taken (and locked) are the first in claim order.
            LIMIT p_limit))
        RETURNING j.id, j.name, j.args::text, j.kwargs::text, j.queue, j.attempts,
                  j.max_attempts + j.lost, j.timeout, j.schedule_key, j.slot, j.priority,
                  date_part('epoch', j.run_at), j.unique_key)
    SELECT * FROM claimed;
END
$$;

-- onthedot_watch_schedules: last changed by migration 0008_schedule_health.sql.
-- Every ledger row gets its health row, first checked at its first due slot.
CREATE OR REPLACE FUNCTION onthedot_watch_schedules() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO onthedot_schedule_health (key, check_at, watch_slot, decided_slot,
                                              fingerprint)
        SELECT key, next_due_at, "cursor", "cursor", fingerprint FROM onthedot_new_schedules
        ON CONFLICT (key) DO NOTHING;
    ELSE
        UPDATE onthedot_schedule_problems SET resolved_at = now(), resolution = 'deleted'
        WHERE resolved_at IS NULL
          AND schedule_key IN (SELECT key FROM onthedot_old_schedules);
        DELETE FROM onthedot_schedule_health
        WHERE key IN (SELECT key FROM onthedot_old_schedules);
    END IF;
    RETURN NULL;
END
$$;

-- onthedot_limit_gather: last changed by migration 0011_limit_gather_plans.sql.
-- onthedot schema, version 11 (PostgreSQL only): the limited claim's gather (migration 0010)
-- made right whatever the statistics say. Its plans are generic (plan_cache_mode), and with the
-- jobs table analyzed while it held few rows (a new install, or just truncated), the generic
-- plan of the home keys' loose scan took `min(limit_key)` as an aggregate over every queued
-- limited job of the queue and turned the "has a due job" EXISTS into a hash semi join over
-- them all: each claim walked the whole limited backlog (5 ms a claim at 20,000 queued jobs,
-- docs/benchmarks.md "Limits"). Now each step of the loose scan is an ORDER BY ... LIMIT 1
-- (one index descent) and the EXISTS is kept a per-key probe (OFFSET 0), whatever the
-- estimates. And less JSON: the jobs' key lists come to the caller as JSON (not text in
-- JSON, decoded once more), the set of keys is the home keys plus those of the jobs under
-- several, and a key's running jobs are counted by its home-key index, reading the key lists
-- of only the running jobs under several keys. Same signature, same result.
CREATE OR REPLACE FUNCTION onthedot_limit_gather(
    p_queue text, p_now timestamptz, p_limit integer, p_any_name boolean, p_names text[])
RETURNS json
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    v_now timestamptz := COALESCE(p_now, now());
    v_homes text[];
    v_jobs json;
    v_keys text[];
    v_taken text[];
    v_multi text[];
    v_states json;
BEGIN
    IF EXISTS (SELECT 1 FROM onthedot_queues p WHERE p.name = p_queue AND p.paused) THEN
        RETURN NULL;
    END IF;
    WITH RECURSIVE k(lkey) AS (
        SELECT (SELECT q.limit_key FROM onthedot_jobs q
                WHERE q.state = 'queued' AND q.queue = p_queue AND q.limit_key IS NOT NULL
                ORDER BY q.limit_key LIMIT 1)
        UNION ALL
        SELECT (SELECT q.limit_key FROM onthedot_jobs q
                WHERE q.state = 'queued' AND q.queue = p_queue AND q.limit_key IS NOT NULL
                  AND q.limit_key > k.lkey
                ORDER BY q.limit_key LIMIT 1)
        FROM k WHERE k.lkey IS NOT NULL)
    SELECT array_agg(c.lkey ORDER BY c.ord) INTO v_homes FROM (
        SELECT k.lkey, row_number() OVER (ORDER BY s.last_start NULLS FIRST, k.lkey) AS ord
        FROM k
        LEFT JOIN onthedot_limit_keys s ON s.lkey = k.lkey
        LEFT JOIN onthedot_limits l ON l.name = s.name
        WHERE k.lkey IS NOT NULL
          AND (l.concurrency IS NULL
               OR l.concurrency > (SELECT count(*) FROM onthedot_jobs r
                                   WHERE r.state = 'running' AND r.limit_key = k.lkey))
          AND (l.rate IS NULL OR s.tokens IS NULL
               OR least(coalesce(l.burst, 1), s.tokens + l.rate * extract(epoch FROM
                        (v_now - s.refilled_at))) >= 1)
          AND EXISTS (SELECT 1 FROM onthedot_jobs q
                      WHERE q.state = 'queued' AND q.queue = p_queue AND q.limit_key = k.lkey
                        AND q.run_at <= v_now
                      OFFSET 0)
        ORDER BY s.last_start NULLS FIRST, k.lkey
        LIMIT p_limit) c;
    IF v_homes IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT json_agg(json_build_array(h.ord, j.id, j.limits::json)
                    ORDER BY h.ord, j.priority DESC, j.run_at, j.id),
           array_agg(DISTINCT h.lkey),
           array_agg(j.limits) FILTER (WHERE j.limits LIKE '%",%')
    INTO v_jobs, v_taken, v_multi
    FROM unnest(v_homes) WITH ORDINALITY AS h(lkey, ord), LATERAL (
        SELECT q.id, q.limits, q.priority, q.run_at FROM onthedot_jobs q
        WHERE q.state = 'queued' AND q.queue = p_queue AND q.limit_key = h.lkey
          AND q.run_at <= v_now
          AND (p_any_name OR q.name = ANY(p_names))
          AND (q.lock_key IS NULL OR (
              NOT EXISTS (SELECT 1 FROM onthedot_jobs r
                          WHERE r.lock_key = q.lock_key AND r.state = 'running')
              AND q.id = (SELECT min(o.id) FROM onthedot_jobs o
                          WHERE o.lock_key = q.lock_key AND o.state = 'queued')))
        ORDER BY q.priority DESC, q.run_at, q.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED) j;
    IF v_jobs IS NULL THEN
        RETURN NULL;
    END IF;
    -- Every key of the jobs: their home keys, and the others of the jobs under several (a
    -- JSON array of more than one string has `",` in it; one of a single key may too, harmless).
    SELECT array_agg(DISTINCT x.k ORDER BY x.k) INTO v_keys FROM (
        SELECT unnest(v_taken) AS k
        UNION ALL
        SELECT json_array_elements_text(m::json) FROM unnest(v_multi) AS m) x;
    INSERT INTO onthedot_limit_keys (lkey, name)
    SELECT x.k, split_part(x.k, '|', 1) FROM unnest(v_keys) AS x(k) ORDER BY x.k
    ON CONFLICT (lkey) DO NOTHING;
    PERFORM 1 FROM onthedot_limit_keys s WHERE s.lkey = ANY(v_keys) ORDER BY s.lkey
    FOR UPDATE;
    SELECT json_agg(json_build_array(
               s.lkey, l.name IS NOT NULL, l.concurrency,
               CASE WHEN l.rate IS NULL THEN NULL
                    ELSE least(coalesce(l.burst, 1)::float8,
                               coalesce(s.tokens + l.rate * extract(epoch FROM
                                   (v_now - s.refilled_at))::float8,
                                   coalesce(l.burst, 1)::float8)) END,
               -- running: those whose home key it is (an index probe), and those under
               -- several keys that it is one of (only those have `",` in their keys).
               (SELECT count(*) FROM onthedot_jobs r
                WHERE r.state = 'running' AND r.limit_key = s.lkey)
               + (SELECT count(*) FROM onthedot_jobs r,
                         json_array_elements_text(r.limits::json) AS rk(k)
                  WHERE r.state = 'running' AND r.limit_key IS NOT NULL
                    AND r.limit_key <> s.lkey AND r.limits LIKE '%",%' AND rk.k = s.lkey)))
    INTO v_states
    FROM onthedot_limit_keys s LEFT JOIN onthedot_limits l ON l.name = s.name
    WHERE s.lkey = ANY(v_keys);
    RETURN json_build_object('jobs', v_jobs, 'keys', v_states);
END
$$;
