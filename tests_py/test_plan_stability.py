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

from plans import statement_plans

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
