"""The interpreter of a page's Python session (started by kernel.py; imports nothing of the
tests). It reads one JSON request per line on one pipe, runs the block in the page's
namespace, and answers {"ok": ..., "error": ...} on another; the blocks' own output goes to
stdout and stderr, as in a terminal.

Like `python -m asyncio`, a block may `await` at top level: the session keeps one event loop.
On a page that made a Django project (a `manage.py` in its folder), the first block after it
sets Django up from that file, as `python manage.py shell` would.
"""

import ast
import asyncio
import inspect
import json
import os
import re
import sys
import traceback

sys.path[0] = ""  # the page's folder, as for `python` started there
namespace = {"__name__": "__main__", "__builtins__": __builtins__}
loop = asyncio.new_event_loop()
django_ready = False


def setup_django() -> None:
    global django_ready
    if django_ready or not os.path.exists("manage.py"):
        return
    with open("manage.py") as fh:
        found = re.search(r"DJANGO_SETTINGS_MODULE['\"],\s*['\"]([\w.]+)", fh.read())
    if found:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", found.group(1))
        import django

        django.setup()
        django_ready = True


def run(request: dict) -> None:
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    setup_django()
    source = "\n" * request["line"] + request["source"]
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile(source, request["path"], "exec", flags=flags, dont_inherit=True)
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        loop.run_until_complete(result)


def main() -> None:
    requests = os.fdopen(int(sys.argv[1]), "r")
    replies = os.fdopen(int(sys.argv[2]), "w")
    for line in requests:
        try:
            run(json.loads(line))
            reply = {"ok": True}
        except BaseException:
            kind, value, tb = sys.exc_info()
            # Only the page's frames: drop this file's own.
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next
            reply = {"ok": False, "error": "".join(traceback.format_exception(kind, value, tb))}
        sys.stdout.flush()
        sys.stderr.flush()
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


main()
