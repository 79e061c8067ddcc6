-- Named queries for the SQLite backend. Parameters use :name style. Instants are REAL epoch
-- seconds; `:now` is always bound by the storage (SQLite's clock is the host clock).

-- name: enqueue_one
INSERT INTO onthedot_jobs (name, queue, priority, args, kwargs, run_at, max_attempts, timeout,
                           unique_key, schedule_key, slot, lock_key, limit_key, limits,
                           created_at)
VALUES (:name, :queue, :priority, :args, :kwargs, COALESCE(:run_at, :now), :max_attempts,
        :timeout, :unique_key, :schedule_key, :slot, :lock_key, :limit_key, :limits, :now)
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state IN ('queued', 'running')
DO NOTHING
RETURNING id;

-- name: enqueue_many
INSERT INTO onthedot_jobs (name, queue, priority, args, kwargs, run_at, max_attempts, timeout,
                           schedule_key, slot, lock_key, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: find_unique
SELECT id FROM onthedot_jobs WHERE unique_key = :unique_key AND state IN ('queued', 'running');

-- name: claim_jobs
-- One priority at a time, as on PostgreSQL (see its claim_jobs): a loose scan of the ready
-- index finds the queue's priorities, highest first, and each is read as an index range on
-- (queue, priority, run_at) that ends at the first job not yet due, so delayed jobs are never
-- walked past. No ORDER BY: the nested loop yields the claim order itself (prio in order,
-- each range in (run_at, id) order), where sorting would read every due job of every priority.
WITH RECURSIVE prio(priority) AS (
    SELECT (SELECT q.priority FROM onthedot_jobs q
            WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = :queue
            ORDER BY q.priority DESC LIMIT 1)
    UNION ALL
    SELECT (SELECT q.priority FROM onthedot_jobs q
            WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = :queue AND q.priority < prio.priority
            ORDER BY q.priority DESC LIMIT 1)
    FROM prio WHERE prio.priority IS NOT NULL)
UPDATE onthedot_jobs
SET state = 'running', worker_id = :worker_id, attempts = attempts + 1, started_at = :now,
    lease_until = :now + :lease, charged = :charge, began = :charge
WHERE id IN (
    SELECT q.id FROM prio CROSS JOIN onthedot_jobs q
    WHERE prio.priority IS NOT NULL
      -- A paused queue is checked in the claim itself (see PostgreSQL's claim_jobs).
      AND NOT EXISTS (SELECT 1 FROM onthedot_queues p WHERE p.name = :queue AND p.paused = 1)
      AND q.state = 'queued' AND q.limit_key IS NULL AND q.queue = :queue
      AND q.priority = prio.priority
      AND q.run_at <= :now
      AND (:shared = 0 OR q.solo = 0)
      AND (:any_name = 1 OR q.name IN (SELECT value FROM json_each(:names)))
      AND (q.lock_key IS NULL OR (
          NOT EXISTS (SELECT 1 FROM onthedot_jobs r
                      WHERE r.lock_key = q.lock_key AND r.state = 'running')
          AND q.id = (SELECT min(o.id) FROM onthedot_jobs o
                      WHERE o.lock_key = q.lock_key AND o.state = 'queued')))
    LIMIT :limit)
-- max_attempts + lost: an execution lost uncharged (domain.rescue) extends the allowance.
RETURNING id, name, args, kwargs, queue, attempts, max_attempts + lost, timeout, schedule_key,
          slot, priority, run_at, unique_key;

-- name: claim_alone
-- One job lost beside others (solo), for a worker that holds nothing else: its attempt counts.
UPDATE onthedot_jobs
SET state = 'running', worker_id = :worker_id, attempts = attempts + 1, started_at = :now,
    lease_until = :now + :lease, charged = 1, began = 1
WHERE id IN (
    SELECT q.id FROM onthedot_jobs q
    WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = :queue AND q.run_at <= :now
      AND q.solo = 1
      AND NOT EXISTS (SELECT 1 FROM onthedot_queues p WHERE p.name = :queue AND p.paused = 1)
      AND (:any_name = 1 OR q.name IN (SELECT value FROM json_each(:names)))
      AND (q.lock_key IS NULL OR (
          NOT EXISTS (SELECT 1 FROM onthedot_jobs r
                      WHERE r.lock_key = q.lock_key AND r.state = 'running')
          AND q.id = (SELECT min(o.id) FROM onthedot_jobs o
                      WHERE o.lock_key = q.lock_key AND o.state = 'queued')))
    ORDER BY q.priority DESC, q.run_at, q.id
    LIMIT 1)
-- max_attempts + lost: an execution lost uncharged (domain.rescue) extends the allowance.
RETURNING id, name, args, kwargs, queue, attempts, max_attempts + lost, timeout, schedule_key,
          slot, priority, run_at, unique_key;

-- name: finish_succeeded
-- An outcome is for one attempt (0: any): a late one never finishes a later attempt.
UPDATE onthedot_jobs SET state = 'succeeded', finished_at = :now, lease_until = NULL
WHERE id = :id AND (:attempt = 0 OR attempts = :attempt) AND worker_id = :worker_id
  AND state = 'running';

-- name: finish_outcome
UPDATE onthedot_jobs
SET state = :state,
    finished_at = CASE WHEN :state = 'queued' THEN NULL ELSE :now END,
    run_at = CASE WHEN :state = 'queued' THEN :now + :delay ELSE run_at END,
    result = :result,
    error = :error,
    traceback = :tb,
    -- A history that is not a JSON array SQLite can parse (written by hand, or nested past
    -- its depth limit) starts again: SQLite's JSON functions raise on it, which would fail
    -- every outcome of the batch.
    errors = CASE WHEN :error IS NULL THEN errors
                  ELSE json_insert(
                      CASE WHEN NOT json_valid(errors) THEN '[]'
                           WHEN json_type(errors) = 'array' THEN errors ELSE '[]' END,
                      '$[#]', json_object('attempt', attempts, 'at', :now_iso, 'error', :error,
                                          'worker_id', worker_id)) END,
    lease_until = NULL,
    cancel_requested = 0
WHERE id = :id AND (:attempt = 0 OR attempts = :attempt) AND worker_id = :worker_id
  AND state = 'running';

-- name: release_job
UPDATE onthedot_jobs
SET state = 'queued', attempts = max(attempts - 1, 0), worker_id = NULL, lease_until = NULL,
    started_at = NULL
WHERE id = :id AND worker_id = :worker_id AND state = 'running'
RETURNING queue;

-- name: heartbeat_worker
UPDATE onthedot_workers SET heartbeat_at = :now WHERE id = :worker_id;

-- name: extend_leases
UPDATE onthedot_jobs SET lease_until = :now + :lease
WHERE worker_id = :worker_id AND state = 'running'
RETURNING id, cancel_requested;

-- name: extend_held_leases
UPDATE onthedot_jobs SET lease_until = :now + :lease,
    began = began OR id IN (SELECT value FROM json_each(:started))
WHERE id IN (SELECT value FROM json_each(:ids)) AND worker_id = :worker_id AND state = 'running'
RETURNING id, cancel_requested;

-- name: register_worker
INSERT INTO onthedot_workers (id, hostname, pid, generation, queues, concurrency, scheduler,
                              started_at, heartbeat_at, jobs)
VALUES (:id, :hostname, :pid, :generation, :queues, :concurrency, :scheduler, :now, :now, :jobs)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at,
    generation = excluded.generation, stopping = 0, jobs = excluded.jobs;

-- name: set_worker_stopping
UPDATE onthedot_workers SET stopping = 1 WHERE id = :worker_id;

-- name: deregister_worker
DELETE FROM onthedot_workers WHERE id = :worker_id;

-- name: list_workers
SELECT w.id, w.hostname, w.pid, w.queues, w.concurrency, w.scheduler, w.generation,
       w.started_at, w.heartbeat_at, w.stopping, :now - w.heartbeat_at,
       (SELECT count(*) FROM onthedot_jobs j WHERE j.worker_id = w.id AND j.state = 'running'),
       w.jobs
FROM onthedot_workers w
ORDER BY w.started_at DESC, w.id;

-- name: expired_jobs
-- `ids`: only those (a rescuer's, domain.rescue.LeaseWatch), unless `any_id`.
SELECT id, name, attempts, max_attempts, queue, lost, charged, lease_until FROM onthedot_jobs
WHERE state = 'running' AND lease_until < :now
  AND (:any_id OR id IN (SELECT value FROM json_each(:ids)))
ORDER BY lease_until LIMIT :limit;

-- name: ending_leases
SELECT id, lease_until FROM onthedot_jobs
WHERE state = 'running' AND lease_until < :now + :within
ORDER BY lease_until LIMIT :limit;

-- name: rescue_job
-- `state` (queued again or failed) is decided by the caller (domain.rescue).
UPDATE onthedot_jobs
SET state = :state,
    finished_at = CASE WHEN :state = 'failed' THEN :now END,
    run_at = CASE WHEN :state = 'failed' THEN run_at ELSE :now END,
    error = :error,
    traceback = NULL,
    errors = json_insert(
        CASE WHEN NOT json_valid(errors) THEN '[]'
             WHEN json_type(errors) = 'array' THEN errors ELSE '[]' END,
        '$[#]', json_object('attempt', attempts, 'at', :now_iso, 'error', :error,
                            'worker_id', worker_id)),
    lease_until = NULL,
    lost = lost + :lost,
    solo = max(solo, :solo)
WHERE id = :id AND state = 'running' AND lease_until < :now
RETURNING id, name, attempts, state = 'queued', queue;

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
             WHERE name = :name AND state = :state AND finished_at < :before
               AND state IN ('succeeded', 'failed', 'cancelled')
             ORDER BY finished_at
             LIMIT :limit);

-- name: count_finished
SELECT count(*) FROM onthedot_jobs
WHERE name = :name AND state = :state AND finished_at < :before
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
    WHERE h.slot <= CAST(s.cursor AS INTEGER) AND h.recorded_at < :before
      AND h.slot < (SELECT max(m.slot) FROM onthedot_slots m
                    WHERE m.schedule_key = h.schedule_key)
      AND NOT EXISTS (SELECT 1 FROM onthedot_schedule_health w
                      WHERE w.key = h.schedule_key AND h.slot > w.watch_slot)
      AND NOT EXISTS (SELECT 1 FROM onthedot_schedule_problems p
                      WHERE p.schedule_key = h.schedule_key AND p.slot = h.slot
                        AND p.resolved_at IS NULL)
    LIMIT :limit);

-- name: prune_orphan_slots
DELETE FROM onthedot_slots
WHERE (schedule_key, slot) IN (
    SELECT h.schedule_key, h.slot FROM onthedot_slots h
    WHERE h.recorded_at < :before
      AND NOT EXISTS (SELECT 1 FROM onthedot_schedules s WHERE s.key = h.schedule_key)
    LIMIT :limit);

-- name: prune_ledger
DELETE FROM onthedot_schedules
WHERE source = 'code' AND removed_at IS NOT NULL AND removed_at < :before;

-- name: prune_audit
DELETE FROM onthedot_audit
WHERE id IN (SELECT id FROM onthedot_audit WHERE at < :before ORDER BY id LIMIT :limit);

-- name: prune_workers
DELETE FROM onthedot_workers WHERE heartbeat_at < :before;

-- name: acquire_maintenance
INSERT INTO onthedot_maintenance (task, last_run_at, worker_id)
VALUES (:task, :now, :worker_id)
ON CONFLICT (task) DO UPDATE SET last_run_at = excluded.last_run_at, worker_id = excluded.worker_id
WHERE onthedot_maintenance.last_run_at <= excluded.last_run_at - :every
RETURNING task;

-- name: seconds_until_ready
-- The earliest run_at of each (queue, priority), one index descent each, as on PostgreSQL.
WITH RECURSIVE prio(queue, priority) AS (
    SELECT v.value, (SELECT q.priority FROM onthedot_jobs q
                     WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = v.value
                     ORDER BY q.priority DESC LIMIT 1)
    FROM json_each(:queues) AS v
    UNION ALL
    SELECT prio.queue, (SELECT q.priority FROM onthedot_jobs q
                        WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = prio.queue
                          AND q.priority < prio.priority
                        ORDER BY q.priority DESC LIMIT 1)
    FROM prio WHERE prio.priority IS NOT NULL)
SELECT min((SELECT q.run_at FROM onthedot_jobs q
            WHERE q.state = 'queued' AND q.limit_key IS NULL AND q.queue = prio.queue AND q.priority = prio.priority
            ORDER BY q.run_at LIMIT 1)) - :now
FROM prio WHERE prio.priority IS NOT NULL;

-- name: get_job
SELECT id, name, queue, state, priority, args, kwargs, attempts, max_attempts, run_at,
       created_at, started_at, finished_at, timeout, unique_key, schedule_key, slot, worker_id,
       result, error, traceback, cancel_requested, errors, began
FROM onthedot_jobs WHERE id = :id;

-- name: list_jobs
-- The filter placeholder: the conditions of a JobFilter, built by the caller.
SELECT id, name, queue, state, priority, args, kwargs, attempts, max_attempts, run_at,
       created_at, started_at, finished_at, timeout, unique_key, schedule_key, slot, worker_id,
       result, error, traceback, cancel_requested, errors, began
FROM onthedot_jobs WHERE {filter} ORDER BY id DESC LIMIT :limit;

-- name: list_job_ids
-- One (queue, state) range of a page: ids only, so PostgreSQL reads them from
-- onthedot_jobs_list alone (selecting every column, it preferred walking the primary key
-- backwards past every newer job: 1M rows, 336 ms, where the index gives 50 in 0.8 ms).
SELECT id FROM onthedot_jobs WHERE {filter} ORDER BY id DESC LIMIT :limit;

-- name: list_jobs_by_ids
-- The page: the jobs of the newest ids of the ranges (joined by UNION ALL in place of ids).
SELECT id, name, queue, state, priority, args, kwargs, attempts, max_attempts, run_at,
       created_at, started_at, finished_at, timeout, unique_key, schedule_key, slot, worker_id,
       result, error, traceback, cancel_requested, errors, began
FROM onthedot_jobs WHERE id IN (SELECT id FROM ({ids}) AS ranges ORDER BY id DESC LIMIT :limit)
ORDER BY id DESC

-- name: kept_queues
-- The (queue, state) pairs that have jobs in these states, from the counts kept with the jobs.
SELECT queue, state FROM onthedot_job_counts WHERE state IN (SELECT value FROM json_each(:states))
GROUP BY queue, state HAVING sum(n) > 0 ORDER BY queue, state;

-- name: kept_count
-- count_jobs of a queue, job name and states, from the counts kept with the jobs (exact).
SELECT coalesce(sum(n), 0) FROM onthedot_job_counts WHERE {filter};

-- name: capped_count
SELECT count(*) FROM (SELECT 1 FROM onthedot_jobs WHERE {filter} LIMIT :cap) AS capped;

-- name: all_rows
-- The rows a filter matches (what the planner estimates for an estimated count).
SELECT 1 FROM onthedot_jobs WHERE {filter};

-- name: count_jobs
SELECT count(*) FROM onthedot_jobs WHERE {filter};

-- name: job_search
-- A condition of list_jobs and count_jobs: arguments are searched as JSON text.
(instr(args, :search) > 0 OR instr(kwargs, :search) > 0
 OR instr(args, :search_json) > 0 OR instr(kwargs, :search_json) > 0
 OR instr(COALESCE(error, ''), :search) > 0);

-- name: bulk_retry
-- A failed job whose unique_key another job holds again (queued or running) stays failed, as do
-- older failures of a key: retrying them would break the key's uniqueness.
UPDATE onthedot_jobs SET state = 'queued', run_at = :now, attempts = 0, lost = 0, solo = 0, finished_at = NULL,
    started_at = NULL, worker_id = NULL, lease_until = NULL, cancel_requested = 0
WHERE {filter} AND state IN ('failed', 'cancelled')
  AND (unique_key IS NULL OR (NOT EXISTS (SELECT 1 FROM onthedot_jobs u
       WHERE u.unique_key = onthedot_jobs.unique_key AND u.state IN ('queued', 'running'))
       AND id = (SELECT max(f.id) FROM onthedot_jobs f
       WHERE f.unique_key = onthedot_jobs.unique_key AND f.state IN ('failed', 'cancelled'))));

-- name: bulk_cancel
UPDATE onthedot_jobs SET state = 'cancelled', finished_at = :now
WHERE {filter} AND state = 'queued';

-- name: bulk_delete
DELETE FROM onthedot_jobs WHERE {filter} AND state <> 'running';

-- name: retry_job
UPDATE onthedot_jobs
SET state = 'queued', run_at = :now, attempts = 0, lost = 0, solo = 0, finished_at = NULL, started_at = NULL,
    worker_id = NULL, lease_until = NULL, cancel_requested = 0
WHERE id = :id AND state IN ('failed', 'cancelled')
RETURNING id;

-- name: cancel_queued
UPDATE onthedot_jobs SET state = 'cancelled', finished_at = :now
WHERE id = :id AND state = 'queued'
RETURNING id;

-- name: cancel_running
UPDATE onthedot_jobs SET cancel_requested = 1 WHERE id = :id AND state = 'running' RETURNING id;

-- name: delete_job
DELETE FROM onthedot_jobs WHERE id = :id AND state <> 'running' RETURNING id;

-- name: job_state
SELECT state FROM onthedot_jobs WHERE id = :id;

-- name: queue_stats
-- The depths come from onthedot_job_counts (exact: kept by triggers, see migration 0004); only
-- `ready` and the oldest ready age read the jobs, through the ready index by (queue, priority)
-- for each priority the queue's queued jobs have: the oldest one (one index descent) and those
-- not yet due (an index range, typically short). The last column (count rows to compact) is
-- 0: one row per group here.
WITH p AS MATERIALIZED (
    SELECT g.queue,
           (SELECT count(*) FROM onthedot_jobs j
            WHERE j.state = 'queued' AND j.limit_key IS NULL AND j.queue = g.queue AND j.priority = g.priority
              AND j.run_at > :now) AS future,
           (SELECT min(j.run_at) FROM onthedot_jobs j
            WHERE j.state = 'queued' AND j.limit_key IS NULL AND j.queue = g.queue AND j.priority = g.priority) AS oldest
    FROM (SELECT queue, priority FROM onthedot_job_counts WHERE state = 'queued'
          GROUP BY queue, priority HAVING sum(n) > 0) AS g
),
r AS (SELECT queue, sum(future) AS future, min(oldest) AS oldest FROM p GROUP BY queue),
c AS (
    SELECT queue,
           sum(CASE WHEN state = 'queued' THEN n ELSE 0 END) AS queued,
           sum(CASE WHEN state = 'running' THEN n ELSE 0 END) AS running,
           sum(CASE WHEN state = 'succeeded' THEN n ELSE 0 END) AS succeeded,
           sum(CASE WHEN state = 'failed' THEN n ELSE 0 END) AS failed,
           sum(CASE WHEN state = 'cancelled' THEN n ELSE 0 END) AS cancelled
    FROM onthedot_job_counts
    GROUP BY queue
)
SELECT c.queue, c.queued, c.running, c.succeeded, c.failed, c.cancelled,
       c.queued - COALESCE(r.future, 0),
       CASE WHEN r.oldest <= :now THEN :now - r.oldest END, 0
FROM c LEFT JOIN r ON r.queue = c.queue
ORDER BY c.queue;

-- name: compact_counts
-- One row per group is kept in place; compaction only drops the groups that reached zero.
DELETE FROM onthedot_job_counts WHERE n = 0;

-- name: set_queue_paused
INSERT INTO onthedot_queues (name, paused, paused_at, paused_by)
VALUES (:name, :paused, :now, :actor)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at,
    paused_by = excluded.paused_by;

-- name: paused_queues
SELECT name FROM onthedot_queues WHERE paused;

-- name: queued_by_name
-- From onthedot_job_counts; the third column: count rows to compact (none here, see
-- queue_stats).
SELECT name, sum(n), 0 FROM onthedot_job_counts WHERE state = 'queued'
GROUP BY name ORDER BY name;

-- name: compact_minutes
DELETE FROM onthedot_job_minutes WHERE n = 0;

-- name: prune_minutes
DELETE FROM onthedot_job_minutes WHERE minute < :before;

-- name: job_counts_rows
-- Buckets counted from the rows: one range of onthedot_jobs_done per (job name, final state)
-- (the finished_range parts, joined by UNION ALL, stand in the FROM).
SELECT CAST(finished_at / :bucket AS INTEGER) * :bucket, state, count(*)
FROM ({rows}) AS f
GROUP BY 1, 2
ORDER BY 1;

-- name: finished_range
SELECT finished_at, state FROM onthedot_jobs
WHERE name = :name AND state = :state AND finished_at >= :since
  AND state IN ('succeeded', 'failed', 'cancelled')

-- name: schema_version
SELECT COALESCE(max(version), 0) FROM onthedot_schema_version;

-- ---------------------------------------------------------------------------------------------
-- Schedules: ledger, slot history, generations, audit

-- name: schedule_rows_of
SELECT key, source, fingerprint, spec, timezone, cursor, next_due_at, generation, definition,
       removed_at, paused, paused_until, paused_at, paused_by, pause_note, missed_total,
       coalesced_total, last_missed_from, last_missed_to, last_slot, last_outcome, last_job_id,
       repaired_reason, created_at, updated_at
FROM onthedot_schedules WHERE key IN (SELECT value FROM json_each(:keys)) ORDER BY key;

-- name: list_schedule_rows
SELECT key, source, fingerprint, spec, timezone, cursor, next_due_at, generation, definition,
       removed_at, paused, paused_until, paused_at, paused_by, pause_note, missed_total,
       coalesced_total, last_missed_from, last_missed_to, last_slot, last_outcome, last_job_id,
       repaired_reason, created_at, updated_at
FROM onthedot_schedules ORDER BY key;

-- name: update_operator_state
-- The sets placeholder: the operator columns being changed, built by the caller.
UPDATE onthedot_schedules SET {sets}, updated_at = :now WHERE key = :key
RETURNING key, source, fingerprint, spec, timezone, cursor, next_due_at, generation, definition,
       removed_at, paused, paused_until, paused_at, paused_by, pause_note, missed_total,
       coalesced_total, last_missed_from, last_missed_to, last_slot, last_outcome, last_job_id,
       repaired_reason, created_at, updated_at;

-- name: generation_of
SELECT generation FROM onthedot_generations WHERE code_hash = :hash;

-- name: add_generation
INSERT INTO onthedot_generations (code_hash, generation, first_seen_at)
VALUES (:hash, (SELECT COALESCE(max(generation), 0) + 1 FROM onthedot_generations), :now)
ON CONFLICT (code_hash) DO NOTHING;

-- name: clock_and_fence
SELECT :now, EXISTS (SELECT 1 FROM onthedot_workers w
               WHERE w.scheduler AND w.generation > :generation AND w.heartbeat_at > :now - :ttl);

-- name: sync_rows
SELECT key, source, fingerprint, spec, timezone, cursor, next_due_at, generation, definition,
       removed_at, paused, paused_until, paused_at, paused_by, pause_note, missed_total,
       coalesced_total, last_missed_from, last_missed_to, last_slot, last_outcome, last_job_id,
       repaired_reason, created_at, updated_at
FROM onthedot_schedules
WHERE key IN (SELECT value FROM json_each(:keys)) OR (source = 'code' AND removed_at IS NULL)
ORDER BY key;

-- name: ledger_insert
INSERT INTO onthedot_schedules (key, source, fingerprint, spec, timezone, cursor, next_due_at,
                                generation, repaired_reason, created_at, updated_at)
VALUES (:key, 'code', :fingerprint, :spec, :timezone, :cursor, :next_due_at, :generation,
        :reason, :now, :now)
ON CONFLICT (key) DO NOTHING;

-- name: ledger_restart
UPDATE onthedot_schedules
SET fingerprint = :fingerprint, spec = :spec, timezone = :timezone, cursor = :cursor,
    next_due_at = :next_due_at, generation = :generation, removed_at = NULL,
    repaired_reason = :reason, updated_at = :now
WHERE key = :key;

-- name: cancel_removed_jobs
-- Before ledger_remove, in the sync transaction.
UPDATE onthedot_jobs SET state = 'cancelled', finished_at = :now
WHERE schedule_key = :key AND state = 'queued'
RETURNING schedule_key;

-- name: ledger_remove
UPDATE onthedot_schedules
SET removed_at = :now, next_due_at = NULL, generation = :generation,
    repaired_reason = 'no longer declared in code', updated_at = :now
WHERE key = :key AND source = 'code';

-- name: tick_probe
-- The idle tick: one read of the clock, the deploy fence, the earliest due instant and the
-- earliest health check.
SELECT :now,
       EXISTS (SELECT 1 FROM onthedot_workers w
               WHERE w.scheduler AND w.generation > :generation AND w.heartbeat_at > :now - :ttl),
       (SELECT min(next_due_at) FROM onthedot_schedules WHERE next_due_at IS NOT NULL),
       (SELECT min(check_at) FROM onthedot_schedule_health WHERE check_at IS NOT NULL);

-- name: tick_due
-- Only what deciding reads (domain.ledger.DueRow, in its order).
SELECT key, source, fingerprint, spec, timezone, cursor, next_due_at, paused, paused_until,
       definition,
       CASE WHEN s.key IN (SELECT value FROM json_each(:skip_keys))
                 OR CASE WHEN json_valid(s.definition)
                         THEN json_extract(s.definition, '$.overlap') = 'skip' END
            THEN (SELECT count(*) FROM onthedot_jobs j
                  WHERE j.schedule_key = s.key AND j.state IN ('queued', 'running'))
            ELSE 0 END
FROM onthedot_schedules s
WHERE s.next_due_at <= :now
ORDER BY s.next_due_at
LIMIT :limit;

-- name: record_slot
INSERT INTO onthedot_slots (schedule_key, slot, outcome, job_id, recorded_at, actor, note)
VALUES (:key, :slot, :outcome, :job_id, :now, :actor, :note)
ON CONFLICT (schedule_key, slot) DO NOTHING
RETURNING recorded_at;

-- name: set_slot_job
UPDATE onthedot_slots SET job_id = :job_id WHERE schedule_key = :key AND slot = :slot;

-- name: tick_update
UPDATE onthedot_schedules
SET cursor = :cursor,
    next_due_at = :next_due_at,
    missed_total = missed_total + :missed,
    last_missed_from = CASE WHEN :missed > 0 THEN :missed_from ELSE last_missed_from END,
    last_missed_to = CASE WHEN :missed > 0 THEN :missed_to ELSE last_missed_to END,
    coalesced_total = coalesced_total + :coalesced,
    paused = CASE WHEN :unpause THEN 0 ELSE paused END,
    paused_until = CASE WHEN :unpause THEN NULL ELSE paused_until END,
    removed_at = CASE WHEN :remove THEN :now ELSE removed_at END,
    fingerprint = COALESCE(:fingerprint, fingerprint),
    spec = COALESCE(:spec, spec),
    timezone = COALESCE(:timezone, timezone),
    generation = CASE WHEN :fingerprint IS NOT NULL OR :remove THEN :generation ELSE generation END,
    repaired_reason = COALESCE(:reason, repaired_reason),
    last_slot = COALESCE(:last_slot, last_slot),
    last_outcome = CASE WHEN :last_slot IS NOT NULL THEN :last_outcome ELSE last_outcome END,
    last_job_id = CASE WHEN :last_slot IS NOT NULL THEN :last_job_id ELSE last_job_id END,
    updated_at = :now
WHERE key = :key;

-- name: slot_history
-- start, end: NULL for no bound; limit: NULL for every row.
SELECT h.schedule_key, h.slot, h.outcome, h.job_id, h.recorded_at, h.actor, h.note, j.state
FROM onthedot_slots h LEFT JOIN onthedot_jobs j ON j.id = h.job_id
WHERE h.schedule_key = :key AND (:start IS NULL OR h.slot >= :start)
  AND (:end IS NULL OR h.slot <= :end)
ORDER BY h.slot DESC
LIMIT coalesce(:limit, -1);

-- name: delete_slot
DELETE FROM onthedot_slots WHERE schedule_key = :key AND slot = :slot AND outcome = :outcome;

-- name: add_audit
INSERT INTO onthedot_audit (at, actor, action, schedule_key, note, details)
VALUES (:at, :actor, :action, :key, :note, :details);

-- name: list_audit
SELECT id, at, actor, action, schedule_key, note, details FROM onthedot_audit
WHERE :key IS NULL OR schedule_key = :key
ORDER BY id DESC
LIMIT :limit;

-- name: lock_schedule
-- Inside BEGIN IMMEDIATE the whole database is already locked: a plain read.
SELECT key FROM onthedot_schedules WHERE key = :key;

-- name: cancel_schedule_jobs
UPDATE onthedot_jobs SET state = 'cancelled', finished_at = :now
WHERE schedule_key = :key AND state = 'queued';

-- name: delete_schedule
DELETE FROM onthedot_schedules WHERE key = :key;

-- name: delete_schedule_slots
DELETE FROM onthedot_slots WHERE schedule_key = :key;

-- name: upsert_dynamic
INSERT INTO onthedot_schedules (key, source, fingerprint, spec, timezone, definition, cursor,
                                next_due_at, generation, repaired_reason, created_at, updated_at)
VALUES (:key, 'dynamic', :fingerprint, :spec, :timezone, :definition, :cursor, :next_due_at, 0,
        :reason, :now, :now)
ON CONFLICT (key) DO UPDATE
SET fingerprint = excluded.fingerprint, spec = excluded.spec, timezone = excluded.timezone,
    definition = excluded.definition, cursor = excluded.cursor,
    next_due_at = excluded.next_due_at, repaired_reason = excluded.repaired_reason,
    updated_at = excluded.updated_at
WHERE onthedot_schedules.source = 'dynamic';

-- name: count_live_code_rows
SELECT count(*) FROM onthedot_schedules
WHERE key IN (SELECT value FROM json_each(:keys)) AND source = 'code' AND removed_at IS NULL;

-- ---------------------------------------------------------------------------------------------
-- Schedule health (docs/health.md): health rows, problems, alerts

-- name: health_states
SELECT key, check_at, watch_slot, decided_slot, fingerprint, last_success_slot, last_success_at, durations,
       expect, ping, overrides, overrides_by, overrides_at, overrides_note, checked_at
FROM onthedot_schedule_health
WHERE :all OR key IN (SELECT value FROM json_each(:keys))
ORDER BY key;

-- name: set_expectations
UPDATE onthedot_schedule_health
SET overrides = :overrides, overrides_by = :actor, overrides_note = :note,
    overrides_at = :now, check_at = :now
WHERE key = :key
RETURNING key;

-- name: recheck_health
UPDATE onthedot_schedule_health SET check_at = :now
WHERE key IN (SELECT value FROM json_each(:keys)) AND (check_at IS NULL OR check_at > :now);

-- name: watch_clock
SELECT :now;

-- name: watch_rows
-- The health rows with their ledger row and the ledger's newest slot's job, filtered by one of
-- the two blocks below. Columns: see storage/sql/health.py (_facts).
SELECT h.key, h.check_at, h.watch_slot, h.decided_slot, h.fingerprint, h.last_success_slot,
       h.last_success_at,
       h.durations, h.expect, h.ping, h.overrides, h.overrides_by, h.overrides_at,
       h.overrides_note, h.checked_at,
       s.key, s.source, s.fingerprint, s.spec, s.timezone, s.cursor, s.next_due_at,
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
-- The rows due for a check (the transaction holds the write lock), the most overdue first.
WHERE h.check_at <= :now
ORDER BY h.check_at
LIMIT :limit

-- name: watch_all_where
-- Every watched schedule (or those of `keys`), due or not.
WHERE :all OR h.key IN (SELECT value FROM json_each(:keys))
ORDER BY h.key

-- name: watch_slots
SELECT x.schedule_key, x.slot, x.outcome, x.recorded_at, x.actor, x.note, x.job_id, j.state,
       j.name, j.queue, j.run_at, j.attempts, j.max_attempts + j.lost, j.started_at,
       j.finished_at, j.error, j.worker_id, j.lock_key
FROM (SELECT sl.*, row_number() OVER (PARTITION BY sl.schedule_key ORDER BY sl.slot) AS n
      FROM onthedot_slots sl
      JOIN onthedot_schedule_health h ON h.key = sl.schedule_key
      WHERE h.key IN (SELECT value FROM json_each(:keys))
        AND (h.watch_slot IS NULL OR sl.slot > h.watch_slot)
        AND sl.slot <= :now AND sl.outcome <> 'manual') x
LEFT JOIN onthedot_jobs j ON j.id = x.job_id
WHERE x.n <= :page
ORDER BY x.schedule_key, x.slot;

-- name: watch_open
SELECT id, schedule_key, slot, kind, cause, opened_at FROM onthedot_schedule_problems
WHERE resolved_at IS NULL AND schedule_key IN (SELECT value FROM json_each(:keys))
ORDER BY schedule_key, id;

-- name: problem_open
-- A problem found after the fact (its resolution given) is opened resolved.
INSERT INTO onthedot_schedule_problems (schedule_key, slot, kind, cause, detail, facts,
                                        opened_at, resolved_at, resolution)
VALUES (:key, :slot, :kind, :cause, :detail, :facts, :now,
        CASE WHEN :resolution IS NOT NULL THEN :now END, :resolution)
ON CONFLICT (schedule_key, slot, kind) DO NOTHING
RETURNING id, schedule_key, slot, kind, cause, detail, facts, opened_at, resolved_at,
          resolution;

-- name: problem_resolve
UPDATE onthedot_schedule_problems SET resolved_at = :now, resolution = :resolution
WHERE id = :id AND resolved_at IS NULL
RETURNING id, schedule_key, slot, kind, cause, detail, facts, opened_at, resolved_at,
          resolution;

-- name: problem_refresh
UPDATE onthedot_schedule_problems SET cause = :cause, detail = :detail, facts = :facts
WHERE id = :id AND resolved_at IS NULL;

-- name: alert_add
INSERT INTO onthedot_alerts (problem_id, event, created_at, due_at)
VALUES (:id, :event, :now, :now)
ON CONFLICT (problem_id, event) DO NOTHING;

-- name: health_write
-- Every evaluated schedule's health row, from one JSON array.
UPDATE onthedot_schedule_health
SET check_at = v.check_at, watch_slot = v.watch_slot, decided_slot = v.decided_slot,
    fingerprint = v.fingerprint,
    last_success_slot = v.last_success_slot, last_success_at = v.last_success_at,
    durations = v.durations, expect = v.expect, ping = v.ping, checked_at = :now
FROM (SELECT value ->> 'key' AS key, value ->> 'check_at' AS check_at,
             value ->> 'watch_slot' AS watch_slot, value ->> 'decided_slot' AS decided_slot,
             value ->> 'fingerprint' AS fingerprint,
             value ->> 'last_success_slot' AS last_success_slot,
             value ->> 'last_success_at' AS last_success_at,
             json(value -> 'durations') AS durations,
             CASE WHEN json_type(value, '$.expect') = 'null' THEN NULL
                  ELSE json(value -> 'expect') END AS expect,
             value ->> 'ping' AS ping
      FROM json_each(:rows)) AS v
WHERE onthedot_schedule_health.key = v.key;

-- name: list_problems
SELECT id, schedule_key, slot, kind, cause, detail, facts, opened_at, resolved_at, resolution
FROM onthedot_schedule_problems
WHERE (:key IS NULL OR schedule_key = :key) AND (NOT :open_only OR resolved_at IS NULL)
ORDER BY id DESC
LIMIT :limit;

-- name: claim_alerts
UPDATE onthedot_alerts SET claimed_by = :worker_id, claimed_until = :now + :hold
WHERE id IN (SELECT id FROM onthedot_alerts
             WHERE state = 'pending' AND due_at <= :now
               AND (claimed_until IS NULL OR claimed_until < :now)
             ORDER BY due_at, id
             LIMIT :limit)
RETURNING id, event, attempts, problem_id;

-- name: alert_problems
SELECT id, schedule_key, slot, kind, cause, detail, facts, opened_at, resolved_at, resolution
FROM onthedot_schedule_problems WHERE id IN (SELECT value FROM json_each(:ids));

-- name: finish_alert
UPDATE onthedot_alerts
SET attempts = attempts + 1, claimed_by = NULL, claimed_until = NULL, last_error = :error,
    state = CASE WHEN :error IS NULL THEN 'sent'
                 WHEN :retry_at IS NULL THEN 'failed' ELSE 'pending' END,
    sent_at = CASE WHEN :error IS NULL THEN :now END,
    due_at = COALESCE(:retry_at, due_at)
WHERE id = :id AND claimed_by = :worker_id AND state = 'pending'
RETURNING id;

-- name: prune_problems
DELETE FROM onthedot_schedule_problems WHERE resolved_at IS NOT NULL AND resolved_at < :before;

-- name: prune_alerts
DELETE FROM onthedot_alerts WHERE state <> 'pending' AND created_at < :before;

-- name: ping_targets
SELECT key, ping FROM onthedot_schedule_health WHERE ping IS NOT NULL;

-- name: limit_candidates
-- The home keys with a due job in the queue whose own limit has room (a hint: the claim checks
-- every limit under its lock), least recently started first. A loose scan of the limited ready
-- index: one descent per key, never a walk of a key's backlog.
WITH RECURSIVE k(lkey) AS (
    SELECT (SELECT min(q.limit_key) FROM onthedot_jobs q
            WHERE q.state = 'queued' AND q.queue = :queue AND q.limit_key IS NOT NULL)
    UNION ALL
    SELECT (SELECT min(q.limit_key) FROM onthedot_jobs q
            WHERE q.state = 'queued' AND q.queue = :queue AND q.limit_key IS NOT NULL
              AND q.limit_key > k.lkey)
    FROM k WHERE k.lkey IS NOT NULL)
SELECT k.lkey FROM k
LEFT JOIN onthedot_limit_keys s ON s.lkey = k.lkey
LEFT JOIN onthedot_limits l ON l.name = s.name
WHERE k.lkey IS NOT NULL
  -- A paused queue is checked in the claim itself, as in claim_jobs.
  AND NOT EXISTS (SELECT 1 FROM onthedot_queues p WHERE p.name = :queue AND p.paused = 1)
  AND (l.concurrency IS NULL
       OR l.concurrency > (SELECT count(*) FROM onthedot_jobs r
                           WHERE r.state = 'running' AND r.limit_key = k.lkey))
  AND (l.rate IS NULL OR s.tokens IS NULL
       OR min(coalesce(l.burst, 1), s.tokens + (:now - s.refilled_at) * l.rate) >= 1)
  AND EXISTS (SELECT 1 FROM onthedot_jobs q
              WHERE q.state = 'queued' AND q.queue = :queue AND q.limit_key = k.lkey
                AND q.run_at <= :now)
ORDER BY s.last_start IS NOT NULL, s.last_start, k.lkey
LIMIT :limit;

-- name: limit_jobs
-- A home key's due jobs in claim order, with every limit key each sits under.
SELECT q.id, q.limits FROM onthedot_jobs q
WHERE q.state = 'queued' AND q.queue = :queue AND q.limit_key = :lkey AND q.run_at <= :now
  AND (:any_name = 1 OR q.name IN (SELECT value FROM json_each(:names)))
  AND (q.lock_key IS NULL OR (
      NOT EXISTS (SELECT 1 FROM onthedot_jobs r
                  WHERE r.lock_key = q.lock_key AND r.state = 'running')
      AND q.id = (SELECT min(o.id) FROM onthedot_jobs o
                  WHERE o.lock_key = q.lock_key AND o.state = 'queued')))
ORDER BY q.priority DESC, q.run_at, q.id
LIMIT :limit;

-- name: limit_ensure
INSERT INTO onthedot_limit_keys (lkey, name)
SELECT value, substr(value, 1, instr(value, '|') - 1) FROM json_each(:lkeys) WHERE true
ON CONFLICT (lkey) DO NOTHING;

-- name: limit_state
-- Each key's limit (NULL columns: not registered by any worker yet) and tokens available now.
SELECT s.lkey, l.name IS NOT NULL, l.concurrency,
       CASE WHEN l.rate IS NULL THEN NULL
            ELSE min(coalesce(l.burst, 1),
                     coalesce(s.tokens + (:now - s.refilled_at) * l.rate, coalesce(l.burst, 1)))
       END,
       l.rate
FROM onthedot_limit_keys s LEFT JOIN onthedot_limits l ON l.name = s.name
WHERE s.lkey IN (SELECT value FROM json_each(:lkeys))
ORDER BY s.lkey;

-- name: limit_row_lock
-- SQLite: the claim's write transaction (BEGIN IMMEDIATE) is the lock; nothing to add.

-- name: limit_running
-- The running jobs under each limit key (`every`: all keys, else those of `lkeys`): a
-- crashed worker's job counts until its rescue. Reads only the running limited jobs.
SELECT k.value, count(*) FROM onthedot_jobs r, json_each(r.limits) k
WHERE r.state = 'running' AND r.limit_key IS NOT NULL
  AND (:every = 1 OR k.value IN (SELECT value FROM json_each(:lkeys)))
GROUP BY k.value;

-- name: limit_waiting
-- The queued jobs of each home key (`every`: all keys, else those of `lkeys`).
SELECT q.limit_key, count(*) FROM onthedot_jobs q
WHERE q.state = 'queued' AND q.limit_key IS NOT NULL
  AND (:every = 1 OR q.limit_key IN (SELECT value FROM json_each(:lkeys)))
GROUP BY q.limit_key;

-- name: limit_claim
-- A solo job (lost beside others, domain.rescue) is never claimed alone when limited: its
-- attempt counts here instead, so a job that kills its worker fails in the end.
UPDATE onthedot_jobs
SET state = 'running', worker_id = :worker_id, attempts = attempts + 1, started_at = :now,
    lease_until = :now + :lease, charged = max(:charge, solo), began = max(:charge, solo)
WHERE id IN (SELECT value FROM json_each(:ids)) AND state = 'queued'
RETURNING id, name, args, kwargs, queue, attempts, max_attempts + lost, timeout, schedule_key,
          slot, priority, run_at, unique_key;

-- name: limit_take
UPDATE onthedot_limit_keys SET tokens = :tokens, refilled_at = :now, last_start = :now
WHERE lkey = :lkey;

-- name: limit_sync
INSERT INTO onthedot_limits (name, concurrency, rate, burst, code_concurrency, code_rate,
                             code_burst, updated_at)
VALUES (:name, :concurrency, :rate, :burst, :concurrency, :rate, :burst, :now)
ON CONFLICT (name) DO UPDATE SET
    code_concurrency = excluded.code_concurrency, code_rate = excluded.code_rate,
    code_burst = excluded.code_burst,
    concurrency = CASE WHEN overridden THEN concurrency ELSE excluded.concurrency END,
    rate = CASE WHEN overridden THEN rate ELSE excluded.rate END,
    burst = CASE WHEN overridden THEN burst ELSE excluded.burst END,
    updated_at = excluded.updated_at
WHERE code_concurrency IS NOT excluded.code_concurrency OR code_rate IS NOT excluded.code_rate
   OR code_burst IS NOT excluded.code_burst;

-- name: limit_set
UPDATE onthedot_limits
SET concurrency = :concurrency, rate = :rate, burst = :burst, overridden = 1, updated_at = :now
WHERE name = :name
RETURNING name;

-- name: limit_reset
UPDATE onthedot_limits
SET concurrency = code_concurrency, rate = code_rate, burst = code_burst, overridden = 0,
    updated_at = :now
WHERE name = :name
RETURNING name;

-- name: limit_rows
SELECT name, concurrency, rate, burst, code_concurrency, code_rate, code_burst, overridden
FROM onthedot_limits ORDER BY name;

-- name: limit_job
SELECT state, queue, name, run_at - :now, limits FROM onthedot_jobs WHERE id = :id;
