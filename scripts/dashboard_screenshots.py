"""Regenerate the screenshots of docs/dashboard.md from a demo database.

    .venv/bin/python scripts/dashboard_screenshots.py [--out docs/img]

Uses DATABASE_URL's server (or an embedded one, as the tests do) to make a scratch database:
migrates it, seeds it through the public functions (tests_py/dashboard_data.py, plus the demo's
order workflow taken to its approval gate), adds an hour of finished-job history by direct
inserts as the superuser (the functions stamp the real clock, and a chart of one minute says
little), serves the dashboard and photographs the overview and the run page with Playwright
and chromium. The scratch database is dropped at the end.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests_py"))

from dashboard_data import seed, serve  # noqa: E402
from pgrun import migrate  # noqa: E402
from pgrun.client import Client  # noqa: E402
from pgrun.demo import order_workflow  # noqa: E402
from pgrun.server import server_from_environment  # noqa: E402
from pgrun.testing import scratch_database  # noqa: E402

HISTORY = """
INSERT INTO pgrun.jobs (job_type, queue, priority, status, run_at, max_attempts, backoff_base_seconds,
    backoff_max_seconds, backoff_jitter, worker_id, started_at, finished_at, attempt, total_attempts,
    created_at, updated_at)
SELECT t.job_type, t.queue, 100,
    CASE WHEN g % 41 = 0 THEN 'dead' WHEN g % 67 = 0 THEN 'cancelled' ELSE 'succeeded' END,
    x.at - make_interval(secs => 0.2 + 3 * (1 + sin(g / 150.0))), 3, 2, 3600, 0.2,
    'host-' || (g % 3) || ':' || (1000 + g % 4), x.at, x.at + interval '0.4 seconds', 1, 1, x.at, x.at
FROM generate_series(1, 4000) AS g
CROSS JOIN LATERAL (SELECT now() - (g * interval '0.9 seconds') AS at) AS x
CROSS JOIN LATERAL (
    SELECT (ARRAY['mail.send', 'mail.send', 'report.build', 'order.charge'])[1 + g % 4] AS job_type,
           (ARRAY['mail', 'mail', 'reports', 'default'])[1 + g % 4] AS queue
) AS t
"""


def progress_order(client: Client) -> None:
    """The demo's order workflow, run by hand up to its approval gate."""
    client.enqueue_workflow(order_workflow("A-1001"))
    for job_type in ("order.validate", "order.reserve", "order.charge"):
        for claimed in client.claim_jobs("demo-worker", job_types=[job_type], max_jobs=10):
            client.complete_job(claimed.job_id, claimed.lease_token, {"ok": True})


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with server_from_environment() as admin_dsn, scratch_database(admin_dsn, prefix="pgrun_shots") as dsn:
        migrate.migrate(dsn)
        seed(dsn)
        with Client.connect(dsn) as client:
            progress_order(client)
            run_id = next(r.id for r in client.list_workflow_runs() if (r.name or "").startswith("order A-"))
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(HISTORY)
            conn.execute(
                "INSERT INTO pgrun.job_dead_letters (job_id, job_type, queue, attempt, reason, died_at)"
                " SELECT id, job_type, queue, 1, 'attempts_exhausted', finished_at FROM pgrun.jobs"
                " WHERE status = 'dead' AND id NOT IN (SELECT job_id FROM pgrun.job_dead_letters)"
            )
        with serve(dsn) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for path, name in (("/", "dashboard-overview.png"), (f"/runs/{run_id}", "dashboard-run.png")):
                page.goto(url + path)
                page.screenshot(path=str(args.out / name), full_page=True)
                print(args.out / name)
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
