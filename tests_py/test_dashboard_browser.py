"""`pgrun dashboard` in a real browser: Playwright driving Debian's chromium (headless) against
the app served by uvicorn on a fresh database (tests_py/dashboard_data.py makes its state
through the public functions). Every assertion about what the page shows is checked against
the database itself, and every action against what it changed there."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from dashboard_data import Seeded, seed, serve
from pgrun.client import Client
from pgrun.testing import LoginRole

CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"chromium is not installed at {CHROMIUM} (scripts/ensure-system-deps.sh installs it with apt)",
)

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context()
    context.set_default_timeout(15_000)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def seeded(db: str) -> Seeded:
    return seed(db)


@pytest.fixture
def admin_url(db: str, seeded: Seeded) -> Iterator[str]:
    with serve(db) as url:
        yield url


def scalar(dsn: str, query: str, *params: Any) -> Any:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(query, params).fetchone()
        assert row is not None
        return row[0]


def wait_for(fn: Any, expected: Any, timeout: float = 10.0) -> None:
    """Poll ``fn`` until it returns ``expected`` (actions redirect after the SQL committed, so
    this only absorbs the browser's navigation)."""
    import time

    deadline = time.monotonic() + timeout
    value = fn()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.1)
        value = fn()
    assert value == expected


COUNTS = """
SELECT queue, job_type,
    count(*) FILTER (WHERE status = 'queued' AND run_at <= now()) AS ready,
    count(*) FILTER (WHERE status = 'queued' AND run_at > now()) AS delayed,
    count(*) FILTER (WHERE status = 'running') AS running,
    count(*) FILTER (WHERE status = 'queued' AND attempt > 0) AS retrying,
    count(*) FILTER (WHERE status = 'dead') AS dead
FROM pgrun.jobs
GROUP BY queue, job_type
HAVING count(*) FILTER (WHERE status IN ('queued', 'running', 'dead')) > 0
ORDER BY queue, job_type
"""


def test_the_overview_shows_the_numbers_the_database_holds(page: Any, admin_url: str, db: str) -> None:
    page.goto(admin_url + "/")
    with psycopg.connect(db) as conn:
        expected = [tuple(str(v) for v in row) for row in conn.execute(COUNTS).fetchall()]
    shown = page.eval_on_selector_all(
        "#depth tbody tr[data-queue]",
        """rows => rows.map(r => [r.dataset.queue, r.dataset.type,
            ...['ready', 'delayed', 'running', 'retrying', 'dead'].map(
                c => r.querySelector(`[data-col=${c}]`).textContent.trim())])""",
    )
    assert [tuple(r) for r in shown] == expected
    # the cards are the sums
    for i, name in enumerate(("ready", "delayed", "running", "retrying", "dead")):
        assert page.text_content(f"#total-{name}") == str(sum(int(r[2 + i]) for r in expected))
    assert sum(int(r[2]) for r in expected) == 6  # the seed's ready jobs: not a vacuous comparison
    # the workers that ran jobs in the hour, and two SVG charts
    workers = page.eval_on_selector_all(
        "#workers tbody td:first-child", "cells => cells.map(c => c.textContent)"
    )
    assert sorted(workers) == ["dash-w1", "dash-w2"]
    assert page.locator("figure.chart svg").count() == 2
    assert page.locator("figure.chart rect.bar").count() >= 1  # the finished jobs of this minute
    # the live part polls its partial
    with page.expect_response(lambda r: "/partials/overview" in r.url, timeout=15_000) as resp:
        pass
    assert resp.value.status == 200


def test_filtering_jobs(page: Any, admin_url: str, seeded: Seeded, db: str) -> None:
    page.goto(admin_url + "/jobs")
    ids = page.eval_on_selector_all("#jobs tbody tr[data-job]", "rows => rows.map(r => r.dataset.job)")
    with psycopg.connect(db) as conn:
        every = [str(r[0]) for r in conn.execute("SELECT id FROM pgrun.jobs ORDER BY id").fetchall()]
    assert ids == every and len(every) == 11  # unfiltered: every job, oldest first (fewer than a page)
    page.select_option("select[name=status]", "dead")
    page.click("#job-filters button[type=submit]")
    page.wait_for_url("**/jobs?status=dead*")
    ids = page.eval_on_selector_all("#jobs tbody tr[data-job]", "rows => rows.map(r => r.dataset.job)")
    assert ids == [str(seeded.dead)]

    page.goto(admin_url + "/jobs")
    page.fill("input[name=type]", "mail.send")
    page.click("#job-filters button[type=submit]")
    page.wait_for_url("**type=mail.send*")
    ids = page.eval_on_selector_all("#jobs tbody tr[data-job]", "rows => rows.map(r => r.dataset.job)")
    assert set(map(str, seeded.ready)) <= set(ids) and len(ids) == 4  # and the other organization's

    page.goto(admin_url + "/jobs")
    page.fill("input[name=q]", "MAILBOX")
    page.click("#job-filters button[type=submit]")
    page.wait_for_url("**q=MAILBOX*")
    ids = page.eval_on_selector_all("#jobs tbody tr[data-job]", "rows => rows.map(r => r.dataset.job)")
    assert ids == [str(seeded.dead)]


