"""The calls a web application or an operator makes, of this checkout against an older commit.

bench/call_ab.py times the worker's hot path (enqueue_job, claim_jobs, complete_jobs); this
script times the calls around it, one at a time: enqueue_workflow of small runs (a keyed retry
of one, and a 2,000-wide fan-in: use few --calls for it), append_workflow_steps,
complete_external_step, cancel_workflow_run, cancel_job, a completion of a workflow step's job
and of 200 runs' steps in one call (complete_jobs through the workflow hook; few --calls),
upsert_schedule (a new schedule, and one declared again unchanged) and run_schedule_now, with
enqueue_job as the control. Both schemas live in one server, each in its own database, called
by a login role of its pgrun_admin: one connection per schema, each call its own transaction,
made on one side and then on the other, in turns, so drift falls on both alike.

Each call is timed on the server (``clock_timestamp()`` around an ``EXECUTE`` of the call in a
helper made in each scratch database): the round trip and the client, which a change to the SQL
does not move, stay out of the figure. What a call needs first (a run to append to, a job to
cancel) is made before it, untimed. A round's ratio is head / base of the two sides' medians,
and the result is the median over rounds.

Usage: python bench/api_calls_ab.py --base REF [--rounds 3] [--calls 300] [--only NAME ...]
Without DATABASE_URL it starts an embedded server (durable settings; the calls run with
synchronous_commit off, as their time is the server's work).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ab_bench import admin_sides

WARMUP = 20
TIMER = """
CREATE FUNCTION public.bench_call_us(call text) RETURNS double precision
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    EXECUTE call;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6;
END;
$$
"""

# A call: (set-up on the connection, returning the timed statement and its parameters).
Call = Callable[[psycopg.Connection[Any]], tuple[str, tuple[Any, ...]]]


def chain(steps: int, external_root: bool = False, key: str | None = None) -> str:
    """A spec of ``steps`` steps in a chain (s0 <- s1 <- ...)."""
    spec: list[dict[str, Any]] = []
    for i in range(steps):
        step: dict[str, Any] = {"key": f"s{i}", "job_type": "bench.step", "payload": {"i": i}}
        if i == 0 and external_root:
            step = {"key": "s0", "kind": "external"}
        if i:
            step["depends_on"] = [f"s{i - 1}"]
        spec.append(step)
    body: dict[str, Any] = {"steps": spec}
    if key is not None:
        body["idempotency_key"] = key
    return json.dumps(body)


def run_of(conn: psycopg.Connection[Any], spec: str) -> Any:
    row = conn.execute("SELECT run_id FROM pgrun.enqueue_workflow(%s::jsonb)", (spec,)).fetchone()
    assert row is not None
    return row[0]


def enqueue_chain(steps: int) -> Call:
    spec = chain(steps)
    return lambda conn: ("SELECT pgrun.enqueue_workflow(%s::jsonb)", (spec,))


def fan_in(parts: int) -> Call:
    """``parts`` roots and one step behind all of them."""
    steps: list[dict[str, Any]] = [{"key": f"p{i:05}", "job_type": "bench.part"} for i in range(parts)]
    steps.append({"key": "merge", "job_type": "bench.merge", "depends_on": [s["key"] for s in steps]})
    spec = json.dumps({"steps": steps})
    return lambda conn: ("SELECT pgrun.enqueue_workflow(%s::jsonb)", (spec,))


def keyed_retry(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    spec = chain(5, key=str(uuid.uuid4()))
    run_of(conn, spec)
    return "SELECT pgrun.enqueue_workflow(%s::jsonb)", (spec,)


def append_step(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    run = run_of(conn, chain(2))
    steps = json.dumps([{"key": "x", "job_type": "bench.step", "depends_on": ["s1"]}])
    return "SELECT pgrun.append_workflow_steps(%s, %s, %s::jsonb)", (run, str(uuid.uuid4()), steps)


def complete_external(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    run = run_of(conn, chain(3, external_root=True))
    return "SELECT pgrun.complete_external_step(%s, 's0', true, '{\"a\": 1}')", (run,)


def cancel_run(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    return "SELECT pgrun.cancel_workflow_run(%s, 'bench')", (run_of(conn, chain(5)),)


def cancel_job(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    row = conn.execute("SELECT job_id FROM pgrun.enqueue_job('bench.cancel', '{}')").fetchone()
    assert row is not None
    return "SELECT pgrun.cancel_job(%s, 'bench')", (row[0],)


def complete_step(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    """The root of a 3-step chain, claimed: its completion releases the next step."""
    run_of(conn, chain(3))
    row = conn.execute(
        "SELECT job_id, lease_token FROM pgrun.claim_jobs('bench', 60, 1, NULL, ARRAY['bench.step'])"
    ).fetchone()
    assert row is not None
    return "SELECT count(*) FROM pgrun.complete_jobs(ARRAY[%s]::uuid[], ARRAY[%s]::uuid[], NULL)", row


def complete_steps(runs: int) -> Call:
    """The roots of ``runs`` 3-step chains, claimed: one completion of them all releases each
    run's next step (what a worker's flush does when it runs many workflows side by side)."""
    spec = chain(3)

    def call(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
        conn.execute(
            "SELECT count(*) FROM (SELECT pgrun.enqueue_workflow(%s::jsonb)"
            " FROM generate_series(1, %s)) AS e",
            (spec, runs),
        )
        rows = conn.execute(
            "SELECT job_id, lease_token FROM pgrun.claim_jobs('bench', 60, %s, NULL, ARRAY['bench.step'])",
            (runs,),
        ).fetchall()
        assert len(rows) == runs, (len(rows), runs)
        return (
            "SELECT count(*) FROM pgrun.complete_jobs(%s::uuid[], %s::uuid[], NULL)",
            ([r[0] for r in rows], [r[1] for r in rows]),
        )

    return call


def upsert_schedule(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    """A new schedule, in a zone other than UTC."""
    return (
        "SELECT pgrun.upsert_schedule(%s, '0 9 * * MON-FRI', 'bench.cron', timezone => 'Europe/Berlin')",
        (f"bench-{uuid.uuid4()}",),
    )


def restate_schedule(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    """The same schedule declared again, unchanged (what a deploy that syncs its schedules does)."""
    return (
        "SELECT pgrun.upsert_schedule('bench-restated', '0 9 * * MON-FRI', 'bench.cron', "
        "timezone => 'Europe/Berlin')",
        (),
    )


def run_schedule_now(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    """A schedule fired by hand: its tick and its job (the fire every scheduler tick makes)."""
    conn.execute("SELECT pgrun.upsert_schedule('bench-now', '0 9 * * MON-FRI', 'bench.cron')")
    return "SELECT count(*) FROM pgrun.run_schedule_now('bench-now')", ()


def enqueue_job(conn: psycopg.Connection[Any]) -> tuple[str, tuple[Any, ...]]:
    return "SELECT pgrun.enqueue_job('bench.one', '{\"n\": 1}')", ()


CALLS: dict[str, Call] = {
    "enqueue_workflow (1 step)": enqueue_chain(1),
    "enqueue_workflow (5-step chain)": enqueue_chain(5),
    "enqueue_workflow (20-step chain)": enqueue_chain(20),
    "enqueue_workflow (keyed retry, 5 steps)": keyed_retry,
    "enqueue_workflow (2,000-wide fan-in)": fan_in(2000),
    "append_workflow_steps (1 step)": append_step,
    "complete_external_step": complete_external,
    "cancel_workflow_run (5 steps)": cancel_run,
    "cancel_job": cancel_job,
    "complete_jobs (a chain's step)": complete_step,
    "complete_jobs (200 chains' steps)": complete_steps(200),
    "upsert_schedule (new)": upsert_schedule,
    "upsert_schedule (restated)": restate_schedule,
    "run_schedule_now": run_schedule_now,
    "enqueue_job (control)": enqueue_job,
}


def timed(conn: psycopg.Connection[Any], call: Call) -> float:
    """The call's server time in µs, after its set-up."""
    query, params = call(conn)
    text = psycopg.ClientCursor(conn).mogrify(query, params)
    row = conn.execute("SELECT public.bench_call_us(%s)", (text,)).fetchone()
    assert row is not None
    return float(row[0])


