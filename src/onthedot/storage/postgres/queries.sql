-- Named queries for the PostgreSQL backend. Parameters use psycopg's %(name)s style.

-- name: db_now
SELECT now();

-- name: enqueue_one
-- Positional parameters, in the order of rows.job_params (name, queue, priority, args, kwargs,
-- run_at, now, max_attempts, timeout, unique_key, schedule_key, slot, lock_key, limit_key,
-- limits, now): the single enqueue's parameters go out without a lookup by name.
INSERT INTO onthedot_jobs (name, queue, priority, args, kwargs, run_at, max_attempts, timeout,
                           unique_key, schedule_key, slot, lock_key, limit_key, limits,
                           created_at)
VALUES (%s, %s, %s, %s::jsonb, %s::jsonb, COALESCE(%s::timestamptz, %s::timestamptz, now()), %s,
        %s, %s, %s, %s, %s, %s, %s, COALESCE(%s::timestamptz, now()))
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running')
DO NOTHING
RETURNING id;

-- name: find_unique
SELECT id FROM onthedot_jobs
WHERE unique_key = %(unique_key)s AND state IN ('queued', 'running');

-- name: allocate_ids
-- The sequence is looked up once: pg_get_serial_sequence() per row costs ~15 us (a catalog
-- lookup each time), more than the rest of a row's COPY.
WITH seq AS MATERIALIZED (SELECT pg_get_serial_sequence('onthedot_jobs', 'id')::regclass AS s)
SELECT nextval(seq.s) FROM seq, generate_series(1, %(n)s);

-- name: enqueue_copy
COPY onthedot_jobs (id, name, queue, priority, args, kwargs, run_at, max_attempts, timeout,
                    schedule_key, slot, lock_key, created_at)
FROM STDIN;

-- name: enqueue_copy_now
-- The same, for jobs due at once on the database's clock: run_at and created_at are now().
COPY onthedot_jobs (id, name, queue, priority, args, kwargs, max_attempts, timeout,
                    schedule_key, slot, lock_key)
FROM STDIN;

-- name: claim_jobs
-- The claim is onthedot_claim_jobs (migration 0007): its plan is made once per session, with
-- no sequential scan, so it is right however the table grew since. The ready jobs are read one
-- priority at a time, highest first (onthedot_queue_priorities, migration 0005), each an
-- index range on (queue, priority, run_at) that ends at the first job not yet due: delayed
-- jobs in the queue are never walked past, however many there are. Returned: arguments as
-- text, decoded by the caller (json.loads on a str costs a fraction of the jsonb loader);
-- run_at as epoch seconds, for the claim order only (cheaper than a datetime);
-- max_attempts + lost (an execution lost uncharged, domain.rescue, extends the allowance).
-- A paused queue is checked here, in the claim's own statement (a limit of 0 claims nothing):
-- a pause holds every claim that starts after `queues pause` returns.
SELECT * FROM onthedot_claim_jobs(
    %(worker_id)s::text, %(now)s::timestamptz, %(lease)s::float8, %(charge)s::boolean,
    %(queue)s::text, %(shared)s::boolean, %(any_name)s::boolean, %(names)s::text[],
    CASE WHEN EXISTS (SELECT 1 FROM onthedot_queues
                      WHERE name = %(queue)s::text AND paused) THEN 0
         ELSE %(limit)s::integer END);

-- name: claim_alone
-- One job lost beside others (solo), for a worker that holds nothing else: its attempt counts.
UPDATE onthedot_jobs j
SET state = 'running', worker_id = %(worker_id)s, attempts = j.attempts + 1,
    started_at = COALESCE(%(now)s::timestamptz, now()),
    lease_until = COALESCE(%(now)s::timestamptz, now()) + %(lease)s * interval '1 second',
    charged = true, began = true
WHERE j.id IN (
    SELECT q.id FROM onthedot_jobs q
    WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = %(queue)s
      AND q.run_at <= COALESCE(%(now)s::timestamptz, now())
      AND q.solo
      AND NOT EXISTS (SELECT 1 FROM onthedot_queues p WHERE p.name = %(queue)s AND p.paused)
      AND (%(any_name)s OR q.name = ANY(%(names)s::text[]))
      AND (q.lock_key IS NULL OR (
          NOT EXISTS (SELECT 1 FROM onthedot_jobs r
                      WHERE r.lock_key = q.lock_key AND r.state = 'running')
          AND q.id = (SELECT min(o.id) FROM onthedot_jobs o
                      WHERE o.lock_key = q.lock_key AND o.state = 'queued')))
    ORDER BY q.priority DESC, q.run_at, q.id
    LIMIT 1
    FOR UPDATE SKIP LOCKED)
-- Arguments as text, decoded by the caller (json.loads on a str costs a fraction of the jsonb
-- loader); run_at as epoch seconds, for the claim order only (cheaper than a datetime).
-- max_attempts + lost: an execution lost uncharged (domain.rescue) extends the allowance.
RETURNING j.id, j.name, j.args::text, j.kwargs::text, j.queue, j.attempts,
          j.max_attempts + j.lost, j.timeout, j.schedule_key, j.slot, j.priority,
          date_part('epoch', j.run_at), j.unique_key;

-- name: finish_succeeded
-- An outcome is for one attempt (0: any): a late one never finishes a later attempt.
UPDATE onthedot_jobs j
SET state = 'succeeded', finished_at = COALESCE(%(now)s::timestamptz, now()), lease_until = NULL
FROM unnest(%(id)s::bigint[], %(attempt)s::int[]) AS v(id, attempt)
WHERE j.id = v.id AND (v.attempt = 0 OR j.attempts = v.attempt)
  AND j.worker_id = %(worker_id)s AND j.state = 'running';

-- name: finish_outcome
UPDATE onthedot_jobs j
SET state = v.state,
    finished_at = CASE WHEN v.state = 'queued' THEN NULL
                       ELSE COALESCE(%(now)s::timestamptz, now()) END,
    run_at = CASE WHEN v.state = 'queued'
                  THEN COALESCE(%(now)s::timestamptz, now()) + v.delay * interval '1 second'
                  ELSE j.run_at END,
    result = v.result::jsonb,
    error = v.error,
    traceback = v.tb,
    errors = CASE WHEN v.error IS NULL THEN j.errors
                  ELSE COALESCE(j.errors, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
                      'attempt', j.attempts, 'at', COALESCE(%(now)s::timestamptz, now()),
                      'error', v.error, 'worker_id', j.worker_id)) END,
    lease_until = NULL,
    cancel_requested = false
FROM unnest(%(id)s::bigint[], %(state)s::text[], %(delay)s::float8[], %(result)s::text[],
            %(error)s::text[], %(tb)s::text[], %(attempt)s::int[])
     AS v(id, state, delay, result, error, tb, attempt)
WHERE j.id = v.id AND (v.attempt = 0 OR j.attempts = v.attempt)
  AND j.worker_id = %(worker_id)s AND j.state = 'running';

-- name: release_job
UPDATE onthedot_jobs
SET state = 'queued', attempts = GREATEST(attempts - 1, 0), worker_id = NULL, lease_until = NULL,
    started_at = NULL
