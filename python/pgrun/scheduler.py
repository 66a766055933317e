"""The cron scheduler loop: claim due schedules, compute plan times with croniter, fire them.

SQL decides, Python executes. Each pass, through the client's schedule methods
(``AsyncClient.claim_due_schedules`` / ``fire_schedule`` / ``pause_unplannable_schedule``):

1. ``claim_due_schedules`` hands this scheduler a batch of due schedules (``FOR UPDATE SKIP
   LOCKED`` plus a short claim), each with what planning needs: cron, time zone, catch-up
   policy, backfill cap, misfire grace, ``planned_until`` (every plan time up to it is
   already decided) and ``db_now``, the database's clock.
2. ``plan`` (pure, croniter) lists the plan times in ``(planned_until, db_now]``, keeps the
   ones the policy says fire (``latest``: the most recent; ``all``: the most recent
   ``backfill_limit``; ``none``: those at most ``misfire_grace_seconds`` late) and computes the
   next run after ``db_now``.
3. ``fire_schedule`` makes one tick and one job per (scope, plan time), ever: a plan time
   another scheduler already fired returns its job with ``created = false``.

The host clock is never read for planning: every time comes from ``db_now``, so a scheduler
whose host clock is hours off plans exactly what the others do. Run one on every worker host:
the claims keep schedulers from duplicating work, and ``schedule_ticks`` keeps a plan time from
firing twice even when claims expire mid-pass.

There is one loop, ``Scheduler`` (asyncio): ``pgrun worker`` runs it beside the worker on its
pool (``loop_factory``, registered by ``@app.periodic`` and by ``pgrun worker`` itself), and
``run_scheduler`` / ``python -m pgrun.scheduler`` run it alone (on the event loop
``JOBS_EVENT_LOOP`` names, uvloop's by default, and a pool of its own). Its settings come from
``pgrun.config`` (``JOBS_SCHEDULE_POLL_INTERVAL_SECONDS`` and ``DATABASE_URL``; a bad value is
warned about and replaced, as for the worker). ``ScheduleDeclaration`` is a schedule declared in
code and ``validate_cron`` the full croniter check made before anything is sent to SQL.
Schedules are declared, listed, paused, resumed, deleted and run by hand through ``Client`` /
``AsyncClient`` (``pgrun schedules`` on the command line).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import os
import signal
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psycopg
from croniter import croniter

from pgrun.client import AsyncClient, loops_pool
from pgrun.config import Config, from_env
from pgrun.cron import check_cron, clip, seconds_field_warning
from pgrun.errors import InvalidInputError, LeaseLostError, PgrunError
from pgrun.eventloop import run_until_complete
from pgrun.results import ClaimedSchedule, FiredTick

if TYPE_CHECKING:
    from pgrun.loops import LoopFactory

log = logging.getLogger("pgrun.scheduler")

CATCH_UP_POLICIES = ("latest", "all", "none")
DEFAULT_MAX_SCHEDULES = 100
DEFAULT_LEASE_SECONDS = 60
#: The longest claim claim_due_schedules grants (schedule.invalid_lease_seconds beyond it).
MAX_LEASE_SECONDS = 3600
#: fire_schedule makes at most this many ticks (plan times x scopes) per call; a longer
#: catch-up is fired in chunks under one claim.
MAX_TICKS_PER_FIRE = 10000
#: fire_schedule refuses a next run further away (it would silently stop the schedule).
MAX_NEXT_RUN = timedelta(days=3652)


# -- planning (pure) --------------------------------------------------------------------


def validate_cron(cron: str, timezone: str = "UTC") -> str:
    """The expression as pgrun stores it, or raises ``InvalidInputError``
    (``schedule.invalid_cron`` / ``schedule.invalid_timezone``) unless pgrun can plan ``cron``
    in ``timezone``.

    The cron grammar (``pgrun.cron``; docs/schedules.md) is the SQL check's, exactly; then
    croniter must parse what the grammar accepted and find its next fire time.
    """
    expr = check_cron(cron)
    try:
        croniter(expr, datetime(2000, 1, 1, tzinfo=ZoneInfo("UTC"))).get_next(datetime)
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError("schedule.invalid_cron", f"cron {clip(expr)!r}: {exc}") from exc
    _zone(timezone)
    return expr


def _zone(timezone: str) -> ZoneInfo:
    if not isinstance(timezone, str) or len(timezone) > 200:
        raise InvalidInputError(
            "schedule.invalid_timezone", "the time zone is not a name of at most 200 characters"
        )
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as exc:
        raise InvalidInputError("schedule.invalid_timezone", f"time zone {timezone!r} is unknown") from exc


@dataclass(frozen=True)
class Plan:
    """What one pass fires for one schedule."""

    #: The plan times to fire, oldest first (the policy's choice among the due ones).
    plan_times: list[datetime]
    #: When the schedule is due again: the first plan time after ``planned_until``.
    next_run_at: datetime
    #: The database's now of the claim: every plan time up to it is decided by this pass.
    planned_until: datetime
    #: Due plan times the policy skipped (missed beyond the cap or the grace).
    skipped: int = 0


def _iterator(cron: str, start: datetime) -> croniter:
    return croniter(cron, start)


def due_times(
    cron: str, timezone: str, after: datetime, upto: datetime, keep: int | None
) -> tuple[list[datetime], int]:
    """Plan times t with ``after < t <= upto``, as croniter's ``get_next`` defines them in the
    zone (DST included); only the last ``keep`` when given. Returns them and how many earlier
    ones were left out.

    After a long gap (a per-second schedule down for a week) walking forward from ``after``
    would take millions of steps; then the walk starts just before the ``keep``-th plan time
    before ``upto`` (found with ``get_prev``) and the left-out count is not exact (it is then
    reported as at least 1).
    """
    # Every comparison is made in UTC: two aware datetimes with the same ZoneInfo compare by
    # wall time, so 02:30 CEST and 02:30 CET (the hour repeated at fall-back) would be "equal".
    zone = _zone(timezone)
    after_utc = after.astimezone(UTC)
    upto_utc = upto.astimezone(UTC)
    start_utc = after_utc
    jumped = False
    if keep is not None:
        back = _iterator(cron, (upto_utc + timedelta(microseconds=1)).astimezone(zone))
        candidate: datetime | None = None
        for _ in range(keep):
            candidate = back.get_prev(datetime).astimezone(UTC)
            if candidate <= after_utc:
                candidate = None
                break
        if candidate is not None and candidate - timedelta(seconds=1) > after_utc:
            start_utc = candidate - timedelta(seconds=1)
            jumped = True
    found: list[datetime] = []
    forward = _iterator(cron, start_utc.astimezone(zone))
    while True:
        t = forward.get_next(datetime).astimezone(UTC)
        if t > upto_utc:
            break
        if t > after_utc and (not found or t > found[-1]):
            found.append(t)
    left_out = 0
    if keep is not None and len(found) > keep:
        left_out = len(found) - keep
        found = found[-keep:]
    if jumped:
        left_out = max(left_out, 1)
    return found, left_out


def next_after(cron: str, timezone: str, moment: datetime) -> datetime:
    """The first plan time strictly after ``moment``."""
    it = _iterator(cron, moment.astimezone(_zone(timezone)))
    t: datetime = it.get_next(datetime).astimezone(UTC)
    while t <= moment:  # never earlier in real time, also inside a repeated DST hour
        t = it.get_next(datetime).astimezone(UTC)
    return t


def plan(
    *,
    cron: str,
    timezone: str,
    catch_up: str,
    backfill_limit: int,
    misfire_grace_seconds: int,
    planned_until: datetime,
    db_now: datetime,
) -> Plan:
    """The plan times one pass fires, per the catch-up policy, and the next run.

    * ``latest``: of the due plan times, only the most recent fires;
    * ``all``: every due plan time fires, but at most the ``backfill_limit`` most recent;
    * ``none``: only due plan times at most ``misfire_grace_seconds`` late (by ``db_now``) fire.
    """
    if catch_up not in CATCH_UP_POLICIES:
        raise InvalidInputError("schedule.invalid_catch_up", f"catch_up {catch_up!r}")
    keep = backfill_limit if catch_up == "all" else 1
    if catch_up == "none":
        # only times within the grace window can fire: start the walk there. A time exactly
        # the grace late is within it (due_times takes times after its start, so the walk
        # starts a microsecond before the window, or at planned_until when that is later).
        grace_start = db_now - timedelta(seconds=misfire_grace_seconds)
        after = max(planned_until, grace_start - timedelta(microseconds=1))
        times, skipped = due_times(cron, timezone, after, db_now, None)
        if grace_start > planned_until and next_after(cron, timezone, planned_until) < grace_start:
            skipped += 1  # at least one; the exact count is not worth the walk
    else:
        times, skipped = due_times(cron, timezone, planned_until, db_now, keep)
    return Plan(
        plan_times=times,
        next_run_at=next_after(cron, timezone, db_now),
        planned_until=db_now,
        skipped=skipped,
    )


# -- one pass -----------------------------------------------------------------------------


@dataclass
class PassReport:
    """What one pass did."""

    claimed: int = 0
    fired: int = 0  # ticks (jobs) this pass created
    duplicates: int = 0  # plan times already fired by another scheduler
    skipped: int = 0
    claims_lost: int = 0
    errors: int = 0
    paused: int = 0  # schedules paused because they cannot be planned
    job_ids: list[str] = field(default_factory=list)


def default_scheduler_id() -> str:
    return f"scheduler-{socket.gethostname()}-{os.getpid()}"


class Unplannable(Exception):
    """A claimed schedule this scheduler cannot plan; ``reason`` says why (it is stored with
    the pause, so it is written for the operator)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _plan_row(row: ClaimedSchedule) -> Plan:
    """The plan of a claimed schedule, or ``Unplannable``: an expression outside the grammar
    (stored by an older install), a zone this host does not know, croniter failing, or a next
    run further away than fire_schedule takes."""
    try:
        cron = check_cron(row.cron)
        p = plan(
            cron=cron,
            timezone=row.timezone,
            catch_up=row.catch_up,
            backfill_limit=row.backfill_limit,
            misfire_grace_seconds=row.misfire_grace_seconds,
            planned_until=row.planned_until,
            db_now=row.db_now,
        )
    except PgrunError as exc:
        raise Unplannable(f"{exc.code}: {exc.detail}") from exc
    except (ValueError, TypeError, OverflowError) as exc:  # croniter's errors are ValueErrors
        raise Unplannable(
            f"croniter cannot plan cron {clip(str(row.cron))!r} in {clip(str(row.timezone))!r}: {exc}"
        ) from exc
    if p.next_run_at > row.db_now + MAX_NEXT_RUN:
        raise Unplannable(
            f"cron {row.cron!r}: the next run ({p.next_run_at.isoformat()}) is more than 10 years away"
        )
    return p


