"""Workers as the database knows them: what one registers (`WorkerInfo`) and what a listing
reads back (`WorkerRow`, with its heartbeat age by the database clock)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from onthedot.domain.jobs import iso
from onthedot.domain.payload import JsonObject


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    id: str
    hostname: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    scheduler: bool = True
    generation: int = 0
    jobs: tuple[str, ...] = ()  # the job names it can run (registered in its code)


@dataclass(frozen=True, slots=True)
class WorkerRow:
    id: str
    hostname: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    scheduler: bool
    generation: int
    started_at: datetime
    heartbeat_at: datetime
    stopping: bool
    heartbeat_age: float  # seconds, by the database clock
    running_jobs: int
    jobs: tuple[str, ...] = ()  # the job names it can run

    def to_json(self) -> JsonObject:
        return {
            "id": self.id,
            "hostname": self.hostname,
            "pid": self.pid,
            "queues": list(self.queues),
            "concurrency": self.concurrency,
            "jobs": list(self.jobs),
            "scheduler": self.scheduler,
            "generation": self.generation,
            "started_at": iso(self.started_at),
            "heartbeat_at": iso(self.heartbeat_at),
            "heartbeat_age": round(self.heartbeat_age, 3),
            "stopping": self.stopping,
            "running_jobs": self.running_jobs,
        }