def run_round(dsns: dict[str, str], names: list[str], calls: int) -> dict[str, dict[str, float]]:
    """Per-call medians (µs) on each side, the calls interleaved one by one."""
    conns = {
        side: psycopg.connect(dsn, autocommit=True, options="-c synchronous_commit=off")
        for side, dsn in dsns.items()
    }
    try:
        sides = list(conns)
        got: dict[str, dict[str, list[float]]] = {side: {name: [] for name in names} for side in sides}
        for name in names:
            for n in range(WARMUP + calls):
                for side in sides if n % 2 == 0 else sides[::-1]:
                    us = timed(conns[side], CALLS[name])
                    if n >= WARMUP:
                        got[side][name].append(us)
    finally:
        for conn in conns.values():
            conn.close()
    return {side: {name: statistics.median(v) for name, v in per.items()} for side, per in got.items()}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=300, help="calls of each kind per side and round")
    parser.add_argument("--only", nargs="+", choices=sorted(CALLS), help="these calls only")
    parser.add_argument("--json", default="bench/results/api_calls_ab.json")
    args = parser.parse_args()

    names = args.only or list(CALLS)
    rounds: list[dict[str, dict[str, float]]] = []
    with admin_sides(args.base, "pgrun_api", parser.error) as sides:
        for db in sides.databases.values():
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute(TIMER)
        for n in range(args.rounds):
            got = run_round(sides.dsns, names, args.calls)
            rounds.append(got)
            print(
                f"round {n + 1}: "
                + ", ".join(
                    f"{name} {got['base'][name]:.0f} -> {got['head'][name]:.0f} us" for name in names
                ),
                flush=True,
            )

    ratios = {name: statistics.median(r["head"][name] / r["base"][name] for r in rounds) for name in names}
    medians = {
        side: {name: statistics.median(r[side][name] for r in rounds) for name in names}
        for side in ("base", "head")
    }
    print()
    print(f"| call (server time, synchronous_commit off) | base {args.base}, µs | head, µs | head / base |")
    print("|---|---:|---:|---:|")
    for name in names:
        print(f"| {name} | {medians['base'][name]:.0f} | {medians['head'][name]:.0f} | {ratios[name]:.3f} |")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps({"base": args.base, "rounds": rounds, "medians": medians, "ratios": ratios}, indent=2)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
