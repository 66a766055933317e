"""The workflow lock protocol with real sessions: cancel vs completion, append vs cancel,
simultaneous prerequisites, waits seen in pg_stat_activity, the 5 s lock_timeout cap, and
no client (not even one that may only connect) able to take the lock.

No test here may deadlock (PostgreSQL would raise 40P01), lose a release or release twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from sessions import Conn, blocked_call

TERMINAL_STEPS = {"succeeded", "failed", "skipped", "cancelled"}


def connect(dsn: str) -> Conn:
    return psycopg.connect(dsn, autocommit=True)


def enqueue(conn: Conn, steps: list[dict[str, Any]]) -> str:
    row = conn.execute("SELECT run_id FROM pgrun.enqueue_workflow(%s)", (Jsonb({"steps": steps}),)).fetchone()
    assert row is not None
    return str(row[0])


def claim(conn: Conn, job_type: str) -> tuple[Any, Any]:
    row = conn.execute(
        "SELECT job_id, lease_token FROM pgrun.claim_jobs(worker_id => 'w', lease_seconds => 300, "
        "job_types => ARRAY[%s])",
        (job_type,),
    ).fetchone()
    assert row is not None, f"no {job_type} job to claim"
    return row[0], row[1]


def steps_of(conn: Conn, run_id: str) -> dict[str, tuple[str, Any]]:
    rows = conn.execute(
        "SELECT step_key, status, job_id FROM pgrun.workflow_steps WHERE run_id = %s", (run_id,)
    ).fetchall()
    return {str(k): (str(s), j) for k, s, j in rows}


def run_status(conn: Conn, run_id: str) -> str:
    row = conn.execute("SELECT status FROM pgrun.workflow_runs WHERE id = %s", (run_id,)).fetchone()
    assert row is not None
    return str(row[0])


def together(*calls: Callable[[], None]) -> list[BaseException]:
    """Run the calls on threads released by one barrier; return what they raised."""
    barrier = threading.Barrier(len(calls))
    errors: list[BaseException] = []

    def go(call: Callable[[], None]) -> None:
        try:
            barrier.wait(10)
            call()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a session hung: deadlock or lost wake-up"
    return errors


def hold_exclusive(conn: Conn, run_id: str) -> None:
    """Take the run's exclusive lock, as a cancel does, in conn's open transaction."""
    conn.execute("SELECT pgrun._workflow_lock_runs(ARRAY[%s]::uuid[], 'exclusive')", (run_id,))


def sqlstate_and_code(exc: BaseException) -> tuple[str | None, str | None]:
    assert isinstance(exc, psycopg.Error), repr(exc)
    return exc.sqlstate, exc.diag.message_primary


WIDTH = 8
COMPLETE = "SELECT pgrun.complete_job(job_id => %s, lease_token => %s)"


def test_cancel_racing_the_completion_of_every_step_of_a_wide_run_100_times(db: str) -> None:
    steps: list[dict[str, Any]] = [{"key": f"s{i}", "job_type": f"wide.s{i}"} for i in range(WIDTH)]
    steps.append({"key": "join", "job_type": "wide.join", "depends_on": [f"s{i}" for i in range(WIDTH)]})
    completers = [connect(db) for _ in range(WIDTH)]
    with connect(db) as setup, connect(db) as canceller:
        try:
            for round_no in range(100):
                run_id = enqueue(setup, steps)
                leases = [claim(setup, f"wide.s{i}") for i in range(WIDTH)]
                results: dict[int, str] = {}

                def complete(
                    i: int, leases: list[tuple[Any, Any]] = leases, results: dict[int, str] = results
                ) -> Callable[[], None]:
                    def call() -> None:
                        row = (
                            completers[i]
                            .execute(
                                "SELECT pgrun.complete_job(job_id => %s, lease_token => %s, result => %s)",
                                (*leases[i], Jsonb({"i": i})),
                            )
                            .fetchone()
                        )
                        assert row is not None
                        results[i] = str(row[0])

                    return call

                def cancel(run_id: str = run_id) -> None:
                    canceller.execute("SELECT * FROM pgrun.cancel_workflow_run(run_id => %s)", (run_id,))

                errors = together(cancel, *[complete(i) for i in range(WIDTH)])
                assert errors == [], f"round {round_no}: {[sqlstate_and_code(e) for e in errors]}"

                assert run_status(setup, run_id) == "cancelled"
                state = steps_of(setup, run_id)
                assert all(status in TERMINAL_STEPS for status, _ in state.values()), state
                for i in range(WIDTH):
                    step_status, job_id = state[f"s{i}"]
                    job_row = setup.execute(
                        "SELECT status FROM pgrun.jobs WHERE id = %s", (job_id,)
                    ).fetchone()
                    assert job_row is not None
                    # The job records its own outcome; the step follows it only if the
                    # completion committed before the cancel.
                    assert results[i] in {"succeeded", "cancelled"}
                    assert job_row[0] == results[i]
                    assert step_status in {"succeeded", "cancelled"}
                    if step_status == "succeeded":
                        assert results[i] == "succeeded"
                join_jobs = setup.execute(
                    "SELECT status FROM pgrun.jobs WHERE workflow_run_id = %s AND workflow_step_key = 'join'",
                    (run_id,),
                ).fetchall()
                assert len(join_jobs) <= 1, "the join was released twice"
                succeeded = sum(1 for i in range(WIDTH) if state[f"s{i}"][0] == "succeeded")
                if join_jobs:
                    assert succeeded == WIDTH, "the join was released before all its prerequisites"
                    assert join_jobs[0][0] == "cancelled"
                assert state["join"][0] == "cancelled"
        finally:
            for conn in completers:
                conn.close()


def test_append_racing_cancel_leaves_nothing_runnable(db: str) -> None:
    outcomes: dict[str, int] = {"appended": 0, "refused": 0}
    with connect(db) as setup, connect(db) as appender, connect(db) as canceller:
        for round_no in range(50):
            run_id = enqueue(setup, [{"key": "root", "job_type": "race.root"}])
            claim(setup, "race.root")
            new_steps = [
                {"key": "after_root", "job_type": "race.after", "depends_on": ["root"]},
                {"key": "free", "job_type": "race.free"},
            ]

            def append(
                run_id: str = run_id, key: str = f"m{round_no}", new_steps: list[Any] = new_steps
            ) -> None:
                try:
                    appender.execute(
                        "SELECT * FROM pgrun.append_workflow_steps("
                        "run_id => %s, mutation_key => %s, steps => %s)",
                        (run_id, key, Jsonb(new_steps)),
                    )
                    outcomes["appended"] += 1
                except psycopg.Error as exc:
                    assert exc.sqlstate == "RQ001", exc
                    assert exc.diag.message_primary in {"workflow.release_conflict", "workflow.run_finished"}
                    outcomes["refused"] += 1

            def cancel(run_id: str = run_id) -> None:
                canceller.execute("SELECT * FROM pgrun.cancel_workflow_run(run_id => %s)", (run_id,))

            assert together(append, cancel) == []
            assert run_status(setup, run_id) == "cancelled"
            state = steps_of(setup, run_id)
            assert all(status in TERMINAL_STEPS for status, _ in state.values()), state
            queued = setup.execute(
                "SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = %s AND status = 'queued'", (run_id,)
            ).fetchone()
            assert queued == (0,), "a job of a cancelled run is still runnable"
    assert outcomes["appended"] + outcomes["refused"] == 50


def test_two_prerequisites_finishing_at_once_release_their_dependent_once(db: str) -> None:
    with connect(db) as setup, connect(db) as one, connect(db) as two:
        for _ in range(50):
            run_id = enqueue(
                setup,
                [
                    {"key": "a", "job_type": "pair.a"},
                    {"key": "b", "job_type": "pair.b"},
                    {"key": "c", "job_type": "pair.c", "depends_on": ["a", "b"]},
                ],
            )
            lease_a, lease_b = claim(setup, "pair.a"), claim(setup, "pair.b")
            errors = together(
                lambda lease=lease_a: one.execute(COMPLETE, lease),  # type: ignore[misc]
                lambda lease=lease_b: two.execute(COMPLETE, lease),  # type: ignore[misc]
            )
            assert errors == []
            released = setup.execute(
                "SELECT count(*) FROM pgrun.jobs WHERE workflow_run_id = %s AND workflow_step_key = 'c'",
                (run_id,),
            ).fetchone()
            assert released == (1,)
            assert steps_of(setup, run_id)["c"][0] not in {"blocked", "cancelled", "skipped"}


def test_a_completion_blocked_behind_a_cancel_waits_then_proceeds_and_releases_nothing(db: str) -> None:
    with connect(db) as setup, connect(db) as canceller, connect(db) as completer:
        run_id = enqueue(
            setup,
            [
                {"key": "first", "job_type": "gate.first"},
                {"key": "next", "job_type": "gate.next", "depends_on": ["first"]},
            ],
        )
        lease = claim(setup, "gate.first")
        canceller.execute("BEGIN")
        canceller.execute("SELECT * FROM pgrun.cancel_workflow_run(run_id => %s)", (run_id,))

        def complete() -> tuple[Any, ...] | None:
            return completer.execute(
                "SELECT pgrun.complete_job(job_id => %s, lease_token => %s)", lease
            ).fetchone()

        with blocked_call(setup, completer, complete) as completion:
            canceller.execute("COMMIT")

        assert completion.value == ("cancelled",), "the cancel request decides the job's final status"
        state = steps_of(setup, run_id)
        assert state["first"][0] == "cancelled"
        assert state["next"] == ("cancelled", None), "nothing may be released after the cancel"
        assert run_status(setup, run_id) == "cancelled"


def _blocked_completion(db: str, lock_timeout: str | None) -> tuple[float, BaseException | None, str]:
    """Complete a workflow job while another session holds the run's exclusive lock."""
    with connect(db) as setup, connect(db) as holder, connect(db) as completer:
        run_id = enqueue(setup, [{"key": "only", "job_type": "cap.only"}])
        lease = claim(setup, "cap.only")
        holder.execute("BEGIN")
        hold_exclusive(holder, run_id)
        completer.execute("BEGIN")
        if lock_timeout is not None:
            completer.execute(f"SET LOCAL lock_timeout = '{lock_timeout}'")
        start = time.monotonic()
        error: BaseException | None = None
        try:
            completer.execute("SELECT pgrun.complete_job(job_id => %s, lease_token => %s)", lease)
        except psycopg.Error as exc:
            error = exc
        elapsed = time.monotonic() - start
        completer.execute("ROLLBACK")
        holder.execute("ROLLBACK")
        status = setup.execute("SELECT status FROM pgrun.jobs WHERE id = %s", (lease[0],)).fetchone()
        assert status is not None
        return elapsed, error, str(status[0])


