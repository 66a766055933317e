"""The workflow transitions keep their key lookups on big workflow tables, with fresh and with
stale statistics (docs/lease-machine.md, "Plan stability"; issue 15 item 6): the fan-in release
(complete_jobs through the workflow hook), enqueue_workflow, cancel_workflow_run,
complete_external_step and append_workflow_steps touch workflow_steps and
workflow_step_dependencies only through an index lookup on a key, never by reading every step or
edge of every run. Each of them plans its statements once per session (plan_cache_mode): the
plans read here, on a call's first run, are the ones every later call of the session runs. The
plans are read from the server with auto_explain (nested statements), as
tests_py/test_plan_stability.py does for the batch lease functions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from plans import plan_nodes, statement_plans

PARTS = 2_000  # prerequisites of the fan-in step
OTHER_RUNS = 100
OTHER_STEPS = 100  # dependents of each other run's root
LAST = 100  # the completion whose plans are read: it releases the fan-in step
TABLES = ("workflow_steps", "workflow_step_dependencies")

# The keys each table may be read through: the primary keys, and the edges by dependent (building a
# released job's payload); cancel_workflow_run may also read the open steps of its run.
# workflow_runs is not checked: here it holds a hundred rows (two pages), and a Seq Scan of it
# is the planner's right choice.
KEYS = {
    "workflow_steps": {"workflow_steps_pkey"},
    "workflow_step_dependencies": {"workflow_step_dependencies_pkey", "workflow_step_dependencies_step_idx"},
}
CANCEL_KEYS = {"workflow_steps": {"workflow_steps_pkey", "workflow_steps_open_idx"}}


def _scans(
    node: dict[str, Any], parent: dict[str, Any] | None = None
) -> Iterator[tuple[dict[str, Any], Any]]:
    """(scan node, its index node) of every scan of the three workflow tables in a plan."""
    if "Scan" in node.get("Node Type", "") and node.get("Relation Name") in TABLES:
        index = node
        if node["Node Type"] == "Bitmap Heap Scan":
            index = node["Plans"][0]
        yield node, index
    for child in node.get("Plans", []):
        yield from _scans(child, node)


def _plans_of(dsn: str, call: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
    """auto_explain's document of every statement the call runs, nested ones included; the
    call is rolled back."""
    return statement_plans(dsn, call, params)


def _bad_scans(plans: list[dict[str, Any]], keys: dict[str, set[str]]) -> tuple[list[str], set[str]]:
    """(every scan that is not a keyed lookup, with its statement; the tables scanned)."""
    bad, seen = [], set()
    for plan in plans:
        for scan, index in _scans(plan["Plan"]):
            seen.add(scan["Relation Name"])
            keyed = (
                index["Node Type"] in ("Index Scan", "Index Only Scan", "Bitmap Index Scan")
                and index.get("Index Name") in keys[scan["Relation Name"]]
                and "Index Cond" in index
            )
            if not keyed:
                bad.append(
                    f"{scan['Node Type']} on {scan['Relation Name']} ({index.get('Index Name')}, "
                    f"cond {index.get('Index Cond')}, filter {scan.get('Filter')}) in: "
                    f"{' '.join(plan['Query Text'].split())[:300]}"
                )
    return bad, seen


def _step(key: str, job_type: str, depends_on: list[str] | None = None) -> dict[str, Any]:
    step: dict[str, Any] = {"key": key, "job_type": job_type}
    if depends_on:
        step["depends_on"] = depends_on
    return step


def _enqueue(conn: psycopg.Connection[Any], name: str, steps: list[dict[str, Any]]) -> Any:
    row = conn.execute(
        "SELECT run_id FROM pgrun.enqueue_workflow(%s)", (Jsonb({"name": name, "steps": steps}),)
    ).fetchone()
    assert row is not None
    return row[0]


def _complete(conn: psycopg.Connection[Any], rows: list[Any]) -> None:
    done = conn.execute(
        "SELECT count(*) FROM pgrun.complete_jobs(%s::uuid[], %s::uuid[], %s::jsonb[])",
        ([r[0] for r in rows], [r[1] for r in rows], [json.dumps({"ok": True})] * len(rows)),
    ).fetchone()
    assert done == (len(rows),)


@pytest.fixture(params=["fresh statistics", "statistics of empty tables"])
def loaded(request: pytest.FixtureRequest, db: str) -> Iterator[dict[str, Any]]:
    """A fan-in run (PARTS prerequisites, one 'merge' step behind all of them) whose
    prerequisites' jobs are running, all but LAST of them completed; OTHER_RUNS runs of
    OTHER_STEPS blocked steps behind a queued root."""
    tables = ", ".join(f"pgrun.{t}" for t in (*TABLES, "workflow_runs", "jobs"))
    with psycopg.connect(db, autocommit=True) as conn:
        if request.param == "statistics of empty tables":
            conn.execute(f"ANALYZE {tables}")
            # keep them stale while the test runs (autovacuum would analyze the grown tables)
            for table in (*TABLES, "workflow_runs", "jobs"):
                conn.execute(f"ALTER TABLE pgrun.{table} SET (autovacuum_enabled = false)")
        others = [
            _enqueue(
                conn,
                f"other-{n}",
                [_step("root", "plan.root")]
                + [_step(f"s{i:04}", "plan.step", ["root"]) for i in range(OTHER_STEPS)],
            )
            for n in range(OTHER_RUNS)
        ]
        parts = [f"p{i:04}" for i in range(PARTS)]
        fan_in = _enqueue(
            conn,
            "fan-in",
            [_step(k, "plan.part") for k in parts]
            + [_step("merge", "plan.merge", parts)]
            + [{"key": "signal", "kind": "external"}, _step("after-signal", "plan.after", ["signal"])],
        )
        claimed: list[Any] = []
        while len(claimed) < PARTS:
            batch = conn.execute(
                "SELECT job_id, lease_token FROM pgrun.claim_jobs('me', 3600, 1000, NULL, ARRAY['plan.part'])"
            ).fetchall()
            assert batch
            claimed += batch
        if request.param == "fresh statistics":
            conn.execute(f"ANALYZE {tables}")
        for start in range(0, PARTS - LAST, 500):
            _complete(conn, claimed[start : min(start + 500, PARTS - LAST)])
        yield {
            "stats": request.param,
            "dsn": db,
            "fan_in": fan_in,
            "others": others,
            "last": claimed[PARTS - LAST :],
        }


def test_workflow_transitions_look_steps_and_edges_up_by_key(loaded: dict[str, Any]) -> None:
    stats, dsn, fan_in, last = loaded["stats"], loaded["dsn"], loaded["fan_in"], loaded["last"]
    calls = {
        # the last prerequisites finish: their edges resolve and 'merge' is released, its
        # payload built from its PARTS prerequisites
        "complete_jobs (fan-in release)": (
            "SELECT count(*) FROM pgrun.complete_jobs(%s::uuid[], %s::uuid[], %s::jsonb[])",
            ([r[0] for r in last], [r[1] for r in last], [json.dumps({"ok": True})] * len(last)),
        ),
        "cancel_workflow_run": (
            "SELECT * FROM pgrun.cancel_workflow_run(%s, 'plan stability')",
            (loaded["others"][3],),
        ),
        # a new keyed run: its steps inserted, its root released
        "enqueue_workflow": (
            "SELECT * FROM pgrun.enqueue_workflow(%s)",
            (
                Jsonb(
                    {
                        "idempotency_key": "plan-stability",
                        "steps": [_step("r", "plan.new"), _step("n", "plan.new", ["r"])],
                    }
                ),
            ),
        ),
        # an external step succeeds: its dependent is released, its payload built
        "complete_external_step": (
            "SELECT * FROM pgrun.complete_external_step(%s, 'signal', true, %s)",
            (fan_in, Jsonb({"ok": True})),
        ),
        # new steps behind a finished prerequisite (released at once), behind an open one
        # (blocked), and new roots
        "append_workflow_steps": (
            "SELECT * FROM pgrun.append_workflow_steps(%s, NULL, %s)",
            (
                fan_in,
                Jsonb(
                    [_step(f"a{i:03}", "plan.append", ["p0000"]) for i in range(50)]
                    + [_step(f"b{i:03}", "plan.append", ["merge", f"a{i:03}"]) for i in range(50)]
                    + [_step(f"c{i:03}", "plan.append") for i in range(10)]
                ),
            ),
        ),
    }
    failures = {}
    for name, (query, params) in calls.items():
        keys = {**KEYS, **CANCEL_KEYS} if name == "cancel_workflow_run" else KEYS
        bad, seen = _bad_scans(_plans_of(dsn, query, params), keys)
        failures[name] = bad
        assert seen, f"{name} made no scan of a workflow table that auto_explain saw"
        if name != "cancel_workflow_run":
            assert seen == set(TABLES), (name, seen)
    found = [f"{name}: {b}" for name, bad in failures.items() for b in bad]
    assert not found, f"with {stats}:\n" + "\n".join(found)


BATCH = 300  # chain steps of as many runs, completed in one call
RUNNING = 1_000  # other running runs: a walk of every running run reads them


@pytest.mark.parametrize("stats", ["fresh statistics", "statistics of empty tables"])
def test_a_batch_of_many_runs_steps_settles_each_run_step_and_edge_once(db: str, stats: str) -> None:
    """complete_jobs of BATCH first steps of as many chains (each completion resolves an edge,
    releases the next step with its payload, and settles its run), beside RUNNING other runs:
    the work grows with the batch, not with its square nor with the running runs. No join
    compares more pairs than the batch holds (a join of two CTEs, or of every running run with
    the batch's runs, compared them all: 39,800 and 139,900 pairs at 200 steps); no scan of a
    workflow table reads more than two rows a step; the edges are read twice a step (resolved,
    then read into the payload once, not once per use of it)."""
    tables = ", ".join(f"pgrun.{t}" for t in (*TABLES, "workflow_runs", "jobs"))
    with psycopg.connect(db, autocommit=True) as conn:
        if stats == "statistics of empty tables":
            conn.execute(f"ANALYZE {tables}")
            for table in (*TABLES, "workflow_runs", "jobs"):
                conn.execute(f"ALTER TABLE pgrun.{table} SET (autovacuum_enabled = false)")
        for n in range(RUNNING):
            _enqueue(conn, f"other-{n}", [_step("root", "plan.other")])
        chain = [
            _step("c0", "plan.chain"),
            _step("c1", "plan.chain", ["c0"]),
            _step("c2", "plan.chain", ["c1"]),
        ]
        for n in range(BATCH):
            _enqueue(conn, f"chain-{n}", chain)
        roots = conn.execute(
            "SELECT job_id, lease_token FROM pgrun.claim_jobs('me', 3600, %s, NULL, ARRAY['plan.chain'])",
            (BATCH,),
        ).fetchall()
        assert len(roots) == BATCH
        if stats == "fresh statistics":
            conn.execute(f"ANALYZE {tables}")
    plans = statement_plans(
        db,
        "SELECT count(*) FROM pgrun.complete_jobs(%s::uuid[], %s::uuid[])",
        ([r[0] for r in roots], [r[1] for r in roots]),
        analyze=True,
    )
    pairs, wide, edges = [], [], 0
    for plan in plans:
        text = " ".join(plan["Query Text"].split())[:160]
        for node in plan_nodes(plan["Plan"]):
            if node.get("Rows Removed by Join Filter", 0) > BATCH:
                pairs.append(f"{node['Rows Removed by Join Filter']} pairs in: {text}")
            if node.get("Relation Name") in (*TABLES, "workflow_runs") and "Scan" in node["Node Type"]:
                read = node["Actual Rows"] * node["Actual Loops"] + node.get("Rows Removed by Filter", 0)
                if read > 2 * BATCH:
                    wide.append(f"{node['Node Type']} on {node['Relation Name']} read {read} in: {text}")
                if node["Relation Name"] == "workflow_step_dependencies":
                    edges += node["Actual Rows"] * node["Actual Loops"]
    assert not pairs, f"with {stats}:\n" + "\n".join(pairs)
    assert not wide, f"with {stats}:\n" + "\n".join(wide)
    assert edges == 2 * BATCH, f"with {stats}: {edges} edge rows read for {BATCH} steps"
