"""The worker's local queue (JOBS_PREFETCH): jobs claimed ahead of free slots are held under
heartbeated leases, started in claim order, handed back at shutdown (release_jobs) and
cancelled without running when a cancel arrives before they start.

Handlers record their starts in a list; the database is read through the public client.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any, cast
from uuid import uuid4

import psycopg
import pytest

from pgrun import worker as worker_module
from pgrun.app import App, JobContext
from pgrun.client import AsyncClient, Client
from pgrun.config import Config, from_env
from pgrun.errors import PermissionDeniedError
from pgrun.results import ClaimedJob
from pgrun.runner import default_loops, run_loops
from pgrun.worker import Worker, _Running
from worker_support import fast_config, finished, run_worker_until, statuses


def _app(starts: list[str], seconds: dict[str, float] | None = None) -> App:
    """One job type, t.named: records payload["name"] when it starts, then sleeps its time."""
    app = App()

    @app.job("t.named")
    async def named(ctx: JobContext) -> Any:
        name = ctx.payload["name"]
        starts.append(name)
        await asyncio.sleep((seconds or {}).get(name, float(ctx.payload.get("seconds", 0))))
        return {"name": name}

    return app


def _events(dsn: str, job_id: Any) -> list[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT event FROM pgrun.job_events WHERE job_id = %s ORDER BY id", [job_id])
        return [row[0] for row in rows]


def _enqueue(client: Client, name: str, **options: Any) -> Any:
    return client.enqueue_job("t.named", {"name": name}, **options).job_id


def test_prefetch_is_configured_from_the_environment() -> None:
    assert Config(max_global_concurrency=7).prefetch is None  # unset: the adaptive bound
    assert Config(max_global_concurrency=7).prefetch_limit == 1000  # ... whose ceiling is 1000
    assert from_env({"JOBS_PREFETCH": "0"}).prefetch_limit == 0
    assert from_env({"JOBS_PREFETCH": "25"}).prefetch == 25
    assert from_env({"JOBS_PREFETCH": "5000"}).prefetch == 1000  # clamped
    assert from_env({"JOBS_PREFETCH": "many"}).prefetch is None  # unparsable: the default


def test_the_worker_holds_its_slots_plus_the_prefetch_and_no_more(db: str) -> None:
    starts: list[str] = []
    app = _app(starts, {f"j{i}": 0.3 for i in range(12)})  # one slot runs them one by one
    with Client.connect(db) as client:
        ids = [_enqueue(client, f"j{i}") for i in range(12)]
        peak_in_db = 0

        def check(c: Client) -> bool:
            nonlocal peak_in_db
            peak_in_db = max(peak_in_db, sum(d.running for d in c.queue_depth()))
            return finished(c, ids)

        config = fast_config(db, max_global_concurrency=1, prefetch=2, claim_batch_size=10)
        run_worker_until(app, config, check, timeout=30)
        assert statuses(client, ids) == ["succeeded"] * 12
        total_attempts = [client.get_job(job_id)["total_attempts"] for job_id in ids]
    # one running and two waiting (claimed ahead), at most one buffered outcome on top
    assert 3 <= peak_in_db <= 1 + 2 + 1
    assert starts == [f"j{i}" for i in range(12)], "started in claim order, each once"
    assert total_attempts == [1] * 12


def test_jobs_waiting_in_the_local_queue_are_heartbeated(db: str) -> None:
    """Lease 2 s (a heartbeat every 0.67 s, the reaper every second); one slot, three jobs of
    2.5 s: the last waits 5 s, more than twice its lease, before it starts."""
    starts: list[str] = []
    app = _app(starts, {"a": 2.5, "b": 2.5, "c": 2.5})
    with Client.connect(db) as client:
        ids = [_enqueue(client, name) for name in ("a", "b", "c")]
        all_held = False

        def check(c: Client) -> bool:
            nonlocal all_held
            all_held = all_held or statuses(c, ids) == ["running"] * 3
            return finished(c, ids)

        config = fast_config(db, max_global_concurrency=1, prefetch=2, lease_ttl_seconds=2)
        run_worker_until(app, config, check, timeout=40)
        jobs = [client.get_job(job_id) for job_id in ids]
    assert all_held, "the two jobs behind the first were claimed ahead"
    assert [j["status"] for j in jobs] == ["succeeded"] * 3
    assert [[a["outcome"] for a in j["attempts"]] for j in jobs] == [["succeeded"]] * 3, "no lease lost"
    assert starts == ["a", "b", "c"]


def test_a_job_cancelled_while_it_waits_is_not_run(db: str) -> None:
    starts: list[str] = []
    app = _app(starts, {"slow": 4.0})
    with Client.connect(db) as client:
        slow = _enqueue(client, "slow")
        waiting = _enqueue(client, "waiting")
        cancelled_at: list[float] = []

        def check(c: Client) -> bool:
            if not cancelled_at and statuses(c, [slow, waiting]) == ["running", "running"]:
                assert c.cancel_job(waiting, reason="not needed") == "cancel_requested"
                cancelled_at.append(time.monotonic())
            return bool(cancelled_at) and finished(c, [slow, waiting])

        # lease 3 s: a heartbeat every second tells the worker of the cancel
        config = fast_config(db, max_global_concurrency=1, prefetch=1, lease_ttl_seconds=3)
        run_worker_until(app, config, check, timeout=30)
        job = client.get_job(waiting)
        events = _events(db, waiting)
    assert starts == ["slow"], "the cancelled job's handler never ran"
    assert job["status"] == "cancelled"
    assert [a["outcome"] for a in job["attempts"]] == ["cancelled"]
    assert events[-2:] == ["cancel_requested", "cancelled"]


def test_prefetched_jobs_are_handed_back_at_once_when_the_worker_stops(db: str) -> None:
    """One slot, a 6 s job running, three jobs waiting; stop: the three are queued again at
    once (while the running job still has its grace period), no attempt spent, and a second
    worker runs them long before their 30 s leases would have expired."""
    starts: list[str] = []
    app = _app(starts, {"slow": 6.0})
    with Client.connect(db) as client:
        slow = _enqueue(client, "slow")
        rest = [_enqueue(client, name) for name in ("b", "c", "d")]

        async def first_worker() -> tuple[list[str], float, bool]:
            stop = asyncio.Event()
            config = fast_config(
                db, max_global_concurrency=1, prefetch=3, lease_ttl_seconds=30, shutdown_grace_seconds=20
            )
            task = asyncio.create_task(run_loops(default_loops(app), config, stop))
            deadline = time.monotonic() + 20
            while await asyncio.to_thread(statuses, client, [slow, *rest]) != ["running"] * 4:
                assert time.monotonic() < deadline, "the worker did not claim ahead"
                await asyncio.sleep(0.05)
            stop.set()
            stopped = time.monotonic()
            while await asyncio.to_thread(statuses, client, rest) != ["queued"] * 3:
                assert time.monotonic() - stopped < 5, "the waiting jobs were not handed back"
                await asyncio.sleep(0.05)
            handed_back = time.monotonic() - stopped
            still_running = not task.done()
            await asyncio.wait_for(task, 30)
            return await asyncio.to_thread(statuses, client, [slow]), handed_back, still_running

        slow_status, handed_back, still_running = asyncio.run(first_worker())
        assert still_running, "handed back before the running job's grace period ended"
        assert handed_back < 3
        assert slow_status == ["succeeded"]
        before = [client.get_job(job_id) for job_id in rest]
        assert [(j["attempt"], j["total_attempts"]) for j in before] == [(0, 1)] * 3
        assert all(j["attempts"] == [] for j in before), "a released claim is no attempt"

        took = run_worker_until(
            app, fast_config(db, worker_id="second"), lambda c: finished(c, rest), timeout=15
        )
        after = [client.get_job(job_id) for job_id in rest]
        histories = [_events(db, job_id) for job_id in rest]
    assert took < 15  # well before the 30 s leases of the first worker would have run out
    assert [j["status"] for j in after] == ["succeeded"] * 3
    assert [[(a["attempt"], a["worker_id"]) for a in j["attempts"]] for j in after] == [[(2, "second")]] * 3
    assert [j["attempt"] for j in after] == [1] * 3
    # claims write no event: the released one records the first worker's claim; the second's,
    # which succeeded, is on the job row (its attempts above)
    assert histories == [["released"]] * 3
    assert starts == ["slow", "b", "c", "d"], "each ran once"


def test_an_urgent_job_goes_ahead_of_the_held_ones(db: str) -> None:
    """The local queue stays in claim order: an urgent job enqueued later waits for the running
    one and the refill that claims it, then goes ahead of the held jobs not started yet."""
    starts: list[str] = []
    app = _app(starts, {"a": 1.5, "b": 0.5})
    with Client.connect(db) as client:
        ids = [_enqueue(client, name, priority=50) for name in ("a", "b", "c", "d", "e")]
        urgent: list[Any] = []

        def check(c: Client) -> bool:
            if not urgent and statuses(c, ids[:3]) == ["running"] * 3:
                urgent.append(_enqueue(c, "urgent", priority=0))
            return bool(urgent) and finished(c, ids + urgent)

        config = fast_config(db, max_global_concurrency=1, prefetch=2, claim_batch_size=10)
        run_worker_until(app, config, check, timeout=30)
    # a runs (1.5 s), b and c wait; a ends, b starts (0.5 s) and the refill claims the urgent
    # job, which is merged ahead of c
    assert starts == ["a", "b", "urgent", "c", "d", "e"]


def test_prefetch_zero_claims_only_for_free_slots(db: str) -> None:
    starts: list[str] = []
    app = _app(starts, {f"j{i}": 0.3 for i in range(6)})
    with Client.connect(db) as client:
        ids = [_enqueue(client, f"j{i}") for i in range(6)]
        peak_in_db = 0

        def check(c: Client) -> bool:
            nonlocal peak_in_db
            peak_in_db = max(peak_in_db, sum(d.running for d in c.queue_depth()))
            return finished(c, ids)

        run_worker_until(app, fast_config(db, max_global_concurrency=1, prefetch=0), check, timeout=30)
    assert peak_in_db <= 1 + 1  # the running one, and one outcome not written yet
    assert starts == [f"j{i}" for i in range(6)]


def _bound_after(worker: Worker, finished: int, seconds: float) -> int:
    """The worker's local-queue bound once ``finished`` handlers ended over ``seconds``."""
    worker._rate_at -= seconds
    worker._finished += finished
    return worker._queue_bound()


