-- onthedot schema, version 5 (PostgreSQL): the priorities of a queue's queued jobs, highest
-- first, found by a loose scan of the ready index (one index descent per priority).
--
-- The claim and the next-ready lookup read the ready jobs one priority at a time, each an
-- index range on (queue, priority, run_at) that ends at the first job not yet due, so jobs
-- delayed in a served queue are never walked past (one ORDER BY over every priority read the
-- index through all of them whenever fewer jobs were due than a claim asked for). The loop
-- lives in a function, not in a recursive CTE of the statements themselves: PL/pgSQL keeps
-- the plans of its two lookups, and the claim stays as cheap to plan as a plain one (with the
-- CTE, PostgreSQL planned every claim afresh: ~1 ms more per claim on an idle queue).
CREATE OR REPLACE FUNCTION onthedot_queue_priorities(for_queue text) RETURNS SETOF integer
LANGUAGE plpgsql STABLE ROWS 2 AS $$
DECLARE
    p integer;
BEGIN
    SELECT j.priority INTO p FROM onthedot_jobs j
    WHERE j.state = 'queued' AND j.queue = for_queue
    ORDER BY j.priority DESC LIMIT 1;
    WHILE p IS NOT NULL LOOP
        RETURN NEXT p;
        SELECT j.priority INTO p FROM onthedot_jobs j
        WHERE j.state = 'queued' AND j.queue = for_queue AND j.priority < p
        ORDER BY j.priority DESC LIMIT 1;
    END LOOP;
END
$$;
