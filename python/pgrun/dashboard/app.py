"""The dashboard's ASGI app: Starlette routes rendering Jinja2 templates.

Every number comes from one public pgrun function called as the dashboard's database role
(``data.Store``); every action is a POST through the same function any other client calls.
Pages poll their live part (``/partials/...``) with htmx every few seconds. docs/dashboard.md
describes the pages, the actions by role, the token and the CSRF protection.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

import psycopg
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from pgrun.client import AsyncClient
from pgrun.dashboard import svg
from pgrun.dashboard.data import Identity, Store
from pgrun.dashboard.guard import AUTH_COOKIE, CSRF_FIELD, Guard, GuardMiddleware
from pgrun.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    PgrunError,
    UnsupportedError,
    schema_mismatch,
)
from pgrun.results import JobSummary

HERE = Path(__file__).resolve().parent
PAGE_SIZE = 50
#: How many jobs one page of the jobs list may read to find PAGE_SIZE matches of an error-text
#: or time filter, which list_jobs cannot apply (the next page continues from the last one read).
SCAN_LIMIT = 5000
REFRESH_SECONDS = 3
JOB_STATUSES = ("queued", "running", "succeeded", "dead", "cancelled")
RUN_STATUSES = ("running", "succeeded", "failed", "cancelled")
_STATUS_BY_ERROR: dict[type[PgrunError], int] = {
    PermissionDeniedError: 403,
    NotFoundError: 404,
    InvalidInputError: 400,
    ConflictError: 409,
    UnsupportedError: 409,
}

Handler = Callable[[Request], Awaitable[Response]]


def _uuid(value: str | None, what: str) -> UUID | None:
    if value is None or value.strip() == "":
        return None
    try:
        return UUID(value.strip())
    except ValueError:
        raise HTTPException(400, f"{what} is not a uuid: {value[:80]!r}") from None


def _text(value: str | None) -> str | None:
    return None if value is None or value.strip() == "" else value.strip()


def _time(value: str | None, what: str) -> datetime | None:
    if not _text(value):
        return None
    assert value is not None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise HTTPException(
            400, f"{what} is not a date and time (YYYY-MM-DDTHH:MM): {value[:80]!r}"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def uuid7_floor(moment: datetime) -> UUID:
    """The smallest UUIDv7 of ``moment``'s millisecond: job ids are UUIDv7 (creation order), so
    ``id > uuid7_floor(t)`` is "created at or after t" and list_jobs' after_id walks from there."""
    ms = max(int(moment.timestamp() * 1000), 0)
    return UUID(f"{ms:012x}" + "0" * 20)


def _local_next(value: str | None, default: str) -> str:
    # only paths of this site: never an absolute URL (no open redirect)
    if value and value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return value
    return default


