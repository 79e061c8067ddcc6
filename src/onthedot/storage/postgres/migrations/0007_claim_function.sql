-- onthedot schema, version 7 (PostgreSQL): the claim runs in a function whose plan is made
-- once per session, and made right whatever the statistics say.
--
-- Planned afresh on every call (as since migration 0006's change: a prepared claim kept, after
-- five runs, a generic plan made with the statistics of that moment, a sequential scan when
-- the table looked empty), a claim spent ~0.5 ms of its ~1 ms round trip being parsed and
-- planned: six references to the jobs table weighed against its indexes. Here the plan is
-- generic from the first call (plan_cache_mode) and made without sequential scans, so its
-- only sensible shape is the one the statement is written for: the ready index per priority
-- (onthedot_queue_priorities), the lock-key indexes for the lock checks, the primary key for
-- the update. Written for that: the ids to update come as an array (`id = ANY(ARRAY(...))`,
-- an index lookup by key, where `id IN (subquery)` may become a hash join over the table),
-- `OFFSET 0` keeps the running-lock check a per-candidate probe of onthedot_jobs_lock (not a
-- hash of every running lock key), and `min(o.id + 0)` keeps the first-queued check on
-- onthedot_jobs_lock_queued (not a walk of the primary key in id order). JIT is off inside it:
-- a generic plan does not know its LIMIT, and over millions of rows its estimate would pass
-- jit_above_cost, compiling on every call (~200 ms; behind a transaction pooler the session's
-- own `jit = off` is not set).
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
                WHERE q.state = 'queued' AND q.queue = p_queue AND q.priority = prio.priority
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