def test_the_default_bound_follows_the_handlers_rate() -> None:
    """Unset, JOBS_PREFETCH is about 0.1 s of the worker's own throughput: never below its
    slots, never above 1000. Set, it is a fixed bound whatever the rate."""
    adaptive = Worker(App(), cast(AsyncClient, None), Config(max_global_concurrency=10))
    assert adaptive._queue_bound() == 10, "no rate measured yet: one slot's worth each"
    assert _bound_after(adaptive, 5, 1.0) == 10, "slow handlers: still one slot's worth each"
    assert 390 <= _bound_after(adaptive, 4000, 1.0) <= 400, "0.1 s of 4,000 a second"
    assert 400 < _bound_after(adaptive, 300, 0.05) < 1000, "a short sample moves it part of the way"
    assert _bound_after(adaptive, 100_000, 1.0) == 1000, "the ceiling"
    assert _bound_after(adaptive, 0, 5.0) == 10, "an idle spell brings it down again"
    fixed = Worker(App(), cast(AsyncClient, None), Config(max_global_concurrency=10, prefetch=3))
    assert _bound_after(fixed, 100_000, 1.0) == 3


def test_slow_handlers_hold_what_they_finish_in_the_window_not_a_slots_worth() -> None:
    """Handlers whose mean run time is known to be PREFETCH_SECONDS (0.1 s) or more get what
    they finish in 0.1 s, not one slot's worth each: a claim's round trip is a small part of
    such a run, and a job held ahead waits most of one while another worker might have
    started it. Faster handlers, or none finished yet: one slot's worth each at least."""

    def bound_after(worker: Worker, finished: int, handler_seconds: float) -> int:
        worker._handler_seconds += handler_seconds
        return _bound_after(worker, finished, 1.0)

    worker = Worker(App(), cast(AsyncClient, None), Config(max_global_concurrency=10))
    assert worker._queue_bound() == 10, "no handler finished yet: one slot's worth each"
    assert bound_after(worker, 5, 5 * 1.0) == 0, "5 one-second runs in a second: none ahead"
    assert bound_after(worker, 51, 51 * 0.2) == 5, "51 runs of 0.2 s in a second: 0.1 s of them"
    assert bound_after(worker, 0, 0.0) == 0, "an idle spell keeps the known run time"
    assert bound_after(worker, 201, 201 * 0.05) == 20, "runs of 50 ms: 0.1 s of 201 a second"
    assert bound_after(worker, 50, 50 * 0.05) == 10, "... and never below a slot's worth"


