"""An object that looks like a Django Task (`takes_context`, `call`) but is none: a worker
must refuse to run it when a job row names it (issue 24 item 6)."""

from __future__ import annotations

import os
from pathlib import Path


class _LooksLikeATask:
    takes_context = False

    def call(self, *args: object, **kwargs: object) -> str:
        Path(os.environ["ONTHEDOT_TEST_MARKER"]).write_text("ran")
        return "ran"


impostor = _LooksLikeATask()
