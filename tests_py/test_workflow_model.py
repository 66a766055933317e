"""Workflow runs against a model of the release rules, over runs and sequences Hypothesis draws
(docs/workflows.md: "Statuses", "Release rules", "Cancel").

Each example enqueues one run of a random DAG (two to six steps, job and external ones, each
edge on_success or on_terminal) and then drives it at random: a job step's job succeeds (its
result the step's output), fails for good, fails and is retried, is cancelled while queued or
while it runs, loses its lease to the reaper (retried, or dead at its last attempt), is handed
back unstarted or moves to a next step of its own (continue_job); two or three jobs end in one
complete_jobs or fail_jobs call; an external step is closed (succeeded or not, with an output, also when it is
not waiting yet or already closed); the run is cancelled (also while one of its jobs runs);
steps are appended behind open and finished steps; the run's enqueue and its appends are
retried with their keys (the same request in another order, or a different one). After every
step each step's status, pending count, output and job, each job's status and payload (the
step's payload plus the `dependencies` its prerequisites gave it at release), and the run's
status and open step count are compared with the model. Hypothesis shrinks a run and a sequence
that break it to a small DAG and a few steps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from model_support import refusal, run_model
from pgrun.testing import install_test_clock
from schedule_support import at

RUN_KEY = "model-run"
TERMINAL = ("succeeded", "failed", "skipped", "cancelled")
MAX_ATTEMPTS = 2  # every job step's: a retried job dies at its second failure
START = datetime(2033, 1, 1, tzinfo=UTC)


@dataclass
class Step:
    key: str
    kind: str  # job / external
    depends_on: list[tuple[str, str]]  # (prerequisite, release mode)
    status: str = "blocked"
    pending: int = 0
    output: Any = None
    job_id: Any = None
    job_status: str | None = None
    attempts: int = 0  # the job's failed attempts so far
    dependents: list[tuple[str, str]] = field(default_factory=list)


# A step as drawn: its key, its kind (job / external), its edges (prerequisite, release mode)
Drawn = tuple[str, str, tuple[tuple[str, str], ...]]


@st.composite
def dags(draw: st.DrawFn) -> list[Drawn]:
    """Two to six steps; each may depend on earlier ones only, so the graph has no cycle."""
    steps: list[Drawn] = []
    for i in range(draw(st.integers(2, 6))):
        earlier = [key for key, _, _ in steps]
        prerequisites = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        edges = tuple((p, draw(st.sampled_from(["on_success", "on_terminal"]))) for p in prerequisites)
        steps.append((f"s{i}", draw(st.sampled_from(["job", "job", "job", "external"])), edges))
    return steps


def spec_of(dag: list[Drawn], run_key: str | None = None, metadata: dict[str, Any] | None = None) -> str:
    """The run's spec (with an idempotency key and metadata when given), steps in ``dag``'s order."""
    steps = []
    for key, kind, edges in dag:
        item: dict[str, Any] = {"key": key, "kind": kind}
        if edges:
            item["depends_on"] = [{"step": p, "release_mode": m} for p, m in edges]
        if kind == "job":
            item |= {"job_type": f"wfmodel.{key}", "payload": {"k": key}, "max_attempts": MAX_ATTEMPTS}
        steps.append(item)
    spec: dict[str, Any] = {"name": "model", "steps": steps}
    spec |= {"idempotency_key": run_key} if run_key is not None else {}
    spec |= {"metadata": metadata} if metadata is not None else {}
    return json.dumps(spec)


class WorkflowMachine(RuleBasedStateMachine):
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        super().__init__()
        self.conn = conn
        conn.execute("TRUNCATE pgrun.workflow_runs, pgrun.jobs CASCADE")
        self.steps: dict[str, Step] = {}
        self.run_id: Any = None
        self.run_cancelled = False
        self.dag: list[Drawn] = []
        self.appends: dict[str, tuple[str, Any]] = {}  # mutation key: (its steps, its mutation)
        self.outputs = 0
        self.now = START
        at(conn, self.now)

    # -- the model -------------------------------------------------------------------------

    def _release(self, step: Step) -> None:
        if step.kind == "job":
            step.status = "released"
            step.job_status = "queued"
        else:
            step.status = "waiting_for_external"

    def _finish(self, step: Step, status: str, output: Any = None) -> None:
        """A step became terminal: its edges resolve (docs/workflows.md, Release rules)."""
        step.status, step.output = status, output
        for key, mode in step.dependents:
            self._resolve(step, self.steps[key], mode)

    def _resolve(self, prerequisite: Step, dependent: Step, mode: str) -> None:
        """One edge out of a finished step: counts down, or skips its dependent."""
        if dependent.status != "blocked":
            return
        if mode == "on_terminal" or prerequisite.status == "succeeded":
            dependent.pending -= 1
            if dependent.pending == 0:
                self._release(dependent)
        else:
            self._finish(dependent, "skipped")

    def _run_status(self) -> str:
        if self.run_cancelled:
            return "cancelled"
        if any(s.status not in TERMINAL for s in self.steps.values()):
            return "running"
        return "succeeded" if all(s.status == "succeeded" for s in self.steps.values()) else "failed"

    def _queued_job_steps(self) -> list[Step]:
        return sorted(
            (s for s in self.steps.values() if s.status == "released" and s.job_status == "queued"),
            key=lambda s: s.key,
        )

    def _claim(self, step: Step, lease: int = 30) -> tuple[Any, Any]:
        row = self.conn.execute(
            "SELECT job_id, lease_token FROM pgrun.claim_jobs('wfmodel', %s, 1, NULL, %s)",
            (lease, [f"wfmodel.{step.key}"]),
        ).fetchone()
        assert row is not None and row[0] == step.job_id
        return row[0], row[1]

    def _one(self, sql: str, *params: Any) -> Any:
        row = self.conn.execute(sql, params).fetchone()
        assert row is not None
        return row[0]

    # -- rules -----------------------------------------------------------------------------

    @initialize(dag=dags())
    def enqueue(self, dag: list[Drawn]) -> None:
        self.steps = {key: Step(key, kind, list(edges), pending=len(edges)) for key, kind, edges in dag}
        for step in self.steps.values():
            for prerequisite, mode in step.depends_on:
                self.steps[prerequisite].dependents.append((step.key, mode))
        self.dag = dag
        row = self.conn.execute(
            "SELECT run_id, status FROM pgrun.enqueue_workflow(%s)", (spec_of(dag, RUN_KEY),)
        ).fetchone()
        assert row is not None and row[1] == "running"
        self.run_id = row[0]
        for step in self.steps.values():
            if not step.depends_on:
                self._release(step)

    @precondition(lambda self: bool(self._queued_job_steps()))
    @rule(data=st.data(), how=st.sampled_from(["succeed", "die", "retry", "cancel_queued", "cancel_running"]))
    def finish_a_job(self, data: st.DataObject, how: str) -> None:
        step = data.draw(st.sampled_from(self._queued_job_steps()))
        if how == "cancel_queued":
            assert self._one("SELECT pgrun.cancel_job(%s)", step.job_id) == "cancelled"
            step.job_status = "cancelled"
            self._finish(step, "cancelled")
            return
        job_id, token = self._claim(step)
        if how == "succeed":
            self.outputs += 1
            result = {"from": step.key, "n": self.outputs}
            done = self._one("SELECT pgrun.complete_job(%s, %s, %s)", job_id, token, json.dumps(result))
            assert done == "succeeded"
            step.job_status = "succeeded"
            self._finish(step, "succeeded", result)
        elif how == "cancel_running":
            assert self._one("SELECT pgrun.cancel_job(%s)", job_id) == "cancel_requested"
            assert self._one("SELECT pgrun.complete_job(%s, %s)", job_id, token) == "cancelled"
            step.job_status = "cancelled"
            self._finish(step, "cancelled")
        else:
            retryable = how == "retry"
            row = self.conn.execute(
                "SELECT outcome FROM pgrun.fail_job(%s, %s, retryable => %s, retry_delay => '0 s')",
                (job_id, token, retryable),
            ).fetchone()
            step.attempts += 1
            if retryable and step.attempts < MAX_ATTEMPTS:
                assert row == ("retry_scheduled",)  # the step stays released
            else:
                assert row == ("dead",)
                step.job_status = "dead"
                self._finish(step, "failed")

    @precondition(lambda self: len(self._queued_job_steps()) >= 2)
    @rule(data=st.data(), succeed=st.booleans())
    def finish_jobs_together(self, data: st.DataObject, succeed: bool) -> None:
        """Two or three job steps' jobs end in one complete_jobs or fail_jobs call, as a
        worker's batched outcomes do: a step behind several of them has its edges resolved by
        one statement."""
        steps = data.draw(
            st.lists(
                st.sampled_from(self._queued_job_steps()), min_size=2, max_size=3, unique_by=lambda s: s.key
            )
        )
        ids, tokens = zip(*(self._claim(step) for step in steps), strict=True)
        if succeed:
            results = []
            for step in steps:
                self.outputs += 1
                results.append({"from": step.key, "n": self.outputs})
            rows = self.conn.execute(
                "SELECT job_id, outcome FROM pgrun.complete_jobs(%s, %s, %s::jsonb[])",
                (list(ids), list(tokens), [json.dumps(r) for r in results]),
            ).fetchall()
            assert rows == [(job_id, "succeeded") for job_id in ids]
            for step, result in zip(steps, results, strict=True):
                step.job_status = "succeeded"
                self._finish(step, "succeeded", result)
        else:
            rows = self.conn.execute(
                "SELECT job_id, outcome FROM pgrun.fail_jobs(%s, %s, retryable => %s)",
                (list(ids), list(tokens), [False] * len(ids)),
            ).fetchall()
            assert rows == [(job_id, "dead") for job_id in ids]
            for step in steps:
                step.job_status = "dead"
                self._finish(step, "failed")

    @precondition(lambda self: bool(self._queued_job_steps()))
    @rule(data=st.data())
    def lease_runs_out(self, data: st.DataObject) -> None:
        """A job step's worker vanishes: its lease runs out and the reaper retries the job, or
        at its last attempt lets it die and the step fails."""
        step = data.draw(st.sampled_from(self._queued_job_steps()))
        job_id, _ = self._claim(step, lease=1)
        self.now += timedelta(seconds=2)
        at(self.conn, self.now)
        rows = self.conn.execute(
            "SELECT job_id, outcome FROM pgrun.reap_expired_leases(retry_delay => '0 s')"
        ).fetchall()
        step.attempts += 1
        if step.attempts < MAX_ATTEMPTS:
            assert rows == [(job_id, "lease_expired")]  # queued again, the step still released
        else:
            assert rows == [(job_id, "dead")]
            step.job_status = "dead"
            self._finish(step, "failed")

    @precondition(lambda self: bool(self._queued_job_steps()))
    @rule(data=st.data(), how=st.sampled_from(["release", "continue"]))
    def back_to_the_queue(self, data: st.DataObject, how: str) -> None:
        """A job step's claim is handed back unstarted (no attempt spent), or its job moves to
        a next step of its own (continue_job: a fresh attempt budget); either way the job is
        queued again and the workflow step stays released, nothing resolved."""
        step = data.draw(st.sampled_from(self._queued_job_steps()))
        job_id, token = self._claim(step)
        if how == "release":
            rows = self.conn.execute(
                "SELECT outcome FROM pgrun.release_jobs(%s, %s)", ([job_id], [token])
            ).fetchall()
            assert rows == [("released",)]
        else:
            row = self.conn.execute(
                "SELECT outcome FROM pgrun.continue_job(%s, %s, 'next')", (job_id, token)
            ).fetchone()
            assert row == ("continued",)
            step.attempts = 0

    @precondition(lambda self: any(s.kind == "external" for s in self.steps.values()))
    @rule(data=st.data(), succeeded=st.booleans(), output=st.sampled_from([None, {"ok": 1}, {"ok": 2}]))
    def close_an_external_step(self, data: st.DataObject, succeeded: bool, output: Any) -> None:
        step = data.draw(st.sampled_from([s for s in self.steps.values() if s.kind == "external"]))
        call = "SELECT step_status, run_status, changed FROM pgrun.complete_external_step(%s, %s, %s, %s)"
        params = (self.run_id, step.key, succeeded, None if output is None else json.dumps(output))
        if step.status == "blocked":
            assert refusal(self.conn, call, params) == ("RQ001", "workflow.step_not_waiting")
            return
        if step.status in TERMINAL:
            if step.status == ("succeeded" if succeeded else "failed") and step.output == output:
                row = self.conn.execute(call, params).fetchone()
                assert row == (step.status, self._run_status(), False)
            else:
                assert refusal(self.conn, call, params) == ("RQ001", "workflow.step_already_finished")
            return
        row = self.conn.execute(call, params).fetchone()
        self._finish(step, "succeeded" if succeeded else "failed", output)
        assert row == (step.status, self._run_status(), True)

    @rule(data=st.data(), kind=st.sampled_from(["job", "job", "external"]))
    def append_a_step(self, data: st.DataObject, kind: str) -> None:
        """A new step behind up to three existing ones, whatever their status: behind an open
        one its edge waits, behind a finished one it resolves at once (docs/workflows.md,
        Append)."""
        key = f"s{len(self.steps)}"
        prerequisites = data.draw(st.lists(st.sampled_from(sorted(self.steps)), unique=True, max_size=3))
        edges = [(p, data.draw(st.sampled_from(["on_success", "on_terminal"]))) for p in prerequisites]
        spec = json.loads(spec_of([(key, kind, tuple(edges))]))["steps"]
        call = "SELECT step_keys, run_status, mutation_id FROM pgrun.append_workflow_steps(%s, %s, %s)"
        params = (self.run_id, f"append-{key}", json.dumps(spec))
        if self._run_status() != "running":
            assert refusal(self.conn, call, params) == ("RQ001", "workflow.run_finished")
            return
        row = self.conn.execute(call, params).fetchone()
        step = self.steps[key] = Step(key, kind, edges, pending=len(edges))
        for prerequisite, mode in edges:
            self.steps[prerequisite].dependents.append((key, mode))
        if not edges:
            self._release(step)
        for prerequisite, mode in edges:
            if self.steps[prerequisite].status in TERMINAL:
                self._resolve(self.steps[prerequisite], step, mode)
        assert row is not None and row[:2] == ([key], self._run_status())
        self.appends[f"append-{key}"] = (json.dumps(spec), row[2])

    @rule(data=st.data(), different=st.booleans())
    def enqueue_again(self, data: st.DataObject, different: bool) -> None:
        """The run's enqueue retried with its key: the same request, its steps and edges in any
        order, returns the run whatever it became; another (new metadata) is refused."""
        dag = data.draw(st.permutations(self.dag))
        dag = [(key, kind, tuple(data.draw(st.permutations(edges)))) for key, kind, edges in dag]
        call = "SELECT run_id, created, status FROM pgrun.enqueue_workflow(%s)"
        params = (spec_of(dag, RUN_KEY, {"v": 2} if different else None),)
        if different:
            assert refusal(self.conn, call, params) == ("RQ001", "workflow.enqueue_conflicting_retry")
        else:
            assert self.conn.execute(call, params).fetchone() == (self.run_id, False, self._run_status())

    @precondition(lambda self: bool(self.appends))
    @rule(data=st.data(), different=st.booleans())
    def append_again(self, data: st.DataObject, different: bool) -> None:
        """An append retried with its mutation key: the same steps return its mutation, also
        once the run finished; other steps are refused."""
        key = data.draw(st.sampled_from(sorted(self.appends)))
        steps, mutation_id = self.appends[key]
        if different:
            steps = json.dumps([step | {"key": step["key"] + "x"} for step in json.loads(steps)])
        call = "SELECT mutation_id, created, step_keys FROM pgrun.append_workflow_steps(%s, %s, %s)"
        params = (self.run_id, key, steps)
        if different:
            assert refusal(self.conn, call, params) == ("RQ001", "workflow.append_conflicting_retry")
        else:
            assert self.conn.execute(call, params).fetchone() == (
                mutation_id,
                False,
                [key.removeprefix("append-")],
            )

    @rule(data=st.data(), while_a_job_runs=st.booleans())
    def cancel_the_run(self, data: st.DataObject, while_a_job_runs: bool) -> None:
        call = "SELECT status, changed FROM pgrun.cancel_workflow_run(%s)"
        status = self._run_status()
        if status in ("succeeded", "failed"):
            assert refusal(self.conn, call, (self.run_id,)) == ("RQ001", "workflow.run_finished")
            return
        if status == "cancelled":
            assert self.conn.execute(call, (self.run_id,)).fetchone() == ("cancelled", False)
            return
        running = None
        if while_a_job_runs and self._queued_job_steps():
            running = data.draw(st.sampled_from(self._queued_job_steps()))
            lease = self._claim(running)
        assert self.conn.execute(call, (self.run_id,)).fetchone() == ("cancelled", True)
        self.run_cancelled = True
        for step in self.steps.values():
            if step.status not in TERMINAL:
                if step.job_status == "queued":
                    step.job_status = "cancelled"
                step.status = "cancelled"
        if running is not None:
            # the job had a cancel request: its worker's next write ends it cancelled, and its
            # step stays cancelled, nothing released
            assert self._one("SELECT pgrun.complete_job(%s, %s)", *lease) == "cancelled"

    # -- what the rows must say after every step ---------------------------------------------

    @invariant()
    def rows_match_the_model(self) -> None:
        if self.run_id is None:
            return
        rows = self.conn.execute(
            """
            SELECT s.step_key, s.status, s.dependency_count_pending, s.output, s.job_id, j.status, j.payload
            FROM pgrun.workflow_steps AS s LEFT JOIN pgrun.jobs AS j ON j.id = s.job_id
            WHERE s.run_id = %s
            """,
            (self.run_id,),
        ).fetchall()
        assert {r[0] for r in rows} == set(self.steps)
        for key, status, pending, output, job_id, job_status, payload in rows:
            step = self.steps[key]
            assert (key, status, output, job_status) == (key, step.status, step.output, step.job_status)
            if status == "blocked":
                assert pending == step.pending, key
            if step.job_status is None:
                assert job_id is None, key
                continue
            if step.job_id is None:
                step.job_id = job_id
            assert job_id == step.job_id, key
            given = {p: self.steps[p] for p, _ in step.depends_on}
            dependencies = {p: {"status": g.status, "output": g.output} for p, g in given.items()}
            assert payload == {"k": key, "dependencies": dependencies}, key
        run = self.conn.execute(
            "SELECT status, open_step_count FROM pgrun.workflow_runs WHERE id = %s", (self.run_id,)
        ).fetchone()
        assert run == (self._run_status(), sum(s.status not in TERMINAL for s in self.steps.values()))


def test_workflow_runs_follow_the_release_rules(db: str) -> None:
    install_test_clock(db)
    with psycopg.connect(db, autocommit=True) as conn:
        run_model(lambda: WorkflowMachine(conn), examples=150, steps=30)
