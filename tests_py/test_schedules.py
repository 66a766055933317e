"""Cron schedules end to end: the scheduler loop (pgrun.scheduler) against real sessions.

Time is simulated: the test clock is installed (pgrun.testing.install_test_clock) and every
scheduler connection sets ``pgrun.fake_now`` before each pass, so a day passes in seconds and
no test sleeps through real time. Expected plan times always come from croniter's own forward
iteration (``get_next``) in the schedule's zone.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from croniter import croniter
from psycopg.rows import dict_row

from pgrun import scheduler as sched
from pgrun.client import Client
from pgrun.errors import InvalidInputError
from pgrun.scheduler import ScheduleDeclaration
from pgrun.testing import install_test_clock
from schedule_support import T0, at, declare, scheduler_at, session, ticks


@pytest.fixture
def db(db: str) -> str:
    """The migrated database, with the test clock that honours pgrun.fake_now."""
    install_test_clock(db)
    return db


def expected(cron: str, zone: str, after: datetime, upto: datetime) -> list[datetime]:
    it = croniter(cron, after.astimezone(ZoneInfo(zone)))
    out: list[datetime] = []
    while True:
        t: datetime = it.get_next(datetime)
        if t > upto:
            return out
        out.append(t.astimezone(UTC))


def plan_times(conn: psycopg.Connection[Any], name: str) -> list[datetime]:
    return [p for _, p in ticks(conn, name)]


# -- concurrency ---------------------------------------------------------------------------

CONCURRENT = [
    {"name": "every5", "cron": "*/5 * * * *", "timezone": "UTC"},
    {"name": "hourly-berlin", "cron": "0 * * * *", "timezone": "Europe/Berlin"},
    {"name": "every7", "cron": "*/7 * * * *", "timezone": "America/New_York"},
    {"name": "seconds", "cron": "15 */2 * * * 30", "timezone": "UTC"},
    {"name": "weekday-930", "cron": "30 9 * * 1-5", "timezone": "Asia/Kolkata"},
    {
        "name": "scoped",
        "cron": "*/15 * * * *",
        "timezone": "UTC",
        "scope_kind": "key",
        "scopes": ("a", "b", "c"),
    },
]


@pytest.mark.parametrize("schedulers", [2, 4])
def test_concurrent_schedulers_fire_every_plan_exactly_once(db: str, schedulers: int) -> None:
    with session(db) as conn:
        for spec in CONCURRENT:
            declare(conn, T0, job_type="test.cron", catch_up="all", backfill_limit=10000, **spec)

    end = T0 + timedelta(days=1)
    clock = {"now": T0}
    lock = threading.Lock()
    stop = threading.Event()
    reports: list[sched.PassReport] = []
    failures: list[BaseException] = []

    def scheduler(index: int) -> None:
        try:
            with scheduler_at(db) as s:
                while not stop.is_set():
                    with lock:
                        now = clock["now"]
                    # a 1 s claim: the simulated clock outruns it, so claims expire mid-pass and
                    # other schedulers take the schedule over: ticks must still hold
                    report = s.pass_at(now, f"s{index}", max_schedules=3, lease_seconds=1)
                    with lock:
                        reports.append(report)
        except BaseException as exc:  # surfaced by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=scheduler, args=(i,)) for i in range(schedulers)]
    for t in threads:
        t.start()
    moment = T0
    while moment < end:
        moment += timedelta(minutes=1)
        with lock:
            clock["now"] = moment
        time.sleep(0.002)
    stop.set()
    for t in threads:
        t.join(30)
    assert not failures

    with session(db) as conn, scheduler_at(db) as s:
        # whatever the threads left: one last pass at the end of the day
        while s.pass_at(end, "final").claimed:
            pass
        total = 0
        for spec in CONCURRENT:
            want = expected(spec["cron"], spec["timezone"], T0, end)
            scopes = spec.get("scopes") or ("",)
            got = ticks(conn, spec["name"])
            assert got == [(s, p) for p in want for s in scopes], spec["name"]
            total += len(got)
        jobs = conn.execute(
            """
            SELECT count(*), count(DISTINCT (j.schedule_id, j.run_at, j.payload)),
                   count(*) FILTER (WHERE t.job_id IS NULL)
            FROM pgrun.jobs AS j
            LEFT JOIN pgrun.schedule_ticks AS t ON t.job_id = j.id AND t.plan_time = j.run_at
            """
        ).fetchone()
        assert jobs == (total, total, 0)
    # every creation any scheduler reported is a distinct tick (the final pass made the rest)
    created = [job for r in reports for job in r.job_ids]
    assert len(created) == len(set(created)) <= total
    assert not any(r.errors for r in reports)
    # the race was real: claims expired under schedulers and were taken over
    assert sum(r.claims_lost for r in reports) > 0


def test_racing_fires_of_one_plan_time_make_one_job(db: str) -> None:
    with session(db) as conn:
        declare(conn, T0, name="race", cron="* * * * *", job_type="test.cron")
        schedule_id = conn.execute("SELECT id FROM pgrun.job_schedules WHERE name = 'race'").fetchone()
        assert schedule_id is not None
    # Each session fires under a claim of its own (fire_schedule needs a live one), as two
    # schedulers would if claims alone decided: the second takes its claim once the first's
    # fire released the row, then fires the same plan time. The tick decides.
    claim = (
        "UPDATE pgrun.job_schedules SET claimed_by = 'x', claim_token = gen_random_uuid(),"
        " claim_expires_at = pgrun.now() + interval '1 minute' WHERE id = %s RETURNING claim_token"
    )
    fire = "SELECT job_id, created FROM pgrun.fire_schedule(%s, ARRAY[%s]::timestamptz[], %s, %s)"
    plan_time, next_run = T0 + timedelta(minutes=1), T0 + timedelta(minutes=2)
    results: list[tuple[Any, ...]] = []

    def claim_and_fire(conn: psycopg.Connection[tuple[Any, ...]]) -> tuple[Any, ...]:
        token = conn.execute(claim, (schedule_id[0],)).fetchone()
        assert token is not None
        return conn.execute(fire, (schedule_id[0], plan_time, next_run, token[0])).fetchall()[0]

    with psycopg.connect(db) as first, psycopg.connect(db) as second:
        for c in (first, second):
            at(c, next_run)
        results.append(claim_and_fire(first))

        def other() -> None:
            results.append(claim_and_fire(second))
            second.commit()

        thread = threading.Thread(target=other)
        thread.start()
        # the second session waits on the first's schedule row lock
        with session(db) as watch:
            for _ in range(200):
                waiting = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE wait_event_type = 'Lock' AND datname = current_database()"
                ).fetchone()
                if waiting and waiting[0]:
                    break
                time.sleep(0.01)
            assert waiting and waiting[0] == 1
        first.commit()
        thread.join(10)
    assert [r[1] for r in results] == [True, False]
    assert results[0][0] == results[1][0]
    with session(db) as conn:
        assert conn.execute("SELECT count(*) FROM pgrun.jobs").fetchone() == (1,)


# -- clocks --------------------------------------------------------------------------------


def test_a_scheduler_whose_host_clock_is_hours_off_changes_nothing(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with session(db) as conn:
        declare(conn, T0, name="clock", cron="*/10 * * * *", job_type="test.cron", catch_up="all")

    skew = timedelta(hours=7)
    real_time = time.time

    class SkewedDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> SkewedDatetime:  # type: ignore[override]
            base = datetime.fromtimestamp(real_time(), tz) + skew
            return cls.fromtimestamp(base.timestamp(), tz)

    monkeypatch.setattr(time, "time", lambda: real_time() + skew.total_seconds())
    monkeypatch.setattr(sched, "datetime", SkewedDatetime)

    with scheduler_at(db) as skewed, scheduler_at(db) as honest, session(db) as conn:
        moment = T0
        for step in range(36):
            moment += timedelta(minutes=5)
            (skewed if step % 2 else honest).pass_at(moment, "skewed" if step % 2 else "honest")
        assert plan_times(conn, "clock") == expected("*/10 * * * *", "UTC", T0, moment)
        row = conn.execute(
            "SELECT next_run_at, planned_until FROM pgrun.job_schedules WHERE name = 'clock'"
        ).fetchone()
        assert row == (moment + timedelta(minutes=10), moment)


def test_plan_times_in_the_future_are_refused(db: str) -> None:
    with session(db) as conn:
        declare(conn, T0, name="future", cron="* * * * *", job_type="test.cron")
        at(conn, T0 + timedelta(minutes=1))
        with pytest.raises(psycopg.Error) as err:
            conn.execute(
                "SELECT * FROM pgrun.fire_schedule("
                "(SELECT id FROM pgrun.job_schedules), ARRAY[%s]::timestamptz[], %s, gen_random_uuid())",
                (T0 + timedelta(hours=5), T0 + timedelta(hours=6)),
            )
        assert err.value.sqlstate == "RQ003"
        assert err.value.diag.message_primary == "schedule.invalid_plan_times"


# -- downtime and catch-up -------------------------------------------------------------------


def test_downtime_then_restart_obeys_each_catch_up_policy_and_the_backfill_cap(db: str) -> None:
    cron = "*/10 * * * *"
    with session(db) as conn, scheduler_at(db) as s:
        declare(conn, T0, name="latest", cron=cron, job_type="test.cron", catch_up="latest")
        declare(conn, T0, name="all", cron=cron, job_type="test.cron", catch_up="all", backfill_limit=4)
        declare(conn, T0, name="all-uncapped", cron=cron, job_type="test.cron", catch_up="all")
        declare(conn, T0, name="none", cron=cron, job_type="test.cron", catch_up="none")
        s.pass_at(T0 + timedelta(seconds=1))  # running, nothing due yet
        assert conn.execute("SELECT count(*) FROM pgrun.schedule_ticks").fetchone() == (0,)

        # down for an hour; back 30 s after a plan time: within the 60 s grace of none
        back = T0 + timedelta(hours=1, seconds=30)
        hour = T0 + timedelta(hours=1)
        report = s.pass_at(back)
        assert plan_times(conn, "latest") == [hour]
        assert plan_times(conn, "all") == [T0 + timedelta(minutes=m) for m in (30, 40, 50, 60)]
        assert plan_times(conn, "all-uncapped") == [T0 + timedelta(minutes=m) for m in range(10, 61, 10)]
        assert plan_times(conn, "none") == [hour]
        assert report.skipped >= 1

        # none, back 3 minutes after a plan time: too late, skipped
        declare(conn, back, name="none-late", cron=cron, job_type="test.cron", catch_up="none")
        s.pass_at(T0 + timedelta(hours=1, minutes=13))
        assert plan_times(conn, "none-late") == []
        # back in step: the next plan time fires on time, the missed one never
        s.pass_at(T0 + timedelta(hours=1, minutes=20, seconds=2))
        assert plan_times(conn, "none-late") == [T0 + timedelta(hours=1, minutes=20)]
        assert plan_times(conn, "latest") == [
            hour,
            hour + timedelta(minutes=10),
            hour + timedelta(minutes=20),
        ]
        # a second, longer outage: latest fires once, the most recent plan time
        s.pass_at(T0 + timedelta(hours=5, minutes=5))
        assert plan_times(conn, "latest")[-1] == T0 + timedelta(hours=5)
        assert len(plan_times(conn, "latest")) == 4
        # all with its cap: the four most recent of the outage
        assert plan_times(conn, "all")[-5:] == [hour + timedelta(minutes=20)] + [
            T0 + timedelta(hours=4, minutes=m) for m in (30, 40, 50, 60)
        ]
        assert len(plan_times(conn, "all-uncapped")) == 30


def test_none_fires_a_plan_time_exactly_the_grace_late_and_skips_one_a_second_later(db: str) -> None:
    """``none`` fires plan times "at most misfire_grace_seconds late": a pass exactly the grace
    after a plan time fires it, one a second later skips it."""
    cron = "*/10 * * * *"
    with session(db) as conn, scheduler_at(db) as s:
        declare(
            conn, T0 + timedelta(minutes=5), name="edge", cron=cron, job_type="test.cron", catch_up="none"
        )
        report = s.pass_at(T0 + timedelta(minutes=11))  # 0:10 is 60 s late: within the grace
        assert plan_times(conn, "edge") == [T0 + timedelta(minutes=10)]
        assert (report.fired, report.skipped) == (1, 0)
        declare(
            conn, T0 + timedelta(minutes=15), name="late", cron=cron, job_type="test.cron", catch_up="none"
        )
        report = s.pass_at(T0 + timedelta(minutes=21, seconds=1))  # 0:20 is 61 s late: not
        assert plan_times(conn, "edge") == [T0 + timedelta(minutes=10)]
        assert plan_times(conn, "late") == []
        assert (report.fired, report.skipped) == (0, 2)


def test_a_long_outage_of_a_per_second_schedule_plans_quickly(db: str) -> None:
    with session(db) as conn, scheduler_at(db) as s:
        declare(
            conn, T0, name="secs", cron="* * * * * *", job_type="test.cron", catch_up="all", backfill_limit=3
        )
        started = time.monotonic()
        s.pass_at(T0 + timedelta(days=3, seconds=0.5))
        assert time.monotonic() - started < 5
        assert plan_times(conn, "secs") == [T0 + timedelta(days=3, seconds=s) for s in (-2, -1, 0)]


# -- DST -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "day",
    [datetime(2031, 3, 29, 12, tzinfo=UTC), datetime(2031, 10, 25, 12, tzinfo=UTC)],
    ids=["spring-forward", "fall-back"],
)
def test_dst_transitions_in_a_named_zone_follow_croniter(db: str, day: datetime) -> None:
    crons = {
        "daily-0230": "30 2 * * *",
        "hourly": "0 * * * *",
        "half-hourly": "*/30 * * * *",
        "daily-0300": "0 3 * * *",
    }
    with session(db) as conn, scheduler_at(db) as s:
        for name, cron in crons.items():
            declare(
                conn,
                day,
                name=name,
                cron=cron,
                job_type="test.cron",
                timezone="Europe/Berlin",
                catch_up="all",
            )
        moment = day
        end = day + timedelta(days=1)
        while moment < end:
            moment += timedelta(minutes=10)
            s.pass_at(moment)
        for name, cron in crons.items():
            assert plan_times(conn, name) == expected(cron, "Europe/Berlin", day, end), name
        # one job per distinct instant: the hourly schedule fires 24 times in 24 real hours
        assert len(plan_times(conn, "hourly")) == 24


# -- pause, resume, delete --------------------------------------------------------------------


def test_pausing_stops_ticks_and_resuming_replays_only_when_the_policy_says_so(db: str) -> None:
    cron = "*/5 * * * *"
    with session(db) as conn, scheduler_at(db) as s:
        for policy in ("latest", "none", "all"):
            declare(conn, T0, name=policy, cron=cron, job_type="test.cron", catch_up=policy)
        for minute in range(1, 21):
            s.pass_at(T0 + timedelta(minutes=minute))
        before = {p: plan_times(conn, p) for p in ("latest", "none", "all")}
        assert all(v == [T0 + timedelta(minutes=m) for m in (5, 10, 15, 20)] for v in before.values())

        at(conn, T0 + timedelta(minutes=21))
        for policy in ("latest", "none", "all"):
            conn.execute("SELECT pgrun.pause_schedule(%s)", (policy,))
        for minute in range(21, 61):
            report = s.pass_at(T0 + timedelta(minutes=minute))
            assert report.claimed == 0
        assert {p: plan_times(conn, p) for p in before} == before

        resume = T0 + timedelta(minutes=61)
        at(conn, resume)
        for policy in ("latest", "none", "all"):
            conn.execute("SELECT pgrun.resume_schedule(%s)", (policy,))
        s.pass_at(resume)
        assert plan_times(conn, "latest") == before["latest"]
        assert plan_times(conn, "none") == before["none"]
        replayed = [T0 + timedelta(minutes=m) for m in range(25, 61, 5)]
        assert plan_times(conn, "all") == before["all"] + replayed
        s.pass_at(T0 + timedelta(minutes=65, seconds=1))
        for policy in ("latest", "none"):
            assert plan_times(conn, policy) == before[policy] + [T0 + timedelta(minutes=65)]


def test_upsert_at_every_start_neither_resumes_nor_replays(db: str) -> None:
    with session(db) as conn:
        declare(conn, T0, name="app", cron="0 * * * *", job_type="test.cron")
        at(conn, T0 + timedelta(minutes=1))
        conn.execute("SELECT pgrun.pause_schedule('app')")
        row = declare(conn, T0 + timedelta(minutes=2), name="app", cron="0 * * * *", job_type="test.cron")
        assert (row.created, row.changed) == (False, False)
    with Client.connect(db) as client:
        (listed,) = client.list_schedules()
        assert listed.paused_at == T0 + timedelta(minutes=1)


def test_python_validates_cron_before_sql() -> None:
    with pytest.raises(InvalidInputError) as err:
        ScheduleDeclaration(name="x", cron="61 * * * *", job_type="test.cron")
    assert err.value.code == "schedule.invalid_cron"
    with pytest.raises(InvalidInputError) as err:
        ScheduleDeclaration(name="x", cron="* * * * * * *", job_type="test.cron")
    assert err.value.code == "schedule.invalid_cron"
    with pytest.raises(InvalidInputError) as err:
        ScheduleDeclaration(name="x", cron="* * * * *", job_type="test.cron", timezone="Mars/Olympus")
    assert err.value.code == "schedule.invalid_timezone"
    ScheduleDeclaration(name="x", cron="@hourly", job_type="test.cron", timezone="Europe/Berlin")


# -- the jobs schedules make -------------------------------------------------------------------


def _claim(conn: psycopg.Connection[Any], lease: int = 30) -> dict[str, Any]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute("SELECT * FROM pgrun.claim_jobs('w1', %s, 1)", (lease,))
        row = cur.fetchone()
    assert row is not None
    return row


def test_schedule_jobs_retry_and_die_like_any_job(db: str) -> None:
    with session(db) as conn, scheduler_at(db) as s:
        declare(conn, T0, name="flaky", cron="0 * * * *", job_type="test.cron", max_attempts=2)
        now = T0 + timedelta(hours=1)
        s.pass_at(now)
        at(conn, now)
        job = _claim(conn)
        out = conn.execute(
            "SELECT outcome FROM pgrun.fail_job(%s, %s, 'boom', 'first failure', true, interval '0')",
            (job["job_id"], job["lease_token"]),
        ).fetchone()
        assert out == ("retry_scheduled",)
        job = _claim(conn)
        assert job["attempt"] == 2
        out = conn.execute(
            "SELECT outcome FROM pgrun.fail_job(%s, %s, 'boom', 'second failure', true, interval '0')",
            (job["job_id"], job["lease_token"]),
        ).fetchone()
        assert out == ("dead",)
        assert conn.execute("SELECT count(*) FROM pgrun.job_dead_letters").fetchone() == (1,)
        # the tick stays fired: the plan time was fired once; its job's fate is the job's
        assert conn.execute("SELECT status FROM pgrun.schedule_ticks").fetchone() == ("fired",)
        # the schedule goes on
        s.pass_at(now + timedelta(hours=1))
        assert len(plan_times(conn, "flaky")) == 2


def test_lost_lease_reruns_the_job_unless_the_schedule_forbids_stale_reentry(db: str) -> None:
    with session(db) as conn, scheduler_at(db) as s:
        declare(conn, T0, name="plain", cron="0 * * * *", job_type="test.plain")
        declare(conn, T0, name="once", cron="0 * * * *", job_type="test.once", forbid_stale_reentry=True)
        now = T0 + timedelta(hours=1)
        s.pass_at(now)
        at(conn, now)
        for job_type in ("test.plain", "test.once"):
            claimed = conn.execute(
                "SELECT job_id FROM pgrun.claim_jobs('w1', 10, 1, NULL, ARRAY[%s])", (job_type,)
            )
            assert claimed.fetchone() is not None
        at(conn, now + timedelta(seconds=20))
        reaped = dict(
            conn.execute(
                "SELECT j.job_type, r.outcome FROM pgrun.reap_expired_leases() AS r"
                " JOIN pgrun.jobs AS j ON j.id = r.job_id"
            ).fetchall()
        )
        assert reaped == {"test.plain": "lease_expired", "test.once": "dead"}
        rows = dict(
            conn.execute(
                """
                SELECT s.name, t.status || ':' || coalesce(t.error_code, '') || ':' || j.status
                FROM pgrun.schedule_ticks AS t
                JOIN pgrun.job_schedules AS s ON s.id = t.schedule_id
                JOIN pgrun.jobs AS j ON j.id = t.job_id
                """
            ).fetchall()
        )
        assert rows == {"plain": "fired::queued", "once": "failed:stale_reentry_forbidden:dead"}


# -- the App and CLI wiring --------------------------------------------------------------------


def _fake_now_dsn(dsn: str, moment: datetime) -> str:
    return psycopg.conninfo.make_conninfo(dsn, options=f"-c pgrun.fake_now={moment.isoformat()}")


def test_app_periodic_is_upserted_and_fired_by_the_worker_scheduler_loop(db: str) -> None:
    import asyncio

    from pgrun.app import App
    from pgrun.client import AsyncClient
    from pgrun.config import Config

    app = App()

    @app.periodic("*/5 * * * *", job_type="test.cron", name="five", catch_up="all")
    @app.job("test.cron")
    async def handler(ctx: Any) -> None:
        return None

    app.periodic("0 * * * *", job_type="test.hourly")
    assert [d.name for d in app.schedules] == ["five", "test.hourly"]
    assert "scheduler" in app.loops
    with pytest.raises(ValueError):
        app.periodic("0 * * * *", job_type="test.hourly")

    async def scenario() -> None:
        for moment in (T0, T0 + timedelta(minutes=7)):
            dsn = _fake_now_dsn(db, moment)
            client = await AsyncClient.connect(dsn)
            try:
                loop = app.loops["scheduler"](client, Config(database_url=dsn))
                assert isinstance(loop, sched.Scheduler)
                await loop.upsert_declared()
                await loop.run_once()
            finally:
                await client.close()

    asyncio.run(scenario())
    with session(db) as conn:
        assert plan_times(conn, "five") == [T0 + timedelta(minutes=5)]
        assert plan_times(conn, "test.hourly") == []
    with Client.connect(db) as client:
        assert sorted(r.name for r in client.list_schedules()) == ["five", "test.hourly"]


def test_pgrun_schedules_lists_next_and_last_fire_times(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    from pgrun import cli

    with session(db) as conn, scheduler_at(db) as s:
        declare(conn, T0, name="listed", cron="*/5 * * * *", job_type="test.cron")
        s.pass_at(T0 + timedelta(minutes=5))
    assert cli.main(["schedules", "--database-url", db]) == 0
    out = capsys.readouterr().out
    assert "listed" in out and "2031-03-03 00:10" in out and "2031-03-03 00:05" in out
    args = cli.build_parser().parse_args(["worker", "some.module:app", "--no-scheduler"])
    assert args.no_scheduler is True
