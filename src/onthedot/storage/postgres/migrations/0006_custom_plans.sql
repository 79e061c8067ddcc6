-- onthedot schema, version 6 (PostgreSQL): the lookups of onthedot_queue_priorities are
-- planned on every call, with the statistics of the moment.
--
-- PL/pgSQL keeps the plans of a function's queries for the session, and after five calls may
-- keep a generic one. Made while the jobs table looked empty (a new install, a pruned or
-- truncated table, statistics from before a burst), that plan scanned the whole table: every
-- claim and every next-ready lookup took ~100 ms with 200k delayed jobs until the next
-- ANALYZE replaced it, against well under a millisecond planned afresh. The lookups are
-- planned each time instead (a few tenths of a millisecond per claim on this machine).
ALTER FUNCTION onthedot_queue_priorities(text) SET plan_cache_mode = force_custom_plan;
