"""Health endpoints for load balancers, orchestrators and monitoring.

* ``/healthz``: the web process is up and answering (no database, no session): a liveness probe.
* ``/readyz``: the database answers and at least one worker sent a heartbeat within
  WORKER_HEARTBEAT_MAX_AGE seconds; 503 with what is missing otherwise. JSON either way, so
  a monitor can alert on the part that failed. Neither needs a login or shows anything private.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from alignment.jobs.health import workers_alive


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@login_not_required
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        presence = workers_alive()
    except DatabaseError as exc:
        connection.close()  # the next request starts on a new connection
        return JsonResponse({"status": "unavailable", "database": f"unreachable ({type(exc).__name__})", "workers": None}, status=503)
    ready = presence.alive > 0
    body = {
        "status": "ready" if ready else "unavailable",
        "database": "ok",
        "workers": presence.alive,
        "worker_heartbeat_max_age_seconds": presence.max_age_seconds,
        "newest_worker_heartbeat": presence.newest_heartbeat.isoformat() if presence.newest_heartbeat else None,
    }
    if not ready:
        body["problem"] = "no worker sent a heartbeat recently: start one with `python manage.py procrastinate worker`"
    return JsonResponse(body, status=200 if ready else 503)
