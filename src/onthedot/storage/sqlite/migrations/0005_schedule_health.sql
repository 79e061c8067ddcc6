-- onthedot schema, version 5 (SQLite): schedule health (docs/health.md); the same tables as
-- PostgreSQL's version 8, instants as REAL epoch seconds, slots INTEGER, JSON as text.
CREATE TABLE onthedot_schedule_health (
    key               TEXT PRIMARY KEY,
    check_at          REAL,
    watch_slot        INTEGER,
    decided_slot      INTEGER,
    fingerprint       TEXT,
    last_success_slot INTEGER,
    last_success_at   REAL,
    durations         TEXT NOT NULL DEFAULT '[]',
    expect            TEXT,
    ping              TEXT,
    overrides         TEXT,
    overrides_by      TEXT,
    overrides_at      REAL,
    overrides_note    TEXT,
    checked_at        REAL
);

CREATE INDEX onthedot_schedule_health_check ON onthedot_schedule_health (check_at)
    WHERE check_at IS NOT NULL;
CREATE INDEX onthedot_schedule_health_ping ON onthedot_schedule_health (key)
    WHERE ping IS NOT NULL;

CREATE TABLE onthedot_schedule_problems (
    id           INTEGER PRIMARY KEY,
    schedule_key TEXT NOT NULL,
    slot         INTEGER NOT NULL,
    kind         TEXT NOT NULL
                 CHECK (kind IN ('late', 'overran', 'deadline_missed', 'failed')),
    cause        TEXT NOT NULL,
    detail       TEXT NOT NULL,
    facts        TEXT,
    opened_at    REAL NOT NULL,
    resolved_at  REAL,
    resolution   TEXT,
    UNIQUE (schedule_key, slot, kind)
);

CREATE INDEX onthedot_schedule_problems_open ON onthedot_schedule_problems (schedule_key)
    WHERE resolved_at IS NULL;
CREATE INDEX onthedot_schedule_problems_resolved ON onthedot_schedule_problems (resolved_at)
    WHERE resolved_at IS NOT NULL;

CREATE TABLE onthedot_alerts (
    id            INTEGER PRIMARY KEY,
    problem_id    INTEGER NOT NULL,
    event         TEXT NOT NULL CHECK (event IN ('problem', 'recovered')),
    state         TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    created_at    REAL NOT NULL,
    due_at        REAL NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    claimed_by    TEXT,
    claimed_until REAL,
    sent_at       REAL,
    last_error    TEXT,
    UNIQUE (problem_id, event)
);

CREATE INDEX onthedot_alerts_due ON onthedot_alerts (due_at) WHERE state = 'pending';
CREATE INDEX onthedot_alerts_done ON onthedot_alerts (created_at) WHERE state <> 'pending';

CREATE TRIGGER onthedot_schedules_watch AFTER INSERT ON onthedot_schedules
BEGIN
    INSERT INTO onthedot_schedule_health (key, check_at, watch_slot, decided_slot, fingerprint)
    VALUES (NEW.key, NEW.next_due_at, CAST(NEW.cursor AS INTEGER), CAST(NEW.cursor AS INTEGER),
            NEW.fingerprint)
    ON CONFLICT (key) DO NOTHING;
END;

CREATE TRIGGER onthedot_schedules_unwatch AFTER DELETE ON onthedot_schedules
BEGIN
    UPDATE onthedot_schedule_problems
    SET resolved_at = (julianday('now') - 2440587.5) * 86400.0, resolution = 'deleted'
    WHERE resolved_at IS NULL AND schedule_key = OLD.key;
    DELETE FROM onthedot_schedule_health WHERE key = OLD.key;
END;

INSERT INTO onthedot_schedule_health (key, check_at, watch_slot, decided_slot, fingerprint)
SELECT key, next_due_at, CAST(cursor AS INTEGER), CAST(cursor AS INTEGER), fingerprint
FROM onthedot_schedules;