def test_opening_a_job_and_a_workflow_run(page: Any, admin_url: str, seeded: Seeded, db: str) -> None:
    page.goto(admin_url + "/jobs?status=dead")
    page.click(f"#jobs tr[data-job='{seeded.dead}'] a")
    page.wait_for_url(f"**/jobs/{seeded.dead}")
    assert '"n": 2' in page.text_content("#payload")
    attempts = page.locator("#attempts li")
    assert attempts.count() == 1
    assert "smtp_550" in attempts.first.text_content() and "dash-w2" in attempts.first.text_content()
    events = page.eval_on_selector_all("#events tbody tr", "rows => rows.map(r => r.dataset.event)")
    with psycopg.connect(db) as conn:
        stored = [r[0] for r in conn.execute(
            "SELECT event FROM pgrun.job_events WHERE job_id = %s ORDER BY id", (seeded.dead,)
        ).fetchall()]  # fmt: skip
    # nothing stores the creation or the claim: the page shows the enqueued event the
    # history derives from the job row, marked so, then the stored dead event
    assert stored == ["dead"]
    assert events == ["enqueued", "dead"]
    derived = page.eval_on_selector_all("#events tbody tr", "rows => rows.map(r => r.dataset.derived || '')")
    assert derived == ["true", ""]
    assert "derived" in page.locator("#events tbody tr").first.text_content()
    assert "asking mx.example.com" in page.text_content("#logs")

    page.goto(admin_url + "/runs")
    page.click(f"#runs tr[data-run='{seeded.run_id}'] a")
    page.wait_for_url(f"**/runs/{seeded.run_id}")
    boxes = page.eval_on_selector_all(
        "svg.dag g.step",
        "gs => gs.map(g => [g.dataset.step, g.dataset.status, g.classList.contains('k-external')])",
    )
    with psycopg.connect(db) as conn:
        steps = conn.execute(
            "SELECT step_key, status, kind = 'external' FROM pgrun.workflow_steps"
            " WHERE run_id = %s ORDER BY step_key",
            (seeded.run_id,),
        ).fetchall()
    assert sorted(tuple(b) for b in boxes) == [tuple(s) for s in steps]
    assert len(steps) == 4
    edges = page.eval_on_selector_all(
        "svg.dag g.edge",
        "gs => gs.map(g => [g.dataset.from, g.dataset.to, g.querySelector('text').textContent])",
    )
    assert sorted(tuple(e) for e in edges) == [
        ("approve", "ship", "on_success"),
        ("charge", "approve", "on_success"),
        ("charge", "receipt", "on_terminal"),
        ("receipt", "ship", "on_success"),
    ]


def test_cancel_requeue_pause_and_an_external_step_from_the_ui(
    page: Any, admin_url: str, seeded: Seeded, db: str
) -> None:
    job = seeded.ready[0]
    status = lambda: scalar(db, "SELECT status FROM pgrun.jobs WHERE id = %s", job)  # noqa: E731
    page.on("dialog", lambda d: d.accept())
    page.goto(f"{admin_url}/jobs/{job}")
    page.click("button[data-action=cancel_job]")
    wait_for(status, "cancelled")
    page.wait_for_selector("button[data-action=requeue_job]")
    page.click("button[data-action=requeue_job]")
    wait_for(status, "queued")
    assert (
        scalar(db, "SELECT count(*) FROM pgrun.job_events WHERE job_id = %s AND event = 'requeued'", job) == 1
    )

    page.goto(admin_url + "/")
    page.click("#depth tr[data-type='report.build'] button[data-action=pause_type]")
    paused = lambda: scalar(  # noqa: E731
        db,
        "SELECT coalesce(bool_or(paused), false) FROM pgrun.job_runtime_configs"
        " WHERE job_type = 'report.build'",
    )
    wait_for(paused, True)
    page.wait_for_selector("#depth tr[data-type='report.build'] .badge.warn")

    page.goto(f"{admin_url}/runs/{seeded.run_id}")
    page.fill("tr[data-step=approve] input[name=output]", '{"by": "ana"}')
    page.click("tr[data-step=approve] button[data-action=complete_external_step]")
    step = lambda: scalar(  # noqa: E731
        db,
        "SELECT status || ' ' || output::text FROM pgrun.workflow_steps"
        " WHERE run_id = %s AND step_key = 'approve'",
        seeded.run_id,
    )
    wait_for(step, 'succeeded {"by": "ana"}')

    page.goto(admin_url + "/schedules")
    page.click("tr[data-schedule=nightly] button[data-action=pause_schedule]")
    schedule = lambda: scalar(  # noqa: E731
        db, "SELECT paused_at IS NOT NULL FROM pgrun.job_schedules WHERE name = 'nightly'"
    )
    wait_for(schedule, True)


