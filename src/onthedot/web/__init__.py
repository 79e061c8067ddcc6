"""The web admin: see and steer jobs and schedules in a browser.

A thin client over the App (no SQL of its own): Starlette and Jinja2, server-rendered HTML,
a little htmx served from the package (works with no network), charts drawn as inline SVG.

```python
from starlette.applications import Starlette
from starlette.routing import Mount
import onthedot.web

admin = onthedot.web.asgi(app, read_only=False)       # an ASGI app
site = Starlette(routes=[Mount("/admin", admin)])     # or FastAPI: api.mount("/admin", admin)
```

Needs the `web` extra: `pip install "onthedot[web]"`.
"""

from onthedot.web.factory import asgi
from onthedot.web.security import Credentials, check_bind, is_loopback

__all__ = ["Credentials", "asgi", "check_bind", "is_loopback"]
