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
