"""The scheduler's calls keep their index walks among many schedules, with fresh statistics and
with those of an empty table (docs/lease-machine.md, "Plan stability"; docs/schedules.md):
claim_due_schedules takes the earliest due schedules by one ordered walk of
job_schedules_due_idx that stops after the claim (with the statistics of an empty table it read
every due schedule and sorted them all), and fire_schedule reaches its schedule, its ticks and
its job by key. The plans are read from the server with auto_explain, as
tests_py/test_plan_stability.py does for the job functions."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import psycopg
import pytest

from plans import plan_nodes, statement_plans

SCHEDULES = 20_000  # all due at once, as every minutely schedule is at the top of a minute
TICKS = 10  # fired plan times each already has
CLAIM = 10


def _scans(document: dict[str, Any], table: str) -> list[dict[str, Any]]:
    return [
        n
        for n in plan_nodes(document["Plan"])
        if "Scan" in n["Node Type"] and n.get("Relation Name") == table
    ]


@pytest.mark.parametrize("stats", ["fresh statistics", "statistics of an empty table"])
def test_the_scheduler_reads_the_due_schedules_it_claims_and_fires_by_key(db: str, stats: str) -> None:
    tables = ("job_schedules", "schedule_ticks", "jobs")
    with psycopg.connect(db, autocommit=True) as conn:
        if stats == "statistics of an empty table":
            for table in tables:
                conn.execute(f"ANALYZE pgrun.{table}")
                conn.execute(f"ALTER TABLE pgrun.{table} SET (autovacuum_enabled = false)")
        conn.execute(
            """
            INSERT INTO pgrun.job_schedules (name, cron, job_type, planned_until, next_run_at)
            SELECT 's' || lpad(i::text, 5, '0'), '* * * * *', 'plan.cron',
                pgrun.now() - interval '10 seconds', pgrun.now() - interval '10 seconds'
            FROM generate_series(1, %s) AS g (i)
            """,
            (SCHEDULES,),
        )
        conn.execute(
            """
            INSERT INTO pgrun.schedule_ticks (schedule_id, scope, plan_time, job_id, status, fired_by,
                created_at, updated_at)
            SELECT s.id, '', pgrun.now() - make_interval(mins => g), pgrun.uuidv7(), 'fired', 'plan',
                pgrun.now(), pgrun.now()
            FROM pgrun.job_schedules AS s CROSS JOIN generate_series(1, %s) AS g
            """,
            (TICKS,),
        )
        if stats == "fresh statistics":
            for table in tables:
                conn.execute(f"ANALYZE pgrun.{table}")
        claimed = conn.execute(
            "SELECT schedule_id, claim_token, next_run_at, db_now"
            " FROM pgrun.claim_due_schedules('other', 1, 60)"
        ).fetchone()
        assert claimed is not None

    # the claim: one ordered walk of the due index, no more entries than it takes (and the one
    # schedule claimed above, which it steps over), each chosen row then by primary key
    documents = statement_plans(
        db, "SELECT count(*) FROM pgrun.claim_due_schedules('plan', %s, 60)", (CLAIM,), analyze=True
    )
    scans = [scan for document in documents for scan in _scans(document, "job_schedules")]
    walks = [scan for scan in scans if scan.get("Index Name") == "job_schedules_due_idx"]
    assert walks, f"with {stats}: no walk of job_schedules_due_idx in {[s['Node Type'] for s in scans]}"
    for walk in walks:
        assert walk["Node Type"] == "Index Scan", (stats, walk["Node Type"])
        assert (
            walk["Actual Rows"] * walk["Actual Loops"] + walk.get("Rows Removed by Filter", 0) <= CLAIM + 1
        ), (
            stats,
            walk["Actual Rows"],
            walk.get("Rows Removed by Filter"),
        )
    for scan in scans:
        if scan not in walks:
            keyed = scan.get("Index Name") == "job_schedules_pkey" and "Index Cond" in scan
            assert keyed, (stats, scan["Node Type"], scan.get("Index Name"), scan.get("Index Cond"))
    assert not [n for d in documents for n in plan_nodes(d["Plan"]) if n["Node Type"] == "Sort"], stats

    # the fire of the schedule claimed above: its row, its ticks and its job by key
    schedule_id, token, due, now = claimed
    documents = statement_plans(
        db,
        "SELECT count(*) FROM pgrun.fire_schedule(%s, ARRAY[%s]::timestamptz[], %s, %s, %s, 'other', false)",
        (schedule_id, due, now + timedelta(minutes=1), token, due),
    )
    keys = {
        "job_schedules": "job_schedules_pkey",
        "schedule_ticks": "schedule_ticks_pkey",
        "jobs": "jobs_pkey",
    }
    seen = set()
    for document in documents:
        for table, key in keys.items():
            for scan in _scans(document, table):
                seen.add(table)
                assert scan["Node Type"] in ("Index Scan", "Index Only Scan"), (
                    stats,
                    table,
                    scan["Node Type"],
                )
                assert scan.get("Index Name") == key and "Index Cond" in scan, (
                    stats,
                    table,
                    scan.get("Index Name"),
                )
    assert {"job_schedules", "schedule_ticks"} <= seen, (stats, seen)