@dataclass(frozen=True)
class FireCall:
    """The arguments of one fire_schedule call."""

    schedule_id: UUID
    plan_times: list[datetime]
    next_run_at: datetime
    claim_token: UUID
    planned_until: datetime
    scheduler_id: str
    keep_claim: bool

    async def fire(self, client: AsyncClient) -> list[FiredTick]:
        return await client.fire_schedule(
            self.schedule_id,
            self.plan_times,
            self.next_run_at,
            claim_token=self.claim_token,
            planned_until=self.planned_until,
            scheduler_id=self.scheduler_id,
            keep_claim=self.keep_claim,
        )


def _fire_calls(
    row: ClaimedSchedule, p: Plan, scheduler_id: str, max_ticks: int = MAX_TICKS_PER_FIRE
) -> list[FireCall]:
    """The fire_schedule calls of one plan: one, or (more ticks than one call takes) chunks of
    plan times under the same claim, every chunk but the last keeping it, planned up to its
    last plan time and due again at the next chunk's first (so a scheduler that dies between
    chunks leaves the rest to the next claimer)."""
    per_call = max(1, max_ticks // max(1, row.scope_count or 1))
    times = p.plan_times
    calls: list[FireCall] = []
    for start in range(0, max(len(times), 1), per_call):
        chunk = times[start : start + per_call]
        last = start + per_call >= len(times)
        calls.append(
            FireCall(
                schedule_id=row.schedule_id,
                plan_times=chunk,
                next_run_at=p.next_run_at if last else times[start + per_call],
                claim_token=row.claim_token,
                planned_until=p.planned_until if last else chunk[-1],
                scheduler_id=scheduler_id,
                keep_claim=not last,
            )
        )
    return calls


def _account(report: PassReport, fired: Sequence[FiredTick]) -> None:
    for r in fired:
        if r.created:
            report.fired += 1
            report.job_ids.append(str(r.job_id))
        else:
            report.duplicates += 1


def _fire_failed(report: PassReport, row: ClaimedSchedule, exc: Exception) -> None:
    if isinstance(exc, LeaseLostError):
        # another scheduler took the schedule over (our claim expired), or it was paused or
        # restated: its current state is planned by whoever holds it now
        report.claims_lost += 1
        log.info("schedule %s: claim lost (%s); dropping this plan", row.name, exc.detail)
    else:
        report.errors += 1
        described = exc.describe() if isinstance(exc, PgrunError) else exc
        log.error("schedule %s (%s): cannot fire: %s", row.name, row.schedule_id, described)


# -- the loop -------------------------------------------------------------------------------


def _loop_lease_seconds(poll_interval_seconds: int) -> int:
    """The claim the loop asks for: two poll intervals (at least the default), never more than
    claim_due_schedules grants, so every interval the configuration takes (1..3600) works."""
    return min(MAX_LEASE_SECONDS, max(DEFAULT_LEASE_SECONDS, 2 * poll_interval_seconds))


class Scheduler:
    """The scheduler loop: one pass every ``JOBS_SCHEDULE_POLL_INTERVAL_SECONDS`` (a pass
    that comes back full runs again at once), on the client's pool. Before its first pass it
    upserts the schedules declared in code (``@app.periodic``). A failed pass (the database
    unreachable, say) is logged and tried again next interval.

    ``scheduler_id`` (default ``<worker id>:scheduler``) and ``lease_seconds`` (default: two
    poll intervals, 60..3600 s) are what ``claim_due_schedules`` is given."""

    name = "scheduler"

    def __init__(
        self,
        client: AsyncClient,
        config: Config,
        *,
        declared: Sequence[ScheduleDeclaration] = (),
        max_schedules: int = DEFAULT_MAX_SCHEDULES,
        max_ticks_per_fire: int = MAX_TICKS_PER_FIRE,
        scheduler_id: str | None = None,
        lease_seconds: int | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.declared = list(declared)
        self.max_schedules = max_schedules
        self.max_ticks_per_fire = max_ticks_per_fire
        self.scheduler_id = scheduler_id or f"{config.worker_id}:scheduler"
        self.lease_seconds = lease_seconds or _loop_lease_seconds(config.schedule_poll_interval_seconds)

    async def run(self, stop: asyncio.Event) -> None:
        declared_done = not self.declared
        while not stop.is_set():
            full = False
            try:
                if not declared_done:
                    await self.upsert_declared()
                    declared_done = True
                report = await self.run_once()
                full = report.claimed >= self.max_schedules
            except (psycopg.OperationalError, TimeoutError) as exc:
                log.warning("scheduler pass failed (%s); trying again next interval", exc)
            except Exception:
                log.exception("scheduler pass failed; trying again next interval")
            if not full:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.config.schedule_poll_interval_seconds)

    async def upsert_declared(self) -> None:
        """Upsert every declared schedule; one the database refuses is logged and left out
        (the others, and the schedules already stored, are planned as usual)."""
        for d in self.declared:
            try:
                row = await self.client.upsert_schedule(**d.arguments())
            except PgrunError as exc:
                log.error("schedule %s: not upserted: %s", d.name, exc.describe())
                continue
            if row.changed:
                log.info("schedule %s %s", d.name, "created" if row.created else "updated")

    async def run_once(self) -> PassReport:
        """One pass: claim, plan, fire (a long catch-up in calls of at most
        ``max_ticks_per_fire`` ticks), and pause, with the reason, a claimed schedule that
        cannot be planned."""
        report = PassReport()
        rows = await self.client.claim_due_schedules(
            self.scheduler_id, max_schedules=self.max_schedules, lease_seconds=self.lease_seconds
        )
        report.claimed = len(rows)
        for row in rows:
            try:
                p = _plan_row(row)
            except Unplannable as exc:
                await self._pause_unplannable(report, row, exc)
                continue
            report.skipped += p.skipped
            for call in _fire_calls(row, p, self.scheduler_id, self.max_ticks_per_fire):
                try:
                    _account(report, await call.fire(self.client))
                except (PgrunError, psycopg.Error) as exc:
                    _fire_failed(report, row, exc)
                    break
        if report.fired:
            log.info("fired %d plan time(s)", report.fired)
        return report

    async def _pause_unplannable(self, report: PassReport, row: ClaimedSchedule, exc: Unplannable) -> None:
        # the claim keeps others away; pausing (with why) keeps the schedule from being claimed
        # again every lease period, forever, firing nothing
        log.error(
            "schedule %s (%s) cannot be planned; pausing it (resume_schedule, or restate it with "
            "upsert_schedule, once fixed): %s",
            row.name,
            row.schedule_id,
            exc.reason,
        )
        try:
            await self.client.pause_unplannable_schedule(row.schedule_id, row.claim_token, exc.reason)
        except (PgrunError, psycopg.Error) as err:
            _fire_failed(report, row, err)
        else:
            report.paused += 1


def loop_factory(declared: list[ScheduleDeclaration]) -> LoopFactory:
    """The factory ``App.add_loop`` takes: a ``Scheduler`` that upserts ``declared`` first (the
    list is read when the loop starts, so later declarations are included)."""

    def build(client: AsyncClient, config: Config) -> Scheduler:
        return Scheduler(client, config, declared=declared)

    return build


# -- declarations ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleDeclaration:
    """A schedule declared in code (``@app.periodic``), upserted when the scheduler starts.

    The fields are ``Client.upsert_schedule``'s arguments; the cron expression and the time
    zone are checked with croniter when the declaration is made (``validate_cron``)."""

    name: str
    cron: str
    job_type: str
    payload: dict[str, Any] = field(default_factory=dict)
    timezone: str = "UTC"
    queue: str | None = None
    priority: int | None = None
    catch_up: str = "latest"
    backfill_limit: int = 100
    enabled: bool = True
    organization_id: str | None = None
    max_attempts: int | None = None
    timeout_seconds: int | None = None
    misfire_grace_seconds: int = 60
    scope_kind: str = "none"
    scopes: tuple[str, ...] | None = None
    forbid_stale_reentry: bool = False

    def __post_init__(self) -> None:
        expr = validate_cron(self.cron, self.timezone)
        trap = seconds_field_warning(expr)
        if trap is not None:
            log.warning("schedule %r: %s", self.name, trap)

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``Client.upsert_schedule`` / ``AsyncClient.upsert_schedule``."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


# -- running it alone: python -m pgrun.scheduler ----------------------------------------------


async def serve(
    config: Config, *, scheduler_id: str | None = None, stop: asyncio.Event | None = None
) -> None:
    """Run the loop alone on a small pool of its own until ``stop`` is set (SIGTERM and SIGINT
    set it). A database that cannot be reached is retried every poll interval."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    pool = loops_pool(config, 2)
    await pool.open(wait=False)
    scheduler = Scheduler(AsyncClient(pool), config, scheduler_id=scheduler_id)
    log.info(
        "scheduler %s started (poll %d s)", scheduler.scheduler_id, config.schedule_poll_interval_seconds
    )
    try:
        await scheduler.run(stop)
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await pool.close()
    log.info("scheduler %s stopped", scheduler.scheduler_id)


def run_scheduler(config: Config, *, scheduler_id: str | None = None) -> None:
    """Blocking: ``serve`` on the event loop ``config.event_loop`` names, until SIGTERM / SIGINT."""
    run_until_complete(serve(config, scheduler_id=scheduler_id), config)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pgrun.scheduler",
        description="Run the pgrun cron scheduler alone until SIGTERM/SIGINT. Configuration: "
        "DATABASE_URL and JOBS_SCHEDULE_POLL_INTERVAL_SECONDS (docs/python.md).",
    )
    parser.add_argument("--database-url", default=None, help="defaults to $DATABASE_URL")
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=None,
        help="seconds between passes (1..3600; overrides JOBS_SCHEDULE_POLL_INTERVAL_SECONDS)",
    )
    parser.add_argument("--scheduler-id", default=None, help="default: scheduler-<host>-<pid>")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides: dict[str, object] = {}
    if args.database_url:
        overrides["database_url"] = args.database_url
    if args.poll_interval is not None:
        if not math.isfinite(args.poll_interval):
            parser.error("--poll-interval must be a number of seconds")
        # whole seconds, as the configuration takes them; out of range is clamped with a warning
        overrides["schedule_poll_interval_seconds"] = math.ceil(args.poll_interval)
    config = from_env().with_overrides(**overrides)
    if not config.database_url:
        parser.error("DATABASE_URL is not set")
    run_scheduler(config, scheduler_id=args.scheduler_id or default_scheduler_id())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
