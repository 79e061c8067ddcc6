-- onthedot schema, version 3 (PostgreSQL): the job names each worker knows (a JSON array), so
-- an operator can see jobs that no live worker can run (a rolling deploy that adds a job).
ALTER TABLE onthedot_workers ADD COLUMN jobs text NOT NULL DEFAULT '[]';
