"""`make demo`: an order workflow run end to end by a real worker.

    python -m pgrun.demo        (needs DATABASE_URL; `make demo` starts a throw-away server)

The run, as a DAG:

    validate ──┬─> reserve:book ──┐
               ├─> reserve:lamp ──┼─> charge ──> approve ──> ship ──┐
               └─> reserve:mug  ──┘   (fails     (external  (3 steps │
               │                      once,      gate: the   with    │
               │                      retried)   demo        Continue)
               │                                 approves)           │
               └──────────────── (on_terminal) ───────────> cleanup <┘ (on_terminal)

Beside the run, a periodic job (`demo.tick`, every 2 seconds) shows the cron scheduler: the
worker's scheduler loop upserts the schedule at start-up and fires each plan time once.

Least privilege (docs/security.md): DATABASE_URL only migrates. The demo then makes two login
roles, `pgrun_demo_producer` (a member of pgrun_producer: it enqueues the run and approves the
gate) and `pgrun_demo_worker` (a member of pgrun_worker: it runs the handlers, the reaper and
the scheduler), runs everything through them, and drops them at the end. Where DATABASE_URL may
not create roles, everything runs as DATABASE_URL instead.

The handlers below are an ordinary pgrun app: `pgrun worker pgrun.demo:app` runs them too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgrun import migrate
from pgrun.app import App, Continue, JobContext, Retry, SyncJobContext
from pgrun.client import Client
from pgrun.config import Config
from pgrun.display import run_report
from pgrun.results import Json
from pgrun.runner import default_loops, run_loops
from pgrun.workflow import Workflow, on_terminal

app = App("demo")

ITEMS = ("book", "lamp", "mug")


@app.job("order.validate")
async def validate(ctx: JobContext) -> Json:
    await ctx.log("order looks fine", order=ctx.payload["order"])
    return {"order": ctx.payload["order"], "items": list(ITEMS)}


@app.job("order.reserve")
async def reserve(ctx: JobContext) -> Json:
    await asyncio.sleep(0.05)  # pretend to call the warehouse
    return {"item": ctx.payload["item"], "reserved": True}


@app.job("order.charge", max_attempts=3)
def charge(ctx: SyncJobContext) -> Json:
    """A plain function (runs in a thread) whose first attempt fails: the payment API times out."""
    reserved = [dep["output"]["item"] for dep in ctx.payload["dependencies"].values()]
    if ctx.attempt == 1:
        ctx.log("payment provider timed out; retrying", level="warning")
        raise Retry(delay=0.3, message="payment provider timed out")
    time.sleep(0.05)
    return {"charged": len(reserved) * 10, "items": sorted(reserved)}


@app.job("order.ship")
async def ship(ctx: JobContext) -> Json:
    """A resumable job: pack, then label, then dispatch; each step is stored before the next."""
    if ctx.step is None:
        await ctx.progress({"stage": "packed"})
        return Continue("label", {"parcels": 1})
    if ctx.step == "label":
        await ctx.progress({"stage": "labelled"})
        return Continue("dispatch", {**ctx.state, "label": "PGR-0001"})
    return {"shipped": True, **ctx.state}


@app.job("order.cleanup")
async def cleanup(ctx: JobContext) -> Json:
    """Runs whatever happened before it (on_terminal edges) and reports what it saw."""
    return {name: dep["status"] for name, dep in sorted(ctx.payload["dependencies"].items())}


@app.periodic("* * * * * */2", job_type="demo.tick", name="demo.tick")  # six fields: seconds last
@app.job("demo.tick")
async def tick(ctx: JobContext) -> Json:
    """A periodic job: the scheduler makes one job per plan time, whatever runs it."""
    return {"ticked_at": time.time()}


def order_workflow(order: str) -> Workflow:
    wf = Workflow(f"order {order}", metadata={"order": order})
    wf.job("validate", "order.validate", {"order": order})
    reserves = [
        wf.job(f"reserve:{item}", "order.reserve", {"item": item}, depends_on=["validate"]) for item in ITEMS
    ]
    wf.job("charge", "order.charge", depends_on=reserves)
    wf.external("approve", depends_on=["charge"])
    wf.job("ship", "order.ship", depends_on=["approve"])
    wf.job("cleanup", "order.cleanup", depends_on=[on_terminal("validate"), on_terminal("ship")])
    return wf


def approve_when_waiting(client: Client, run_id: UUID) -> bool:
    """The 'person' behind the approval gate. Returns whether the run finished."""
    run = client.get_workflow_run(run_id)
    steps = run["steps"]
    gate = steps["approve"] if isinstance(steps, dict) else next(s for s in steps if s["key"] == "approve")
    if gate["status"] == "waiting_for_external":
        print("  approve: waiting for a person; the demo approves it", flush=True)
        client.complete_external_step(run_id, "approve", output={"approved_by": "demo"})
    return bool(run["status"] != "running")


#: The demo's login roles, by the pgrun role each is a member of.
DEMO_LOGINS = {"producer": "pgrun_demo_producer", "worker": "pgrun_demo_worker"}


@contextmanager
def demo_logins(dsn: str) -> Iterator[dict[str, str]]:
    """A DSN per side (producer, worker), each a login role that is a member of that pgrun
    role and of nothing else; the roles are dropped afterwards. DATABASE_URL for both when
    it may not create roles."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        if not row or not row[0]:
            print("  (DATABASE_URL may not create roles: the demo runs as DATABASE_URL)", flush=True)
            yield {kind: dsn for kind in DEMO_LOGINS}
            return
        groups: dict[str, str] = dict(
            conn.execute("SELECT kind, role_name FROM pgrun.install_roles").fetchall()
        )
        dsns: dict[str, str] = {}
        try:
            for kind, login in DEMO_LOGINS.items():
                password = secrets.token_urlsafe(16)
                exists = conn.execute("SELECT to_regrole(%s) IS NOT NULL", (login,)).fetchone()
                verb = "ALTER" if exists and exists[0] else "CREATE"
                conn.execute(
                    sql.SQL(verb + " ROLE {} LOGIN PASSWORD {}").format(
                        sql.Identifier(login), sql.Literal(password)
                    )
                )
                conn.execute(
                    sql.SQL("GRANT {} TO {}").format(sql.Identifier(groups[kind]), sql.Identifier(login))
                )
                params = conninfo_to_dict(dsn)
                params.update(user=login, password=password)
                dsns[kind] = make_conninfo("", **params)
            print(
                "  producer side: role pgrun_demo_producer (pgrun_producer); "
                "worker side: role pgrun_demo_worker (pgrun_worker)",
                flush=True,
            )
            yield dsns
        finally:
            for login in DEMO_LOGINS.values():
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (login,)
                )
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(login)))