WHERE id = ANY(%(id)s::bigint[]) AND worker_id = %(worker_id)s AND state = 'running'
RETURNING queue;

-- name: notify_queues
SELECT pg_notify('onthedot_jobs', q) FROM unnest(%(queues)s::text[]) AS q;

-- name: heartbeat_worker
UPDATE onthedot_workers SET heartbeat_at = COALESCE(%(now)s::timestamptz, now())
WHERE id = %(worker_id)s;

-- name: extend_leases
-- SKIP LOCKED: the heartbeat never waits for a row lock. A row another transaction holds (the
-- completer finishing it, mostly) is left to the next heartbeat, a third of a lease later; waiting
-- for it deadlocked with an outcome batch locking the same rows in another order.
UPDATE onthedot_jobs j
SET lease_until = COALESCE(%(now)s::timestamptz, now()) + %(lease)s * interval '1 second'
WHERE j.id IN (
    SELECT q.id FROM onthedot_jobs q
    WHERE q.worker_id = %(worker_id)s AND q.state = 'running'
    FOR UPDATE SKIP LOCKED)
RETURNING j.id, j.cancel_requested;

-- name: extend_held_leases
-- SKIP LOCKED as in extend_leases; `started` lists every job still executing at each heartbeat,
-- so a skipped row gets `began` from the next one.
UPDATE onthedot_jobs j
SET lease_until = COALESCE(%(now)s::timestamptz, now()) + %(lease)s * interval '1 second',
    began = j.began OR j.id = ANY(%(started)s::bigint[])
WHERE j.id IN (
    SELECT q.id FROM onthedot_jobs q
    WHERE q.id = ANY(%(ids)s::bigint[]) AND q.worker_id = %(worker_id)s AND q.state = 'running'
    FOR UPDATE SKIP LOCKED)
RETURNING j.id, j.cancel_requested;

-- name: register_worker
INSERT INTO onthedot_workers (id, hostname, pid, generation, queues, concurrency, scheduler,
                              started_at, heartbeat_at, jobs)
VALUES (%(id)s, %(hostname)s, %(pid)s, %(generation)s, %(queues)s, %(concurrency)s,
        %(scheduler)s, COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()),
        %(jobs)s)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at,
    generation = EXCLUDED.generation, stopping = false, jobs = EXCLUDED.jobs;

-- name: set_worker_stopping
UPDATE onthedot_workers SET stopping = true WHERE id = %(worker_id)s;

-- name: deregister_worker
DELETE FROM onthedot_workers WHERE id = %(worker_id)s;

-- name: list_workers
SELECT w.id, w.hostname, w.pid, w.queues, w.concurrency, w.scheduler, w.generation,
       w.started_at, w.heartbeat_at, w.stopping,
       EXTRACT(EPOCH FROM COALESCE(%(now)s::timestamptz, now()) - w.heartbeat_at)::float8,
       (SELECT count(*) FROM onthedot_jobs j WHERE j.worker_id = w.id AND j.state = 'running'),
       w.jobs
FROM onthedot_workers w
ORDER BY w.started_at DESC, w.id;

-- name: expired_jobs
-- `ids`: only those (a rescuer's, domain.rescue.LeaseWatch), unless `any_id`.
SELECT id, name, attempts, max_attempts, queue, lost, charged, lease_until FROM onthedot_jobs
WHERE state = 'running' AND lease_until < COALESCE(%(now)s::timestamptz, now())
  AND (%(any_id)s::boolean OR id = ANY(%(ids)s::bigint[]))
ORDER BY lease_until
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: ending_leases
SELECT id, lease_until FROM onthedot_jobs
WHERE state = 'running'
  AND lease_until < COALESCE(%(now)s::timestamptz, now()) + %(within)s * interval '1 second'
ORDER BY lease_until
LIMIT %(limit)s;

-- name: rescue_job
-- `state` (queued again or failed) is decided by the caller (domain.rescue).
UPDATE onthedot_jobs j
SET state = v.state,
    finished_at = CASE WHEN v.state = 'failed' THEN COALESCE(%(now)s::timestamptz, now()) END,
    run_at = CASE WHEN v.state = 'failed' THEN j.run_at
                  ELSE COALESCE(%(now)s::timestamptz, now()) END,
    error = %(error)s,
    traceback = NULL,
    errors = COALESCE(j.errors, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
        'attempt', j.attempts, 'at', COALESCE(%(now)s::timestamptz, now()),
        'error', %(error)s::text, 'worker_id', j.worker_id)),
    lease_until = NULL,
    lost = j.lost + v.lost,
    solo = j.solo OR v.solo
FROM unnest(%(id)s::bigint[], %(state)s::text[], %(lost)s::integer[], %(solo)s::boolean[])
    AS v(id, state, lost, solo)
WHERE j.id = v.id AND j.state = 'running'
RETURNING j.id, j.name, j.attempts, j.state = 'queued', j.queue;

-- name: finished_groups
-- The (job name, final state) pairs that have jobs, from the counts kept with the jobs.
SELECT name, state FROM onthedot_job_counts
WHERE state IN ('succeeded', 'failed', 'cancelled')
GROUP BY name, state HAVING sum(n) > 0
ORDER BY name, state;

-- name: prune_finished
-- One bounded batch of one (name, state) range of onthedot_jobs_done, oldest first.
DELETE FROM onthedot_jobs
WHERE id IN (SELECT id FROM onthedot_jobs
             WHERE name = %(name)s AND state = %(state)s AND finished_at < %(before)s
               AND state IN ('succeeded', 'failed', 'cancelled')
             ORDER BY finished_at
             LIMIT %(limit)s);

-- name: count_finished
SELECT count(*) FROM onthedot_jobs
WHERE name = %(name)s AND state = %(state)s AND finished_at < %(before)s
  AND state IN ('succeeded', 'failed', 'cancelled');

-- name: prune_slots
-- One batch of slot history behind each ledger cursor recorded before `before`, keeping what
-- the scheduler and the health watch still read (docs/scheduling.md, "What pruning keeps"):
-- each schedule's newest slot, the slots its health watch has not settled (after watch_slot),
-- and the slot of an open problem. Rows at or after the cursor are never pruned.
DELETE FROM onthedot_slots
WHERE (schedule_key, slot) IN (
    SELECT h.schedule_key, h.slot
    FROM onthedot_slots h JOIN onthedot_schedules s ON s.key = h.schedule_key
    WHERE h.slot <= s."cursor" AND h.recorded_at < %(before)s
      AND h.slot < (SELECT max(m.slot) FROM onthedot_slots m
                    WHERE m.schedule_key = h.schedule_key)
      AND NOT EXISTS (SELECT 1 FROM onthedot_schedule_health w
                      WHERE w.key = h.schedule_key AND h.slot > w.watch_slot)
      AND NOT EXISTS (SELECT 1 FROM onthedot_schedule_problems p
                      WHERE p.schedule_key = h.schedule_key AND p.slot = h.slot
                        AND p.resolved_at IS NULL)
    LIMIT %(limit)s);