def test_an_unlimited_lock_timeout_is_capped_at_five_seconds_as_a_release_conflict(db: str) -> None:
    elapsed, error, status = _blocked_completion(db, None)
    assert error is not None
    assert sqlstate_and_code(error) == ("RQ001", "workflow.release_conflict")
    assert 4.5 <= elapsed < 15, elapsed
    assert status == "running", "the failed completion changed nothing"


def test_a_stricter_caller_lock_timeout_is_kept(db: str) -> None:
    elapsed, error, _ = _blocked_completion(db, "300ms")
    assert error is not None
    assert sqlstate_and_code(error) == ("RQ001", "workflow.release_conflict")
    assert elapsed < 3, elapsed


def test_the_callers_lock_timeout_is_restored_after_the_wait(db: str) -> None:
    with connect(db) as setup, connect(db) as holder, connect(db) as completer:
        run_id = enqueue(setup, [{"key": "only", "job_type": "cap.only"}])
        lease = claim(setup, "cap.only")
        holder.execute("BEGIN")
        hold_exclusive(holder, run_id)
        completer.execute("BEGIN")
        completer.execute("SET LOCAL lock_timeout = 0")

        def complete() -> tuple[Any, Any]:
            row = completer.execute(
                "SELECT pgrun.complete_job(job_id => %s, lease_token => %s)", lease
            ).fetchone()
            return row, completer.execute("SHOW lock_timeout").fetchone()

        with blocked_call(setup, completer, complete) as completion:
            holder.execute("COMMIT")
        completer.execute("COMMIT")
        assert completion.value is not None
        row, after = completion.value
        assert row == ("succeeded",)
        assert after == ("0",), "the capped lock_timeout leaked past the release"
        assert run_status(setup, run_id) == "succeeded"


