"""One outbound HTTP request of schedule health (a webhook POST, a ping), with the standard
library: a timeout on every request, the answer read and dropped, every failure one line."""

from __future__ import annotations

import urllib.error
import urllib.request


def send(request: urllib.request.Request, timeout: float) -> str | None:
    """None when the receiver answered 2xx; else what went wrong, one line."""
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(65536)
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return f"unreachable: {getattr(exc, 'reason', exc)}"
    return None if 200 <= status < 300 else f"HTTP {status}"