-- name: prune_orphan_slots
DELETE FROM onthedot_slots
WHERE (schedule_key, slot) IN (
    SELECT h.schedule_key, h.slot FROM onthedot_slots h
    WHERE h.recorded_at < %(before)s
      AND NOT EXISTS (SELECT 1 FROM onthedot_schedules s WHERE s.key = h.schedule_key)
    LIMIT %(limit)s);

-- name: prune_ledger
DELETE FROM onthedot_schedules
WHERE source = 'code' AND removed_at IS NOT NULL AND removed_at < %(before)s;

-- name: prune_audit
DELETE FROM onthedot_audit
WHERE id IN (SELECT id FROM onthedot_audit WHERE at < %(before)s ORDER BY id LIMIT %(limit)s);

-- name: prune_workers
DELETE FROM onthedot_workers WHERE heartbeat_at < %(before)s;

-- name: acquire_maintenance
INSERT INTO onthedot_maintenance (task, last_run_at, worker_id)
VALUES (%(task)s, COALESCE(%(now)s::timestamptz, now()), %(worker_id)s)
ON CONFLICT (task) DO UPDATE
SET last_run_at = EXCLUDED.last_run_at, worker_id = EXCLUDED.worker_id
WHERE onthedot_maintenance.last_run_at
      <= EXCLUDED.last_run_at - %(every)s * interval '1 second'
RETURNING task;

-- name: seconds_until_ready
-- The earliest run_at of each (queue, priority), one index descent each, instead of
-- min(run_at) over every queued row of the queues.
SELECT EXTRACT(EPOCH FROM min(first.run_at) - COALESCE(%(now)s::timestamptz, now()))::float8
FROM unnest(%(queues)s::text[]) AS v(queue),
     onthedot_queue_priorities(v.queue) AS prio(priority),
     LATERAL (SELECT q.run_at FROM onthedot_jobs q
              WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = v.queue AND q.priority = prio.priority
              ORDER BY q.run_at LIMIT 1) AS first;

-- name: get_job
SELECT id, name, queue, state, priority, args, kwargs, attempts, max_attempts, run_at,
       created_at, started_at, finished_at, timeout, unique_key, schedule_key, slot, worker_id,
       result, error, traceback, cancel_requested, errors, began
FROM onthedot_jobs WHERE id = %(id)s;

-- name: list_jobs
-- The filter placeholder: the conditions of a JobFilter, built by the caller.
SELECT id, name, queue, state, priority, args, kwargs, attempts, max_attempts, run_at,
       created_at, started_at, finished_at, timeout, unique_key, schedule_key, slot, worker_id,
       result, error, traceback, cancel_requested, errors, began
FROM onthedot_jobs WHERE {filter} ORDER BY id DESC LIMIT %(limit)s;

-- name: list_job_ids
-- One (queue, state) range of a page: ids only, so PostgreSQL reads them from
-- onthedot_jobs_list alone (selecting every column, it preferred walking the primary key
-- backwards past every newer job: 1M rows, 336 ms, where the index gives 50 in 0.8 ms).
SELECT id FROM onthedot_jobs WHERE {filter} ORDER BY id DESC LIMIT %(limit)s;

-- name: list_jobs_by_ids
-- The page: the jobs of the newest ids of the ranges (joined by UNION ALL in place of ids).
SELECT id, name, queue, state, priority, args, kwargs, attempts, max_attempts, run_at,
       created_at, started_at, finished_at, timeout, unique_key, schedule_key, slot, worker_id,
       result, error, traceback, cancel_requested, errors, began
FROM onthedot_jobs WHERE id IN (SELECT id FROM ({ids}) AS ranges ORDER BY id DESC LIMIT %(limit)s)
ORDER BY id DESC

-- name: kept_queues
-- The (queue, state) pairs that have jobs in these states, from the counts kept with the jobs.
SELECT queue, state FROM onthedot_job_counts WHERE state = ANY(%(states)s::text[])
GROUP BY queue, state HAVING sum(n) > 0 ORDER BY queue, state;

-- name: kept_count
-- count_jobs of a queue, job name and states, from the counts kept with the jobs (exact).
SELECT coalesce(sum(n), 0) FROM onthedot_job_counts WHERE {filter};

-- name: capped_count
SELECT count(*) FROM (SELECT 1 FROM onthedot_jobs WHERE {filter} LIMIT %(cap)s) AS capped;

-- name: all_rows
-- The rows a filter matches (what the planner estimates for an estimated count).
SELECT 1 FROM onthedot_jobs WHERE {filter};

-- name: count_jobs
SELECT count(*) FROM onthedot_jobs WHERE {filter};

-- name: job_search
-- A condition of list_jobs and count_jobs: arguments are searched as JSON text.
(strpos(args::text, %(search)s) > 0 OR strpos(kwargs::text, %(search)s) > 0
 OR strpos(args::text, %(search_json)s) > 0 OR strpos(kwargs::text, %(search_json)s) > 0
 OR strpos(COALESCE(error, ''), %(search)s) > 0);

-- name: bulk_retry
-- A failed job whose unique_key another job holds again (queued or running) stays failed, as do
-- older failures of a key: retrying them would break the key's uniqueness.
UPDATE onthedot_jobs SET state = 'queued', run_at = COALESCE(%(now)s::timestamptz, now()),
    attempts = 0, lost = 0, solo = false, finished_at = NULL, started_at = NULL, worker_id = NULL,
    lease_until = NULL, cancel_requested = false
WHERE {filter} AND state IN ('failed', 'cancelled')
  AND (unique_key IS NULL OR (NOT EXISTS (SELECT 1 FROM onthedot_jobs u
       WHERE u.unique_key = onthedot_jobs.unique_key AND u.state IN ('queued', 'running'))
       AND id = (SELECT max(f.id) FROM onthedot_jobs f
       WHERE f.unique_key = onthedot_jobs.unique_key AND f.state IN ('failed', 'cancelled'))));

-- name: bulk_cancel
UPDATE onthedot_jobs SET state = 'cancelled', finished_at = COALESCE(%(now)s::timestamptz, now())
WHERE {filter} AND state = 'queued';

-- name: bulk_delete
DELETE FROM onthedot_jobs WHERE {filter} AND state <> 'running';

-- name: retry_job
UPDATE onthedot_jobs
SET state = 'queued', run_at = COALESCE(%(now)s::timestamptz, now()), attempts = 0, lost = 0,
    solo = false, finished_at = NULL, started_at = NULL, worker_id = NULL, lease_until = NULL,
    cancel_requested = false
WHERE id = %(id)s AND state IN ('failed', 'cancelled')
RETURNING id, queue;

-- name: cancel_queued
UPDATE onthedot_jobs
SET state = 'cancelled', finished_at = COALESCE(%(now)s::timestamptz, now())
WHERE id = %(id)s AND state = 'queued'
RETURNING id;

-- name: cancel_running
UPDATE onthedot_jobs SET cancel_requested = true WHERE id = %(id)s AND state = 'running'
RETURNING id;

-- name: delete_job
DELETE FROM onthedot_jobs WHERE id = %(id)s AND state <> 'running' RETURNING id;

