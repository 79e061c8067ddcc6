-- onthedot schema, version 2 (PostgreSQL): attempts lost with a crashed worker.
-- lost: executions lost with their worker that were not charged (they extend max_attempts).
-- solo: the job was lost beside other jobs and runs alone from now on, so a job that kills its
--       worker is told apart from its neighbours.
-- charged: whether the current claim's attempt counts if its worker is lost.
-- began: a running job has started executing (claimed ones wait in a worker's buffer), as
--        the worker's heartbeat last reported.
ALTER TABLE onthedot_jobs ADD COLUMN lost integer NOT NULL DEFAULT 0;
ALTER TABLE onthedot_jobs ADD COLUMN solo boolean NOT NULL DEFAULT false;
ALTER TABLE onthedot_jobs ADD COLUMN charged boolean NOT NULL DEFAULT true;
ALTER TABLE onthedot_jobs ADD COLUMN began boolean NOT NULL DEFAULT true;
CREATE INDEX onthedot_jobs_solo ON onthedot_jobs (queue, priority DESC, run_at, id)
    WHERE state = 'queued' AND solo;