def _fmt_time(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return str(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _fmt_seconds(value: Any) -> str:
    if value is None:
        return ""
    s = float(value)
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    if s < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def _duration(start: Any, end: Any) -> str:
    def parse(v: Any) -> datetime | None:
        if isinstance(v, str):
            return datetime.fromisoformat(v)
        return v if isinstance(v, datetime) else None

    a, b = parse(start), parse(end)
    if a is None or b is None:
        return ""
    return _fmt_seconds((b - a).total_seconds())


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def create_app(
    dsn: str,
    *,
    token: str | None = None,
    secret: bytes | None = None,
    pool_size: int = 4,
    refresh_seconds: int = REFRESH_SECONDS,
) -> Starlette:
    """The dashboard for the database at ``dsn`` (the role it logs in as decides what it may
    see and do). ``token``: require it (Bearer header or the login form). ``secret`` signs the
    CSRF tokens (random per process when not given)."""
    guard = Guard(token=token, secret=secret)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    env = templates.env
    env.filters["time"] = _fmt_time
    env.filters["seconds"] = _fmt_seconds
    env.filters["pretty"] = _pretty
    env.globals["duration"] = _duration
    env.globals["refresh"] = refresh_seconds
    env.globals["csrf_field"] = CSRF_FIELD
    env.globals["token_required"] = token is not None
    state: dict[str, Store] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        client = await AsyncClient.connect(dsn, min_size=1, max_size=pool_size)
        state["store"] = Store(client)
        try:
            yield
        finally:
            await client.close()
            if metrics is not None:
                await run_in_threadpool(metrics.close)

    def store() -> Store:
        return state["store"]

    async def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        ident: Identity | None = context.pop("ident", None)
        if ident is None:
            ident = await store().identity()
        context.update(ident=ident, csrf=guard.csrf_token(request), path=request.url.path)
        return templates.TemplateResponse(request, name, context, status_code=status_code)

    def error_page(request: Request, status: int, title: str, detail: str) -> HTMLResponse:
        context = {
            "status": status,
            "title": title,
            "detail": detail,
            "ident": None,
            "path": request.url.path,
        }
        return templates.TemplateResponse(request, "error.html", context, status_code=status)

    async def on_pgrun_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PgrunError)
        status = _STATUS_BY_ERROR.get(type(exc), 500)
        return error_page(request, status, exc.message, exc.describe())

    async def on_schema_mismatch(request: Request, exc: Exception) -> Response:
        return error_page(request, 500, "schema mismatch", schema_mismatch(exc, "dashboard"))

    async def on_http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return error_page(request, exc.status_code, f"{exc.status_code}", str(exc.detail))

    # -- overview ---------------------------------------------------------------------------

    async def overview_context(request: Request) -> dict[str, Any]:
        org = _uuid(request.query_params.get("org"), "org")
        data = await store().overview(org)
        minutes = data.get("minutes") or []
        charts = [
            svg.minute_chart(
                "Finished per minute",
                "jobs",
                minutes,
                [
                    ("succeeded", "succeeded", "ok"),
                    ("dead", "dead", "bad"),
                    ("cancelled", "cancelled", "muted"),
                ],
                bars=True,
            ),
            svg.minute_chart(
                "Start latency, seconds (run_at to claim)",
                "seconds",
                minutes,
                [("latency_p50_seconds", "p50", "p50"), ("latency_p95_seconds", "p95", "p95")],
                bars=False,
            ),
        ]
        totals = {
            k: sum(int(r[k]) for r in data["depth"])
            for k in ("ready", "delayed", "running", "retrying", "dead")
        }
        return {"data": data, "charts": charts, "totals": totals, "org": org}

    async def overview(request: Request) -> Response:
        return await render(request, "overview.html", **await overview_context(request))

    async def overview_partial(request: Request) -> Response:
        return await render(request, "_overview_body.html", **await overview_context(request))

    # -- jobs -------------------------------------------------------------------------------

    async def jobs(request: Request) -> Response:
        p = request.query_params
        status = _text(p.get("status"))
        queue = _text(p.get("queue"))
        job_type = _text(p.get("type"))
        org = _uuid(p.get("org"), "org")
        run = _uuid(p.get("run"), "run")
        after = _uuid(p.get("after"), "after")
        text = _text(p.get("q"))
        since = _time(p.get("since"), "since")
        until = _time(p.get("until"), "until")
        if since is not None:
            floor = uuid7_floor(since)
            after = floor if after is None or after < floor else after
        ceiling = None if until is None else uuid7_floor(until)
        filtered = text is not None or ceiling is not None
        needle = (text or "").lower()
        rows: list[JobSummary] = []
        scanned = 0
        cursor = after
        exhausted = False
        while len(rows) < PAGE_SIZE and scanned < SCAN_LIMIT:
            chunk = await store().list_jobs(
                status=status,
                job_type=job_type,
                queue=queue,
                organization_id=org,
                workflow_run_id=run,
                after_id=cursor,
                max_rows=1000 if filtered else PAGE_SIZE,
            )
            for job in chunk:
                scanned += 1
                cursor = job.id
                if ceiling is not None and job.id >= ceiling:
                    exhausted = True
                    break
                hay = f"{job.error_code or ''} {job.error_message or ''}".lower()
                if not needle or needle in hay:
                    rows.append(job)
                    if len(rows) == PAGE_SIZE:
                        break
            if exhausted or len(chunk) < (1000 if filtered else PAGE_SIZE):
                exhausted = exhausted or len(rows) < PAGE_SIZE
                break
        keep = {k: v for k, v in p.items() if k not in ("after", "since") and v}
        if since is not None and p.get("since"):
            keep["since"] = p["since"]
        next_url = None
        if not exhausted and cursor is not None and (rows or scanned):
            next_url = "/jobs?" + urlencode({**keep, "after": str(cursor)})
        return await render(
            request,
            "jobs.html",
            jobs=rows,
            scanned=scanned,
            filtered=filtered,
            next_url=next_url,
            statuses=JOB_STATUSES,
            f={k: p.get(k, "") for k in ("status", "queue", "type", "org", "run", "q", "since", "until")},
        )

    async def job_context(request: Request) -> dict[str, Any]:
        job_id = _uuid(request.path_params["job_id"], "job id")
        assert job_id is not None
        job = await store().get_job(job_id)
        history = await store().get_job_history(job_id)
        return {"job": job, "history": history}

    async def job(request: Request) -> Response:
        return await render(request, "job.html", **await job_context(request))

    async def job_partial(request: Request) -> Response:
        return await render(request, "_job_live.html", **await job_context(request))

    # -- workflow runs ----------------------------------------------------------------------

    async def runs(request: Request) -> Response:
        p = request.query_params
        status = _text(p.get("status"))
        after = _uuid(p.get("after"), "after")
        rows = await store().list_runs(status=status, after_id=after, max_rows=PAGE_SIZE)
        next_url = None
        if len(rows) == PAGE_SIZE:
            next_url = "/runs?" + urlencode(
                {**({"status": status} if status else {}), "after": str(rows[-1].id)}
            )
        return await render(
            request, "runs.html", runs=rows, statuses=RUN_STATUSES, status=status or "", next_url=next_url
        )

    async def run_context(request: Request) -> dict[str, Any]:
        run_id = _uuid(request.path_params["run_id"], "run id")
        assert run_id is not None
        run = await store().get_run(run_id)
        dag = svg.layout_dag(run.get("steps") or [], run.get("dependencies") or [])
        return {"run": run, "dag": dag}

    async def run(request: Request) -> Response:
        return await render(request, "run.html", **await run_context(request))

    async def run_partial(request: Request) -> Response:
        return await render(request, "_run_live.html", **await run_context(request))

    # -- schedules --------------------------------------------------------------------------

    async def schedules(request: Request) -> Response:
        after = _uuid(request.query_params.get("after"), "after")
        rows = await store().list_schedules(after_id=after, max_rows=100)
        next_url = f"/schedules?after={rows[-1].schedule_id}" if len(rows) == 100 else None
        return await render(request, "schedules.html", schedules=rows, next_url=next_url)

    # -- actions (POST, CSRF-checked; the SQL function decides) ------------------------------

    def action(fn: Callable[[Request, Any], Awaitable[str]]) -> Handler:
        async def endpoint(request: Request) -> Response:
            form = await guard.form(request)
            back = await fn(request, form)
            return RedirectResponse(_local_next(str(form.get("next") or ""), back), status_code=303)

        return endpoint

    @action
    async def cancel_job(request: Request, form: Any) -> str:
        job_id = request.path_params["job_id"]
        await store().cancel_job(
            str(_uuid(job_id, "job id")), _text(form.get("reason")) or "cancelled from the dashboard"
        )
        return f"/jobs/{job_id}"

    @action
    async def requeue_job(request: Request, form: Any) -> str:
        job_id = request.path_params["job_id"]
        await store().requeue_job(str(_uuid(job_id, "job id")))
        return f"/jobs/{job_id}"

    @action
    async def pause_type(request: Request, form: Any) -> str:
        paused = _verb(request)
        job_type = _text(form.get("job_type"))
        if job_type is None:
            raise HTTPException(400, "job_type is required")
        await store().set_paused(job_type, paused)
        return "/"

    @action
    async def schedule_action(request: Request, form: Any) -> str:
        paused = _verb(request)
        name = _text(form.get("name"))
        if name is None:
            raise HTTPException(400, "name is required")
        await store().pause_schedule(name, _uuid(form.get("organization_id"), "organization_id"), paused)
        return "/schedules"

    @action
    async def complete_step(request: Request, form: Any) -> str:
        run_id = str(_uuid(request.path_params["run_id"], "run id"))
        raw = _text(form.get("output"))
        try:
            output = None if raw is None else json.loads(raw)
        except ValueError:
            raise HTTPException(400, "output is not JSON") from None
        succeeded = form.get("outcome", "succeeded") != "failed"
        await store().complete_external_step(
            run_id, request.path_params["step_key"], succeeded=succeeded, output=output
        )
        return f"/runs/{run_id}"

    @action
    async def cancel_run(request: Request, form: Any) -> str:
        run_id = str(_uuid(request.path_params["run_id"], "run id"))
        await store().cancel_run(run_id, _text(form.get("reason")) or "cancelled from the dashboard")
        return f"/runs/{run_id}"

    # -- login ------------------------------------------------------------------------------

    async def login(request: Request) -> Response:
        nxt = _local_next(request.query_params.get("next"), "/")
        if request.method == "GET":
            context = {"next": nxt, "failed": False, "ident": None, "path": "/login"}
            return templates.TemplateResponse(request, "login.html", context)
        form = await request.form()
        candidate = form.get("token")
        if guard.token is None or not isinstance(candidate, str) or not guard.token_ok(candidate):
            context = {"next": nxt, "failed": True, "ident": None, "path": "/login"}
            return templates.TemplateResponse(request, "login.html", context, status_code=401)
        response = RedirectResponse(_local_next(str(form.get("next") or ""), "/"), status_code=303)
        response.set_cookie(AUTH_COOKIE, guard.session_value(), httponly=True, samesite="strict")
        return response

    routes = [
        Route("/", overview),
        Route("/partials/overview", overview_partial),
        Route("/jobs", jobs),
        Route("/jobs/{job_id}", job),
        Route("/partials/jobs/{job_id}", job_partial),
        Route("/jobs/{job_id}/cancel", cancel_job, methods=["POST"]),
        Route("/jobs/{job_id}/requeue", requeue_job, methods=["POST"]),
        Route("/types/{verb:str}", pause_type, methods=["POST"]),
        Route("/runs", runs),
        Route("/runs/{run_id}", run),
        Route("/partials/runs/{run_id}", run_partial),
        Route("/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
        Route("/runs/{run_id}/steps/{step_key:path}/complete", complete_step, methods=["POST"]),
        Route("/schedules", schedules),
        Route("/schedules/{verb:str}", schedule_action, methods=["POST"]),
        Route("/login", login, methods=["GET", "POST"]),
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    metrics = _metrics(dsn)
    if metrics is not None:
        routes.append(Route("/metrics", metrics.endpoint))
    app = Starlette(
        routes=routes,
        middleware=[Middleware(GuardMiddleware, guard=guard)],
        exception_handlers={
            PgrunError: on_pgrun_error,
            HTTPException: on_http_error,
            psycopg.errors.UndefinedFunction: on_schema_mismatch,
            psycopg.errors.UndefinedColumn: on_schema_mismatch,
        },
        lifespan=lifespan,
    )
    app.state.guard = guard
    return app


_VERBS = re.compile(r"^(pause|resume)$")


def _verb(request: Request) -> bool:
    """True for .../pause, False for .../resume; anything else is not a route."""
    verb = str(request.path_params["verb"])
    if not _VERBS.match(verb):
        raise HTTPException(404, f"no such action: {verb[:40]!r}")
    return verb == "pause"


class _Metrics:
    """``/metrics``: the queue-depth gauges of pgrun.metrics (prometheus_client), read from the
    database at each scrape in a worker thread, so a slow read never stalls the pages; its
    connection closes with the app. Absent when prometheus_client is not installed."""

    def __init__(self, dsn: str) -> None:
        from prometheus_client import CollectorRegistry

        from pgrun.metrics import QueueDepthCollector

        self.collector = QueueDepthCollector(dsn)
        self.registry = CollectorRegistry()
        self.registry.register(self.collector)

    async def endpoint(self, request: Request) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        body = await run_in_threadpool(generate_latest, self.registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    def close(self) -> None:
        self.collector.close()


def _metrics(dsn: str) -> _Metrics | None:
    try:
        return _Metrics(dsn)
    except (ImportError, RuntimeError):  # no prometheus_client (pgrun.metrics.MetricsUnavailable)
        return None