-- name: job_state
SELECT state FROM onthedot_jobs WHERE id = %(id)s;

-- name: queue_stats
-- The depths come from onthedot_job_counts (exact: written in the jobs' own transactions, see
-- migration 0004); only `ready` and the oldest ready age read the jobs, through the ready
-- index by (queue, priority) for each priority the queue's queued jobs have: the oldest one
-- (one index descent) and those not yet due (an index range, typically short). `excess`:
-- count rows beyond one per group, which the caller compacts when there are many.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
g AS (
    SELECT queue, state, priority, sum(n) AS n, count(*) - count(DISTINCT name) AS excess
    FROM onthedot_job_counts
    GROUP BY queue, state, priority
),
p AS MATERIALIZED (
    SELECT g.queue,
           (SELECT count(*) FROM onthedot_jobs j
            WHERE j.state = 'queued' AND j.limit_key IS NULL AND j.queue = g.queue AND j.priority = g.priority
              AND j.run_at > t.now) AS future,
           (SELECT min(j.run_at) FROM onthedot_jobs j
            WHERE j.state = 'queued' AND j.limit_key IS NULL AND j.queue = g.queue AND j.priority = g.priority) AS oldest
    FROM g CROSS JOIN t
    WHERE g.state = 'queued' AND g.n > 0
),
r AS (
    SELECT queue, sum(future) AS future, min(oldest) AS oldest FROM p GROUP BY queue
),
c AS (
    SELECT queue,
           COALESCE(sum(n) FILTER (WHERE state = 'queued'), 0)::bigint AS queued,
           COALESCE(sum(n) FILTER (WHERE state = 'running'), 0)::bigint AS running,
           COALESCE(sum(n) FILTER (WHERE state = 'succeeded'), 0)::bigint AS succeeded,
           COALESCE(sum(n) FILTER (WHERE state = 'failed'), 0)::bigint AS failed,
           COALESCE(sum(n) FILTER (WHERE state = 'cancelled'), 0)::bigint AS cancelled,
           sum(excess)::bigint AS excess
    FROM g
    GROUP BY queue
)
SELECT c.queue, c.queued, c.running, c.succeeded, c.failed, c.cancelled,
       c.queued - COALESCE(r.future, 0)::bigint,
       CASE WHEN r.oldest <= t.now THEN EXTRACT(EPOCH FROM t.now - r.oldest)::float8 END,
       c.excess
FROM c CROSS JOIN t LEFT JOIN r ON r.queue = c.queue
ORDER BY c.queue;

-- name: compact_counts
-- Fold the count rows into one per group. Safe beside writers: the DELETE removes only the
-- rows its snapshot sees (committed before it began), and puts back their sum in the same
-- transaction; rows committed meanwhile stay as they are. One compaction at a time (a
-- transaction lock keyed by this table, so every schema has its own): another returns at once.
WITH d AS (
    DELETE FROM onthedot_job_counts
    WHERE (SELECT pg_try_advisory_xact_lock('onthedot_job_counts'::regclass::oid::bigint))
    RETURNING queue, name, state, priority, n
)
INSERT INTO onthedot_job_counts (queue, name, state, priority, n)
SELECT queue, name, state, priority, sum(n) FROM d
GROUP BY queue, name, state, priority
HAVING sum(n) <> 0;

-- name: set_queue_paused
INSERT INTO onthedot_queues (name, paused, paused_at, paused_by)
VALUES (%(name)s, %(paused)s, now(), %(actor)s)
ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, paused_at = EXCLUDED.paused_at,
    paused_by = EXCLUDED.paused_by;

-- name: paused_queues
SELECT name FROM onthedot_queues WHERE paused;

-- name: queued_by_name
-- From onthedot_job_counts; the third column: count rows beyond one per group (see queue_stats).
SELECT name, sum(n)::bigint, count(*) - count(DISTINCT (queue, priority))
FROM onthedot_job_counts WHERE state = 'queued'
GROUP BY name ORDER BY name;

-- name: finished_counts
-- Buckets of whole minutes: from the minutes kept as jobs finish (migration 0009).
SELECT to_timestamp(floor(extract(epoch FROM minute) / %(bucket)s) * %(bucket)s), state, sum(n)
FROM onthedot_job_minutes
WHERE minute >= %(since)s  -- the minutes that begin at or after since
GROUP BY 1, 2
HAVING sum(n) <> 0
ORDER BY 1;

-- name: compact_minutes
-- Fold the minute rows into one per (minute, state), as compact_counts does.
WITH d AS (
    DELETE FROM onthedot_job_minutes
    WHERE (SELECT pg_try_advisory_xact_lock('onthedot_job_minutes'::regclass::oid::bigint))
    RETURNING minute, state, n
)
INSERT INTO onthedot_job_minutes (minute, state, n)
SELECT minute, state, sum(n) FROM d GROUP BY minute, state HAVING sum(n) <> 0;

-- name: prune_minutes
DELETE FROM onthedot_job_minutes WHERE minute < %(before)s;

-- name: job_counts_rows
-- Buckets counted from the rows: one range of onthedot_jobs_done per (job name, final state)
-- (the finished_range parts, joined by UNION ALL, stand in the FROM).
SELECT to_timestamp(floor(extract(epoch FROM finished_at) / %(bucket)s) * %(bucket)s),
       state, count(*)
FROM ({rows}) AS f
GROUP BY 1, 2
ORDER BY 1;

-- name: finished_range
SELECT finished_at, state FROM onthedot_jobs
WHERE name = %(name)s AND state = %(state)s AND finished_at >= %(since)s
  AND state IN ('succeeded', 'failed', 'cancelled')

-- name: schema_version
SELECT COALESCE(max(version), 0) FROM onthedot_schema_version;

-- ---------------------------------------------------------------------------------------------
-- Schedules: ledger, slot history, generations, audit

-- name: schedule_rows_of
SELECT key, source, fingerprint, spec, timezone, "cursor", next_due_at, generation, definition,
       removed_at, paused, paused_until, paused_at, paused_by, pause_note, missed_total,
       coalesced_total, last_missed_from, last_missed_to, last_slot, last_outcome, last_job_id,
       repaired_reason, created_at, updated_at
FROM onthedot_schedules WHERE key = ANY(%(keys)s::text[]) ORDER BY key;

-- name: list_schedule_rows
SELECT key, source, fingerprint, spec, timezone, "cursor", next_due_at, generation, definition,
       removed_at, paused, paused_until, paused_at, paused_by, pause_note, missed_total,
       coalesced_total, last_missed_from, last_missed_to, last_slot, last_outcome, last_job_id,
       repaired_reason, created_at, updated_at
FROM onthedot_schedules ORDER BY key;

-- name: update_operator_state
-- The sets placeholder: the operator columns being changed, built by the caller.
UPDATE onthedot_schedules SET {sets}, updated_at = COALESCE(%(now)s::timestamptz, now())
WHERE key = %(key)s
RETURNING key, source, fingerprint, spec, timezone, "cursor", next_due_at, generation, definition,
       removed_at, paused, paused_until, paused_at, paused_by, pause_note, missed_total,
       coalesced_total, last_missed_from, last_missed_to, last_slot, last_outcome, last_job_id,
       repaired_reason, created_at, updated_at;

