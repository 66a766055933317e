"""What the worker sends, and what it does when a write is refused (issue 12, items 3, 4, 6).

* One outcome PostgreSQL cannot store (a NUL in a string, a lone surrogate, NaN, not JSON)
  fails only its own job (``result_invalid`` / ``state_invalid``, not retried); a batch the
  server refuses anyway is split until the refused outcome is alone, so every other outcome
  of the batch is written exactly once.
* A ``workflow.release_conflict`` on one run holds back only that run's outcomes: the
  batch-mates are written at once and the run's outcome once the conflict clears.
* A crashed handler leaves the exception type and a clipped message in the database (the
  traceback goes to the worker's log); ``App.redact`` filters every message the worker
  sends; ``store_tracebacks`` (``JOBS_STORE_TRACEBACKS``) keeps the whole traceback.

Handlers that must land in one flush wait on a ``Gate`` and return together.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import psycopg
import psycopg.errors
import pytest

from pgrun import config as configuration
from pgrun import worker as worker_module
from pgrun.app import App, Continue, Fail, JobContext, Retry, SyncJobContext
from pgrun.client import AsyncClient, Client
from pgrun.eventloop import run_until_complete
from pgrun.results import JsonText, UndecodableJson
from pgrun.runner import default_loops, run_loops
from pgrun.workflow import Workflow
from worker_support import fast_config, run_worker_until, statuses

TERMINAL = ("succeeded", "dead", "cancelled")


class Gate:
    """Holds async handlers until ``size`` of them have arrived, then lets them all return
    in the same turn of the event loop, so their outcomes land in one flush batch."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.arrived = 0
        self.event: asyncio.Event | None = None

    async def wait(self) -> None:
        if self.event is None:
            self.event = asyncio.Event()
        self.arrived += 1
        if self.arrived >= self.size:
            self.event.set()
        await asyncio.wait_for(self.event.wait(), 30)


def _done(client: Client, ids: list[Any]) -> bool:
    return all(s in TERMINAL for s in statuses(client, ids))


