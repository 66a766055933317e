"""The cron scheduler loop: claim due schedules, compute plan times with croniter, fire them.

SQL decides, Python executes. Each pass:

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

Entry points: ``run_once`` (one pass on a psycopg connection), ``run_scheduler`` (a blocking
loop until a ``threading.Event`` is set; ``python -m pgrun.scheduler``), ``Scheduler`` (the async
loop ``pgrun worker`` runs beside the worker), ``upsert_schedule`` / ``list_schedules`` helpers,
and ``validate_cron`` (the full croniter check made before anything is sent to SQL).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import psycopg
from croniter import croniter
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from pgrun import queries as q
from pgrun.cron import check_cron, clip, seconds_field_warning
from pgrun.errors import InvalidInputError, LeaseLostError, PgrunError, translate

if TYPE_CHECKING:
    from pgrun.app import LoopFactory
    from pgrun.client import AsyncClient
    from pgrun.config import Config

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
#: list_schedules' largest page.
MAX_LIST_ROWS = 1000


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
        # only times within the grace window can fire: start the walk there
        grace_start = db_now - timedelta(seconds=misfire_grace_seconds)
        times, skipped = due_times(cron, timezone, max(planned_until, grace_start), db_now, None)
        if grace_start > planned_until and next_after(cron, timezone, planned_until) <= grace_start:
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
    """What one ``run_once`` pass did."""

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


def _claim_params(scheduler_id: str, max_schedules: int, lease_seconds: int) -> dict[str, Any]:
    return {"scheduler_id": scheduler_id, "max_schedules": max_schedules, "lease_seconds": lease_seconds}


class Unplannable(Exception):
    """A claimed schedule this scheduler cannot plan; ``reason`` says why (it is stored with
    the pause, so it is written for the operator)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _plan_row(row: dict[str, Any]) -> Plan:
    """The plan of a claimed schedule, or ``Unplannable``: an expression outside the grammar
    (stored by an older install), a zone this host does not know, croniter failing, or a next
    run further away than fire_schedule takes."""
    try:
        cron = check_cron(row["cron"])
        p = plan(
            cron=cron,
            timezone=row["timezone"],
            catch_up=row["catch_up"],
            backfill_limit=row["backfill_limit"],
            misfire_grace_seconds=row["misfire_grace_seconds"],
            planned_until=row["planned_until"],
            db_now=row["db_now"],
        )
    except PgrunError as exc:
        raise Unplannable(f"{exc.code}: {exc.detail}") from exc
    except (ValueError, TypeError, OverflowError) as exc:  # croniter's errors are ValueErrors
        raise Unplannable(
            f"croniter cannot plan cron {clip(str(row['cron']))!r} in {clip(str(row['timezone']))!r}: {exc}"
        ) from exc
    if p.next_run_at > row["db_now"] + MAX_NEXT_RUN:
        raise Unplannable(
            f"cron {row['cron']!r}: the next run ({p.next_run_at.isoformat()}) is more than 10 years away"
        )
    return p