-- name: add_generation
INSERT INTO onthedot_generations (code_hash) VALUES (%(hash)s) ON CONFLICT (code_hash) DO NOTHING;

-- name: generation_of
SELECT generation FROM onthedot_generations WHERE code_hash = %(hash)s;

-- name: clock_and_fence
SELECT COALESCE(%(now)s::timestamptz, now()),
       EXISTS (SELECT 1 FROM onthedot_workers w
               WHERE w.scheduler AND w.generation > %(generation)s
                 AND w.heartbeat_at > COALESCE(%(now)s::timestamptz, now())
                                      - %(ttl)s * interval '1 second');

-- name: sync_rows
SELECT key, source, fingerprint, spec, timezone, "cursor", next_due_at, generation, definition,
       removed_at, paused, paused_until, paused_at, paused_by, pause_note, missed_total,
       coalesced_total, last_missed_from, last_missed_to, last_slot, last_outcome, last_job_id,
       repaired_reason, created_at, updated_at
FROM onthedot_schedules
WHERE key = ANY(%(keys)s::text[]) OR (source = 'code' AND removed_at IS NULL)
ORDER BY key
FOR UPDATE;

-- name: ledger_insert
INSERT INTO onthedot_schedules (key, source, fingerprint, spec, timezone, "cursor", next_due_at,
                                generation, repaired_reason, created_at, updated_at)
SELECT v.key, 'code', v.fingerprint, v.spec, v.timezone, v.cursor, v.next_due_at,
       %(generation)s, v.reason, %(now)s, %(now)s
FROM unnest(%(key)s::text[], %(fingerprint)s::text[], %(spec)s::text[], %(timezone)s::text[],
            %(cursor)s::timestamptz[], %(next_due_at)s::timestamptz[], %(reason)s::text[])
     AS v(key, fingerprint, spec, timezone, cursor, next_due_at, reason)
ON CONFLICT (key) DO NOTHING;

-- name: ledger_restart
UPDATE onthedot_schedules s
SET fingerprint = v.fingerprint, spec = v.spec, timezone = v.timezone, "cursor" = v.cursor,
    next_due_at = v.next_due_at, generation = %(generation)s, removed_at = NULL,
    repaired_reason = v.reason, updated_at = %(now)s
FROM unnest(%(key)s::text[], %(fingerprint)s::text[], %(spec)s::text[], %(timezone)s::text[],
            %(cursor)s::timestamptz[], %(next_due_at)s::timestamptz[], %(reason)s::text[])
     AS v(key, fingerprint, spec, timezone, cursor, next_due_at, reason)
WHERE s.key = v.key;

-- name: cancel_removed_jobs
-- Before ledger_remove, in the sync transaction (the ledger rows are locked by sync_rows).
UPDATE onthedot_jobs SET state = 'cancelled', finished_at = %(now)s
WHERE schedule_key = ANY(%(key)s::text[]) AND state = 'queued'
RETURNING schedule_key;

-- name: ledger_remove
UPDATE onthedot_schedules
SET removed_at = %(now)s, next_due_at = NULL, generation = %(generation)s,
    repaired_reason = 'no longer declared in code', updated_at = %(now)s
WHERE key = ANY(%(key)s::text[]) AND source = 'code';

-- name: tick_probe
-- The idle tick: one autocommit read of the clock, the deploy fence, the earliest due instant
-- (the first entry of onthedot_schedules_due) and the earliest health check (the first entry
-- of onthedot_schedule_health_check). Only when a row is due does the tick open its
-- transaction, and the fence is checked again inside it (clock_and_fence).
SELECT COALESCE(%(now)s::timestamptz, now()),
       EXISTS (SELECT 1 FROM onthedot_workers w
               WHERE w.scheduler AND w.generation > %(generation)s
                 AND w.heartbeat_at > COALESCE(%(now)s::timestamptz, now())
                                      - %(ttl)s * interval '1 second'),
       (SELECT min(next_due_at) FROM onthedot_schedules WHERE next_due_at IS NOT NULL),
       (SELECT min(check_at) FROM onthedot_schedule_health WHERE check_at IS NOT NULL);

-- name: tick_due
-- Only what deciding reads (domain.ledger.DueRow, in its order): a burst reads 100k of them.
SELECT key, source, fingerprint, spec, timezone, "cursor", next_due_at, paused, paused_until,
       definition,
       CASE WHEN s.key = ANY(%(skip_keys)s::text[]) OR s.definition ->> 'overlap' = 'skip'
            THEN (SELECT count(*) FROM onthedot_jobs j
                  WHERE j.schedule_key = s.key AND j.state IN ('queued', 'running'))
            ELSE 0 END
FROM onthedot_schedules s
WHERE s.next_due_at <= %(now)s
ORDER BY s.next_due_at
LIMIT %(limit)s
FOR UPDATE OF s SKIP LOCKED;

