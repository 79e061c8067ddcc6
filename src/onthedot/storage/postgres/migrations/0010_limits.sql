-- onthedot schema, version 10 (PostgreSQL): flow control (docs/limits.md); SQLite's version 7.
--
-- A limited job carries its limit keys (`limits`, a JSON array of "NAME|KEY") and the first of
-- them (`limit_key`, its home key). The ready index holds only unlimited jobs, so the claim of
-- unlimited jobs never walks a limited backlog; limited ready jobs have their own index, by
-- queue and home key, that the limited claim reads one key at a time.
ALTER TABLE onthedot_jobs ADD COLUMN limit_key text;
ALTER TABLE onthedot_jobs ADD COLUMN limits text;

DROP INDEX onthedot_jobs_ready;
CREATE INDEX onthedot_jobs_ready ON onthedot_jobs (queue, priority DESC, run_at, id)
    WHERE state = 'queued' AND limit_key IS NULL;
CREATE INDEX onthedot_jobs_ready_limited
    ON onthedot_jobs (queue, limit_key, priority DESC, run_at, id)
    WHERE state = 'queued' AND limit_key IS NOT NULL;
-- The running limited jobs: what the claim counts against each key's concurrency.
CREATE INDEX onthedot_jobs_limited_running ON onthedot_jobs (limit_key)
    WHERE state = 'running' AND limit_key IS NOT NULL;

-- Each limit's effective settings (the code's unless an operator overrode them).
CREATE TABLE onthedot_limits (
    name             text PRIMARY KEY,
    concurrency      integer,
    rate             float8,
    burst            integer,
    code_concurrency integer,
    code_rate        float8,
    code_burst       integer,
    overridden       boolean NOT NULL DEFAULT false,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- Each limit key's token bucket and when a job of it last started (the round-robin order).
CREATE TABLE onthedot_limit_keys (
    lkey        text PRIMARY KEY,
    name        text NOT NULL,
    tokens      float8,
    refilled_at timestamptz,
    last_start  timestamptz
);

-- The priorities of a queue's unlimited ready jobs (the ready index now holds only those).
CREATE OR REPLACE FUNCTION onthedot_queue_priorities(for_queue text) RETURNS SETOF integer
LANGUAGE plpgsql STABLE ROWS 2 AS $$
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
ALTER FUNCTION onthedot_queue_priorities(text) SET enable_seqscan = off;

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

-- The limited claim's reads in one round trip (storage/sql/limits.py; SQLite runs the same
-- steps as statements in its write transaction): the home keys with a due job in the queue
-- and room, least recently started first (one index descent per key: a full key's backlog is
-- never walked), up to p_limit due jobs of each (locked, others' skipped), the rows of every
-- limit key they sit under made and locked in key order (two claims never wait in a cycle),
-- then, in a statement of its own (a new snapshot, after the locks), each key's limit, tokens
-- and running jobs. NULL: nothing to claim. The caller picks and applies (limit_apply). As
-- the claim function (migration 0007), its plans are generic and made without sequential
-- scans: right whatever the statistics said when they were made (a table analyzed while
-- empty would otherwise be scanned whole on every claim).
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
    v_states json;
BEGIN
    IF EXISTS (SELECT 1 FROM onthedot_queues p WHERE p.name = p_queue AND p.paused) THEN
        RETURN NULL;
    END IF;
    WITH RECURSIVE k(lkey) AS (
        SELECT (SELECT min(q.limit_key) FROM onthedot_jobs q
                WHERE q.state = 'queued' AND q.queue = p_queue AND q.limit_key IS NOT NULL)
        UNION ALL
        SELECT (SELECT min(q.limit_key) FROM onthedot_jobs q
                WHERE q.state = 'queued' AND q.queue = p_queue AND q.limit_key IS NOT NULL
                  AND q.limit_key > k.lkey)
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
                        AND q.run_at <= v_now)
        ORDER BY s.last_start NULLS FIRST, k.lkey
        LIMIT p_limit) c;
    IF v_homes IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT json_agg(json_build_array(h.ord, j.id, j.limits)
                    ORDER BY h.ord, j.priority DESC, j.run_at, j.id)
    INTO v_jobs
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
    SELECT array_agg(DISTINCT x.k ORDER BY x.k) INTO v_keys
    FROM json_array_elements(v_jobs) AS e, json_array_elements_text((e ->> 2)::json) AS x(k);
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
               (SELECT count(*) FROM onthedot_jobs r,
                       json_array_elements_text(r.limits::json) AS rk(k)
                WHERE r.state = 'running' AND r.limit_key IS NOT NULL AND rk.k = s.lkey)))
    INTO v_states
    FROM onthedot_limit_keys s LEFT JOIN onthedot_limits l ON l.name = s.name
    WHERE s.lkey = ANY(v_keys);
    RETURN json_build_object('jobs', v_jobs, 'keys', v_states);
END
$$;