def _fire_calls(
    row: dict[str, Any], p: Plan, scheduler_id: str, max_ticks: int = MAX_TICKS_PER_FIRE
) -> list[dict[str, Any]]:
    """The fire_schedule calls of one plan: one, or (more ticks than one call takes) chunks of
    plan times under the same claim, every chunk but the last keeping it, planned up to its
    last plan time and due again at the next chunk's first (so a scheduler that dies between
    chunks leaves the rest to the next claimer)."""
    per_call = max(1, max_ticks // max(1, int(row.get("scope_count") or 1)))
    times = p.plan_times
    calls: list[dict[str, Any]] = []
    for start in range(0, max(len(times), 1), per_call):
        chunk = times[start : start + per_call]
        last = start + per_call >= len(times)
        calls.append(
            {
                "schedule_id": row["schedule_id"],
                "plan_times": chunk,
                "next_run_at": p.next_run_at if last else times[start + per_call],
                "claim_token": row["claim_token"],
                "planned_until": p.planned_until if last else chunk[-1],
                "scheduler_id": scheduler_id,
                "keep_claim": not last,
            }
        )
    return calls


def _unplannable_params(row: dict[str, Any], exc: Unplannable) -> dict[str, Any]:
    # the claim keeps others away; pausing (with why) keeps the schedule from being claimed
    # again every lease period, forever, firing nothing
    log.error(
        "schedule %s (%s) cannot be planned; pausing it (resume_schedule, or restate it with "
        "upsert_schedule, once fixed): %s",
        row["name"],
        row["schedule_id"],
        exc.reason,
    )
    return {"schedule_id": row["schedule_id"], "claim_token": row["claim_token"], "reason": exc.reason}


def _account(report: PassReport, fired: Sequence[dict[str, Any]]) -> None:
    for r in fired:
        if r["created"]:
            report.fired += 1
            report.job_ids.append(str(r["job_id"]))
        else:
            report.duplicates += 1


def _fire_failed(report: PassReport, row: dict[str, Any], exc: Exception) -> None:
    if isinstance(exc, LeaseLostError):
        # another scheduler took the schedule over (our claim expired), or it was paused or
        # restated: its current state is planned by whoever holds it now
        report.claims_lost += 1
        log.info("schedule %s: claim lost (%s); dropping this plan", row["name"], exc.detail)
    else:
        report.errors += 1
        log.error("schedule %s (%s): cannot fire: %s", row["name"], row["schedule_id"], exc)


def run_once(
    conn: psycopg.Connection[Any],
    scheduler_id: str,
    *,
    max_schedules: int = DEFAULT_MAX_SCHEDULES,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    max_ticks_per_fire: int = MAX_TICKS_PER_FIRE,
) -> PassReport:
    """One pass on ``conn`` (autocommit, or each call is committed here): claim, plan, fire
    (a long catch-up in calls of at most ``max_ticks_per_fire`` ticks, each committed), and
    pause, with the reason, a claimed schedule that cannot be planned."""
    report = PassReport()
    with conn.cursor(row_factory=dict_row) as cur:
        try:
            cur.execute(q.CLAIM_DUE_SCHEDULES, _claim_params(scheduler_id, max_schedules, lease_seconds))
            rows = cur.fetchall()
        except psycopg.Error as exc:
            raise (translate(exc) or exc) from exc
        finally:
            _commit(conn)
        report.claimed = len(rows)
        for row in rows:
            try:
                p = _plan_row(row)
            except Unplannable as exc:
                try:
                    cur.execute(q.PAUSE_UNPLANNABLE_SCHEDULE, _unplannable_params(row, exc))
                except psycopg.Error as err:
                    _rollback(conn)
                    _fire_failed(report, row, translate(err) or err)
                else:
                    _commit(conn)
                    report.paused += 1
                continue
            report.skipped += p.skipped
            for params in _fire_calls(row, p, scheduler_id, max_ticks_per_fire):
                try:
                    cur.execute(q.FIRE_SCHEDULE, params)
                    _account(report, cur.fetchall())
                except psycopg.Error as exc:
                    _rollback(conn)
                    _fire_failed(report, row, translate(exc) or exc)
                    break
                _commit(conn)
    return report


def _commit(conn: psycopg.Connection[Any]) -> None:
    if not conn.autocommit:
        conn.commit()


def _rollback(conn: psycopg.Connection[Any]) -> None:
    if not conn.autocommit:
        conn.rollback()


def run_scheduler(
    conninfo: str,
    stop: threading.Event,
    *,
    scheduler_id: str | None = None,
    poll_interval: float = 5.0,
    max_schedules: int = DEFAULT_MAX_SCHEDULES,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
) -> None:
    """Run passes every ``poll_interval`` seconds until ``stop`` is set (blocking).

    A pass that comes back full runs again at once. Connection trouble is logged and retried.
    """
    ident = scheduler_id or default_scheduler_id()
    log.info("scheduler %s started (poll %.1f s)", ident, poll_interval)
    conn: psycopg.Connection[Any] | None = None
    while not stop.is_set():
        full = False
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(conninfo, autocommit=True)
            report = run_once(conn, ident, max_schedules=max_schedules, lease_seconds=lease_seconds)
            full = report.claimed >= max_schedules
            if report.fired:
                log.info("fired %d plan time(s)", report.fired)
        except psycopg.OperationalError as exc:
            log.warning("scheduler pass failed (%s); reconnecting next interval", exc)
            if conn is not None:
                conn.close()
            conn = None
        except Exception:
            log.exception("scheduler pass failed; trying again next interval")
        if not full:
            stop.wait(poll_interval)
    if conn is not None:
        conn.close()
    log.info("scheduler %s stopped", ident)


# -- the async loop for `pgrun worker` -----------------------------------------------------


def _loop_lease_seconds(poll_interval_seconds: int) -> int:
    """The claim the loop asks for: two poll intervals (at least the default), never more than
    claim_due_schedules grants, so every interval the configuration takes (1..3600) works."""
    return min(MAX_LEASE_SECONDS, max(DEFAULT_LEASE_SECONDS, 2 * poll_interval_seconds))


class Scheduler:
    """The scheduler as a loop of ``pgrun worker`` (see ``pgrun.runner``): one pass every
    ``JOBS_SCHEDULE_POLL_INTERVAL_SECONDS``, on the worker's pool. Before its first pass it
    upserts the schedules declared in code (``@app.periodic``)."""

    name = "scheduler"

    def __init__(
        self,
        client: AsyncClient,
        config: Config,
        *,
        declared: Sequence[ScheduleDeclaration] = (),
        max_schedules: int = DEFAULT_MAX_SCHEDULES,
        max_ticks_per_fire: int = MAX_TICKS_PER_FIRE,
    ) -> None:
        self.client = client
        self.config = config
        self.declared = list(declared)
        self.max_schedules = max_schedules
        self.max_ticks_per_fire = max_ticks_per_fire
        self.scheduler_id = f"{config.worker_id}:scheduler"
        self.lease_seconds = _loop_lease_seconds(config.schedule_poll_interval_seconds)

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
        async with self.client.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            for d in self.declared:
                try:
                    await cur.execute(q.UPSERT_SCHEDULE, d.params())
                except psycopg.Error as exc:
                    if translate(exc) is None:
                        raise
                    log.error("schedule %s: not upserted: %s", d.name, translate(exc))
                    continue
                row = await cur.fetchone()
                if row is not None and row["changed"]:
                    log.info("schedule %s %s", d.name, "created" if row["created"] else "updated")

    async def run_once(self) -> PassReport:
        report = PassReport()
        async with self.client.pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            await cur.execute(
                q.CLAIM_DUE_SCHEDULES,
                _claim_params(self.scheduler_id, self.max_schedules, self.lease_seconds),
            )
            rows = await cur.fetchall()
            report.claimed = len(rows)
            for row in rows:
                try:
                    p = _plan_row(row)
                except Unplannable as exc:
                    try:
                        await cur.execute(q.PAUSE_UNPLANNABLE_SCHEDULE, _unplannable_params(row, exc))
                    except psycopg.Error as err:
                        _fire_failed(report, row, translate(err) or err)
                    else:
                        report.paused += 1
                    continue
                report.skipped += p.skipped
                for params in _fire_calls(row, p, self.scheduler_id, self.max_ticks_per_fire):
                    try:
                        await cur.execute(q.FIRE_SCHEDULE, params)
                        _account(report, await cur.fetchall())
                    except psycopg.Error as exc:
                        _fire_failed(report, row, translate(exc) or exc)
                        break
        if report.fired:
            log.info("fired %d plan time(s)", report.fired)
        return report


def loop_factory(declared: list[ScheduleDeclaration]) -> LoopFactory:
    """The factory ``App.add_loop`` takes: a ``Scheduler`` that upserts ``declared`` first (the
    list is read when the loop starts, so later declarations are included)."""

    def build(client: AsyncClient, config: Config) -> Scheduler:
        return Scheduler(client, config, declared=declared)

    return build


# -- declarations and helpers -------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleDeclaration:
    """A schedule declared in code (``@app.periodic``), upserted when the scheduler starts."""

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

    def params(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cron": self.cron,
            "job_type": self.job_type,
            "payload": Jsonb(self.payload),
            "timezone": self.timezone,
            "queue": self.queue,
            "priority": self.priority,
            "catch_up": self.catch_up,
            "backfill_limit": self.backfill_limit,
            "enabled": self.enabled,
            "organization_id": self.organization_id,
            "max_attempts": self.max_attempts,
            "timeout_seconds": self.timeout_seconds,
            "misfire_grace_seconds": self.misfire_grace_seconds,
            "scope_kind": self.scope_kind,
            "scopes": list(self.scopes) if self.scopes is not None else None,
            "forbid_stale_reentry": self.forbid_stale_reentry,
        }


def upsert_schedule(conn: psycopg.Connection[Any], declaration: ScheduleDeclaration) -> dict[str, Any]:
    """Validate with croniter (done when the declaration was built), then ``upsert_schedule``."""
    with conn.cursor(row_factory=dict_row) as cur:
        try:
            cur.execute(q.UPSERT_SCHEDULE, declaration.params())
            row = cur.fetchone()
        except psycopg.Error as exc:
            raise (translate(exc) or exc) from exc
    _commit(conn)
    assert row is not None
    return row


def list_schedules(conn: psycopg.Connection[Any], organization_id: str | None = None) -> list[dict[str, Any]]:
    """Every schedule the connection's role may see, by organization then name: all pages of
    ``pgrun.list_schedules`` (which pages by schedule id, at most 1000 rows a call)."""
    rows: list[dict[str, Any]] = []
    after_id = None
    with conn.cursor(row_factory=dict_row) as cur:
        while True:
            params = {"organization_id": organization_id, "after_id": after_id, "max_rows": MAX_LIST_ROWS}
            try:
                cur.execute(q.LIST_SCHEDULES, params)
                page = cur.fetchall()
            except psycopg.Error as exc:
                raise (translate(exc) or exc) from exc
            rows.extend(page)
            if len(page) < MAX_LIST_ROWS:
                break
            after_id = page[-1]["schedule_id"]
    _commit(conn)
    rows.sort(key=lambda r: (r["organization_id"] is not None, str(r["organization_id"] or ""), r["name"]))
    return rows


# -- python -m pgrun.scheduler --------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pgrun.scheduler", description="Run the pgrun cron scheduler until SIGTERM/SIGINT."
    )
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", ""))
    parser.add_argument(
        "--poll-interval",
        type=float,
        default=float(os.environ.get("JOBS_SCHEDULE_POLL_INTERVAL_SECONDS", "5") or 5),
    )
    parser.add_argument("--scheduler-id", default=None)
    args = parser.parse_args(argv)
    if not args.database_url:
        parser.error("DATABASE_URL is not set")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    run_scheduler(
        args.database_url, stop, scheduler_id=args.scheduler_id, poll_interval=max(1.0, args.poll_interval)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