-- name: tick_write
-- Everything a tick decided, in one statement: slot history rows (the unique key refuses a
-- slot already there), the jobs of the slots it took, and the ledger rows (cursor, next due,
-- counters, the newest slot and its outcome). Input is JSON, grouped: each planned slot is
-- (key, index of its group), a group being what slots share (slot, outcome, job template,
-- run-at, lock key); each plan is (key, index of its group of ledger values, ordinal of its
-- newest slot or 0). A burst of identical schedules sends two short groups and a few arrays,
-- cheap to encode and to parse.
WITH sg AS MATERIALIZED (
    SELECT g.i, g.slot, g.outcome, g.name, g.queue, g.priority, g.args::jsonb AS args,
           g.kwargs::jsonb AS kwargs, g.run_at, g.max_attempts, g.timeout, g.lock_key,
           g.limit_key, g.limits
    FROM json_to_recordset(%(sgroups)s::json)
         AS g(i int, slot timestamptz, outcome text, name text, queue text, priority int,
              args text, kwargs text, run_at timestamptz, max_attempts int, timeout float8,
              lock_key text, limit_key text, limits text)
),
seq AS MATERIALIZED (SELECT pg_get_serial_sequence('onthedot_jobs', 'id')::regclass AS s),
input AS MATERIALIZED (
    SELECT k.ord, k.key, g.slot, g.outcome, g.name, g.queue, g.priority, g.args, g.kwargs,
           g.run_at, g.max_attempts, g.timeout, g.lock_key, g.limit_key, g.limits,
           CASE WHEN g.name IS NOT NULL THEN nextval(seq.s) END AS job_id
    FROM ROWS FROM (json_array_elements_text(%(skeys)s::json),
                    json_array_elements_text(%(sgi)s::json)) WITH ORDINALITY AS k(key, gi, ord)
    JOIN sg g ON g.i = k.gi::int
    CROSS JOIN seq
),
hist AS (
    INSERT INTO onthedot_slots (schedule_key, slot, outcome, job_id, recorded_at)
    SELECT key, slot, outcome, job_id, %(now)s FROM input
    ON CONFLICT (schedule_key, slot) DO NOTHING
    RETURNING schedule_key, slot
),
done AS MATERIALIZED (
    SELECT i.* FROM input i JOIN hist h ON h.schedule_key = i.key AND h.slot = i.slot
),
jobs AS (
    INSERT INTO onthedot_jobs (id, name, queue, priority, args, kwargs, run_at, max_attempts,
                               timeout, schedule_key, slot, lock_key, limit_key, limits,
                               created_at)
    SELECT job_id, name, queue, priority, args, kwargs, COALESCE(run_at, %(now)s), max_attempts,
           timeout, key, slot, lock_key, limit_key, limits, %(now)s
    FROM done WHERE job_id IS NOT NULL
),
pg AS MATERIALIZED (
    SELECT * FROM json_to_recordset(%(pgroups)s::json)
         AS g(i int, cursor timestamptz, next_due timestamptz, missed bigint,
              missed_from timestamptz, missed_to timestamptz, coalesced bigint, unpause bool,
              remove bool, fingerprint text, spec text, timezone text, reason text)
),
plans AS (
    SELECT k.key, k.newest::bigint AS newest, g.*
    FROM ROWS FROM (json_array_elements_text(%(pkeys)s::json),
                    json_array_elements_text(%(pgi)s::json),
                    json_array_elements_text(%(pni)s::json)) AS k(key, gi, newest)
    JOIN pg g ON g.i = k.gi::int
),
ledger AS (
    UPDATE onthedot_schedules s
    SET "cursor" = v.cursor,
        next_due_at = v.next_due,
        missed_total = s.missed_total + v.missed,
        last_missed_from = CASE WHEN v.missed > 0 THEN v.missed_from ELSE s.last_missed_from END,
        last_missed_to = CASE WHEN v.missed > 0 THEN v.missed_to ELSE s.last_missed_to END,
        coalesced_total = s.coalesced_total + v.coalesced,
        paused = CASE WHEN v.unpause THEN false ELSE s.paused END,
        paused_until = CASE WHEN v.unpause THEN NULL ELSE s.paused_until END,
        removed_at = CASE WHEN v.remove THEN %(now)s ELSE s.removed_at END,
        fingerprint = COALESCE(v.fingerprint, s.fingerprint),
        spec = COALESCE(v.spec, s.spec),
        timezone = COALESCE(v.timezone, s.timezone),
        generation = CASE WHEN v.fingerprint IS NOT NULL OR v.remove THEN %(generation)s
                          ELSE s.generation END,
        repaired_reason = COALESCE(v.reason, s.repaired_reason),
        last_slot = COALESCE(n.slot, s.last_slot),
        last_outcome = CASE WHEN n.slot IS NULL THEN s.last_outcome
                            WHEN d.ord IS NULL THEN 'skipped_operator' ELSE n.outcome END,
        last_job_id = CASE WHEN n.slot IS NULL THEN s.last_job_id ELSE d.job_id END,
        updated_at = %(now)s
    FROM plans v LEFT JOIN input n ON n.ord = v.newest LEFT JOIN done d ON d.ord = v.newest
    WHERE s.key = v.key
)
SELECT ord, job_id FROM done;

-- name: slot_history
-- start, end: NULL for no bound; limit: NULL for every row.
SELECT h.schedule_key, h.slot, h.outcome, h.job_id, h.recorded_at, h.actor, h.note, j.state
FROM onthedot_slots h LEFT JOIN onthedot_jobs j ON j.id = h.job_id
WHERE h.schedule_key = %(key)s
  AND (%(start)s::timestamptz IS NULL OR h.slot >= %(start)s::timestamptz)
  AND (%(end)s::timestamptz IS NULL OR h.slot <= %(end)s::timestamptz)
ORDER BY h.slot DESC
LIMIT %(limit)s::bigint;

-- name: record_slot
INSERT INTO onthedot_slots (schedule_key, slot, outcome, job_id, recorded_at, actor, note)
VALUES (%(key)s, %(slot)s, %(outcome)s, %(job_id)s, COALESCE(%(now)s::timestamptz, now()),
        %(actor)s, %(note)s)
ON CONFLICT (schedule_key, slot) DO NOTHING
RETURNING recorded_at;

-- name: delete_slot
DELETE FROM onthedot_slots WHERE schedule_key = %(key)s AND slot = %(slot)s AND outcome = %(outcome)s;

-- name: add_audit
INSERT INTO onthedot_audit (at, actor, action, schedule_key, note, details)
VALUES (COALESCE(%(at)s::timestamptz, now()), %(actor)s, %(action)s, %(key)s, %(note)s,
        %(details)s::jsonb);

-- name: list_audit
SELECT id, at, actor, action, schedule_key, note, details FROM onthedot_audit
WHERE %(key)s::text IS NULL OR schedule_key = %(key)s
ORDER BY id DESC
LIMIT %(limit)s;

-- name: lock_schedule
-- The ledger row, locked until the deleting transaction ends: a tick holding it commits first
-- (and its job is cancelled), a later one finds no row.
SELECT key FROM onthedot_schedules WHERE key = %(key)s FOR UPDATE;

-- name: cancel_schedule_jobs
UPDATE onthedot_jobs SET state = 'cancelled', finished_at = now()
WHERE schedule_key = %(key)s AND state = 'queued';

-- name: delete_schedule
DELETE FROM onthedot_schedules WHERE key = %(key)s;

-- name: delete_schedule_slots
DELETE FROM onthedot_slots WHERE schedule_key = %(key)s;

-- name: upsert_dynamic
INSERT INTO onthedot_schedules (key, source, fingerprint, spec, timezone, definition, "cursor",
                                next_due_at, generation, repaired_reason, created_at, updated_at)
