"""The worker's claims in flight (JOBS_CLAIMS_IN_FLIGHT): with 2, a second claim starts while
the first is out when the local queue runs low; never more claims than that, never more jobs
asked for than the bound leaves room for. The local queue stays in claim order (claims
answering out of order, urgent jobs claimed later), news arriving during a claim that comes
back short is not lost, and a stopping worker waits for its claims in flight and hands their
jobs back.

Claims are slowed by wrapping AsyncClient.claim_jobs (the real call still runs); the database
is read through the public client.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest

from pgrun import migrate
from pgrun.app import App, Continue, JobContext
from pgrun.client import AsyncClient, Client
from pgrun.config import Config
from pgrun.results import ClaimedJob
from pgrun.runner import default_loops, run_loops
from pgrun.testing import extract_schema
from pgrun.worker import Worker, _Running
from schema_versions import commit_adding
from worker_support import fast_config, finished, run_worker_until, statuses

ClaimJobs = Callable[..., Awaitable[list[ClaimedJob]]]


def _app(starts: list[str], seconds: float = 0.0) -> App:
    app = App()

    @app.job("t.named")
    async def named(ctx: JobContext) -> Any:
        starts.append(ctx.payload["name"])
        await asyncio.sleep(seconds)
        return None

    return app


def _wrap_claims(
    monkeypatch: pytest.MonkeyPatch,
    around: Callable[[ClaimJobs, Any, tuple[Any, ...], dict[str, Any]], Awaitable[list[ClaimedJob]]],
) -> None:
    """Every claim_jobs call of every AsyncClient goes through ``around(real, self, args, kwargs)``."""
    real: ClaimJobs = AsyncClient.claim_jobs

    async def claim_jobs(self: Any, *args: Any, **kwargs: Any) -> list[ClaimedJob]:
        return await around(real, self, args, kwargs)

    monkeypatch.setattr(AsyncClient, "claim_jobs", claim_jobs)


@pytest.mark.parametrize("claims_in_flight", [1, 2])
def test_claims_overlap_up_to_the_setting_within_the_bound(
    db: str, monkeypatch: pytest.MonkeyPatch, claims_in_flight: int
) -> None:
    """Two slots, a fixed bound of 4, claims of at most 2 that take 0.15 s each: as many
    claims run at once as the setting allows, no more, and the jobs asked for never exceed
    the slots plus the bound (counting the claims in flight)."""
    in_flight = 0
    peak_in_flight = 0
    asked: list[int] = []
    held_peak = 0

    async def slow(real: ClaimJobs, client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        nonlocal in_flight, peak_in_flight
        in_flight += 1
        peak_in_flight = max(peak_in_flight, in_flight)
        asked.append(kwargs["max_jobs"])
        try:
            await asyncio.sleep(0.15)
            return await real(client, *args, **kwargs)
        finally:
            in_flight -= 1

    _wrap_claims(monkeypatch, slow)
    starts: list[str] = []
    app = _app(starts, seconds=0.02)
    with Client.connect(db) as client:
        names = [f"j{i:02d}" for i in range(40)]
        ids = client.enqueue_jobs([{"job_type": "t.named", "payload": {"name": n}} for n in names])
        job_ids = [row.job_id for row in ids]

        def check(c: Client) -> bool:
            nonlocal held_peak
            held_peak = max(held_peak, sum(d.running for d in c.queue_depth()))
            return finished(c, job_ids)

        config = fast_config(
            db, max_global_concurrency=2, prefetch=4, claim_batch_size=2, claims_in_flight=claims_in_flight
        )
        run_worker_until(app, config, check, timeout=60)
        jobs = [client.get_job(job_id) for job_id in job_ids]
    assert peak_in_flight == claims_in_flight
    assert max(asked) <= 2
    # held: two running, four waiting, plus at most two outcomes not written yet
    assert held_peak <= 2 + 4 + 2
    assert [j["status"] for j in jobs] == ["succeeded"] * 40
    assert [j["total_attempts"] for j in jobs] == [1] * 40
    assert sorted(starts) == names, "each job ran once"


def _claimed(priority: int, second: int, job_id: int) -> _Running:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=second)
    job = ClaimedJob(
        job_id=UUID(int=job_id),
        job_type="t.named",
        queue="default",
        priority=priority,
        payload={},
        attempt=1,
        max_attempts=3,
        lease_token=UUID(int=1000 + job_id),
        lease_expires_at=at,
        timeout_seconds=None,
        step=None,
        state=None,
        progress=None,
        organization_id=None,
        workflow_run_id=None,
        workflow_step_key=None,
        run_at=at,
        started_at=at,
    )
    return _Running(job)


def test_the_local_queue_stays_in_claim_order(db: str) -> None:
    worker = Worker(App(), AsyncClient.__new__(AsyncClient), Config(database_url=db))
    ids = lambda: [r.job.job_id.int for r in worker._queue]  # noqa: E731

    worker._enqueue_local([_claimed(100, 3, 3), _claimed(100, 4, 4)])
    # a claim that answers after a later one: merged ahead
    worker._enqueue_local([_claimed(100, 1, 1), _claimed(100, 2, 2), _claimed(100, 5, 5)])
    assert ids() == [1, 2, 3, 4, 5]
    # a better priority goes ahead of every held job; an equal key keeps arrival order
    worker._enqueue_local([_claimed(0, 9, 9)])
    worker._enqueue_local([_claimed(100, 5, 5 + 0)])
    assert ids() == [9, 1, 2, 3, 4, 5, 5]
    # ties on priority and run_at are broken by the id, as claim_jobs orders them
    worker._enqueue_local([_claimed(100, 4, 0)])
    assert ids() == [9, 1, 2, 3, 0, 4, 5, 5]
    # a claim that belongs at the end is appended
    worker._enqueue_local([_claimed(200, 0, 7)])
    assert ids()[-1] == 7


def test_news_during_a_short_claim_is_not_lost(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's first claim finds nothing; while it is out a job is enqueued and its
    NOTIFY arrives. The claim comes back short, but the worker claims again at once instead
    of sleeping until its poll (10 s here)."""
    enqueued: list[float] = []

    async def news_meanwhile(
        real: ClaimJobs, client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        if enqueued:
            return await real(client, *args, **kwargs)
        await asyncio.sleep(0.5)  # the listener is listening by now
        jobs = await real(client, *args, **kwargs)
        assert jobs == [], "the queue was empty"
        with Client.connect(db) as producer:
            producer.enqueue_job("t.named", {"name": "late"})
        enqueued.append(time.monotonic())
        await asyncio.sleep(0.3)  # the NOTIFY reaches the worker while this claim is out
        return jobs

    _wrap_claims(monkeypatch, news_meanwhile)
    starts: list[str] = []
    app = _app(starts)
    config = fast_config(db, poll_interval_ms=10_000)
    took = run_worker_until(app, config, lambda c: starts == ["late"])
    assert enqueued
    assert took < 5, "the job waited for the poll"


def test_a_capped_type_at_the_head_does_not_stall_the_jobs_behind_it(db: str) -> None:
    """An idle worker (four slots, one claim out at a time, a 60 s poll) is woken by one
    enqueue of thirty jobs of a type capped at one run at once, ahead of three others. Its
    claim takes one capped job and the three others (the capped type's surplus takes no place
    in the batch), so they run while the capped job does. When the cap cut that claim short,
    the worker read it as a drained queue and slept: the three waited for the capped job to
    end, or for the poll."""
    release = threading.Event()
    starts: list[str] = []
    app = App()

    @app.job("t.capped")
    async def capped(ctx: JobContext) -> Any:
        starts.append("capped")
        await asyncio.to_thread(release.wait, 30)

    @app.job("t.free")
    async def free(ctx: JobContext) -> Any:
        starts.append("free")

    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('t.capped', max_concurrency => 1)")
    free_ids: list[UUID] = []

    def free_done(client: Client) -> bool:
        if not free_ids:
            time.sleep(0.5)  # the worker is up, idle and listening by now
            jobs = [{"job_type": "t.capped", "priority": 1}] * 30 + [
                {"job_type": "t.free", "priority": 2}
            ] * 3
            free_ids.extend(r.job_id for r in client.enqueue_jobs(jobs)[30:])
        done = finished(client, free_ids)
        if done:
            release.set()  # the capped job may end now
        return done

    config = fast_config(
        db, poll_interval_ms=60_000, max_global_concurrency=4, prefetch=0, claims_in_flight=1
    )
    try:
        took = run_worker_until(app, config, free_done, timeout=15)
    finally:
        release.set()
    assert starts[:4].count("capped") == 1 and starts.count("free") == 3
    assert took < 5, "the jobs behind the capped type waited for it to end"


def test_a_worker_at_a_types_cap_claims_again_once_its_outcomes_are_written(db: str) -> None:
    """Two hundred jobs of a type capped at four, a worker of four slots and a 60 s poll. Its
    finished jobs count against the cap until their outcomes are written, so a claim sent
    meanwhile comes back short, and the worker took that for a drained queue: it slept until
    the poll, four jobs a poll. Writing outcomes frees room, so once a flush is written after
    a short claim the worker claims again."""
    app = App()

    @app.job("t.capped")
    async def capped(ctx: JobContext) -> Any:
        await asyncio.sleep(0.002)

    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('t.capped', max_concurrency => 4)")
    with Client.connect(db) as producer:
        ids = [r.job_id for r in producer.enqueue_jobs([{"job_type": "t.capped"}] * 200)]
    config = fast_config(db, poll_interval_ms=60_000, max_global_concurrency=4)
    took = run_worker_until(
        app, config, lambda c: c.count_jobs(status="succeeded")[0].jobs == len(ids), timeout=30
    )
    assert took < 15, "the worker waited for its poll at the cap"


def test_resuming_a_paused_type_starts_its_jobs_at_once(db: str) -> None:
    """An idle worker with a 60 s poll has passed over two jobs of a paused type; resuming the
    type (set_job_runtime_config) notifies their queue, so they start at once rather than at
    the poll."""
    starts: list[str] = []
    app = _app(starts)
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('t.named', paused => true)")
    with Client.connect(db) as producer:
        for name in ("one", "two"):
            producer.enqueue_job("t.named", {"name": name})
    resumed: list[float] = []

    def resume_then_wait(client: Client) -> bool:
        if not resumed:
            time.sleep(0.5)  # the worker has claimed nothing and sleeps
            assert starts == []
            client.set_job_runtime_config("t.named", paused=False)
            resumed.append(time.monotonic())
        return sorted(starts) == ["one", "two"]

    took = run_worker_until(app, fast_config(db, poll_interval_ms=60_000), resume_then_wait, timeout=15)
    assert took < 5, "the resumed type's jobs waited for the poll"


def test_a_stopping_worker_hands_back_the_jobs_of_a_claim_in_flight(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stop arrives after the server took the jobs but before the claim answered: the worker
    waits for the answer, starts nothing and hands every job back at once (queued, no
    attempt spent), instead of leaving them leased to no one until their leases expire."""
    answer = asyncio.Event()

    async def late_answer(real: ClaimJobs, client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        jobs = await real(client, *args, **kwargs)
        if jobs:
            await answer.wait()
        return jobs

    _wrap_claims(monkeypatch, late_answer)
    starts: list[str] = []
    app = _app(starts)
    with Client.connect(db) as client:
        ids = [client.enqueue_job("t.named", {"name": f"j{i}"}).job_id for i in range(5)]

        async def main() -> float:
            stop = asyncio.Event()
            config = fast_config(db, lease_ttl_seconds=60)
            task = asyncio.create_task(run_loops(default_loops(app), config, stop))
            deadline = time.monotonic() + 20
            while await asyncio.to_thread(statuses, client, ids) != ["running"] * 5:
                assert time.monotonic() < deadline, "the worker did not claim"
                await asyncio.sleep(0.05)
            stop.set()
            await asyncio.sleep(0.3)
            assert not task.done(), "the worker waits for its claim in flight"
            stopped = time.monotonic()
            answer.set()
            await asyncio.wait_for(task, 30)
            return time.monotonic() - stopped

        took = asyncio.run(main())
        jobs = [client.get_job(job_id) for job_id in ids]
    assert took < 5
    assert starts == [], "nothing starts once the worker is stopping"
    assert [j["status"] for j in jobs] == ["queued"] * 5
    assert [(j["attempt"], j["attempts"]) for j in jobs] == [(0, [])] * 5


def test_a_claim_task_cancelled_before_it_ran_does_not_hold_up_the_shutdown() -> None:
    """Cancelled before its first step (the event loop closing), a claim task never runs its
    own clean-up; the shutdown still ends and forgets what it had asked for."""

    async def main() -> tuple[dict[Any, int], int]:
        worker = Worker(App(), AsyncClient.__new__(AsyncClient), Config())
        worker._start_claim(5, [])
        next(iter(worker._claiming)).cancel()
        await asyncio.wait_for(worker._shutdown(), 5)
        return worker._claiming, worker._asked

    assert asyncio.run(main()) == ({}, 0)


def test_a_claim_refused_for_good_stops_the_worker(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal retrying will not fix (here: permission denied) is not retried in a loop: the
    worker's run raises it, after its shutdown, and no claim is sent after it."""
    calls = 0

    async def refused(real: ClaimJobs, client: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        nonlocal calls
        calls += 1
        raise psycopg.errors.InsufficientPrivilege("permission denied for function claim_jobs")

    _wrap_claims(monkeypatch, refused)

    async def main() -> None:
        client = await AsyncClient.connect(db)
        try:
            worker = Worker(_app([]), client, fast_config(db))
            await asyncio.wait_for(worker.run(asyncio.Event()), 20)
        finally:
            await client.close()

    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        asyncio.run(main())
    assert calls == 1


class _HeldClaims:
    """A claims client whose claim_jobs records its calls and answers nothing until released."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.release = asyncio.Event()

    async def claim_jobs(self, worker_id: str, **kwargs: Any) -> list[ClaimedJob]:
        self.calls.append(kwargs["max_jobs"])
        await self.release.wait()
        return []


def test_a_poke_starts_the_claim_itself_while_the_worker_claims() -> None:
    """A NOTIFY (poke) starts the claim in the same step, ahead of the claim loop it wakes, so
    the claim is sent on the event loop's next pass; never a second claim beyond the setting,
    and none before the claim loop runs, after the stop event, or once the worker is stopping."""

    async def main() -> None:
        held = _HeldClaims()
        config = Config(max_global_concurrency=4, claims_in_flight=1)
        worker = Worker(_app([]), AsyncClient.__new__(AsyncClient), config)
        worker._claims = held  # type: ignore[assignment]
        worker.poke()
        assert worker._claiming == {}, "the claim loop is not running: no claim yet"

        worker._claiming_on, worker._job_types = True, ["t.named"]  # what run() sets up
        worker._maybe_ready = False  # the last claim came back short: only news claims again
        worker.poke()
        asked = [out.wanted for out in worker._claiming.values()]
        assert asked == [8], "claimed in the poke: 4 slots + 4 held"
        await asyncio.sleep(0)
        assert held.calls == [8], "sent on the next pass of the event loop"
        worker.poke()
        assert len(worker._claiming) == 1, "one claim in flight at most (the setting)"

        held.release.set()
        await asyncio.sleep(0.01)
        assert worker._claiming == {}
        worker._stopping = True
        worker.poke()
        assert worker._claiming == {}, "a stopping worker claims nothing"
        worker._stopping = False
        worker._stop_claiming(None)  # the stop event fired
        worker.poke()
        assert worker._claiming == {} and held.calls == [8]

    asyncio.run(main())


def test_a_claim_that_answers_before_an_earlier_one_waits_for_it() -> None:
    """Two claims in flight: the second answers first. Its jobs wait (their leases held, so the
    heartbeat renews them) until the first has answered, and then every job starts in claim
    order, with a slot free all along. A failed earlier claim releases them too."""

    class Ordered:
        """Answers each call with the jobs given for it, once its gate opens."""

        def __init__(self, answers: list[list[ClaimedJob]]) -> None:
            self.answers = answers
            self.gates = [asyncio.Event() for _ in answers]
            self.calls = 0

        async def claim_jobs(self, worker_id: str, **kwargs: Any) -> list[ClaimedJob]:
            n = self.calls
            self.calls += 1
            await self.gates[n].wait()
            if not self.answers[n]:
                raise psycopg.OperationalError("the server went away")
            return self.answers[n]

    async def main(first_fails: bool) -> list[int]:
        started: list[int] = []
        app = App()

        @app.job("t.named")
        async def named(ctx: JobContext) -> None:
            started.append(ctx.job_id.int)

        config = Config(max_global_concurrency=4, claims_in_flight=2)
        worker = Worker(app, AsyncClient.__new__(AsyncClient), config)
        earlier = [] if first_fails else [_claimed(100, 1, 1).job, _claimed(100, 2, 2).job]
        later = [_claimed(100, 3, 3).job, _claimed(100, 4, 4).job]
        claims = Ordered([earlier, later])
        worker._claims = claims  # type: ignore[assignment]
        worker._registered.set()
        worker._start_claim(2, ["t.named"])
        worker._start_claim(2, ["t.named"])
        await asyncio.sleep(0)
        claims.gates[1].set()  # the later claim answers first
        await asyncio.sleep(0.01)
        assert started == [], "the later claim's jobs started before the earlier claim answered"
        assert {UUID(int=3), UUID(int=4)} <= set(worker._leases), "held jobs keep their leases"
        assert worker._held_jobs == 2, "counted against the local queue's room while held"
        claims.gates[0].set()
        await asyncio.sleep(0.01)
        # every claimed job's lease is held from its claim's answer until its outcome is
        # written (no flush runs here): held or not, started or not
        assert set(worker._leases) == {UUID(int=i) for i in started}
        return started

    assert asyncio.run(main(first_fails=False)) == [1, 2, 3, 4]
    assert asyncio.run(main(first_fails=True)) == [3, 4]


def test_a_worker_of_one_slot_keeps_one_claim_out() -> None:
    """Two overlapping claims split the next jobs as the server runs them, so the later jobs
    may come first; a worker of one slot runs its jobs one after another in claim order, and
    keeps one claim out whatever JOBS_CLAIMS_IN_FLIGHT says."""

    async def main(slots: int) -> int:
        held = _HeldClaims()
        # claims of one job into a queue of 8: one claim out leaves the queue low enough
        config = Config(max_global_concurrency=slots, prefetch=8, claim_batch_size=1)
        worker = Worker(_app([]), AsyncClient.__new__(AsyncClient), config)
        worker._claims = held  # type: ignore[assignment]
        worker._claiming_on, worker._job_types = True, ["t.named"]
        for _ in range(3):
            worker.poke()
        out = len(worker._claiming)
        held.release.set()
        await asyncio.sleep(0.01)
        return out

    assert Config().claims_in_flight == 2
    assert asyncio.run(main(1)) == 1
    assert asyncio.run(main(4)) == 2


def _migrate_before(dsn: str, test_file: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Migrate ``dsn`` to the schema of the commit before the one that added ``test_file``."""
    old = extract_schema(commit_adding(test_file) + "^", tmp_path / "old")
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(dsn)
    monkeypatch.delenv("PGRUN_SCHEMA_DIR")


def test_a_worker_on_a_schema_older_than_its_code_says_to_migrate(
    empty_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """This worker's claims pass max_held, which a schema migrated before it lacks: the claim
    is refused for good (the worker stops, as for any refusal) and the log says what to do."""
    _migrate_before(empty_db, "tests_sql/jobs/claim/test_claim_max_held.sql", tmp_path, monkeypatch)

    async def main() -> None:
        client = await AsyncClient.connect(empty_db)
        try:
            await asyncio.wait_for(Worker(_app([]), client, fast_config(empty_db)).run(asyncio.Event()), 20)
        finally:
            await client.close()

    with pytest.raises(psycopg.errors.UndefinedFunction):
        asyncio.run(main())
    assert "run `pgrun migrate` with this version" in caplog.text


def test_log_lines_a_schema_older_than_the_code_cannot_take_are_dropped_with_the_reason(
    empty_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A schema migrated before append_job_logs claims and completes as this worker asks, but
    cannot take its log lines: they are dropped, the log says to migrate, and the job still
    succeeds (a log line never fails its handler)."""
    _migrate_before(empty_db, "tests_sql/jobs/heartbeat/test_append_job_logs.sql", tmp_path, monkeypatch)
    app = App()

    @app.job("t.logs")
    async def logs(ctx: JobContext) -> None:
        await ctx.log("a line the schema cannot take")

    with Client.connect(empty_db) as client:
        job_id = client.enqueue_job("t.logs").job_id
        run_worker_until(app, fast_config(empty_db), lambda c: finished(c, [job_id]))
        job = client.get_job(job_id)
    assert job["status"] == "succeeded"
    assert "log line(s) failed; dropping them" in caplog.text
    assert "run `pgrun migrate` with this version" in caplog.text


def test_continuations_on_a_schema_older_than_continue_jobs_go_one_by_one(
    empty_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A schema migrated before continue_jobs: the worker says to migrate and writes each
    continuation with continue_job, as workers before it did; every job runs its next step
    with its state and succeeds."""
    _migrate_before(empty_db, "tests_sql/jobs/continue/test_continue_jobs_batch.sql", tmp_path, monkeypatch)
    app = App()

    @app.job("t.steps")
    async def steps(ctx: JobContext) -> Any:
        if ctx.step is None:
            return Continue("second", {"n": ctx.payload["n"]})
        return {"second": ctx.state["n"]}

    with caplog.at_level(logging.WARNING, logger="pgrun.worker"), Client.connect(empty_db) as client:
        ids = [client.enqueue_job("t.steps", {"n": n}).job_id for n in range(3)]
        run_worker_until(app, fast_config(empty_db), lambda c: finished(c, ids))
        jobs = [client.get_job(job_id) for job_id in ids]
    assert [(job["status"], job["result"]) for job in jobs] == [
        ("succeeded", {"second": n}) for n in range(3)
    ]
    assert "writing continuations one by one" in caplog.text
    assert "run `pgrun migrate` with this version" in caplog.text