def test_a_claim_the_handlers_ran_dry_waiting_for_doubles_the_bound() -> None:
    """Slow start: a full claim sent while the worker had work, answered to an empty local
    queue and an idle slot, doubles the bound at once (up to the ceiling); a claim sent
    idle, a short claim, a job still waiting or every slot busy leave it; the rate's next
    sample brings it back down."""
    worker = Worker(App(), cast(AsyncClient, None), Config(max_global_concurrency=10))
    assert worker._queue_bound() == 10
    worker._claimed_while_busy(busy=True, full=True)
    assert worker._queue_bound() == 20, "the handlers ran dry: twice the bound"
    worker._claimed_while_busy(busy=True, full=True)
    assert worker._queue_bound() == 40
    worker._claimed_while_busy(busy=False, full=True)
    assert worker._queue_bound() == 40, "sent while idle (a start, a wake-up): nothing learnt"
    worker._claimed_while_busy(busy=True, full=False)
    assert worker._queue_bound() == 40, "a short claim: the ready jobs ran out, not the bound"
    worker._queue.append(cast(Any, "a waiting job"))
    worker._claimed_while_busy(busy=True, full=True)
    assert worker._queue_bound() == 40, "a job still waited: the claim came in time"
    worker._queue.clear()
    worker._handlers = {cast(Any, i): cast(Any, None) for i in range(10)}
    worker._claimed_while_busy(busy=True, full=True)
    assert worker._queue_bound() == 40, "every slot busy: the claim came in time"
    worker._handlers = {}
    for _ in range(10):
        worker._claimed_while_busy(busy=True, full=True)
    assert worker._queue_bound() == 1000, "the ceiling"
    assert _bound_after(worker, 5, 1.0) == 10, "a second of slow handlers brings it back"


