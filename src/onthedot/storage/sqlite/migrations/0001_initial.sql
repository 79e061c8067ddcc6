-- onthedot schema, version 1 (SQLite). Instants are REAL seconds since the Unix epoch (UTC);
-- slot instants are INTEGER seconds. JSON columns hold text.

CREATE TABLE onthedot_jobs (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL,
    queue           TEXT NOT NULL DEFAULT 'default',
    state           TEXT NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    priority        INTEGER NOT NULL DEFAULT 0,
    args            TEXT NOT NULL DEFAULT '[]',
    kwargs          TEXT NOT NULL DEFAULT '{}',
    run_at          REAL NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL DEFAULT 3,
    timeout         REAL,
    unique_key      TEXT,
    lock_key        TEXT,
    schedule_key    TEXT,
    slot            INTEGER,
    worker_id       TEXT,
    lease_until     REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    result          TEXT,
    error           TEXT,
    traceback       TEXT,
    errors          TEXT,
    created_at      REAL NOT NULL,
    started_at      REAL,
    finished_at     REAL
);

CREATE INDEX onthedot_jobs_ready ON onthedot_jobs (queue, priority DESC, run_at, id)
    WHERE state = 'queued';
CREATE INDEX onthedot_jobs_running ON onthedot_jobs (lease_until) WHERE state = 'running';
CREATE INDEX onthedot_jobs_finished ON onthedot_jobs (finished_at)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
CREATE INDEX onthedot_jobs_failed ON onthedot_jobs (id) WHERE state IN ('failed', 'cancelled');
CREATE UNIQUE INDEX onthedot_jobs_unique ON onthedot_jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('queued', 'running');
CREATE UNIQUE INDEX onthedot_jobs_lock ON onthedot_jobs (lock_key)
    WHERE lock_key IS NOT NULL AND state = 'running';
-- Jobs of a schedule that are still active (overlap policy "skip") and all of them (history).
CREATE INDEX onthedot_jobs_schedule_active ON onthedot_jobs (schedule_key)
    WHERE schedule_key IS NOT NULL AND state IN ('queued', 'running');
CREATE INDEX onthedot_jobs_schedule ON onthedot_jobs (schedule_key, id)
    WHERE schedule_key IS NOT NULL;
-- The oldest queued job of each lock key (overlap policy "serialize").
CREATE INDEX onthedot_jobs_lock_queued ON onthedot_jobs (lock_key, id)
    WHERE lock_key IS NOT NULL AND state = 'queued';

CREATE TABLE onthedot_schedules (
    key              TEXT PRIMARY KEY,
    source           TEXT NOT NULL DEFAULT 'code' CHECK (source IN ('code', 'dynamic')),
    fingerprint      TEXT NOT NULL,
    spec             TEXT NOT NULL,
    timezone         TEXT NOT NULL DEFAULT 'UTC',
    definition       TEXT,
    cursor           REAL NOT NULL,
    next_due_at      REAL,
    generation       INTEGER NOT NULL DEFAULT 0,
    removed_at       REAL,
    paused           INTEGER NOT NULL DEFAULT 0,
    paused_until     REAL,
    paused_at        REAL,
    paused_by        TEXT,
    pause_note       TEXT,
    missed_total     INTEGER NOT NULL DEFAULT 0,
    coalesced_total  INTEGER NOT NULL DEFAULT 0,
    last_missed_from REAL,
    last_missed_to   REAL,
    last_slot        REAL,
    last_outcome     TEXT,
    last_job_id      INTEGER,
    repaired_reason  TEXT,
    created_at       REAL NOT NULL,
    updated_at       REAL NOT NULL
);

CREATE INDEX onthedot_schedules_due ON onthedot_schedules (next_due_at)
    WHERE next_due_at IS NOT NULL;

CREATE TABLE onthedot_slots (
    schedule_key TEXT NOT NULL,
    slot         INTEGER NOT NULL,
    outcome      TEXT NOT NULL,
    job_id       INTEGER,
    recorded_at  REAL NOT NULL,
    actor        TEXT,
    note         TEXT,
    PRIMARY KEY (schedule_key, slot)
) WITHOUT ROWID;

CREATE TABLE onthedot_workers (
    id           TEXT PRIMARY KEY,
    hostname     TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    generation   INTEGER NOT NULL DEFAULT 0,
    queues       TEXT NOT NULL,
    concurrency  INTEGER NOT NULL,
    scheduler    INTEGER NOT NULL DEFAULT 1,
    started_at   REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    stopping     INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX onthedot_workers_generation ON onthedot_workers (generation, heartbeat_at);

CREATE TABLE onthedot_generations (
    code_hash     TEXT PRIMARY KEY,
    generation    INTEGER NOT NULL UNIQUE,
    first_seen_at REAL NOT NULL
);

CREATE TABLE onthedot_audit (
    id           INTEGER PRIMARY KEY,
    at           REAL NOT NULL,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    schedule_key TEXT,
    note         TEXT,
    details      TEXT
);

CREATE INDEX onthedot_audit_key ON onthedot_audit (schedule_key, id);

CREATE TABLE onthedot_maintenance (
    task        TEXT PRIMARY KEY,
    last_run_at REAL NOT NULL,
    worker_id   TEXT
);

CREATE TABLE onthedot_queues (
    name      TEXT PRIMARY KEY,
    paused    INTEGER NOT NULL DEFAULT 0,
    paused_at REAL,
    paused_by TEXT
);
