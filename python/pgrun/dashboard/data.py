"""What the dashboard reads and does, each through one public pgrun SQL function.

``Store`` wraps an ``AsyncClient`` (its pool connects as the dashboard's database role): the
typed client methods where they exist, and the statements of ``pgrun.queries`` for the
functions the client has no method for (schedules, the overview). Errors come back as the
``pgrun.errors`` classes, translated in the client's one place.

What the role may do is read from PostgreSQL's own privilege check
(``has_function_privilege`` on each action's function): the UI shows a button only when the
function would let the role in, and the function decides anyway when the POST arrives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from pgrun.client import AsyncClient, Id, _pgrun_errors
from pgrun.results import JsonObject, ScheduleSummary, WorkflowRunSummary

#: The actions of the UI and the SQL function each one calls.
ACTION_FUNCTIONS: dict[str, str] = {
    "cancel_job": "cancel_job",
    "requeue_job": "requeue_job",
    "pause_type": "set_job_runtime_config",
    "pause_schedule": "pause_schedule",
    "resume_schedule": "resume_schedule",
    "complete_external_step": "complete_external_step",
    "cancel_run": "cancel_workflow_run",
}

_PRIVILEGES = """
SELECT p.proname::text AS name, bool_or(has_function_privilege(p.oid, 'EXECUTE')) AS allowed
FROM pg_catalog.pg_proc AS p
WHERE p.pronamespace = 'pgrun'::regnamespace AND p.proname = ANY (%(names)s::text[])
GROUP BY p.proname
"""

_IDENTITY = "SELECT session_user::text AS login, current_database()::text AS database"

OVERVIEW = "SELECT pgrun.dashboard_overview(organization_id => %(organization_id)s::uuid) AS overview"

JOB_HISTORY = """
SELECT pgrun.get_job_history(job_id => %(job_id)s::uuid, organization_id => %(organization_id)s::uuid,
    max_rows => %(max_rows)s::integer) AS history
"""


@dataclass(frozen=True)
class Identity:
    """Who the dashboard is in the database, and which actions its role may take."""

    login: str
    database: str
    allowed: frozenset[str]

    def may(self, action: str) -> bool:
        return action in self.allowed

    @property
    def read_only(self) -> bool:
        return not self.allowed


class Store:
    def __init__(self, client: AsyncClient) -> None:
        self.client = client
        #: The jobs page reads through the client's own method, with its signature.
        self.list_jobs = client.list_jobs

    async def _rows(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with _pgrun_errors():
            async with self.client.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(query, params)
                return await cur.fetchall()

    async def identity(self) -> Identity:
        ident = (await self._rows(_IDENTITY, {}))[0]
        rows = await self._rows(_PRIVILEGES, {"names": sorted(set(ACTION_FUNCTIONS.values()))})
        granted = {r["name"] for r in rows if r["allowed"]}
        allowed = frozenset(a for a, fn in ACTION_FUNCTIONS.items() if fn in granted)
        return Identity(ident["login"], ident["database"], allowed)

    # -- reads ---------------------------------------------------------------------------

    async def overview(self, organization_id: Id | None) -> JsonObject:
        rows = await self._rows(OVERVIEW, {"organization_id": organization_id})
        result: JsonObject = rows[0]["overview"]
        return result

    async def get_job(self, job_id: Id) -> JsonObject:
        return await self.client.get_job(job_id)

    async def get_job_history(self, job_id: Id, max_rows: int = 200) -> JsonObject:
        rows = await self._rows(
            JOB_HISTORY, {"job_id": job_id, "organization_id": None, "max_rows": max_rows}
        )
        result: JsonObject = rows[0]["history"]
        return result

    async def list_runs(
        self, *, status: str | None, after_id: Id | None, max_rows: int
    ) -> list[WorkflowRunSummary]:
        return await self.client.list_workflow_runs(status=status, after_id=after_id, max_rows=max_rows)

    async def get_run(self, run_id: Id) -> JsonObject:
        return await self.client.get_workflow_run(run_id)

    async def list_schedules(self, *, after_id: Id | None, max_rows: int) -> list[ScheduleSummary]:
        return await self.client.list_schedules(after_id=after_id, max_rows=max_rows)

    # -- actions -------------------------------------------------------------------------

    async def cancel_job(self, job_id: Id, reason: str | None) -> str:
        return await self.client.cancel_job(job_id, reason=reason)

    async def requeue_job(self, job_id: Id) -> datetime:
        return await self.client.requeue_job(job_id)

    async def set_paused(self, job_type: str, paused: bool) -> None:
        await self.client.set_job_runtime_config(job_type, paused=paused)

    async def pause_schedule(self, name: str, organization_id: UUID | None, paused: bool) -> None:
        if paused:
            await self.client.pause_schedule(name, organization_id=organization_id)
        else:
            await self.client.resume_schedule(name, organization_id=organization_id)

    async def complete_external_step(
        self, run_id: Id, step_key: str, *, succeeded: bool, output: Any
    ) -> None:
        await self.client.complete_external_step(run_id, step_key, succeeded=succeeded, output=output)

    async def cancel_run(self, run_id: Id, reason: str | None) -> None:
        await self.client.cancel_workflow_run(run_id, reason=reason)


def unique(values: Sequence[str]) -> list[str]:
    return sorted(set(values))
