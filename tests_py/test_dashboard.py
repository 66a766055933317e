"""The dashboard's routes without a browser (Starlette's TestClient, which runs the app's
lifespan): errors become pages with the right status, the token gate, the CSRF gate, the
jobs list's time and text filters, and the DAG layout."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from uuid import UUID

import httpx
import psycopg
import pytest
from starlette.testclient import TestClient

from dashboard_data import Seeded, seed
from pgrun.client import Client
from pgrun.dashboard import create_app
from pgrun.dashboard.app import uuid7_floor
from pgrun.dashboard.svg import layout_dag


@pytest.fixture
def seeded(db: str) -> Seeded:
    return seed(db)


@pytest.fixture
def client(db: str, seeded: Seeded) -> Iterator[TestClient]:
    with TestClient(create_app(db), base_url="http://127.0.0.1") as c:
        yield c


def csrf(client: TestClient, path: str = "/") -> str:
    html = client.get(path).text
    match = re.search(r'<meta name="csrf-token" content="([0-9a-f]+)">', html)
    assert match, "every page carries the CSRF token"
    return match.group(1)


def test_pages_answer_and_errors_are_pages_with_their_status(client: TestClient, seeded: Seeded) -> None:
    job, run = seeded.dead, seeded.run_id
    for path in ("/", "/partials/overview", "/jobs", f"/jobs/{job}", f"/partials/jobs/{job}",
                 "/runs", f"/runs/{run}", f"/partials/runs/{run}", "/schedules"):  # fmt: skip
        r = client.get(path)
        assert r.status_code == 200, path
        assert "text/html" in r.headers["content-type"]
    r = client.get("/jobs/6b1f4ac2-58a1-4c8e-9a55-3d0f2a7c9e11")
    assert r.status_code == 404 and "job.not_found" in r.text
    r = client.get("/runs/6b1f4ac2-58a1-4c8e-9a55-3d0f2a7c9e11")
    assert r.status_code == 404 and "workflow.run_not_found" in r.text
    r = client.get("/jobs?status=finished")
    assert r.status_code == 400 and "job.invalid_status" in r.text
    assert client.get("/jobs/not-a-uuid").status_code == 400
    assert client.get("/jobs?since=yesterday").status_code == 400
    assert client.get("/static/htmx.min.js").status_code == 200


def test_the_overview_partial_is_the_live_part_only(client: TestClient) -> None:
    body = client.get("/partials/overview").text
    assert "<html" not in body and 'id="depth"' in body and 'id="total-ready"' in body


def test_the_overview_shows_a_capped_types_cap_beside_its_counts(client: TestClient, db: str) -> None:
    assert "cap 3" not in client.get("/partials/overview").text
    with Client.connect(db) as c:
        c.set_job_runtime_config("mail.send", max_concurrency=3)
    row = re.search(r'<tr data-queue="mail" data-type="mail.send">.*?</tr>', client.get("/").text, re.S)
    assert row and "cap 3" in row.group(0), "the badge sits in the type's row"


def test_a_post_needs_the_csrf_token_of_its_cookie(client: TestClient, seeded: Seeded, db: str) -> None:
    job = seeded.ready[0]
    token = csrf(client, f"/jobs/{job}")
    assert client.post(f"/jobs/{job}/cancel", data={}).status_code == 403
    altered = token[:-1] + ("1" if token.endswith("0") else "0")  # one hex digit changed
    assert client.post(f"/jobs/{job}/cancel", data={"csrf_token": altered}).status_code == 403
    # the token of another browser (another cookie) does not fit this one
    with TestClient(create_app(db), base_url="http://127.0.0.1") as other:
        assert other.post(f"/jobs/{job}/cancel", data={"csrf_token": token}).status_code == 403
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT status FROM pgrun.jobs WHERE id = %s", (job,)).fetchone() == ("queued",)
    r = client.post(
        f"/jobs/{job}/cancel",
        data={"csrf_token": token, "next": "https://evil.example/"},
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == f"/jobs/{job}"  # never an off-site redirect
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT status FROM pgrun.jobs WHERE id = %s", (job,)).fetchone() == (
            "cancelled",
        )


def test_an_action_the_sql_refuses_is_shown_with_its_code(client: TestClient, seeded: Seeded) -> None:
    token = csrf(client)
    # a queued job cannot be requeued: the function says so
    r = client.post(f"/jobs/{seeded.ready[1]}/requeue", data={"csrf_token": token})
    assert r.status_code == 409 and "job.not_requeueable" in r.text
    r = client.post("/types/explode", data={"csrf_token": token, "job_type": "mail.send"})
    assert r.status_code == 404
    r = client.post(
        f"/runs/{seeded.run_id}/steps/approve/complete", data={"csrf_token": token, "output": "{nope"}
    )
    assert r.status_code == 400 and "not JSON" in r.text


def test_the_token_gate(db: str, seeded: Seeded) -> None:
    with TestClient(create_app(db, token="s3cret-token"), base_url="http://127.0.0.1") as c:
        r = c.get("/", headers={"accept": "text/html"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"].startswith("/login")
        assert c.get("/jobs", headers={"accept": "application/json"}).status_code == 401
        assert c.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/", headers={"authorization": "Bearer s3cret-token"}).status_code == 200
        assert c.get("/static/dashboard.css").status_code == 200
        assert c.post("/login", data={"token": "wrong"}).status_code == 401
        r = c.post("/login", data={"token": "s3cret-token", "next": "/jobs"}, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/jobs"
        assert "s3cret-token" not in r.headers["set-cookie"]  # the cookie is an HMAC, not the token
        assert c.get("/jobs").status_code == 200  # the login cookie


def test_the_jobs_list_filters_by_creation_time_and_error_text(
    client: TestClient, db: str, seeded: Seeded
) -> None:
    with Client.connect(db) as c:
        newer = c.enqueue_job("mail.send", {"late": True}, queue="mail").job_id
    ids = set(re.findall(r'data-job="([0-9a-f-]+)"', client.get("/jobs?type=mail.send").text))
    assert str(newer) in ids and str(seeded.ready[0]) in ids
    # ids are UUIDv7: the first 48 bits are the creation time in ms
    first = datetime.fromtimestamp((UUID(str(seeded.ready[0])).int >> 80) / 1000, UTC)
    since = first.strftime("%Y-%m-%dT%H:%M:%S.%f")
    until = (first + timedelta(milliseconds=1)).strftime("%Y-%m-%dT%H:%M:%S.%f")
    ids = re.findall(
        r'data-job="([0-9a-f-]+)"', client.get(f"/jobs?type=mail.send&since={since}&until={until}").text
    )
    assert str(seeded.ready[0]) in ids and str(newer) not in ids
    text = client.get("/jobs?q=smtp").text
    assert sorted(re.findall(r'data-job="([0-9a-f-]+)"', text)) == sorted(
        [str(seeded.dead), str(seeded.retrying)]
    )
    assert "this page read 12 jobs" in text


def test_metrics_serves_the_queue_depth_gauges(client: TestClient) -> None:
    r = client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    # the seed: three mail.send jobs without an organization and one of another organization (admin: all)
    line = next(
        x for x in r.text.splitlines() if x.startswith("pgrun_queue_ready_jobs{") and "mail.send" in x
    )
    assert float(line.rsplit(" ", 1)[1]) == 4.0


def test_uuid7_floor_orders_like_creation_time() -> None:
    t = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert uuid7_floor(t) < uuid7_floor(t + timedelta(milliseconds=1))
    assert (uuid7_floor(t).int >> 80) == int(t.timestamp() * 1000)


def test_the_dag_layout_puts_each_step_after_its_prerequisites() -> None:
    steps = [{"key": k, "kind": "job", "status": "blocked"} for k in ("a", "b", "c", "d")]
    deps = [
        {"step": "b", "depends_on": "a", "release_mode": "on_success"},
        {"step": "c", "depends_on": "a", "release_mode": "on_terminal"},
        {"step": "d", "depends_on": "b", "release_mode": "on_success"},
        {"step": "d", "depends_on": "c", "release_mode": "on_success"},
    ]
    dag = layout_dag(steps, deps)
    x = {b.key: b.x for b in dag.boxes}
    assert x["a"] < x["b"] == x["c"] < x["d"]
    assert len(dag.edges) == 4 and {e.mode for e in dag.edges} == {"on_success", "on_terminal"}
    assert all(b.x + b.w <= dag.width and b.y + b.h <= dag.height for b in dag.boxes)
    ys = [(b.x, b.y) for b in dag.boxes]
    assert len(set(ys)) == 4  # no two boxes on one spot


def test_the_command_serves_the_dashboard_and_reads_its_token_from_the_environment(db: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DATABASE_URL": db, "PGRUN_DASHBOARD_TOKEN": "env-token"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrun", "dashboard", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(url, headers={"authorization": "Bearer env-token"})
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, "the dashboard did not answer within 30 s"
                time.sleep(0.2)
        assert r.status_code == 200 and 'id="depth"' in r.text
        assert httpx.get(url).status_code == 401
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert f"http://127.0.0.1:{port}/" in err


def test_a_database_migrated_by_other_code_gets_a_page_that_says_so(db: str) -> None:
    """A function the dashboard calls is missing (the database runs another pgrun version):
    the page says what to do instead of a bare 500."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("DROP FUNCTION pgrun.dashboard_overview(uuid)")
    with TestClient(create_app(db), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        r = c.get("/")
    assert r.status_code == 500
    assert "schema mismatch" in r.text and "pgrun migrate" in r.text
    assert "Traceback" not in r.text
