"""A small, known state for the dashboard tests, made through the public functions only:
jobs in every status, a retry, a workflow run with an external gate and both edge kinds, and
a cron schedule. ``seed`` returns the ids the tests look for."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg

from pgrun.client import Client


@dataclass(frozen=True)
class Seeded:
    ready: list[UUID]  # mail.send, queued and due
    delayed: UUID  # report.build, due in an hour
    succeeded: UUID
    dead: UUID
    retrying: UUID  # mail.retry, failed once, queued again
    running: UUID  # mail.slow, held by worker dash-w1
    run_id: UUID
    steps: tuple[str, ...]
    schedule: str


ORG = "5d2d6f0e-8f43-4a6e-9f0b-0c9c4f3b1a11"

SPEC = {
    "name": "order",
    "steps": [
        {"key": "charge", "job_type": "order.charge"},
        {"key": "approve", "kind": "external", "depends_on": ["charge"]},
        {
            "key": "receipt",
            "job_type": "order.receipt",
            "depends_on": [{"step": "charge", "release_mode": "on_terminal"}],
        },
        {"key": "ship", "job_type": "order.ship", "depends_on": ["approve", "receipt"]},
    ],
}


def seed(dsn: str) -> Seeded:
    with Client.connect(dsn) as c:
        ready = [
            c.enqueue_job("mail.send", {"to": f"u{i}@example.com"}, queue="mail").job_id for i in range(3)
        ]
        delayed = c.enqueue_job("report.build", {"day": 1}, queue="reports", delay=3600).job_id

        done = c.enqueue_job("mail.done", {"n": 1}, queue="mail").job_id
        [claimed] = c.claim_jobs("dash-w2", job_types=["mail.done"])
        c.complete_job(claimed.job_id, claimed.lease_token, {"sent": True})

        dead = c.enqueue_job("mail.bounce", {"n": 2}, queue="mail").job_id
        [claimed] = c.claim_jobs("dash-w2", job_types=["mail.bounce"])
        c.append_job_log(claimed.job_id, claimed.lease_token, "asking mx.example.com", fields={"mx": 1})
        c.fail_job(
            claimed.job_id,
            claimed.lease_token,
            error_code="smtp_550",
            message="mailbox unavailable",
            retryable=False,
        )

        retrying = c.enqueue_job("mail.retry", {"n": 3}, queue="mail", max_attempts=5).job_id
        [claimed] = c.claim_jobs("dash-w2", job_types=["mail.retry"])
        c.fail_job(
            claimed.job_id, claimed.lease_token, error_code="timeout", message="smtp timeout", retry_delay=0
        )

        running = c.enqueue_job("mail.slow", {"n": 4}, queue="mail").job_id
        c.claim_jobs("dash-w1", job_types=["mail.slow"], lease_seconds=3600)

        run = c.enqueue_workflow(SPEC)
        [step] = c.claim_jobs("dash-w2", job_types=["order.charge"])
        c.complete_job(step.job_id, step.lease_token, {"charged": 42})

        # another organization's job: an admin sees it, a reader without a tenancy row does not
        c.enqueue_job("mail.send", {"to": "tenant@example.com"}, queue="mail", organization_id=ORG)

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT * FROM pgrun.upsert_schedule(name => 'nightly', cron => '0 3 * * *', "
            "job_type => 'report.build', timezone => 'Europe/Paris')"
        )
    assert isinstance(done, UUID)
    return Seeded(
        ready=ready,
        delayed=delayed,
        succeeded=done,
        dead=dead,
        retrying=retrying,
        running=running,
        run_id=run.run_id,
        steps=("approve", "charge", "receipt", "ship"),
        schedule="nightly",
    )


@contextmanager
def serve(dsn: str, **options: Any) -> Iterator[str]:
    """The dashboard for ``dsn`` served by uvicorn on a free local port, in a thread; yields its
    base URL once it answers."""
    import uvicorn

    from pgrun.dashboard import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(dsn, **options), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the dashboard did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
