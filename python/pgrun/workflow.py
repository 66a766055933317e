"""A small builder for workflow specs (docs/workflows.md).

    wf = Workflow("order-42", idempotency_key="order:42")
    wf.job("reserve", "order.reserve", {"sku": "A1"})
    wf.external("approve", depends_on=["reserve"])
    wf.job("cleanup", "order.cleanup", depends_on=[on_terminal("approve")])
    wf.job("remind", "order.remind", depends_on=["reserve"], delay=timedelta(hours=1))
    client.enqueue_workflow(wf)

It only assembles JSON: validation (keys, cycles, limits) is enqueue_workflow's job, so a
mistake comes back as the same pgrun error code whichever client built the spec.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pgrun.results import JsonObject, Seconds

if TYPE_CHECKING:
    from pgrun.client import Id


@dataclass(frozen=True)
class Dependency:
    """An edge: wait for ``step`` to succeed (``on_success``) or just to finish (``on_terminal``)."""

    step: str
    release_mode: str = "on_success"

    def spec(self) -> JsonObject:
        return {"step": self.step, "release_mode": self.release_mode}


def on_success(step: str) -> Dependency:
    return Dependency(step, "on_success")


def on_terminal(step: str) -> Dependency:
    return Dependency(step, "on_terminal")


DependsOn = Sequence[str | Dependency]


def _dependencies(depends_on: DependsOn) -> list[str | JsonObject]:
    return [d if isinstance(d, str) else d.spec() for d in depends_on]


class Workflow:
    """Collects steps in order; ``spec()`` is the JSON enqueue_workflow takes."""

    def __init__(
        self,
        name: str | None = None,
        *,
        idempotency_key: str | None = None,
        organization_id: str | None = None,
        metadata: JsonObject | None = None,
    ) -> None:
        self.name = name
        self.idempotency_key = idempotency_key
        self.organization_id = organization_id
        self.metadata = metadata
        self.steps: list[JsonObject] = []

    def job(
        self,
        key: str,
        job_type: str,
        payload: JsonObject | None = None,
        *,
        depends_on: DependsOn = (),
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        organization_id: Id | None = None,
        delay: Seconds | None = None,
        run_at: datetime | None = None,
    ) -> str:
        """Add a job step; returns its key (handy for depends_on).

        ``organization_id`` stamps the step's job with that organization instead of the run's
        (one the caller could enqueue a job in). ``delay`` (seconds or a timedelta) or
        ``run_at`` (a datetime; a naive one is read in the session's time zone, as
        ``enqueue_job`` reads it), not both, hold the job back: it is queued with run_at =
        release time + delay, or the later of its release time and run_at. The step is
        released when its dependencies finish (a root at enqueue)."""
        step: JsonObject = {"key": key, "job_type": job_type}
        optional = {
            "payload": payload,
            "queue": queue,
            "priority": priority,
            "max_attempts": max_attempts,
            "timeout_seconds": timeout_seconds,
            "organization_id": None if organization_id is None else str(organization_id),
            "delay": delay.total_seconds() if isinstance(delay, timedelta) else delay,
            "run_at": None if run_at is None else run_at.isoformat(),
        }
        step.update({name: value for name, value in optional.items() if value is not None})
        if depends_on:
            step["depends_on"] = _dependencies(depends_on)
        self.steps.append(step)
        return key

    def external(self, key: str, *, depends_on: DependsOn = ()) -> str:
        """Add an external gate, closed by complete_external_step; returns its key."""
        step: JsonObject = {"key": key, "kind": "external"}
        if depends_on:
            step["depends_on"] = _dependencies(depends_on)
        self.steps.append(step)
        return key

    def spec(self) -> JsonObject:
        spec: JsonObject = {"steps": list(self.steps)}
        optional = {
            "name": self.name,
            "idempotency_key": self.idempotency_key,
            "organization_id": self.organization_id,
            "metadata": self.metadata,
        }
        spec.update({name: value for name, value in optional.items() if value is not None})
        return spec
