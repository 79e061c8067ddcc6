"""A local HTTP receiver for the alert webhook and the pings: it records every request (method,
path, JSON body) and answers with the statuses it is told, optionally holding requests until
released. A real server on a loopback port, in a thread (or in a process of its own:
`python -m tests.receiver PORT_FILE LOG_FILE`, one JSON line per request)."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Received:
    method: str
    path: str
    body: Any
    headers: dict[str, str]


@dataclass
class Receiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)  # answered in turn, then 200
    hold: threading.Event | None = None  # while set to an unset event, requests wait on it
    lock: threading.Lock = field(default_factory=threading.Lock)
    log: Path | None = None

    def posts(self) -> list[Any]:
        with self.lock:
            return [r.body for r in self.requests if r.method == "POST"]

    def paths(self) -> list[str]:
        with self.lock:
            return [r.path for r in self.requests]


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            seen = Received(self.command, self.path, body, dict(self.headers))
            with receiver.lock:
                receiver.requests.append(seen)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
            if receiver.log is not None:
                with receiver.log.open("a") as out:
                    out.write(json.dumps({"method": seen.method, "path": seen.path,
                                          "body": body, "status": status}) + "\n")  # fmt: skip
            if receiver.hold is not None:
                receiver.hold.wait(30)
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet

    return Handler


@contextmanager
def receiving(log: Path | None = None) -> Iterator[Receiver]:
    """A receiver on 127.0.0.1 (a free port) for the duration of the block."""
    receiver = Receiver(url="", log=log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        if receiver.hold is not None:
            receiver.hold.set()
        server.shutdown()
        server.server_close()


def main() -> None:  # a receiver in a process of its own (torture tests)
    port_file, log_file = Path(sys.argv[1]), Path(sys.argv[2])
    with receiving(log=log_file) as receiver:
        port_file.write_text(receiver.url)
        threading.Event().wait()


if __name__ == "__main__":
    main()