def test_append_and_external_completion_are_refused_at_once_while_a_cancel_holds_the_run(db: str) -> None:
    with connect(db) as setup, connect(db) as holder, connect(db) as caller:
        run_id = enqueue(setup, [{"key": "gate", "kind": "external"}])
        holder.execute("BEGIN")
        hold_exclusive(holder, run_id)
        for call in (
            'SELECT * FROM pgrun.append_workflow_steps(%s, \'m\', \'[{"key": "c", "job_type": "t"}]\')',
            "SELECT * FROM pgrun.complete_external_step(%s, 'gate')",
        ):
            start = time.monotonic()
            try:
                caller.execute(call, (run_id,))
            except psycopg.Error as exc:
                assert sqlstate_and_code(exc) == ("RQ001", "workflow.release_conflict")
            else:
                raise AssertionError(f"{call} went through a cancel's lock")
            assert time.monotonic() - start < 3, "try_shared does not wait"
        holder.execute("ROLLBACK")
        steps = steps_of(setup, run_id)
        assert steps == {"gate": ("waiting_for_external", None)}, "the refused calls changed nothing"


def test_a_role_that_may_only_connect_cannot_stall_a_run(db: str, admin_dsn: str) -> None:
    """The old protocol's advisory key was computable by anyone; the run row is lockable by
    pgrun's owner only."""
    from pgrun.testing import create_login, drop_login

    with connect(admin_dsn) as admin:
        intruder = create_login(admin, "pgrun_intruder")
    try:
        with connect(db) as setup, connect(intruder.dsn(db)) as hostile, connect(db) as completer:
            run_id = enqueue(setup, [{"key": "only", "job_type": "stall.only"}])
            lease = claim(setup, "stall.only")
            hostile.execute("BEGIN")
            hostile.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('pgrun.workflow_run:' || %s, 0))", (run_id,)
            )
            for attempt in (
                "SELECT 1 FROM pgrun.workflow_runs WHERE id = %s FOR KEY SHARE",
                "SELECT 1 FROM pgrun.workflow_runs WHERE id = %s FOR UPDATE",
            ):
                hostile.execute("SAVEPOINT s")
                try:
                    hostile.execute(attempt, (run_id,))
                except psycopg.errors.InsufficientPrivilege:
                    hostile.execute("ROLLBACK TO SAVEPOINT s")
                else:
                    raise AssertionError(f"a CONNECT-only role ran {attempt}")
            completer.execute("SET lock_timeout = '2s'")
            start = time.monotonic()
            row = completer.execute(
                "SELECT pgrun.complete_job(job_id => %s, lease_token => %s)", lease
            ).fetchone()
            assert time.monotonic() - start < 1.5, "the completion waited for the intruder"
            assert row is not None
            hostile.execute("ROLLBACK")
            assert run_status(setup, run_id) == "succeeded"
    finally:
        with connect(admin_dsn) as admin:
            drop_login(admin, "pgrun_intruder")