def test_a_reader_sees_no_action_and_a_forged_post_is_refused(
    page: Any, db: str, seeded: Seeded, roles: dict[str, LoginRole]
) -> None:
    with serve(roles["reader"].dsn(db)) as url:
        for path in (
            "/",
            "/jobs",
            f"/jobs/{seeded.ready[0]}",
            f"/jobs/{seeded.dead}",
            f"/runs/{seeded.run_id}",
            "/schedules",
        ):
            page.goto(url + path)
            assert page.get_attribute("#identity", "data-read-only") == "true"
            assert page.locator("button.act, form[method=post]").count() == 0, path
        # the reader's tenancy: the other organization's job is not counted
        page.goto(url + "/")
        assert page.text_content("#total-ready") == "5"

        # a POST with a valid CSRF token (the page's own), as the browser would send it
        page.goto(f"{url}/jobs/{seeded.ready[0]}")
        token = page.get_attribute("meta[name=csrf-token]", "content")
        response = page.request.post(
            f"{url}/jobs/{seeded.ready[0]}/cancel", form={"csrf_token": token}, max_redirects=0
        )
        assert response.status == 403
        assert "access.denied" in response.text() and "cancel_job" in response.text()
        assert scalar(db, "SELECT status FROM pgrun.jobs WHERE id = %s", seeded.ready[0]) == "queued"
        response = page.request.post(
            f"{url}/types/pause", form={"csrf_token": token, "job_type": "mail.send"}, max_redirects=0
        )
        assert response.status == 403
        assert scalar(db, "SELECT count(*) FROM pgrun.job_runtime_configs") == 0


def test_a_post_without_the_csrf_token_is_refused(page: Any, admin_url: str, seeded: Seeded, db: str) -> None:
    job = seeded.ready[1]
    page.goto(f"{admin_url}/jobs/{job}")  # the browser now holds the CSRF cookie
    for form in ({}, {"csrf_token": "0" * 64}, {"csrf_token": ""}):
        response = page.request.post(f"{admin_url}/jobs/{job}/cancel", form=form, max_redirects=0)
        assert response.status == 403, form
        assert "CSRF" in response.text()
    # and from outside the browser, without its cookie, even with the page's token
    token = page.get_attribute("meta[name=csrf-token]", "content")
    r = httpx.post(f"{admin_url}/jobs/{job}/cancel", data={"csrf_token": token or ""})
    assert r.status_code == 403
    assert scalar(db, "SELECT status FROM pgrun.jobs WHERE id = %s", job) == "queued"
    # the same POST with the page's token is accepted
    response = page.request.post(
        f"{admin_url}/jobs/{job}/cancel", form={"csrf_token": token}, max_redirects=0
    )
    assert response.status == 303
    assert scalar(db, "SELECT status FROM pgrun.jobs WHERE id = %s", job) == "cancelled"


def test_a_job_page_follows_the_job_without_a_reload_and_stops_when_it_ends(
    page: Any, admin_url: str, seeded: Seeded, db: str
) -> None:
    page.goto(f"{admin_url}/jobs/{seeded.running}")
    assert page.get_attribute("#job", "hx-get") == f"/partials/jobs/{seeded.running}"
    assert "running" in page.text_content("#job h1")
    page.evaluate("window.loadedOnce = true")  # gone if the page were reloaded
    token = scalar(db, "SELECT lease_token FROM pgrun.jobs WHERE id = %s", seeded.running)
    with Client.connect(db) as c:
        c.complete_job(seeded.running, token, {"done": 4})
    page.wait_for_function("document.querySelector('#job h1 .status').textContent === 'succeeded'")
    assert page.evaluate("window.loadedOnce") is True
    assert '"done": 4' in page.text_content("#result")
    assert page.get_attribute("#job", "hx-get") is None  # a finished job is not polled any more
