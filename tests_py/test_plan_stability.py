"""The batch lease functions keep their primary-key plans on a big table, with fresh and with
stale statistics (docs/lease-machine.md, "Plan stability"): every scan of pgrun.jobs they make
is a lookup of jobs_pkey by id, never a scan of all running jobs. A second condition in
complete_jobs' UPDATE once made the planner drive its join from a scan of every job (6-12 ms
instead of 2 ms for 100 jobs); these plans are read from the server with auto_explain, so
such a change fails here, not in a benchmark."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from plans import plan_nodes, statement_plans

RUNNING = 20_000
BATCH = 100


def _scans_of_jobs(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    scan = "Scan" in node.get("Node Type", "")
    if scan and node.get("Relation Name") == "jobs" and node.get("Schema", "pgrun") == "pgrun":
        yield node
    for child in node.get("Plans", []):
        yield from _scans_of_jobs(child)


def _plans_of(dsn: str, call: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The plan of every statement the call runs, nested ones included (auto_explain, JSON)."""
    return [document["Plan"] for document in statement_plans(dsn, call, params)]


@pytest.fixture(params=["fresh statistics", "statistics of an empty table"])
def loaded(request: pytest.FixtureRequest, db: str) -> Iterator[tuple[str, list[Any], list[Any]]]:
    """RUNNING running jobs of other workers, and BATCH of ours: (dsn, ids, tokens)."""
    enqueue = (
        "SELECT count(*) FROM pgrun.enqueue_jobs((SELECT jsonb_agg(jsonb_build_object('job_type', %s::text,"
        " 'payload', jsonb_build_object('n', g))) FROM generate_series(1, %s) AS g))"
    )
    claim = "SELECT job_id, lease_token FROM pgrun.claim_jobs(%s, 3600, 1000, NULL, ARRAY[%s])"
    with psycopg.connect(db, autocommit=True) as conn:
        if request.param == "statistics of an empty table":
            conn.execute("ANALYZE pgrun.jobs")
        conn.execute(enqueue, ("plan.other", RUNNING))
        for _ in range(RUNNING // 1000):
            conn.execute(claim, ("others", "plan.other"))
        if request.param == "fresh statistics":
            conn.execute("ANALYZE pgrun.jobs")
        conn.execute(enqueue, ("plan.mine", BATCH))
        rows = conn.execute(claim, ("me", "plan.mine")).fetchall()
    assert len(rows) == BATCH
    yield db, [r[0] for r in rows], [r[1] for r in rows]


CALLS = {
    "complete_jobs": (
        "SELECT count(*) FROM pgrun.complete_jobs(%s::uuid[], %s::uuid[], %s::jsonb[])",
        lambda ids, tokens: (ids, tokens, [json.dumps({"ok": True})] * len(ids)),
    ),
    "fail_jobs": (
        "SELECT count(*) FROM pgrun.fail_jobs(%s::uuid[], %s::uuid[])",
        lambda ids, tokens: (ids, tokens),
    ),
    "continue_jobs": (
        "SELECT count(*) FROM pgrun.continue_jobs(%s::uuid[], %s::uuid[], %s::text[], %s::jsonb[])",
        lambda ids, tokens: (ids, tokens, ["next"] * len(ids), [json.dumps({"n": 1})] * len(ids)),
    ),
    "heartbeat_jobs": (
        "SELECT count(*) FROM pgrun.heartbeat_jobs('me', 600, %s::uuid[], %s::uuid[])",
        lambda ids, tokens: (ids, tokens),
    ),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_batch_call_looks_its_jobs_up_by_primary_key(
    name: str, loaded: tuple[str, list[Any], list[Any]]
) -> None:
    dsn, ids, tokens = loaded
    query, args = CALLS[name]
    scans = [scan for plan in _plans_of(dsn, query, args(ids, tokens)) for scan in _scans_of_jobs(plan)]
    assert scans, f"{name} made no scan of pgrun.jobs that auto_explain saw"
    for scan in scans:
        assert scan["Node Type"] in ("Index Scan", "Index Only Scan"), (name, scan["Node Type"])
        assert scan.get("Index Name") == "jobs_pkey", (name, scan.get("Index Name"))
        assert "Index Cond" in scan, (name, "a full scan of jobs_pkey")


EXPIRED = 300


@pytest.mark.parametrize(
    "stats", ["fresh statistics", "statistics of an empty table", "statistics of no running job"]
)
def test_the_reaper_takes_its_candidates_from_the_lease_index_and_each_by_primary_key(
    db: str, stats: str
) -> None:
    """reap_expired_leases beside RUNNING live leases, EXPIRED expired ones: the candidates are
    one walk of jobs_lease_idx in expiry order (no more entries than it takes), every other
    read of jobs a jobs_pkey lookup by id (the stale re-entry hook's too: joined with the
    schedules it read every scheduled job), and no join compares more pairs than the batch
    holds: with statistics taken before the leases, the reaper matched each expired lease
    against the candidate list (44,850 pairs here)."""
    enqueue = (
        "SELECT count(*) FROM pgrun.enqueue_jobs((SELECT jsonb_agg(jsonb_build_object('job_type', %s::text))"
        " FROM generate_series(1, %s)))"
    )
    claim = "SELECT count(*) FROM pgrun.claim_jobs(%s, %s, 1000, NULL, ARRAY[%s])"
    with psycopg.connect(db, autocommit=True) as conn:
        if stats == "statistics of an empty table":
            conn.execute("ANALYZE pgrun.jobs")
            conn.execute("ALTER TABLE pgrun.jobs SET (autovacuum_enabled = false)")
        conn.execute(enqueue, ("plan.other", RUNNING))
        conn.execute(enqueue, ("plan.lost", EXPIRED))
        if stats == "statistics of no running job":
            conn.execute("ANALYZE pgrun.jobs")
            conn.execute("ALTER TABLE pgrun.jobs SET (autovacuum_enabled = false)")
        for _ in range(RUNNING // 1000):
            conn.execute(claim, ("others", 3600, "plan.other"))
        assert conn.execute(claim, ("gone", 1, "plan.lost")).fetchone() == (EXPIRED,)
        if stats == "fresh statistics":
            conn.execute("ANALYZE pgrun.jobs")
        conn.execute("SELECT pg_sleep(1.1)")
    documents = statement_plans(db, "SELECT count(*) FROM pgrun.reap_expired_leases(1000)", (), analyze=True)
    walks, other, pairs = [], [], []
    for document in documents:
        for node in plan_nodes(document["Plan"]):
            if node.get("Rows Removed by Join Filter", 0) > EXPIRED:
                pairs.append(node["Rows Removed by Join Filter"])
        for scan in _scans_of_jobs(document["Plan"]):
            (walks if scan.get("Index Name") == "jobs_lease_idx" else other).append(scan)
    assert not pairs, f"with {stats}: joins compared {pairs} pairs"
    assert walks and all(w["Actual Rows"] * w["Actual Loops"] <= EXPIRED for w in walks), (stats, walks)
    for scan in other:
        assert scan["Node Type"] in ("Index Scan", "Index Only Scan"), (stats, scan["Node Type"])
        assert scan.get("Index Name") == "jobs_pkey" and "Index Cond" in scan, (stats, scan.get("Index Name"))


@pytest.mark.parametrize("stats", ["fresh statistics", "statistics of an empty table"])
def test_a_workflow_cancel_reaches_its_jobs_by_key_among_many_queued_and_running(db: str, stats: str) -> None:
    """cancel_workflow_run of a run with 100 queued and 100 running jobs, beside RUNNING
    running and RUNNING queued jobs of others: the run's jobs are found through its
    workflow_run_id and then cancelled or asked to stop each by primary key. A status test
    in the cancel let the planner, with statistics taken while the table was empty, read
    every queued and every running job to find the run's."""
    enqueue = (
        "SELECT count(*) FROM pgrun.enqueue_jobs((SELECT jsonb_agg(jsonb_build_object('job_type', %s::text))"
        " FROM generate_series(1, %s)))"
    )
    with psycopg.connect(db, autocommit=True) as conn:
        if stats == "statistics of an empty table":
            conn.execute("ANALYZE pgrun.jobs")
            conn.execute("ALTER TABLE pgrun.jobs SET (autovacuum_enabled = false)")
        conn.execute(enqueue, ("plan.other", 2 * RUNNING))
        for _ in range(RUNNING // 1000):
            conn.execute(
                "SELECT count(*) FROM pgrun.claim_jobs('others', 3600, 1000, NULL, ARRAY['plan.other'])"
            )
        steps = [{"key": f"s{i}", "job_type": "plan.run" if i < 100 else "plan.wait"} for i in range(200)]
        row = conn.execute(
            "SELECT run_id FROM pgrun.enqueue_workflow(%s)", (json.dumps({"steps": steps}),)
        ).fetchone()
        assert row is not None
        assert conn.execute(
            "SELECT count(*) FROM pgrun.claim_jobs('me', 3600, 1000, NULL, ARRAY['plan.run'])"
        ).fetchone() == (100,)
        if stats == "fresh statistics":
            conn.execute("ANALYZE pgrun.jobs")
    documents = statement_plans(db, "SELECT * FROM pgrun.cancel_workflow_run(%s, 'plan')", (row[0],))
    scans = [scan for document in documents for scan in _scans_of_jobs(document["Plan"])]
    assert scans, "cancel_workflow_run read no job"
    wide = [
        (scan["Node Type"], index.get("Index Name"), index.get("Index Cond"))
        for scan in scans
        for index in [scan["Plans"][0] if scan["Node Type"] == "Bitmap Heap Scan" else scan]
        if index.get("Index Name") not in ("jobs_pkey", "jobs_workflow_idx") or "Index Cond" not in index
    ]
    assert not wide, f"with {stats}: {wide}"
