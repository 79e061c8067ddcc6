"""A FastAPI app that enqueues onthedot jobs from its handlers and serves the web admin at
/admin/jobs behind its own auth check.

    pip install "onthedot[fastapi]"           # FastAPI, uvicorn, itsdangerous
    uvicorn examples.fastapi_app:api          # the web app
    onthedot --app examples.fastapi_app:jobs worker   # a worker, in another shell
"""

from fastapi import FastAPI, HTTPException, Request

import onthedot
from onthedot.contrib.fastapi import lifespan, mount_admin

jobs = onthedot.App()  # $ONTHEDOT_DATABASE_URL, else sqlite:///onthedot.db


@jobs.job(queue="default", max_attempts=5)
def send_welcome(user_id: int) -> None:
    print(f"welcome, user {user_id}")


def require_staff(request: Request) -> None:
    """Stands in for your own auth (a session, a JWT, `request.user` from your middleware)."""
    if request.headers.get("x-staff-token") != "change-me":
        raise HTTPException(status_code=401, detail="staff only")


api = FastAPI(lifespan=lifespan(jobs))
mount_admin(api, jobs, "/admin/jobs", guard=require_staff)


@api.post("/users/{user_id}/welcome")
async def welcome(user_id: int) -> dict[str, int]:
    return {"job": await send_welcome.aenqueue(user_id)}