async def main(dsn: str) -> int:
    print("migrating ...", flush=True)
    migrate.migrate(dsn)
    with demo_logins(dsn) as logins:
        return await run_demo(logins["producer"], logins["worker"])


async def run_demo(producer_dsn: str, worker_dsn: str) -> int:
    with Client.connect(producer_dsn) as client:
        run = client.enqueue_workflow(order_workflow("A-1001"))
        print(f"enqueued workflow run {run.run_id} ({run.status}); starting a worker", flush=True)
        config = Config(
            database_url=worker_dsn,
            worker_id="demo-worker",
            poll_interval_ms=200,
            shutdown_grace_seconds=5,
            schedule_poll_interval_seconds=1,
            # retention is an admin's (pgrun purge): the worker role does not purge
            retention_hours=0,
        )
        stop = asyncio.Event()
        loops = asyncio.create_task(run_loops(default_loops(app), config, stop))
        started = time.monotonic()
        try:
            while not await asyncio.to_thread(approve_when_waiting, client, run.run_id):
                if time.monotonic() - started > 60:
                    print("the run did not finish within 60 s", file=sys.stderr)
                    return 1
                await asyncio.sleep(0.05)
            while not await asyncio.to_thread(_ticks, client) and time.monotonic() - started < 30:
                await asyncio.sleep(0.1)  # let the periodic job fire at least once
        finally:
            stop.set()
            await loops
        final = client.get_workflow_run(run.run_id)
        print()
        print(run_report(final))
        charge_job = client.list_jobs(workflow_run_id=run.run_id, job_type="order.charge")[0]
        print(f"\ncharge took {charge_job.total_attempts} attempts; cleanup saw: {_output(final, 'cleanup')}")
        ticks = client.list_jobs(job_type="demo.tick", status="succeeded")
        print(
            f"periodic schedule demo.tick (*/2 s): fired and ran {len(ticks)} time(s), one job per plan time"
        )
        if not ticks:
            return 1
        return 0 if final["status"] == "succeeded" else 1


def _ticks(client: Client) -> int:
    return len(client.list_jobs(job_type="demo.tick", status="succeeded"))


def _output(run: Json, key: str) -> Json:
    steps = run["steps"]
    step = steps[key] if isinstance(steps, dict) else next(s for s in steps if s["key"] == key)
    return step["output"]


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="  %(levelname)s %(name)s: %(message)s")
    url = os.environ.get("DATABASE_URL")
    if not url:
        sys.exit("DATABASE_URL is not set; run `make demo`, which starts a throw-away PostgreSQL")
    sys.exit(asyncio.run(main(url)))