def _events(dsn: str, job_id: Any) -> Counter[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT event FROM pgrun.job_events WHERE job_id = %s", [job_id]).fetchall()
    return Counter(str(r[0]) for r in rows)


def _outcomes(dsn: str, job_id: Any) -> Counter[str]:
    """How the job's attempts ended (job_attempts: the events that ended them, and the job row for
    the attempt that succeeded)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT outcome FROM pgrun.job_attempts WHERE job_id = %s AND outcome IS NOT NULL", [job_id]
        ).fetchall()
    return Counter(str(r[0]) for r in rows)


def _tables_holding(dsn: str, needle: str) -> list[str]:
    """Every pgrun table with a row whose text contains ``needle``."""
    found = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'pgrun' AND c.relkind IN ('r', 'p') ORDER BY 1"
        ).fetchall()
        for (table,) in tables:
            query = f"SELECT count(*) FROM pgrun.{table} AS t WHERE strpos(t::text, %s) > 0"
            row = conn.execute(query.encode(), [needle]).fetchone()  # type: ignore[arg-type]
            if row and row[0]:
                found.append(str(table))
    return found


# -- one bad outcome never poisons its batch ------------------------------------------------

POISON: dict[str, Any] = {
    "nul": {"text": "a\x00b"},
    "nul_key": {"k\x00": 1},
    "surrogate": ["\ud800"],
    "nan": {"x": math.nan},
    "infinity": math.inf,
    "object": {"x": object()},
}


def _poison_app(gate: Gate, runs: Counter[str]) -> App:
    app = App()

    @app.job("t.fine")
    async def fine(ctx: JobContext) -> Any:
        runs[str(ctx.job_id)] += 1
        await gate.wait()
        return {"n": ctx.payload["n"], "text": "back\\u0000slash"}  # an escaped backslash is fine

    @app.job("t.poison")
    async def poison(ctx: JobContext) -> Any:
        runs[str(ctx.job_id)] += 1
        await gate.wait()
        return POISON[ctx.payload["kind"]]

    return app


def _run_poison_batch(db: str, kinds: list[str]) -> tuple[dict[str, Any], dict[str, Any], Counter[str]]:
    runs: Counter[str] = Counter()
    fine_count = 4
    app = _poison_app(Gate(fine_count + len(kinds)), runs)
    with Client.connect(db) as client:
        fine = {
            str(client.enqueue_job("t.fine", {"n": n}, max_attempts=3).job_id): n for n in range(fine_count)
        }
        bad = {str(client.enqueue_job("t.poison", {"kind": k}, max_attempts=3).job_id): k for k in kinds}
        ids = [*fine, *bad]
        config = fast_config(db, max_global_concurrency=20, claim_batch_size=20)
        run_worker_until(app, config, lambda c: _done(c, ids))
        fine_jobs = {job_id: client.get_job(job_id) for job_id in fine}
        bad_jobs = {bad[job_id]: client.get_job(job_id) for job_id in bad}
    for job_id, job in fine_jobs.items():
        assert job["status"] == "succeeded" and job["result"] == {
            "n": fine[job_id],
            "text": "back\\u0000slash",
        }
        assert job["total_attempts"] == 1 and runs[job_id] == 1, "a batch-mate ran again"
        assert _outcomes(db, job_id)["succeeded"] == 1
    return fine_jobs, bad_jobs, runs


def test_a_result_postgresql_would_refuse_fails_only_its_own_job(db: str) -> None:
    _fine, bad, runs = _run_poison_batch(db, list(POISON))
    for kind, job in bad.items():
        assert (job["status"], job["error_code"]) == ("dead", "result_invalid"), kind
        assert job["total_attempts"] == 1, f"{kind}: result_invalid is not retried"
        assert job["dead_letters"][0]["reason"] == "non_retryable"
        assert job["result"] is None
    assert "NUL" in bad["nul"]["error_message"]
    assert "surrogate" in bad["surrogate"]["error_message"]
    assert "NaN" in bad["nan"]["error_message"] or "nan" in bad["nan"]["error_message"]
    assert sum(runs.values()) == 4 + len(POISON)


def test_a_batch_the_server_refuses_is_split_and_the_rest_written_once(
    db: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """With the worker's own check switched off, the server refuses the whole batch: the
    worker splits it until the bad result is alone and writes every other outcome once."""

    def unchecked(value: Any) -> tuple[None, JsonText | None]:
        return None, None if value is None else JsonText(json.dumps(value))

    monkeypatch.setattr(worker_module, "_json_checked", unchecked)
    with caplog.at_level(logging.WARNING, logger="pgrun.worker"):
        _fine, bad, _runs = _run_poison_batch(db, ["nul", "nan"])
    for kind, job in bad.items():
        assert (job["status"], job["error_code"], job["total_attempts"]) == ("dead", "result_invalid", 1), (
            kind
        )
        assert "PostgreSQL refused" in job["error_message"]
    assert "splitting" in caplog.text


def test_a_transient_refusal_writes_the_batch_again_as_it_is(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A serialization failure (40001) asks for a retry: the same batch is sent again, whole."""
    real = AsyncClient.complete_jobs
    sent: list[int] = []

    async def once_refused(self: AsyncClient, completions: Any, **options: Any) -> Any:
        sent.append(len(completions))
        if len(sent) == 1:
            raise psycopg.errors.SerializationFailure("could not serialize access")
        return await real(self, completions, **options)

    monkeypatch.setattr(AsyncClient, "complete_jobs", once_refused)
    runs: Counter[str] = Counter()
    app = _poison_app(Gate(4), runs)
    with Client.connect(db) as client:
        ids = [client.enqueue_job("t.fine", {"n": n}).job_id for n in range(4)]
        run_worker_until(app, fast_config(db), lambda c: _done(c, ids))
        jobs = [client.get_job(job_id) for job_id in ids]
    assert sent[:2] == [4, 4]
    for job in jobs:
        assert (job["status"], job["total_attempts"]) == ("succeeded", 1)
        assert _outcomes(db, job["id"])["succeeded"] == 1
    assert set(runs.values()) == {1}


def test_a_batch_timed_out_by_one_locked_row_writes_the_others_at_once(
    db: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """One job row locked elsewhere makes complete_jobs run into statement_timeout for the
    whole batch: the worker halves it, so the batch-mates are written while the lock is held;
    the blocked outcome is tried alone, and given up after MAX_TIMEOUTS (its lease expires and
    the reaper decides), so a write that cannot finish never loops for ever."""
    monkeypatch.setattr(worker_module, "MAX_TIMEOUTS", 2)
    gate = Gate(4)
    holder = psycopg.connect(db)
    app = App()

    @app.job("t.locked_row")
    async def handler(ctx: JobContext) -> Any:
        if ctx.payload["lock"]:
            # Another session locks this job's row before the handler returns.
            holder.execute("SELECT 1 FROM pgrun.jobs WHERE id = %s FOR SHARE", (ctx.job_id,))
        await gate.wait()
        return {"n": ctx.payload["n"]}

    timing_out = psycopg.conninfo.make_conninfo(db, options="-c statement_timeout=300")
    try:
        with Client.connect(db) as client:
            ids = [client.enqueue_job("t.locked_row", {"n": n, "lock": n == 0}).job_id for n in range(4)]
            blocked, others = ids[0], ids[1:]
            with caplog.at_level(logging.ERROR, logger="pgrun.worker"):
                run_worker_until(
                    app,
                    fast_config(timing_out),
                    lambda c: (
                        _done(c, others)
                        and any("timed out 2 times" in r.getMessage() for r in caplog.records)
                    ),
                )
            assert statuses(client, others) == ["succeeded"] * 3
            assert statuses(client, [blocked]) == ["running"], "its outcome was given up, not written"
            for job_id in others:
                assert _outcomes(db, job_id)["succeeded"] == 1
    finally:
        holder.close()


def test_failures_with_unstorable_text_land_sanitised_with_their_batch_mates(db: str) -> None:
    gate = Gate(4)
    app = App()

    @app.job("t.fail")
    async def fail(ctx: JobContext) -> Any:
        await gate.wait()
        kind = ctx.payload["kind"]
        if kind == "nul":
            raise Fail("bad\x00input", code="bad\x00code")
        if kind == "surrogate":
            raise Fail("lone \udc80 surrogate")
        if kind == "crash":
            raise ValueError("a\x00b")
        raise Fail("plain")

    with Client.connect(db) as client:
        kinds = ("nul", "surrogate", "crash", "plain")
        ids = {k: client.enqueue_job("t.fail", {"kind": k}, max_attempts=1).job_id for k in kinds}
        run_worker_until(app, fast_config(db), lambda c: _done(c, list(ids.values())))
        jobs = {k: client.get_job(job_id) for k, job_id in ids.items()}
    assert (jobs["plain"]["status"], jobs["plain"]["error_message"]) == ("dead", "plain")
    assert jobs["nul"]["status"] == "dead"
    assert jobs["nul"]["error_message"] == "bad\ufffdinput" and jobs["nul"]["error_code"] == "bad\ufffdcode"
    assert (
        jobs["surrogate"]["status"] == "dead"
        and jobs["surrogate"]["error_message"] == "lone \ufffd surrogate"
    )
    assert (
        jobs["crash"]["error_code"] == "crashed" and jobs["crash"]["error_message"] == "ValueError: a\ufffdb"
    )
    for job in jobs.values():
        assert job["total_attempts"] == 1 and _events(db, job["id"])["dead"] == 1


def test_a_log_line_with_unstorable_text_is_kept_sanitised_and_the_handler_goes_on(db: str) -> None:
    app = App()

    @app.job("t.log")
    async def logs(ctx: JobContext) -> Any:
        await ctx.log("nul \x00 here")
        await ctx.log("lone \udc80 surrogate", level="warning")
        return {"logged": 2}

    with Client.connect(db) as client:
        job_id = client.enqueue_job("t.log", {}).job_id
        run_worker_until(app, fast_config(db), lambda c: _done(c, [job_id]))
        job = client.get_job(job_id)
    assert (job["status"], job["result"]) == ("succeeded", {"logged": 2})
    with psycopg.connect(db, autocommit=True) as conn:
        lines = conn.execute(
            "SELECT level, message FROM pgrun.job_logs WHERE job_id = %s ORDER BY id", (job_id,)
        )
        assert lines.fetchall() == [("info", "nul \ufffd here"), ("warning", "lone \ufffd surrogate")]


def test_a_failure_fail_jobs_refuses_is_written_without_what_it_refused(db: str) -> None:
    """A negative retry delay makes fail_jobs refuse its whole batch (job.invalid_delay): the
    others are written once, the refused one again without its delay (code failure_invalid)."""
    gate = Gate(4)
    app = App()

    @app.job("t.retry")
    async def retry(ctx: JobContext) -> Any:
        await gate.wait()
        if ctx.payload["bad"]:
            raise Retry(delay=timedelta(seconds=-5), message="backwards")
        raise Fail("ordinary", code="ordinary")

    with Client.connect(db) as client:
        ids = [client.enqueue_job("t.retry", {"bad": i == 0}, max_attempts=1).job_id for i in range(4)]
        run_worker_until(app, fast_config(db), lambda c: _done(c, ids))
        jobs = [client.get_job(job_id) for job_id in ids]
    assert (jobs[0]["status"], jobs[0]["error_code"]) == ("dead", "failure_invalid")
    assert "job.invalid_delay" in jobs[0]["error_message"] and "backwards" in jobs[0]["error_message"]
    for job in jobs[1:]:
        assert (job["status"], job["error_code"], job["total_attempts"]) == ("dead", "ordinary", 1)
        assert _events(db, job["id"])["dead"] == 1


def test_a_continue_the_server_cannot_store_fails_its_job(db: str) -> None:
    app = App()

    @app.job("t.steps")
    async def steps(ctx: JobContext) -> Any:
        kind = ctx.payload["kind"]
        if ctx.step is not None:
            return {"reached": ctx.step}
        if kind == "nan_state":
            return Continue("next", {"x": math.nan})
        if kind == "nul_state":
            return Continue("next", ["\x00"])
        if kind == "blank_step":
            return Continue("   ")
        if kind == "nul_step":
            return Continue("ne\x00xt")
        return Continue("next", {"ok": True})

    kinds = ("nan_state", "nul_state", "blank_step", "nul_step", "good")
    with Client.connect(db) as client:
        ids = {k: client.enqueue_job("t.steps", {"kind": k}).job_id for k in kinds}
        run_worker_until(app, fast_config(db), lambda c: _done(c, list(ids.values())))
        jobs = {k: client.get_job(job_id) for k, job_id in ids.items()}
    assert jobs["good"]["status"] == "succeeded" and jobs["good"]["result"] == {"reached": "next"}
    for kind in ("nan_state", "nul_state"):
        assert (jobs[kind]["status"], jobs[kind]["error_code"]) == ("dead", "state_invalid"), kind
    for kind in ("blank_step", "nul_step"):
        assert (jobs[kind]["status"], jobs[kind]["error_code"]) == ("dead", "continue_invalid"), kind
    assert "job.invalid_step" in jobs["blank_step"]["error_message"]
    for kind in kinds[:-1]:
        assert jobs[kind]["total_attempts"] == 1, kind


def test_continuations_are_written_in_one_call_per_flush(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Handlers that return Continue at once have their continuations written together, one
    continue_jobs call (one durable commit) for the flush, never a continue_job call each; each
    job then runs its next step with its own state and finishes."""
    calls: list[tuple[str, int]] = []
    continue_jobs = AsyncClient.continue_jobs

    async def noting(self: AsyncClient, continuations: Any) -> Any:
        calls.append(("continue_jobs", len(continuations)))
        return await continue_jobs(self, continuations)

    async def refused(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        calls.append(("continue_job", 1))
        raise AssertionError("the worker writes continuations in batches")

    monkeypatch.setattr(AsyncClient, "continue_jobs", noting)
    monkeypatch.setattr(AsyncClient, "continue_job", refused)
    gate = Gate(4)
    app = App()

    @app.job("t.two_steps")
    async def two_steps(ctx: JobContext) -> Any:
        if ctx.step is None:
            await gate.wait()
            return Continue("second", {"n": ctx.payload["n"]})
        return {"second": ctx.state["n"]}

    with Client.connect(db) as client:
        ids = [client.enqueue_job("t.two_steps", {"n": n}).job_id for n in range(4)]
        run_worker_until(app, fast_config(db, max_global_concurrency=4), lambda c: _done(c, ids))
        jobs = [client.get_job(job_id) for job_id in ids]
    assert [(job["status"], job["result"]) for job in jobs] == [
        ("succeeded", {"second": n}) for n in range(4)
    ]
    assert calls == [("continue_jobs", 4)], calls  # four jobs' steps in one call
    for job in jobs:
        assert _outcomes(db, job["id"])["continued"] == 1


def test_a_result_or_state_over_the_types_cap_fails_only_its_own_job(db: str) -> None:
    """complete_jobs reports result_too_large and continue_jobs state_too_large (nothing
    stored) and the batch-mates are written: both jobs fail, not retried."""
    gate = Gate(5)
    app = App()

    @app.job("t.capped", max_result_bytes=1024)
    async def capped(ctx: JobContext) -> Any:
        await gate.wait()
        kind = ctx.payload["kind"]
        if kind == "big_result":
            return {"blob": "x" * 4096}
        if kind == "big_state" and ctx.step is None:
            return Continue("next", {"blob": "y" * 4096})
        return {"small": kind}

    kinds = ("big_result", "big_state", "small1", "small2", "small3")
    with Client.connect(db) as client:
        ids = {k: client.enqueue_job("t.capped", {"kind": k}, max_attempts=3).job_id for k in kinds}
        run_worker_until(app, fast_config(db), lambda c: _done(c, list(ids.values())))
        jobs = {k: client.get_job(job_id) for k, job_id in ids.items()}
    big_result, big_state = jobs["big_result"], jobs["big_state"]
    assert (big_result["status"], big_result["error_code"], big_result["total_attempts"]) == (
        "dead",
        "result_too_large",
        1,
    )
    assert big_result["result"] is None and big_result["dead_letters"][0]["reason"] == "non_retryable"
    assert (big_state["status"], big_state["error_code"], big_state["total_attempts"]) == (
        "dead",
        "state_too_large",
        1,
    )
    assert "continue_jobs: state_too_large" in big_state["error_message"]
    assert big_state["state"] is None and big_state["step"] is None, "the refused state is not stored"
    for kind in ("small1", "small2", "small3"):
        assert (jobs[kind]["status"], jobs[kind]["result"]) == ("succeeded", {"small": kind})
        assert jobs[kind]["total_attempts"] == 1 and _outcomes(db, jobs[kind]["id"])["succeeded"] == 1


def _nested(depth: int) -> str:
    """A JSON object holding arrays nested ``depth`` deep."""
    return '{"x": ' + "[" * depth + "]" * depth + "}"


def test_a_job_whose_input_python_cannot_decode_fails_alone_and_the_worker_lives_on(db: str) -> None:
    """A payload (or state) nested deeper than Python's json decodes — stored before pgrun's
    functions refused such values, or written around them — comes to the client as an
    UndecodableJson marker: the claim keeps its batch-mates, the job fails with
    payload_invalid without running, and the worker goes on claiming."""
    runs: Counter[str] = Counter()
    app = App()

    @app.job("t.input")
    async def handler(ctx: JobContext) -> Any:
        runs[ctx.payload["name"]] += 1
        return {"ran": ctx.payload["name"]}

    def rows(ids: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
        with psycopg.connect(db, autocommit=True) as conn:
            found = conn.execute(
                "SELECT j.id, j.status, j.error_code, j.total_attempts, j.result,"
                " pgrun._job_attempt_error_message(j.id, j.error_attempt)"
                " FROM pgrun.jobs AS j WHERE j.id = ANY(%s)",
                (list(ids.values()),),
            ).fetchall()
        by_id = {r[0]: r[1:] for r in found}
        return {name: by_id[job_id] for name, job_id in ids.items()}

    def finished(ids: dict[str, Any]) -> Callable[[Client], bool]:
        return lambda _client: all(r[0] in TERMINAL for r in rows(ids).values())

    with Client.connect(db) as client:
        ids = {
            n: client.enqueue_job("t.input", {"name": n}, max_attempts=5).job_id
            for n in ("a", "deep", "b", "s")
        }
        with psycopg.connect(db, autocommit=True) as owner:
            deep = _nested(3000)
            owner.execute("UPDATE pgrun.jobs SET payload = %s::jsonb WHERE id = %s", (deep, ids["deep"]))
            owner.execute(
                "UPDATE pgrun.jobs SET state = %s::jsonb, step = 's2' WHERE id = %s", (deep, ids["s"])
            )
        run_worker_until(app, fast_config(db), finished(ids))
        # get_job is one jsonb document: the whole of it comes back as the marker, not an error.
        assert isinstance(client.get_job(ids["deep"]), UndecodableJson)
        # The worker is still claiming: a job enqueued now runs too.
        late = {"late": client.enqueue_job("t.input", {"name": "late"}).job_id}
        run_worker_until(app, fast_config(db), finished(late))
    assert rows(late)["late"][0] == "succeeded"
    got = rows(ids)
    for name in ("deep", "s"):
        status, code, attempts, _, message = got[name]
        assert (status, code, attempts) == ("dead", "payload_invalid", 1), name
        assert "nested deeper" in message
        assert runs[name] == 0, "the handler never ran"
    for name in ("a", "b"):
        assert got[name][:4] == ("succeeded", None, 1, {"ran": name})
        assert runs[name] == 1 and _outcomes(db, ids[name])["succeeded"] == 1


# -- a workflow release conflict holds back only its own run ---------------------------------


def test_a_release_conflict_holds_back_only_that_runs_outcomes(db: str) -> None:
    """One batch: three plain jobs, the job of a run whose lock a side session holds, the job
    of another run. The plain jobs and the free run finish while the lock is held; the held
    run's job finishes once the side session ends."""
    gate = Gate(5)
    app = App()

    @app.job("t.plain")
    async def plain(ctx: JobContext) -> Any:
        await gate.wait()
        return "plain"

    @app.job("wf.step")
    async def step(ctx: JobContext) -> Any:
        await gate.wait()
        return "step"

    runs: dict[str, Any] = {}
    with Client.connect(db) as client, psycopg.connect(db) as holder:
        for name in ("held", "free"):
            wf = Workflow(name)
            wf.job("only", "wf.step")
            runs[name] = client.enqueue_workflow(wf).run_id
        plain_ids = [client.enqueue_job("t.plain").job_id for _ in range(3)]
        # the run's exclusive lock, as a cancel of the run holds it
        holder.execute("SELECT pgrun._workflow_lock_runs(ARRAY[%s]::uuid[], 'exclusive')", [runs["held"]])
        released_at: list[float] = []
        others_done_at: list[float] = []

        def watch(c: Client) -> bool:
            if gate.event is not None and gate.event.is_set() and not released_at:
                released_at.append(time.monotonic())
            if not others_done_at:
                plain_done = statuses(c, plain_ids) == ["succeeded"] * 3
                if plain_done and c.get_workflow_run(runs["free"])["status"] == "succeeded":
                    others_done_at.append(time.monotonic())
                    # the held run's job is still running: its outcome waits for the lock
                    held_job = step_of(c.get_workflow_run(runs["held"]))["job_id"]
                    assert c.get_job(held_job)["status"] == "running"
                    holder.commit()
                return False
            return c.get_workflow_run(runs["held"])["status"] == "succeeded"

        try:
            took = run_worker_until(app, fast_config(db), watch, timeout=40)
        finally:
            holder.rollback()
        final = client.get_workflow_run(runs["held"])
    assert released_at and others_done_at
    # the others waited for one lock timeout (5 s) at most, never for the holder
    assert others_done_at[0] - released_at[0] < 15
    assert final["status"] == "succeeded" and step_of(final)["status"] == "succeeded"
    assert took < 40


def step_of(run: dict[str, Any]) -> dict[str, Any]:
    steps = run["steps"]
    found = steps["only"] if isinstance(steps, dict) else next(s for s in steps if s["key"] == "only")
    return dict(found)


# -- what a crash leaves in the database -----------------------------------------------------

SECRET = "sk_live_5ecret"


class UpstreamError(Exception):
    pass


def _crash_app() -> App:
    app = App()

    @app.job("t.crash")
    async def crash(ctx: JobContext) -> Any:
        kind = ctx.payload["kind"]
        if kind == "long":
            raise RuntimeError("x" * 500 + f" api_key={SECRET}")
        if kind == "chained":
            try:
                raise KeyError(f"https://api.example.com/v1?api_key={SECRET}")
            except KeyError as inner:
                raise UpstreamError("the upstream call failed") from inner
        if kind == "in_message":
            raise UpstreamError(f"GET https://api.example.com/v1?api_key={SECRET} returned 401")
        raise Fail(f"refused with api_key={SECRET}")

    return app


def test_a_crash_stores_the_type_and_a_clipped_message_and_logs_the_traceback(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = _crash_app()
    with Client.connect(db) as client:
        ids = {
            k: client.enqueue_job("t.crash", {"kind": k}, max_attempts=2).job_id for k in ("long", "chained")
        }
        with caplog.at_level(logging.WARNING, logger="pgrun.worker"):
            run_worker_until(app, fast_config(db), lambda c: _done(c, list(ids.values())))
        jobs = {k: client.get_job(job_id) for k, job_id in ids.items()}
    long, chained = jobs["long"], jobs["chained"]
    assert (long["status"], long["error_code"], long["total_attempts"]) == ("dead", "crashed", 2)
    assert long["error_message"] == "RuntimeError: " + "x" * 200 + " [truncated]"
    qualified = f"{UpstreamError.__module__}.UpstreamError"
    assert chained["error_message"] == f"{qualified}: the upstream call failed"
    for job in jobs.values():
        assert "Traceback" not in job["error_message"]
        for attempt in job["attempts"]:
            assert "Traceback" not in (attempt.get("error_message") or "")
    assert _tables_holding(db, SECRET) == []
    # the whole traceback (the chained cause too) is in the worker's log
    assert "Traceback" in caplog.text and f"api_key={SECRET}" in caplog.text
    assert "UpstreamError: the upstream call failed" in caplog.text


def test_the_redact_hook_filters_every_message_the_worker_sends(db: str) -> None:
    app = _crash_app()
    seen: list[tuple[str, str | None]] = []

    @app.redact
    def scrub(message: str, error: BaseException | None) -> str:
        seen.append((message, type(error).__name__ if error else None))
        return re.sub(r"api_key=[^\s&]+", "api_key=[redacted]", message)

    with Client.connect(db) as client:
        ids = {
            k: client.enqueue_job("t.crash", {"kind": k}, max_attempts=1).job_id
            for k in ("in_message", "fail")
        }
        run_worker_until(app, fast_config(db), lambda c: _done(c, list(ids.values())))
        jobs = {k: client.get_job(job_id) for k, job_id in ids.items()}
    redacted = "GET https://api.example.com/v1?api_key=[redacted] returned 401"
    assert jobs["in_message"]["error_message"] == f"{UpstreamError.__module__}.UpstreamError: {redacted}"
    assert jobs["fail"]["error_message"] == "refused with api_key=[redacted]"
    assert _tables_holding(db, SECRET) == []
    assert {"UpstreamError", "Fail"} <= {name for _, name in seen}


def test_a_failing_redact_hook_leaves_only_the_exception_type(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = _crash_app()

    @app.redact
    def broken(message: str, error: BaseException | None) -> str:
        raise RuntimeError("the hook itself broke")

    with Client.connect(db) as client:
        job_id = client.enqueue_job("t.crash", {"kind": "in_message"}, max_attempts=1).job_id
        with caplog.at_level(logging.WARNING, logger="pgrun.worker"):
            run_worker_until(app, fast_config(db), lambda c: _done(c, [job_id]))
        job = client.get_job(job_id)
    assert job["error_message"] == f"{UpstreamError.__module__}.UpstreamError"
    assert "redact hook failed" in caplog.text
    assert _tables_holding(db, SECRET) == []


def test_store_tracebacks_keeps_the_whole_traceback_and_the_hook_still_applies(db: str) -> None:
    app = _crash_app()

    @app.redact
    def scrub(message: str, error: BaseException | None) -> str:
        return message.replace(SECRET, "[redacted]")

    with Client.connect(db) as client:
        job_id = client.enqueue_job("t.crash", {"kind": "chained"}, max_attempts=1).job_id
        run_worker_until(app, fast_config(db, store_tracebacks=True), lambda c: _done(c, [job_id]))
        job = client.get_job(job_id)
    message = job["error_message"]
    assert message.startswith("Traceback (most recent call last):")
    assert "KeyError" in message and "api_key=[redacted]" in message
    assert message.rstrip().endswith("UpstreamError: the upstream call failed")
    assert _tables_holding(db, SECRET) == []


def test_store_tracebacks_comes_from_the_environment() -> None:
    assert configuration.from_env({}).store_tracebacks is False
    for raw, expected in (
        ("1", True),
        ("true", True),
        ("Yes", True),
        ("on", True),
        ("0", False),
        ("off", False),
    ):
        assert configuration.from_env({"JOBS_STORE_TRACEBACKS": raw}).store_tracebacks is expected, raw


def test_an_unparsable_store_tracebacks_keeps_the_default(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pgrun.config"):
        assert configuration.from_env({"JOBS_STORE_TRACEBACKS": "maybe"}).store_tracebacks is False
    assert "JOBS_STORE_TRACEBACKS" in caplog.text


def test_a_stopping_worker_waits_for_its_flush_in_flight_then_writes_what_came_after(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop arrives while a completion batch is out and another outcome waits behind it: the
    worker waits for the batch's answer, writes the waiting outcome, and ends with every job
    succeeded once."""
    real = AsyncClient.complete_jobs
    sent: list[int] = []
    in_flight = asyncio.Event()
    answer = asyncio.Event()

    async def held_first(self: AsyncClient, completions: Any, **options: Any) -> Any:
        sent.append(len(completions))
        if len(sent) == 1:
            in_flight.set()
            await asyncio.wait_for(answer.wait(), 30)
        return await real(self, completions, **options)

    monkeypatch.setattr(AsyncClient, "complete_jobs", held_first)
    app = App()

    @app.job("t.first")
    async def first(ctx: JobContext) -> Any:
        return None

    @app.job("t.second")
    async def second(ctx: JobContext) -> Any:
        await asyncio.wait_for(in_flight.wait(), 30)  # ends while the first batch is out
        return None

    with Client.connect(db) as client:
        ids = [
            client.enqueue_job("t.first", {}).job_id,
            client.enqueue_job("t.second", {}, delay=0.5).job_id,
        ]

        async def main() -> None:
            stop = asyncio.Event()
            task = asyncio.create_task(run_loops(default_loops(app), fast_config(db), stop))
            await asyncio.wait_for(in_flight.wait(), 20)
            deadline = time.monotonic() + 20
            while await asyncio.to_thread(statuses, client, ids[1:]) != ["running"]:
                assert time.monotonic() < deadline, "the second job was not claimed"
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.1)  # its handler has returned: its outcome waits in the buffer
            stop.set()
            await asyncio.sleep(0.3)
            assert not task.done(), "the worker waits for its flush in flight"
            answer.set()
            await asyncio.wait_for(task, 10)

        run_until_complete(main(), fast_config(db))
        jobs = [client.get_job(job_id) for job_id in ids]
    assert sent == [1, 1]
    assert [(j["status"], j["total_attempts"]) for j in jobs] == [("succeeded", 1)] * 2


def test_flushes_one_after_another_reach_one_backend(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker writes its outcomes through a connection it keeps: flushes that follow one
    another reach one backend, not each the pool's next connection in turn (the pool holds
    several here: the definitions' upsert, the reaper and the listener's ask took theirs)."""
    from pgrun import client as client_module

    backends: list[int] = []
    run_on = client_module._run_on_async

    async def noting_run_on(conn: psycopg.AsyncConnection[Any], call: Any) -> Any:
        if "complete_jobs" in call.query:
            backends.append(conn.info.backend_pid)
        return await run_on(conn, call)

    monkeypatch.setattr(client_module, "_run_on_async", noting_run_on)
    app = App()

    @app.job("t.flush")
    async def noop(ctx: JobContext) -> None:
        return None

    def enqueue_one_at_a_time(client: Client) -> bool:
        # each job alone, after the last one's flush: one flush each
        if len(backends) < 6:
            client.enqueue_job("t.flush", payload={"n": len(backends)})
            time.sleep(0.05)
            return False
        return True

    run_worker_until(app, fast_config(db), enqueue_one_at_a_time, timeout=20)
    assert len(set(backends)) == 1, f"flushes reached backends {backends}"


def test_outcomes_wait_for_handlers_still_running_and_no_longer_once_none_are(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flush waits FLUSH_DELAY for more outcomes only while some can come (a handler runs, a
    job waits in the local queue, a claim is out): the last outcomes of a burst are written at
    once, while their jobs still count as running against a cap and hold back the steps they
    release. Here the delay is 60 s, far past the test's timeout: an outcome beside a running
    handler waits for it (one batch of both), and a lone job's is written at once."""
    from pgrun import client as client_module

    monkeypatch.setattr(worker_module, "FLUSH_DELAY", 60.0)
    batches: list[int] = []
    complete_jobs = client_module.AsyncClient.complete_jobs

    async def noting_complete_jobs(self: Any, triples: Any, **options: Any) -> Any:
        batches.append(len(triples))
        return await complete_jobs(self, triples, **options)

    monkeypatch.setattr(client_module.AsyncClient, "complete_jobs", noting_complete_jobs)
    release = asyncio.Event()
    app = App()

    @app.job("t.quick")
    async def quick(ctx: JobContext) -> None:
        return None

    @app.job("t.slow")
    async def slow(ctx: JobContext) -> None:
        worker_loop.append(asyncio.get_running_loop())
        await release.wait()

    ids: list[Any] = []
    worker_loop: list[asyncio.AbstractEventLoop] = []

    def scenario(client: Client) -> bool:
        if not ids:
            enqueued = client.enqueue_jobs([{"job_type": "t.slow"}, {"job_type": "t.quick"}])
            ids.extend(item.job_id for item in enqueued)
            return False
        states = statuses(client, ids)
        if len(ids) == 2:
            if states == ["running", "running"]:  # t.quick has run; its outcome waits
                time.sleep(0.3)
                assert statuses(client, ids) == ["running", "running"] and batches == []
                worker_loop[0].call_soon_threadsafe(release.set)
            elif states == ["succeeded", "succeeded"]:
                ids.append(client.enqueue_job("t.quick").job_id)
            return False
        return statuses(client, ids[2:]) == ["succeeded"]

    run_worker_until(app, fast_config(db, max_global_concurrency=4), scenario, timeout=20)
    assert batches == [2, 1]


def test_log_lines_are_written_in_batches_before_their_jobs_outcomes(
    db: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """ctx.log buffers its line; the next flush writes the buffered lines in one
    append_job_logs call, then the outcomes: a job's lines are stored, in the order it wrote
    them, before its outcome. A line the server refuses (a level it does not know) or whose
    fields are not JSON is dropped with a warning; the handler goes on and its job succeeds
    (a log call never fails a handler)."""
    calls: list[tuple[str, int]] = []
    append_job_logs = AsyncClient.append_job_logs
    complete_jobs = AsyncClient.complete_jobs

    async def noting_logs(self: AsyncClient, lines: Any, **options: Any) -> Any:
        calls.append(("logs", len(lines)))
        # the outcomes' durable commit flushes them; the logged lines are counted, not read
        assert options == {"durable": False, "logged_rows": False}
        return await append_job_logs(self, lines, **options)

    async def noting_completions(self: AsyncClient, triples: Any, **options: Any) -> Any:
        calls.append(("complete", len(triples)))
        return await complete_jobs(self, triples, **options)

    monkeypatch.setattr(AsyncClient, "append_job_logs", noting_logs)
    monkeypatch.setattr(AsyncClient, "complete_jobs", noting_completions)
    gate = Gate(3)
    app = App()

    @app.job("t.logs")
    async def logs(ctx: JobContext) -> Any:
        n = ctx.payload["n"]
        for step in range(3):
            await ctx.log(f"job {n} step {step}", step=step)
        await ctx.log("not a level", level="loud")
        await ctx.log("not JSON", when=object())
        await gate.wait()
        return n

    with caplog.at_level(logging.WARNING, logger="pgrun.worker"), Client.connect(db) as client:
        ids = [client.enqueue_job("t.logs", {"n": n}).job_id for n in range(3)]
        run_worker_until(app, fast_config(db, max_global_concurrency=3), lambda c: _done(c, ids))
        jobs = [client.get_job(job_id) for job_id in ids]
    assert [job["status"] for job in jobs] == ["succeeded"] * 3
    assert calls == [("logs", 12), ("complete", 3)]  # three jobs' lines in one call, then the outcomes
    with psycopg.connect(db) as conn:
        for n, job_id in enumerate(ids):
            rows = conn.execute(
                "SELECT l.message, l.fields, l.created_at <= j.finished_at FROM pgrun.job_logs AS l "
                "JOIN pgrun.jobs AS j ON j.id = l.job_id WHERE l.job_id = %s ORDER BY l.id",
                (job_id,),
            ).fetchall()
            assert rows == [(f"job {n} step {step}", {"step": step}, True) for step in range(3)]
    assert [a["log_lines"] for a in jobs[0]["attempts"]] == [3]
    assert "log line(s) dropped: a level or fields the server refuses" in caplog.text
    assert "log line dropped, its fields: not JSON" in caplog.text


def test_log_lines_a_write_could_not_send_are_sent_again_before_the_outcome(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """append_job_logs failing for the server's weather puts the lines back: the outcome waits
    for them, and each line is stored once. A handler that writes far more lines than the
    buffer holds (LOG_LINES_MAX) waits for the writes: every line arrives (the attempt keeps its
    first 1000 and counts the rest)."""
    monkeypatch.setattr(worker_module, "LOG_LINES_MAX", 50)
    append_job_logs = AsyncClient.append_job_logs
    failed: list[int] = []

    async def once_down(self: AsyncClient, lines: Any, **options: Any) -> Any:
        if not failed:
            failed.append(len(lines))
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return await append_job_logs(self, lines, **options)

    monkeypatch.setattr(AsyncClient, "append_job_logs", once_down)
    app = App()

    @app.job("t.chatty")
    async def chatty(ctx: JobContext) -> None:
        for line in range(ctx.payload["lines"]):
            await ctx.log(f"line {line}")

    @app.job("t.chatty_sync")
    def chatty_sync(ctx: SyncJobContext) -> None:  # hands its lines to the loop, or waits
        for line in range(ctx.payload["lines"]):
            ctx.log(f"line {line}")

    with Client.connect(db) as client:
        few = client.enqueue_job("t.chatty", {"lines": 2}).job_id
        run_worker_until(app, fast_config(db), lambda c: _done(c, [few]))
        many = [client.enqueue_job(t, {"lines": 1200}).job_id for t in ("t.chatty", "t.chatty_sync")]
        run_worker_until(app, fast_config(db), lambda c: _done(c, many))
        jobs = [client.get_job(job_id) for job_id in (few, *many)]
    assert failed == [2]
    assert [job["status"] for job in jobs] == ["succeeded"] * 3
    assert [(a["log_lines"], a["log_lines_dropped"]) for a in jobs[0]["attempts"]] == [(2, 0)]
    for job in jobs[1:]:
        assert [(a["log_lines"], a["log_lines_dropped"]) for a in job["attempts"]] == [(1000, 200)]
    with psycopg.connect(db) as conn:
        for job_id in many:  # the first 1000, in the order the handler wrote them
            rows = conn.execute("SELECT message FROM pgrun.job_logs WHERE job_id = %s ORDER BY id", (job_id,))
            assert [row[0] for row in rows] == [f"line {line}" for line in range(1000)]