VALUES (%(key)s, 'dynamic', %(fingerprint)s, %(spec)s, %(timezone)s, %(definition)s::jsonb,
        %(cursor)s, %(next_due_at)s, 0, %(reason)s, COALESCE(%(now)s::timestamptz, now()),
        COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (key) DO UPDATE
SET fingerprint = EXCLUDED.fingerprint, spec = EXCLUDED.spec, timezone = EXCLUDED.timezone,
    definition = EXCLUDED.definition, "cursor" = EXCLUDED."cursor",
    next_due_at = EXCLUDED.next_due_at, repaired_reason = EXCLUDED.repaired_reason,
    updated_at = EXCLUDED.updated_at
WHERE onthedot_schedules.source = 'dynamic';

-- name: set_slot_job
UPDATE onthedot_slots SET job_id = %(job_id)s WHERE schedule_key = %(key)s AND slot = %(slot)s;

-- name: count_live_code_rows
SELECT count(*) FROM onthedot_schedules
WHERE key = ANY(%(keys)s::text[]) AND source = 'code' AND removed_at IS NULL;

-- ---------------------------------------------------------------------------------------------
-- Schedule health (docs/health.md): health rows, problems, alerts

-- name: health_states
SELECT key, check_at, watch_slot, decided_slot, fingerprint, last_success_slot, last_success_at, durations,
       expect, ping, overrides, overrides_by, overrides_at, overrides_note, checked_at
FROM onthedot_schedule_health
WHERE %(all)s OR key = ANY(%(keys)s::text[])
ORDER BY key;

-- name: set_expectations
UPDATE onthedot_schedule_health
SET overrides = %(overrides)s::jsonb, overrides_by = %(actor)s, overrides_note = %(note)s,
    overrides_at = COALESCE(%(now)s::timestamptz, now()),
    check_at = COALESCE(%(now)s::timestamptz, now())
WHERE key = %(key)s
RETURNING key;

-- name: recheck_health
UPDATE onthedot_schedule_health SET check_at = COALESCE(%(now)s::timestamptz, now())
WHERE key = ANY(%(keys)s::text[])
  AND (check_at IS NULL OR check_at > COALESCE(%(now)s::timestamptz, now()));

-- name: watch_clock
SELECT COALESCE(%(now)s::timestamptz, now());

-- name: watch_rows
-- The health rows with their ledger row and the ledger's newest slot's job, filtered by one of
-- the two blocks below. Columns: see storage/sql/health.py (_facts).
SELECT h.key, h.check_at, h.watch_slot, h.decided_slot, h.fingerprint, h.last_success_slot,
       h.last_success_at,
       h.durations, h.expect, h.ping, h.overrides, h.overrides_by, h.overrides_at,
       h.overrides_note, h.checked_at,
       s.key, s.source, s.fingerprint, s.spec, s.timezone, s."cursor", s.next_due_at,
       s.generation, s.definition, s.removed_at, s.paused, s.paused_until, s.paused_at,
       s.paused_by, s.pause_note, s.missed_total, s.coalesced_total, s.last_missed_from,
       s.last_missed_to, s.last_slot, s.last_outcome, s.last_job_id, s.repaired_reason,
       s.created_at, s.updated_at,
       j.state, j.started_at, j.finished_at
FROM onthedot_schedule_health h
JOIN onthedot_schedules s ON s.key = h.key
LEFT JOIN onthedot_jobs j ON j.id = s.last_job_id
{where};

-- name: watch_due_where
-- The rows due for a check, locked (another scheduler skips them), the most overdue first.
WHERE h.check_at <= %(now)s
ORDER BY h.check_at
LIMIT %(limit)s
FOR UPDATE OF h SKIP LOCKED

-- name: watch_all_where
-- Every watched schedule (or those of `keys`), due or not, nothing locked.
WHERE %(all)s OR h.key = ANY(%(keys)s::text[])
ORDER BY h.key

-- name: watch_slots
-- The unsettled slots of these schedules (after their watch_slot, due, not manual runs),
-- oldest first, at most `page` each, with their jobs as they are now.
SELECT x.schedule_key, x.slot, x.outcome, x.recorded_at, x.actor, x.note, x.job_id, j.state,
       j.name, j.queue, j.run_at, j.attempts, j.max_attempts + j.lost, j.started_at,
       j.finished_at, j.error, j.worker_id, j.lock_key
FROM (SELECT sl.*, row_number() OVER (PARTITION BY sl.schedule_key ORDER BY sl.slot) AS n
      FROM onthedot_slots sl
      JOIN onthedot_schedule_health h ON h.key = sl.schedule_key
      WHERE h.key = ANY(%(keys)s::text[])
        AND (h.watch_slot IS NULL OR sl.slot > h.watch_slot)
        AND sl.slot <= %(now)s AND sl.outcome <> 'manual') x
LEFT JOIN onthedot_jobs j ON j.id = x.job_id
WHERE x.n <= %(page)s
ORDER BY x.schedule_key, x.slot;

-- name: watch_open
SELECT id, schedule_key, slot, kind, cause, opened_at FROM onthedot_schedule_problems
WHERE resolved_at IS NULL AND schedule_key = ANY(%(keys)s::text[])
ORDER BY schedule_key, id;

-- name: problem_open
-- A problem found after the fact (its resolution given) is opened resolved.
INSERT INTO onthedot_schedule_problems (schedule_key, slot, kind, cause, detail, facts,
                                        opened_at, resolved_at, resolution)
SELECT v.key, v.slot, v.kind, v.cause, v.detail, v.facts::jsonb, %(now)s,
       CASE WHEN v.resolution IS NOT NULL THEN %(now)s::timestamptz END, v.resolution
FROM unnest(%(key)s::text[], %(slot)s::timestamptz[], %(kind)s::text[], %(cause)s::text[],
            %(detail)s::text[], %(facts)s::text[], %(resolution)s::text[])
     AS v(key, slot, kind, cause, detail, facts, resolution)
ON CONFLICT (schedule_key, slot, kind) DO NOTHING
RETURNING id, schedule_key, slot, kind, cause, detail, facts, opened_at, resolved_at,
          resolution;

-- name: problem_resolve
UPDATE onthedot_schedule_problems p SET resolved_at = %(now)s, resolution = v.resolution
FROM unnest(%(id)s::bigint[], %(resolution)s::text[]) AS v(id, resolution)
WHERE p.id = v.id AND p.resolved_at IS NULL
RETURNING p.id, p.schedule_key, p.slot, p.kind, p.cause, p.detail, p.facts, p.opened_at,
          p.resolved_at, p.resolution;

-- name: problem_refresh
UPDATE onthedot_schedule_problems p
SET cause = v.cause, detail = v.detail, facts = v.facts::jsonb
FROM unnest(%(id)s::bigint[], %(cause)s::text[], %(detail)s::text[], %(facts)s::text[])
     AS v(id, cause, detail, facts)
WHERE p.id = v.id AND p.resolved_at IS NULL;

-- name: alert_add
INSERT INTO onthedot_alerts (problem_id, event, created_at, due_at)
SELECT v.id, v.event, %(now)s, %(now)s
FROM unnest(%(id)s::bigint[], %(event)s::text[]) AS v(id, event)
ON CONFLICT (problem_id, event) DO NOTHING;

-- name: health_write
-- Every evaluated schedule's health row, from one JSON array (cheaper to send than ten arrays).
UPDATE onthedot_schedule_health h
SET check_at = v.check_at, watch_slot = v.watch_slot, decided_slot = v.decided_slot,
    fingerprint = v.fingerprint,
    last_success_slot = v.last_success_slot, last_success_at = v.last_success_at,
    durations = v.durations, expect = v.expect, ping = v.ping,
    checked_at = %(now)s
FROM json_to_recordset(%(rows)s::json)
     AS v(key text, check_at timestamptz, watch_slot timestamptz, decided_slot timestamptz,
          fingerprint text, last_success_slot timestamptz, last_success_at timestamptz,
          durations jsonb, expect jsonb, ping text)
WHERE h.key = v.key;

-- name: list_problems
SELECT id, schedule_key, slot, kind, cause, detail, facts, opened_at, resolved_at, resolution
FROM onthedot_schedule_problems
WHERE (%(key)s::text IS NULL OR schedule_key = %(key)s)
  AND (NOT %(open_only)s OR resolved_at IS NULL)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: claim_alerts
UPDATE onthedot_alerts a
SET claimed_by = %(worker_id)s,
    claimed_until = COALESCE(%(now)s::timestamptz, now()) + %(hold)s * interval '1 second'
FROM (SELECT id FROM onthedot_alerts
      WHERE state = 'pending' AND due_at <= COALESCE(%(now)s::timestamptz, now())
        AND (claimed_until IS NULL OR claimed_until < COALESCE(%(now)s::timestamptz, now()))
      ORDER BY due_at, id
      LIMIT %(limit)s
      FOR UPDATE SKIP LOCKED) c
WHERE a.id = c.id
RETURNING a.id, a.event, a.attempts, a.problem_id;

-- name: alert_problems
SELECT id, schedule_key, slot, kind, cause, detail, facts, opened_at, resolved_at, resolution
FROM onthedot_schedule_problems WHERE id = ANY(%(ids)s::bigint[]);

-- name: finish_alert
UPDATE onthedot_alerts
SET attempts = attempts + 1, claimed_by = NULL, claimed_until = NULL, last_error = %(error)s,
    state = CASE WHEN %(error)s::text IS NULL THEN 'sent'
                 WHEN %(retry_at)s::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
    sent_at = CASE WHEN %(error)s::text IS NULL THEN COALESCE(%(now)s::timestamptz, now()) END,
    due_at = COALESCE(%(retry_at)s::timestamptz, due_at)
WHERE id = %(id)s AND claimed_by = %(worker_id)s AND state = 'pending'
RETURNING id;

-- name: prune_problems
DELETE FROM onthedot_schedule_problems
WHERE resolved_at IS NOT NULL AND resolved_at < %(before)s;

-- name: prune_alerts
DELETE FROM onthedot_alerts WHERE state <> 'pending' AND created_at < %(before)s;

-- name: ping_targets
SELECT key, ping FROM onthedot_schedule_health WHERE ping IS NOT NULL;

-- name: limit_state
-- Each key's limit (NULL columns: not registered by any worker yet) and tokens available now.
SELECT s.lkey, l.name IS NOT NULL, l.concurrency,
       CASE WHEN l.rate IS NULL THEN NULL
            ELSE least(coalesce(l.burst, 1)::float8,
                       coalesce(s.tokens + l.rate * extract(epoch FROM
                           (COALESCE(%(now)s::timestamptz, now()) - s.refilled_at))::float8,
                           coalesce(l.burst, 1)::float8))
       END,
       l.rate
FROM onthedot_limit_keys s LEFT JOIN onthedot_limits l ON l.name = s.name
WHERE s.lkey = ANY(%(lkeys)s::text[])
ORDER BY s.lkey;

-- name: limit_running
-- The running jobs under each limit key (`every`: all keys, else those of `lkeys`): a
-- crashed worker's job counts until its rescue. Reads only the running limited jobs.
SELECT k, count(*) FROM onthedot_jobs r, json_array_elements_text(r.limits::json) AS k
WHERE r.state = 'running' AND r.limit_key IS NOT NULL
  AND (%(every)s OR k = ANY(%(lkeys)s::text[]))
GROUP BY k;

-- name: limit_waiting
-- The queued jobs of each home key (`every`: all keys, else those of `lkeys`).
SELECT q.limit_key, count(*) FROM onthedot_jobs q
WHERE q.state = 'queued' AND q.limit_key IS NOT NULL
  AND (%(every)s OR q.limit_key = ANY(%(lkeys)s::text[]))
GROUP BY q.limit_key;

-- name: limit_sync
INSERT INTO onthedot_limits AS o (name, concurrency, rate, burst, code_concurrency, code_rate,
                                  code_burst, updated_at)
VALUES (%(name)s, %(concurrency)s, %(rate)s, %(burst)s, %(concurrency)s, %(rate)s, %(burst)s,
        COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (name) DO UPDATE SET
    code_concurrency = excluded.code_concurrency, code_rate = excluded.code_rate,
    code_burst = excluded.code_burst,
    concurrency = CASE WHEN o.overridden THEN o.concurrency ELSE excluded.concurrency END,
    rate = CASE WHEN o.overridden THEN o.rate ELSE excluded.rate END,
    burst = CASE WHEN o.overridden THEN o.burst ELSE excluded.burst END,
    updated_at = excluded.updated_at
WHERE o.code_concurrency IS DISTINCT FROM excluded.code_concurrency
   OR o.code_rate IS DISTINCT FROM excluded.code_rate
   OR o.code_burst IS DISTINCT FROM excluded.code_burst;

-- name: limit_set
UPDATE onthedot_limits
SET concurrency = %(concurrency)s, rate = %(rate)s, burst = %(burst)s, overridden = true,
    updated_at = COALESCE(%(now)s::timestamptz, now())
WHERE name = %(name)s
RETURNING name;

-- name: limit_reset
UPDATE onthedot_limits
SET concurrency = code_concurrency, rate = code_rate, burst = code_burst, overridden = false,
    updated_at = COALESCE(%(now)s::timestamptz, now())
WHERE name = %(name)s
RETURNING name;

-- name: limit_rows
SELECT name, concurrency, rate, burst, code_concurrency, code_rate, code_burst, overridden
FROM onthedot_limits ORDER BY name;

-- name: limit_job
SELECT state, queue, name,
       extract(epoch FROM (run_at - COALESCE(%(now)s::timestamptz, now())))::float8, limits
FROM onthedot_jobs WHERE id = %(id)s;

-- name: limit_gather
-- The limited claim's reads in one call (onthedot_limit_gather: migration 0010, its plans
-- 0011); SQLite runs limit_candidates, limit_jobs, limit_ensure, limit_state and
-- limit_running instead.
SELECT onthedot_limit_gather(%(queue)s::text, %(now)s::timestamptz, %(limit)s::integer,
                             %(any_name)s::boolean, %(names)s::text[]);

-- name: limit_apply
-- The picked jobs claimed and the keys' buckets written, in one statement (SQLite: limit_claim,
-- then limit_take per key). A solo job's attempt counts (see limit_claim).
WITH taken AS (
    UPDATE onthedot_limit_keys s
    SET tokens = v.tokens, refilled_at = COALESCE(%(now)s::timestamptz, now()),
        last_start = COALESCE(%(now)s::timestamptz, now())
    FROM unnest(%(tkeys)s::text[], %(tokens)s::float8[]) AS v(lkey, tokens)
    WHERE s.lkey = v.lkey
)
UPDATE onthedot_jobs j
SET state = 'running', worker_id = %(worker_id)s, attempts = j.attempts + 1,
    started_at = COALESCE(%(now)s::timestamptz, now()),
    lease_until = COALESCE(%(now)s::timestamptz, now()) + %(lease)s * interval '1 second',
    charged = %(charge)s OR j.solo, began = %(charge)s OR j.solo
WHERE j.id = ANY(%(ids)s::bigint[]) AND j.state = 'queued'
RETURNING j.id, j.name, j.args::text, j.kwargs::text, j.queue, j.attempts,
          j.max_attempts + j.lost, j.timeout, j.schedule_key, j.slot, j.priority,
          date_part('epoch', j.run_at), j.unique_key;