def test_a_claim_the_handlers_ran_dry_waiting_for_sets_the_bound_from_their_mean_time() -> None:
    """Once handlers have finished, a ran-dry claim raises the bound at once to what the slots
    get through at the handlers' mean run time in PREFETCH_SECONDS (slots / mean time), not
    just twice the bound; never above the ceiling, never below twice the bound."""

    def ran_dry(handler_time: float, slots: int = 10) -> int:
        worker = Worker(App(), cast(AsyncClient, None), Config(max_global_concurrency=slots))
        worker._handler_time = handler_time
        worker._claimed_while_busy(busy=True, full=True)
        return worker._queue_bound()

    assert ran_dry(0.005) == 200, "10 slots at 5 ms: 2,000 a second, 0.1 s of it"
    assert ran_dry(0.005, slots=2) == 40
    assert ran_dry(0.00001) == 1000, "no-op handlers: the ceiling in one step"
    assert ran_dry(1.0) == 1, "one-second handlers: what the slots get through in 0.1 s, one job"
    assert ran_dry(0.0) == 20, "no handler finished yet: twice the bound"


def test_the_mean_handler_time_is_taken_over_the_rates_sample() -> None:
    """The handlers' mean run time is the mean since the rate's last sample; a sample with no
    finished handler keeps the last one's."""
    app = App()

    @app.job("t.timed")
    async def timed(_ctx: JobContext) -> None:
        return None

    worker = Worker(app, cast(AsyncClient, None), Config(max_global_concurrency=4))
    at = datetime(2026, 1, 1, tzinfo=UTC)
    job = ClaimedJob(
        job_id=uuid4(), job_type="t.timed", queue="default", priority=0, payload={}, attempt=1,
        max_attempts=3, lease_token=uuid4(), lease_expires_at=at, timeout_seconds=None, step=None,
        state=None, progress=None, organization_id=None, workflow_run_id=None,
        workflow_step_key=None, run_at=at, started_at=at,
    )  # fmt: skip

    def run_timed(*clock: float) -> None:
        """Run the handler once per (start, end) pair of ``clock``, as the worker's clock reads."""
        readings = iter(clock)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(worker_module.time, "perf_counter", lambda: next(readings))
            for _ in range(len(clock) // 2):
                asyncio.run(worker._execute(_Running(job)))
                worker._finished += 1

    assert worker._mean_handler_time() == 0.0, "none finished yet"
    run_timed(0.0, 0.010, 1.0, 1.030)  # 10 ms, then 30 ms
    assert worker._mean_handler_time() == pytest.approx(0.020)
    _bound_after(worker, 0, 1.0)  # the rate's sample: a new window starts
    assert worker._mean_handler_time() == pytest.approx(0.020), "nothing since: the last window's"
    run_timed(2.0, 2.500)
    assert worker._mean_handler_time() == pytest.approx(0.500)
    _bound_after(worker, 0, 1.0)
    _bound_after(worker, 0, 1.0)
    assert worker._mean_handler_time() == pytest.approx(0.500), "an idle sample keeps it"
    assert len(worker._buffer) == 3, "each run's outcome was buffered"


def test_fast_handlers_are_claimed_in_large_batches_and_slow_ones_are_not_hoarded(db: str) -> None:
    """Default settings, two slots. 3,000 no-op jobs: the claims grow far beyond the slots
    (a few dozen round trips, not one per two jobs). Then 12 jobs of 0.2 s: the worker holds
    at most its slots plus one slot's worth, so a second worker would find the rest queued."""
    asked: list[int] = []
    claim = AsyncClient.claim_jobs

    async def counting_claim(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs["max_jobs"])
        return await claim(self, *args, **kwargs)

    starts: list[str] = []
    app = _app(starts)
    with Client.connect(db) as client, pytest.MonkeyPatch.context() as patch:
        patch.setattr(AsyncClient, "claim_jobs", counting_claim)
        batch = [{"job_type": "t.named", "payload": {"name": f"f{i}"}} for i in range(3000)]
        fast_ids = [item.job_id for item in client.enqueue_jobs(batch)]
        config = fast_config(db, max_global_concurrency=2)
        run_worker_until(app, config, lambda c: not any(d.ready or d.running for d in c.queue_depth()), 60)
        assert len(starts) == 3000 and len(set(starts)) == 3000
        assert max(asked) >= 50, f"claims stayed small: {sorted(asked)[-5:]}"
        # the second claim ran dry: the next asks for what the slots get through in 0.1 s at
        # the handlers' mean time, not twice the last (doubling took six round trips to 50)
        assert next(i for i, n in enumerate(asked) if n >= 50) <= 3, f"claims grew slowly: {asked[:10]}"
        assert len(asked) < 300, f"{len(asked)} claims for 3,000 jobs"
        assert {c.status: c.jobs for c in client.count_jobs()}["succeeded"] == len(fast_ids)

        slow = [client.enqueue_job("t.named", {"name": f"s{i}", "seconds": 0.2}).job_id for i in range(12)]
        peak_in_db = 0

        def check(c: Client) -> bool:
            nonlocal peak_in_db
            peak_in_db = max(peak_in_db, sum(d.running for d in c.queue_depth()))
            return finished(c, slow)

        run_worker_until(app, config, check, timeout=30)
        assert statuses(client, slow) == ["succeeded"] * 12
    # two running, two waiting (one slot's worth each), at most two outcomes not written yet
    assert peak_in_db <= 2 + 2 + 2


def test_a_handler_still_running_after_the_grace_period_is_abandoned_by_name(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Stop with a handler that outlives the grace period: the worker logs which job it
    abandons, cancels the handler, writes nothing for it and returns; the job stays running
    under its lease (the reaper's business once it expires), while a job that finished
    within the grace period is written."""
    starts: list[str] = []
    app = _app(starts, {"stuck": 60.0, "quick": 0.5})
    with Client.connect(db) as client:
        stuck = _enqueue(client, "stuck")
        quick = _enqueue(client, "quick")

        async def worker() -> float:
            stop = asyncio.Event()
            config = fast_config(db, max_global_concurrency=2, lease_ttl_seconds=30, shutdown_grace_seconds=2)
            task = asyncio.create_task(run_loops(default_loops(app), config, stop))
            deadline = time.monotonic() + 20
            while sorted(starts) != ["quick", "stuck"]:
                assert time.monotonic() < deadline, "the handlers did not start"
                await asyncio.sleep(0.05)
            stop.set()
            stopped = time.monotonic()
            await asyncio.wait_for(task, 30)
            return time.monotonic() - stopped

        with caplog.at_level("WARNING", logger="pgrun.worker"):
            took = asyncio.run(worker())
        assert 2 <= took < 10
        assert f"abandoning job {stuck} (t.named) after the grace period" in caplog.text
        assert statuses(client, [stuck, quick]) == ["running", "succeeded"]


def test_the_first_claim_goes_out_while_the_definitions_register(db: str) -> None:
    """At a start the first claim is sent without waiting for the definitions' upsert (its
    round trip overlaps the claim's); no handler starts until the upsert has answered."""
    starts: list[str] = []
    app = _app(starts)
    upsert = AsyncClient.upsert_job_definition
    gate = asyncio.Event()

    async def held_upsert(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        await gate.wait()
        return await upsert(self, *args, **kwargs)

    with Client.connect(db) as client, pytest.MonkeyPatch.context() as patch:
        patch.setattr(AsyncClient, "upsert_job_definition", held_upsert)
        job_id = _enqueue(client, "early")

        async def main() -> tuple[list[str], list[str]]:
            stop = asyncio.Event()
            task = asyncio.create_task(run_loops(default_loops(app), fast_config(db), stop))
            deadline = time.monotonic() + 10
            while await asyncio.to_thread(statuses, client, [job_id]) != ["running"]:
                assert time.monotonic() < deadline, "no claim while the definitions registered"
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)
            before = list(starts)
            gate.set()
            while await asyncio.to_thread(statuses, client, [job_id]) != ["succeeded"]:
                assert time.monotonic() < deadline, "the claimed job did not run after the upsert"
                await asyncio.sleep(0.02)
            stop.set()
            await asyncio.wait_for(task, 10)
            return before, list(starts)

        before, after = asyncio.run(main())
    assert before == [], "a handler started before the definitions were registered"
    assert after == ["early"]


def test_a_refused_registration_ends_the_worker_and_hands_back_what_it_claimed(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The upsert is refused (not the server's weather) after the first claim answered: the
    worker ends with the refusal, as a refused claim ends it, and the job it claimed is
    queued again at once, unstarted, no attempt spent."""
    starts: list[str] = []
    app = _app(starts)
    worker_built: list[Worker] = []
    loops = default_loops(app)
    make_worker = dict(loops)["worker"]

    def build_worker(client: AsyncClient, config: Config) -> Any:
        worker_built.append(cast(Worker, make_worker(client, config)))
        return worker_built[-1]

    async def refused_upsert(self: AsyncClient, *args: Any, **kwargs: Any) -> Any:
        await worker_built[0].claimed_once.wait()
        raise PermissionDeniedError("access.denied")

    with Client.connect(db) as client, pytest.MonkeyPatch.context() as patch:
        patch.setattr(AsyncClient, "upsert_job_definition", refused_upsert)
        job_id = _enqueue(client, "refused")
        built = [("worker", build_worker), *[(name, f) for name, f in loops if name != "worker"]]
        asyncio.run(asyncio.wait_for(run_loops(built, fast_config(db, lease_ttl_seconds=60)), 20))
        job = client.get_job(job_id)
    assert starts == []
    assert job["status"] == "queued", "handed back at once, not left for its 60 s lease"
    assert (job["attempt"], job["attempts"]) == (0, [])
    assert "a loop crashed" in caplog.text and "access.denied" in caplog.text


def test_jobs_claimed_ahead_leave_a_capped_types_room_to_another_worker(db: str) -> None:
    """Sixteen one-second jobs of a type capped at 8, two workers of four slots. The first,
    started alone, claimed eight (four for its slots, four ahead for its local queue): the
    cap was full while four of them waited, and the second worker, started next, got none
    until the first four ended: four ran at once where the cap allows eight. A worker's claims
    pass its slots (claim_jobs' slots), so it holds at most four jobs of a capped type and the
    second worker runs the other four at once."""
    starts: list[tuple[str, float]] = []

    def app_of(worker: str) -> App:
        app = App()

        @app.job("t.capped")
        async def capped(ctx: JobContext) -> Any:
            starts.append((worker, time.monotonic()))
            await asyncio.sleep(1)

        return app

    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('t.capped', max_concurrency => 8)")
    with Client.connect(db) as client:
        ids = [r.job_id for r in client.enqueue_jobs([{"job_type": "t.capped"}] * 16)]

    def config(worker: str) -> Config:
        return fast_config(db, worker_id=worker, max_global_concurrency=4, poll_interval_ms=60_000)

    async def main() -> None:
        stop = asyncio.Event()
        first = asyncio.create_task(run_loops(default_loops(app_of("a"), reaper=False), config("a"), stop))
        while len(starts) < 4:  # the first worker runs four and holds what it claimed ahead
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        second = asyncio.create_task(run_loops(default_loops(app_of("b"), reaper=False), config("b"), stop))
        with Client.connect(db) as client:
            while not await asyncio.to_thread(finished, client, ids):
                await asyncio.sleep(0.05)
        stop.set()
        await asyncio.gather(first, second)

    asyncio.run(asyncio.wait_for(main(), 30))
    first_four_end = starts[3][1] + 1
    assert [w for w, at in starts if at < first_four_end].count("b") == 4, starts
    with Client.connect(db) as client:
        assert statuses(client, ids) == ["succeeded"] * 16


def test_a_worker_of_slow_handlers_leaves_the_jobs_it_cannot_start_queued(db: str) -> None:
    """Two slots, handlers that took 0.3 s, an idle spell, then four jobs of 0.5 s at once:
    the worker starts two and leaves two queued, for any worker with a free slot. It used
    to hold all four (one slot's worth ahead each), two of them waiting half a second."""
    starts: list[str] = []
    burst = [f"b{i}" for i in range(4)]
    app = _app(starts, {"w0": 0.3, "w1": 0.3} | dict.fromkeys(burst, 0.5))
    peak = {"running": 0}
    phase: dict[str, Any] = {}
    with Client.connect(db) as client:
        warm = [_enqueue(client, name) for name in ("w0", "w1")]

        def check(c: Client) -> bool:
            if "burst" not in phase:
                if not finished(c, warm):
                    return False
                time.sleep(0.5)  # idle
                phase["burst"] = [_enqueue(c, name) for name in burst]
                phase["at"] = time.monotonic()
            if time.monotonic() - phase["at"] < 0.4:  # before any burst job can end
                peak["running"] = max(peak["running"], sum(d.running for d in c.queue_depth()))
                return False
            return finished(c, phase["burst"])

        run_worker_until(app, fast_config(db, max_global_concurrency=2), check, timeout=30)
        assert statuses(client, phase["burst"]) == ["succeeded"] * 4
    assert peak["running"] == 2, "two started, two left queued, none held ahead"
    assert sorted(starts) == sorted(["w0", "w1", *burst])
