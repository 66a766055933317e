"""Client and AsyncClient: one typed method per public pgrun SQL function.

Both wrap a psycopg connection pool (autocommit: each call is one transaction, the function's
own). They only pass arguments and shape results: every decision is the SQL function's. The
SQL text lives in ``pgrun.queries``; a pgrun error comes back as the ``pgrun.errors`` class of
its SQLSTATE category, translated in one place (``_pgrun_errors``), raised ``from`` the
psycopg error.
Each call is built once, by a module-level builder per SQL function (``_enqueue_job`` …) that
converts the arguments and returns a ``Call``; the two classes only execute it (``_run``, sync
or awaited). They keep the same methods with the same signatures, docstrings and bodies (but
for ``await``), each delegating to its builder: change them together
(tests_py/test_client_parity.py fails on any difference).
"""

from __future__ import annotations

import dataclasses
import json
import re
import struct
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar
from uuid import UUID

import orjson
import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.rows import BaseRowFactory, class_row, tuple_row
from psycopg.types.json import Jsonb, set_json_loads
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from pgrun import queries as q
from pgrun.config import TCP_GIVE_UP_MAX, Config, tcp_settings
from pgrun.errors import translate
from pgrun.results import (
    AppendResult,
    BatchOutcome,
    CancelRunResult,
    ClaimedJob,
    ClaimedSchedule,
    DeletedSchedule,
    EnqueuedBatchItem,
    EnqueuedJob,
    EnqueuedRun,
    ExternalStepResult,
    FiredTick,
    Heartbeat,
    JobCount,
    JobDefinition,
    JobMetrics,
    JobSummary,
    Json,
    JsonObject,
    JsonText,
    LogOutcome,
    Outcome,
    PausedSchedule,
    QueueDepth,
    ReapedJob,
    ResumedSchedule,
    RuntimeConfig,
    ScheduleSummary,
    UndecodableJson,
    UpsertedSchedule,
    WorkflowRunSummary,
)
from pgrun.results import Seconds as Seconds  # pgrun.client.Seconds, as before

T = TypeVar("T")
R = TypeVar("R")
#: A job or run id: a UUID, or its text.
Id = UUID | str


class WorkflowLike(Protocol):
    def spec(self) -> JsonObject: ...


@dataclass(frozen=True)
class Failure:
    """One element of fail_jobs."""

    job_id: Id
    lease_token: Id
    error_code: str | None = None
    message: str | None = None
    retryable: bool = True
    retry_delay: Seconds | None = None


@dataclass(frozen=True)
class Continuation:
    """One element of continue_jobs: the job's next step, as continue_job takes it (state None
    keeps the job's state; a JsonText state goes as the JSON text it is)."""

    job_id: Id
    lease_token: Id
    next_step: str
    state: Json = None
    delay: Seconds | None = None
    max_attempts: int | None = None
    retry_delay: Seconds | None = None


@dataclass(frozen=True)
class LogLine:
    """One element of append_job_logs: a line for the attempt the lease holds."""

    job_id: Id
    lease_token: Id
    message: str
    level: str = "info"
    #: A JSON object, or its text as a JsonText (the worker's, dumped by its check)
    fields: JsonObject | JsonText | None = None


@contextmanager
def _pgrun_errors() -> Iterator[None]:
    """The one place a psycopg error becomes a pgrun exception (other errors pass through)."""
    try:
        yield
    except psycopg.Error as err:
        translated = translate(err)
        if translated is None:
            raise
        raise translated from err


def _json(value: Any) -> Jsonb | None:
    """A JSON argument: None stays SQL NULL, a JsonText goes as the text it is."""
    if value is None:
        return None
    return Jsonb(value, dumps=str) if isinstance(value, JsonText) else Jsonb(value)


def _json_values(values: list[Json]) -> Jsonb | None:
    """A batch of JSON values as one JSON array (None when every one is None): JsonText
    elements as their text, the others dumped."""
    if all(value is None for value in values):
        return None
    if not any(isinstance(value, JsonText) for value in values):
        return Jsonb(values)
    return Jsonb(values, dumps=_json_array)


def _json_array(values: list[Json]) -> str:
    return "[" + ",".join(v if isinstance(v, JsonText) else json.dumps(v) for v in values) + "]"


def _interval(value: Seconds | None) -> timedelta | None:
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(seconds=value)


def _list(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


class _UuidArray(list[UUID]):
    """A list of UUID objects sent as one binary uuid[] (_UuidArrayDumper)."""


# PostgreSQL's binary array: dimensions, has-nulls flag, element type, then per dimension its
# length and lower bound; then each element as its length and its bytes.
_UUID_OID = 2950
_UUID_ARRAY_OID = 2951
_ARRAY_HEAD = struct.Struct("!iiIii")
_EMPTY_ARRAY = struct.pack("!iiI", 0, 0, _UUID_OID)
_UUID_LENGTH = struct.pack("!i", 16)


class _UuidArrayDumper(Dumper):
    """A _UuidArray as a binary uuid[]: the server copies 16 bytes an id instead of parsing 36
    characters through array_in, and Python joins bytes instead of formatting hex (a completion
    of 500 jobs sends 1,000 ids: ~2.2 ms with the round trip as a text literal, ~0.8 as this)."""

    format = Format.BINARY
    oid = _UUID_ARRAY_OID

    def dump(self, obj: Any) -> Buffer:
        if not obj:
            return _EMPTY_ARRAY
        return _ARRAY_HEAD.pack(1, 0, _UUID_OID, len(obj), 1) + b"".join(
            [_UUID_LENGTH + value.bytes for value in obj]
        )


psycopg.adapters.register_dumper(_UuidArray, _UuidArrayDumper)


def _uuids(values: list[Id]) -> _UuidArray | list[Id]:
    """A uuid[] argument: all UUID objects (what a worker's batch writes send) go as one binary
    array; anything else stays a list for psycopg to dump element by element (text ids parse
    on the server, so a malformed one fails there as it always did)."""
    if all(type(value) is UUID for value in values):
        return _UuidArray(values)  # type: ignore[arg-type]
    return values


def _spec(spec: JsonObject | WorkflowLike) -> JsonObject:
    return spec if isinstance(spec, dict) else spec.spec()


def _pool_kwargs(dsn: str) -> dict[str, Any]:
    """Connection settings of a client's own pool: autocommit, and TCP settings that give a
    vanished peer up after TCP_GIVE_UP_MAX seconds (an enqueue waiting on one would otherwise
    wait until the kernel gives up: over two hours), unless ``dsn`` names its own."""
    return {"autocommit": True, **tcp_settings(dsn, TCP_GIVE_UP_MAX)}


#: A pooled connection handed back less than this many seconds ago is lent again without the
#: pool's check (an empty query: one more round trip, about a third of a single enqueue's
#: time); one idle for longer is checked first, so a connection a server restart, a failover
#: or a firewall cut while it sat idle is replaced before a call uses it. A connection that
#: breaks within the window fails its next call, which the pool then discards.
CHECK_IDLE_SECONDS = 1.0
_returned_at: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


# The return time is stamped by Client._run / AsyncClient._run as the call ends, not by a
# pool ``reset`` callback: with one, psycopg_pool hands every returned connection to a worker
# thread (a task, for the async pool) before it can be lent again, and a single enqueue paid
# that thread hand-off (hundreds of microseconds) on every call.


def _check_if_idle(conn: psycopg.Connection[Any]) -> None:
    if time.monotonic() - _returned_at.get(conn, float("-inf")) >= CHECK_IDLE_SECONDS:
        ConnectionPool.check_connection(conn)


async def _check_if_idle_async(conn: psycopg.AsyncConnection[Any]) -> None:
    if time.monotonic() - _returned_at.get(conn, float("-inf")) >= CHECK_IDLE_SECONDS:
        await AsyncConnectionPool.check_connection(conn)


# A run of 19 digits may be an integer past 64 bits, which orjson would decode as a float.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def _loads(data: str | bytes) -> Any:
    """How the client's connections decode JSON: orjson (a worker decodes every claimed payload;
    with the check below it takes under a third of the stdlib's time), else the stdlib's json,
    which is what decides for a document with a run of 19 digits or more (orjson makes a float
    of an integer past 64 bits; a long string of digits sends a document this way too, only
    slower) and for what orjson refuses (nested deeper than 255 levels). A value too deep for
    the stdlib becomes an UndecodableJson marker instead of a RecursionError that fails the
    whole call (a claim that fetched it would lose every job of its batch, and a worker its
    claim loop)."""
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_DIGITS.search(raw) is None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(raw)
    except RecursionError:
        return UndecodableJson("nested deeper than Python's json module decodes", len(raw))


#: Names PostgreSQL gives UTC (a server's TimeZone is often Etc/UTC, initdb's pick on most
#: Linux hosts). psycopg hands back timestamps of a session in "UTC" with datetime.timezone.utc
#: and of any other zone through a ZoneInfo conversion per value: 0.95 against 0.38 µs a
#: timestamptz, and a claimed job carries three.
_UTC_ALIASES = frozenset({"Etc/UTC", "Etc/UCT", "UCT", "Etc/Universal", "Universal", "Etc/Zulu", "Zulu"})
_SET_UTC = "SET TimeZone = 'UTC'"


def _utc_alias(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether the session's time zone is UTC under another name (renaming it to UTC changes
    no value and no computation, only the tzinfo psycopg attaches: timezone.utc)."""
    return conn.info.parameter_status("TimeZone") in _UTC_ALIASES


def configure_connection(conn: psycopg.Connection[Any]) -> None:
    """How every pgrun client connection decodes JSON and timestamps (a pool's ``configure``)."""
    set_json_loads(_loads, conn)
    if _utc_alias(conn):
        conn.execute(_SET_UTC)
        if not conn.autocommit:
            conn.commit()


async def configure_async_connection(conn: psycopg.AsyncConnection[Any]) -> None:
    """configure_connection for an AsyncConnectionPool."""
    set_json_loads(_loads, conn)
    if _utc_alias(conn):
        await conn.execute(_SET_UTC)
        if not conn.autocommit:
            await conn.commit()


def loops_pool(config: Config, max_size: int) -> AsyncConnectionPool:
    """The pool, not opened yet, that the worker's loops (pgrun.runner.run_loops) and the cron
    scheduler run alone (pgrun.scheduler.serve) run on: autocommit, ``config.tcp_settings``
    (a connection whose peer vanished fails in seconds), at least one connection. No check
    when a connection is lent: it would cost a round trip before every claim and flush (as
    much as the claim itself, measured with bench/peers); a connection the server dropped
    fails on use instead, every loop retries OperationalError with backoff, and the pool
    discards the broken connection (tests_py/test_worker_processes.py restarts the server)."""
    return AsyncConnectionPool(
        config.database_url,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, **config.tcp_settings},
        configure=configure_async_connection,
        timeout=10,
        open=False,
    )


@dataclass(frozen=True)
class Call(Generic[R]):
    """One SQL function call, built once for both clients: the query and its parameters, how a
    row is made (``row_factory``) and how the fetched rows become the method's result (``finish``)."""

    query: str
    params: dict[str, Any]
    row_factory: BaseRowFactory[Any]
    finish: Callable[[list[Any]], R]


def _run_on(conn: psycopg.Connection[Any], call: Call[R]) -> R:
    """Run ``call`` on ``conn``, in whatever transaction it is in (a pool's autocommit one, or
    the caller's: pgrun.tx)."""
    with _pgrun_errors(), conn.cursor(row_factory=call.row_factory) as cur:
        cur.execute(call.query, call.params)
        return call.finish(cur.fetchall())


async def _run_on_async(conn: psycopg.AsyncConnection[Any], call: Call[R]) -> R:
    """_run_on for an AsyncConnection."""
    with _pgrun_errors():
        async with conn.cursor(row_factory=call.row_factory) as cur:
            await cur.execute(call.query, call.params)
            return call.finish(await cur.fetchall())


def _rows(rows: list[T]) -> list[T]:
    return rows


def _first(rows: list[T]) -> T:
    return rows[0]


def _first_value(rows: list[tuple[Any, ...]]) -> Any:
    return rows[0][0] if rows else None


# From this many fields up, filling a new instance's dictionary beats the frozen __init__
# (which sets each field through object.__setattr__): 0.8 against 0.8 µs at 6 fields, 1.2
# against 2.1 µs at 18 (ClaimedJob); 0.8 against 0.5 µs at 3 (EnqueuedBatchItem).
_DICT_FILL_FIELDS = 7


_ROW_FACTORIES: dict[type[Any], BaseRowFactory[Any]] = {}


def _record_row(cls: type[T]) -> BaseRowFactory[T]:
    """The row factory of ``cls`` (_make_record_row), made once per class: every call's
    builder asks for it (2.2 of a single enqueue builder's 5.6 µs when made each time)."""
    factory = _ROW_FACTORIES.get(cls)
    if factory is None:
        factory = _ROW_FACTORIES[cls] = _make_record_row(cls)
    return factory


def _make_record_row(cls: type[T]) -> BaseRowFactory[T]:
    """Rows as ``cls`` (a frozen result dataclass): built from the values in order when the
    query's columns are the class's fields in order (naming each field costs twice the time),
    a wide class's by filling its instance dictionary (_DICT_FILL_FIELDS; the worker builds
    thousands of ClaimedJob a second), else by name like ``class_row``."""
    fields = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    encoded = tuple(name.encode() for name in fields)
    by_name = class_row(cls)
    # Only a plain frozen dataclass may skip its __init__: no __post_init__, no __slots__.
    plain = not hasattr(cls, "__post_init__") and not hasattr(cls, "__slots__")
    fill = plain and len(fields) >= _DICT_FILL_FIELDS
    new = object.__new__

    def filled(values: Sequence[Any]) -> T:
        # Key by key: dict.update over a zip goes the generic way, ~0.2-0.9 us more for a
        # ClaimedJob (1.3 against 1.5-2.1 us). The factory below has checked that the result
        # has exactly these columns, so values and fields have the same length.
        row = new(cls)
        into = row.__dict__
        for name, value in zip(fields, values):  # noqa: B905 (lengths checked by the factory)
            into[name] = value
        return row

    def factory(cursor: Any) -> Callable[[Sequence[Any]], T]:
        # The names as the result holds them (bytes): cursor.description would build a Column
        # object per column on every call, 25 µs for a claim's 18 (an idle worker's claim of
        # one job pays it between the answer and the job's start) against 2 µs.
        result = cursor.pgresult
        if result is not None and tuple(map(result.fname, range(result.nfields))) == encoded:
            return filled if fill else lambda values: cls(*values)
        return by_name(cursor)

    return factory


def _all(query: str, params: dict[str, Any], row: type[T]) -> Call[list[T]]:
    """Every row, as ``row``."""
    return Call(query, params, _record_row(row), _rows)


def _one(query: str, params: dict[str, Any], row: type[T]) -> Call[T]:
    """The one row, as ``row``."""
    return Call(query, params, _record_row(row), _first)


def _scalar(query: str, params: dict[str, Any]) -> Call[Any]:
    """The first column of the one row (None without a row)."""
    return Call(query, params, tuple_row, _first_value)


# One builder per public method, with its parameters minus the defaults (the methods hold those).


def _enqueue_job(
    job_type: str,
    payload: JsonObject | None,
    *,
    queue: str | None,
    priority: int | None,
    run_at: datetime | None,
    delay: Seconds | None,
    max_attempts: int | None,
    timeout_seconds: int | None,
    idempotency_key: str | None,
    organization_id: Id | None,
) -> Call[EnqueuedJob]:
    params: dict[str, Any] = dict(
        job_type=job_type,
        payload=_json(payload),
        queue=queue,
        priority=priority,
        run_at=run_at,
        delay=_interval(delay),
        max_attempts=max_attempts,
        timeout_seconds=timeout_seconds,
        idempotency_key=idempotency_key,
        organization_id=organization_id,
    )
    return _one(q.ENQUEUE_JOB, params, EnqueuedJob)


def _enqueue_jobs(jobs: Sequence[JsonObject]) -> Call[list[EnqueuedBatchItem]]:
    params: dict[str, Any] = dict(jobs=Jsonb(list(jobs)))
    return _all(q.ENQUEUE_JOBS, params, EnqueuedBatchItem)


def _claim_jobs(
    worker_id: str,
    *,
    lease_seconds: int,
    max_jobs: int,
    queues: Sequence[str] | None,
    job_types: Sequence[str] | None,
    max_held: int | None = None,
) -> Call[list[ClaimedJob]]:
    params: dict[str, Any] = dict(
        worker_id=worker_id,
        lease_seconds=lease_seconds,
        max_jobs=max_jobs,
        queues=_list(queues),
        job_types=_list(job_types),
        max_held=max_held,
    )
    return _all(q.CLAIM_JOBS if max_held is None else q.CLAIM_JOBS_MAX_HELD, params, ClaimedJob)


def _next_run_at(*, queues: Sequence[str] | None, job_types: Sequence[str] | None) -> Call[datetime | None]:
    return _scalar(q.NEXT_RUN_AT, dict(queues=_list(queues), job_types=_list(job_types)))


def _heartbeat_jobs(
    worker_id: str, leases: Sequence[tuple[Id, Id]], *, lease_seconds: int
) -> Call[list[Heartbeat]]:
    params: dict[str, Any] = dict(
        worker_id=worker_id,
        lease_seconds=lease_seconds,
        job_ids=_uuids([j for j, _ in leases]),
        lease_tokens=_uuids([t for _, t in leases]),
    )
    return _all(q.HEARTBEAT_JOBS, params, Heartbeat)


def _complete_job(job_id: Id, lease_token: Id, result: Json) -> Call[str]:
    params: dict[str, Any] = dict(job_id=job_id, lease_token=lease_token, result=_json(result))
    return _scalar(q.COMPLETE_JOB, params)


def _complete_jobs(
    completions: Sequence[tuple[Id, Id, Json]], *, succeeded_rows: bool
) -> Call[list[BatchOutcome]]:
    results = [c[2] for c in completions]
    params: dict[str, Any] = dict(
        job_ids=_uuids([c[0] for c in completions]),
        lease_tokens=_uuids([c[1] for c in completions]),
        results=_json_values(results),
        succeeded_rows=succeeded_rows,
    )
    return _all(q.COMPLETE_JOBS, params, BatchOutcome)


def _release_jobs(leases: Sequence[tuple[Id, Id]]) -> Call[list[BatchOutcome]]:
    params: dict[str, Any] = dict(
        job_ids=_uuids([lease[0] for lease in leases]), lease_tokens=_uuids([lease[1] for lease in leases])
    )
    return _all(q.RELEASE_JOBS, params, BatchOutcome)


def _fail_job(
    job_id: Id,
    lease_token: Id,
    *,
    error_code: str | None,
    message: str | None,
    retryable: bool,
    retry_delay: Seconds | None,
) -> Call[Outcome]:
    params: dict[str, Any] = dict(
        job_id=job_id,
        lease_token=lease_token,
        error_code=error_code,
        message=message,
        retryable=retryable,
        retry_delay=_interval(retry_delay),
    )
    return _one(q.FAIL_JOB, params, Outcome)


def _fail_jobs(failures: Sequence[Failure]) -> Call[list[BatchOutcome]]:
    params: dict[str, Any] = dict(
        job_ids=_uuids([f.job_id for f in failures]),
        lease_tokens=_uuids([f.lease_token for f in failures]),
        error_codes=[f.error_code for f in failures],
        messages=[f.message for f in failures],
        retryable=[f.retryable for f in failures],
        retry_delays=[_interval(f.retry_delay) for f in failures],
    )
    return _all(q.FAIL_JOBS, params, BatchOutcome)


def _continue_job(
    job_id: Id,
    lease_token: Id,
    next_step: str,
    *,
    state: Json,
    delay: Seconds | None,
    max_attempts: int | None = None,
    retry_delay: Seconds | None = None,
) -> Call[Outcome]:
    params: dict[str, Any] = dict(
        job_id=job_id,
        lease_token=lease_token,
        next_step=next_step,
        state=_json(state),
        delay=_interval(delay),
        max_attempts=max_attempts,
        retry_delay=_interval(retry_delay),
    )
    return _one(q.CONTINUE_JOB, params, Outcome)


def _continue_jobs(continuations: Sequence[Continuation]) -> Call[list[BatchOutcome]]:
    def optional(values: list[Any]) -> list[Any] | None:
        return None if all(v is None for v in values) else values

    params: dict[str, Any] = dict(
        job_ids=_uuids([c.job_id for c in continuations]),
        lease_tokens=_uuids([c.lease_token for c in continuations]),
        next_steps=[c.next_step for c in continuations],
        states=_json_values([c.state for c in continuations]),
        delays=optional([_interval(c.delay) for c in continuations]),
        max_attempts=optional([c.max_attempts for c in continuations]),
        retry_delays=optional([_interval(c.retry_delay) for c in continuations]),
    )
    return _all(q.CONTINUE_JOBS, params, BatchOutcome)


def _report_progress(job_id: Id, lease_token: Id, progress: JsonObject) -> Call[bool]:
    params: dict[str, Any] = dict(job_id=job_id, lease_token=lease_token, progress=_json(progress))
    return _scalar(q.REPORT_PROGRESS, params)


def _append_job_log(
    job_id: Id, lease_token: Id, message: str, *, level: str, fields: JsonObject | None
) -> Call[int | None]:
    params: dict[str, Any] = dict(
        job_id=job_id, lease_token=lease_token, message=message, level=level, fields=_json(fields)
    )
    return _scalar(q.APPEND_JOB_LOG, params)


def _append_job_logs(
    lines: Sequence[LogLine], *, durable: bool = True, logged_rows: bool = True
) -> Call[list[LogOutcome]]:
    levels = [line.level for line in lines]
    params: dict[str, Any] = dict(
        job_ids=_uuids([line.job_id for line in lines]),
        lease_tokens=_uuids([line.lease_token for line in lines]),
        messages=[line.message for line in lines],
        levels=None if all(level == "info" for level in levels) else levels,  # NULL: every one info
        fields=_json_values([line.fields for line in lines]),
        logged_rows=logged_rows,
    )
    return _all(q.APPEND_JOB_LOGS if durable else q.APPEND_JOB_LOGS_NO_WAIT, params, LogOutcome)


def _cancel_job(job_id: Id, *, reason: str | None, organization_id: Id | None) -> Call[str]:
    params: dict[str, Any] = dict(job_id=job_id, reason=reason, organization_id=organization_id)
    return _scalar(q.CANCEL_JOB, params)


def _requeue_job(job_id: Id, *, organization_id: Id | None, run_at: datetime | None) -> Call[datetime]:
    params: dict[str, Any] = dict(job_id=job_id, organization_id=organization_id, run_at=run_at)
    return _scalar(q.REQUEUE_JOB, params)


def _reap_expired_leases(*, max_jobs: int, retry_delay: Seconds | None) -> Call[list[ReapedJob]]:
    params: dict[str, Any] = dict(max_jobs=max_jobs, retry_delay=_interval(retry_delay))
    return _all(q.REAP_EXPIRED_LEASES, params, ReapedJob)


def _purge_finished_jobs(older_than: Seconds, *, max_jobs: int, organization_id: Id | None) -> Call[int]:
    params: dict[str, Any] = dict(
        older_than=_interval(older_than), max_jobs=max_jobs, organization_id=organization_id
    )
    return _scalar(q.PURGE_FINISHED_JOBS, params)


def _get_job(job_id: Id, *, organization_id: Id | None) -> Call[JsonObject]:
    params: dict[str, Any] = dict(job_id=job_id, organization_id=organization_id)
    return _scalar(q.GET_JOB, params)


def _list_jobs(
    *,
    status: str | None,
    job_type: str | None,
    queue: str | None,
    organization_id: Id | None,
    workflow_run_id: Id | None,
    after_id: Id | None,
    max_rows: int,
) -> Call[list[JobSummary]]:
    params: dict[str, Any] = dict(
        status=status,
        job_type=job_type,
        queue=queue,
        organization_id=organization_id,
        workflow_run_id=workflow_run_id,
        after_id=after_id,
        max_rows=max_rows,
    )
    return _all(q.LIST_JOBS, params, JobSummary)


def _upsert_job_definition(
    job_type: str,
    *,
    queue: str | None,
    priority: int | None,
    max_attempts: int | None,
    timeout_seconds: int | None,
    backoff_base_seconds: float | None,
    backoff_max_seconds: float | None,
    backoff_jitter: float | None,
    max_result_bytes: int | None,
) -> Call[JobDefinition]:
    params: dict[str, Any] = dict(
        job_type=job_type,
        queue=queue,
        priority=priority,
        max_attempts=max_attempts,
        timeout_seconds=timeout_seconds,
        backoff_base_seconds=backoff_base_seconds,
        backoff_max_seconds=backoff_max_seconds,
        backoff_jitter=backoff_jitter,
        max_result_bytes=max_result_bytes,
    )
    return _one(q.UPSERT_JOB_DEFINITION, params, JobDefinition)


def _set_job_runtime_config(
    job_type: str, *, paused: bool | None, max_concurrency: int | None, clear_max_concurrency: bool
) -> Call[RuntimeConfig]:
    params: dict[str, Any] = dict(
        job_type=job_type,
        paused=paused,
        max_concurrency=max_concurrency,
        clear_max_concurrency=clear_max_concurrency,
    )
    return _one(q.SET_JOB_RUNTIME_CONFIG, params, RuntimeConfig)


def _queue_depth(*, organization_id: Id | None) -> Call[list[QueueDepth]]:
    params: dict[str, Any] = dict(organization_id=organization_id)
    return _all(q.QUEUE_DEPTH, params, QueueDepth)


def _job_metrics(*, organization_id: Id | None) -> Call[list[JobMetrics]]:
    params: dict[str, Any] = dict(organization_id=organization_id)
    return _all(q.JOB_METRICS, params, JobMetrics)


def _count_jobs(
    *,
    status: str | None,
    job_type: str | None,
    queue: str | None,
    organization_id: Id | None,
    workflow_run_id: Id | None,
) -> Call[list[JobCount]]:
    params: dict[str, Any] = dict(
        status=status,
        job_type=job_type,
        queue=queue,
        organization_id=organization_id,
        workflow_run_id=workflow_run_id,
    )
    return _all(q.COUNT_JOBS, params, JobCount)


def _enqueue_workflow(spec: JsonObject | WorkflowLike) -> Call[EnqueuedRun]:
    params: dict[str, Any] = dict(spec=Jsonb(_spec(spec)))
    return _one(q.ENQUEUE_WORKFLOW, params, EnqueuedRun)


def _complete_external_step(
    run_id: Id, step_key: str, *, succeeded: bool, output: Json, organization_id: Id | None
) -> Call[ExternalStepResult]:
    params: dict[str, Any] = dict(
        run_id=run_id,
        step_key=step_key,
        succeeded=succeeded,
        output=_json(output),
        organization_id=organization_id,
    )
    return _one(q.COMPLETE_EXTERNAL_STEP, params, ExternalStepResult)


def _append_workflow_steps(
    run_id: Id, steps: Sequence[JsonObject], *, mutation_key: str | None, organization_id: Id | None
) -> Call[AppendResult]:
    params: dict[str, Any] = dict(
        run_id=run_id,
        mutation_key=mutation_key,
        steps=Jsonb(list(steps)),
        organization_id=organization_id,
    )
    return _one(q.APPEND_WORKFLOW_STEPS, params, AppendResult)


def _cancel_workflow_run(
    run_id: Id, *, reason: str | None, organization_id: Id | None
) -> Call[CancelRunResult]:
    params: dict[str, Any] = dict(run_id=run_id, reason=reason, organization_id=organization_id)
    return _one(q.CANCEL_WORKFLOW_RUN, params, CancelRunResult)


def _get_workflow_run(run_id: Id, *, organization_id: Id | None) -> Call[JsonObject]:
    params: dict[str, Any] = dict(run_id=run_id, organization_id=organization_id)
    return _scalar(q.GET_WORKFLOW_RUN, params)


def _list_workflow_runs(
    *, status: str | None, organization_id: Id | None, after_id: Id | None, max_rows: int
) -> Call[list[WorkflowRunSummary]]:
    params: dict[str, Any] = dict(
        status=status, organization_id=organization_id, after_id=after_id, max_rows=max_rows
    )
    return _all(q.LIST_WORKFLOW_RUNS, params, WorkflowRunSummary)


def _upsert_schedule(
    name: str,
    cron: str,
    job_type: str,
    payload: JsonObject | None,
    *,
    timezone: str,
    queue: str | None,
    priority: int | None,
    catch_up: str,
    backfill_limit: int,
    enabled: bool,
    organization_id: Id | None,
    max_attempts: int | None,
    timeout_seconds: int | None,
    misfire_grace_seconds: int,
    scope_kind: str,
    scopes: Sequence[str] | None,
    forbid_stale_reentry: bool,
) -> Call[UpsertedSchedule]:
    params: dict[str, Any] = dict(
        name=name,
        cron=cron,
        job_type=job_type,
        payload=_json(payload),
        timezone=timezone,
        queue=queue,
        priority=priority,
        catch_up=catch_up,
        backfill_limit=backfill_limit,
        enabled=enabled,
        organization_id=organization_id,
        max_attempts=max_attempts,
        timeout_seconds=timeout_seconds,
        misfire_grace_seconds=misfire_grace_seconds,
        scope_kind=scope_kind,
        scopes=_list(scopes),
        forbid_stale_reentry=forbid_stale_reentry,
    )
    return _one(q.UPSERT_SCHEDULE, params, UpsertedSchedule)


def _claim_due_schedules(
    scheduler_id: str, *, max_schedules: int, lease_seconds: int
) -> Call[list[ClaimedSchedule]]:
    params: dict[str, Any] = dict(
        scheduler_id=scheduler_id, max_schedules=max_schedules, lease_seconds=lease_seconds
    )
    return _all(q.CLAIM_DUE_SCHEDULES, params, ClaimedSchedule)


def _fire_schedule(
    schedule_id: Id,
    plan_times: Sequence[datetime],
    next_run_at: datetime,
    *,
    claim_token: Id | None,
    planned_until: datetime | None,
    scheduler_id: str | None,
    keep_claim: bool,
) -> Call[list[FiredTick]]:
    params: dict[str, Any] = dict(
        schedule_id=schedule_id,
        plan_times=list(plan_times),
        next_run_at=next_run_at,
        claim_token=claim_token,
        planned_until=planned_until,
        scheduler_id=scheduler_id,
        keep_claim=keep_claim,
    )
    return _all(q.FIRE_SCHEDULE, params, FiredTick)


def _pause_unplannable_schedule(schedule_id: Id, claim_token: Id, reason: str) -> Call[datetime]:
    params: dict[str, Any] = dict(schedule_id=schedule_id, claim_token=claim_token, reason=reason)
    return _scalar(q.PAUSE_UNPLANNABLE_SCHEDULE, params)


def _list_schedules(
    *, organization_id: Id | None, after_id: Id | None, max_rows: int
) -> Call[list[ScheduleSummary]]:
    params: dict[str, Any] = dict(organization_id=organization_id, after_id=after_id, max_rows=max_rows)
    return _all(q.LIST_SCHEDULES, params, ScheduleSummary)


def _pause_schedule(name: str, *, organization_id: Id | None) -> Call[PausedSchedule]:
    params: dict[str, Any] = dict(name=name, organization_id=organization_id)
    return _one(q.PAUSE_SCHEDULE, params, PausedSchedule)


def _resume_schedule(name: str, *, organization_id: Id | None) -> Call[ResumedSchedule]:
    params: dict[str, Any] = dict(name=name, organization_id=organization_id)
    return _one(q.RESUME_SCHEDULE, params, ResumedSchedule)


def _delete_schedule(name: str, *, organization_id: Id | None) -> Call[DeletedSchedule]:
    params: dict[str, Any] = dict(name=name, organization_id=organization_id)
    return _one(q.DELETE_SCHEDULE, params, DeletedSchedule)


def _run_schedule_now(name: str, *, organization_id: Id | None) -> Call[list[FiredTick]]:
    params: dict[str, Any] = dict(name=name, organization_id=organization_id)
    return _all(q.RUN_SCHEDULE_NOW, params, FiredTick)


class Client:
    """Blocking client over a ``psycopg_pool.ConnectionPool``."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    @classmethod
    def connect(cls, dsn: str, *, min_size: int = 1, max_size: int = 4) -> Client:
        """A client with its own pool, closed by ``close()`` or at the end of its ``(async) with`` block."""
        pool: ConnectionPool = ConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            kwargs=_pool_kwargs(dsn),
            configure=configure_connection,
            check=_check_if_idle,
            open=False,
        )
        pool.open(wait=True)
        return cls(pool)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _run(self, call: Call[R]) -> R:
        with self.pool.connection() as conn:
            try:
                return _run_on(conn, call)
            finally:
                _returned_at[conn] = time.monotonic()

    def enqueue_job(
        self,
        job_type: str,
        payload: JsonObject | None = None,
        *,
        queue: str | None = None,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay: Seconds | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        idempotency_key: str | None = None,
        organization_id: Id | None = None,
    ) -> EnqueuedJob:
        """Enqueue one job (pgrun.enqueue_job); left-out settings come from the job type's definition."""
        return self._run(
            _enqueue_job(
                job_type,
                payload,
                queue=queue,
                priority=priority,
                run_at=run_at,
                delay=delay,
                max_attempts=max_attempts,
                timeout_seconds=timeout_seconds,
                idempotency_key=idempotency_key,
                organization_id=organization_id,
            )
        )

    def enqueue_jobs(self, jobs: Sequence[JsonObject]) -> list[EnqueuedBatchItem]:
        """Enqueue many jobs in one statement (pgrun.enqueue_jobs), keyed like enqueue_job."""
        return self._run(_enqueue_jobs(jobs))

    def claim_jobs(
        self,
        worker_id: str,
        *,
        lease_seconds: int = 30,
        max_jobs: int = 1,
        queues: Sequence[str] | None = None,
        job_types: Sequence[str] | None = None,
        max_held: int | None = None,
    ) -> list[ClaimedJob]:
        """Claim up to max_jobs ready jobs under fresh leases (pgrun.claim_jobs); max_held: the
        most running jobs of any one capped type the caller holds (its slots), None: no bound."""
        return self._run(
            _claim_jobs(
                worker_id,
                lease_seconds=lease_seconds,
                max_jobs=max_jobs,
                queues=queues,
                job_types=job_types,
                max_held=max_held,
            )
        )

    def next_run_at(
        self, *, queues: Sequence[str] | None = None, job_types: Sequence[str] | None = None
    ) -> datetime | None:
        """When the next delayed job of these queues and job types comes due; None when
        none is queued (pgrun.next_run_at)."""
        return self._run(_next_run_at(queues=queues, job_types=job_types))

    def heartbeat_jobs(
        self, worker_id: str, leases: Sequence[tuple[Id, Id]], *, lease_seconds: int = 30
    ) -> list[Heartbeat]:
        """Renew (job_id, lease_token) leases in one statement (pgrun.heartbeat_jobs)."""
        return self._run(_heartbeat_jobs(worker_id, leases, lease_seconds=lease_seconds))

    def complete_job(self, job_id: Id, lease_token: Id, result: Json = None) -> str:
        """Complete a job under its lease (pgrun.complete_job); returns succeeded or cancelled."""
        return self._run(_complete_job(job_id, lease_token, result))

    def complete_jobs(
        self, completions: Sequence[tuple[Id, Id, Json]], *, succeeded_rows: bool = True
    ) -> list[BatchOutcome]:
        """Complete (job_id, lease_token, result) triples (pgrun.complete_jobs): one outcome per
        job, in order; with ``succeeded_rows=False`` only those whose outcome is not succeeded."""
        return self._run(_complete_jobs(completions, succeeded_rows=succeeded_rows))

    def release_jobs(self, leases: Sequence[tuple[Id, Id]]) -> list[BatchOutcome]:
        """Hand claimed, never started (job_id, lease_token) jobs back to the queue
        (pgrun.release_jobs); one outcome per job, in order: released, cancelled or lease_lost."""
        return self._run(_release_jobs(leases))

    def fail_job(
        self,
        job_id: Id,
        lease_token: Id,
        *,
        error_code: str | None = None,
        message: str | None = None,
        retryable: bool = True,
        retry_delay: Seconds | None = None,
    ) -> Outcome:
        """Fail a job under its lease (pgrun.fail_job): retried, dead or cancelled as the SQL decides."""
        return self._run(
            _fail_job(
                job_id,
                lease_token,
                error_code=error_code,
                message=message,
                retryable=retryable,
                retry_delay=retry_delay,
            )
        )

    def fail_jobs(self, failures: Sequence[Failure]) -> list[BatchOutcome]:
        """Fail a batch in one statement (pgrun.fail_jobs); one outcome per job, in order."""
        return self._run(_fail_jobs(failures))

    def continue_job(
        self,
        job_id: Id,
        lease_token: Id,
        next_step: str,
        *,
        state: Json = None,
        delay: Seconds | None = None,
        max_attempts: int | None = None,
        retry_delay: Seconds | None = None,
    ) -> Outcome:
        """Queue the same job at next_step (pgrun.continue_job); state None keeps it.

        max_attempts and retry_delay give the next step its own attempt budget and retry delay
        (None: the job's max_attempts and its type's backoff).
        """
        return self._run(
            _continue_job(
                job_id,
                lease_token,
                next_step,
                state=state,
                delay=delay,
                max_attempts=max_attempts,
                retry_delay=retry_delay,
            )
        )

    def continue_jobs(self, continuations: Sequence[Continuation]) -> list[BatchOutcome]:
        """Continue a batch in one statement (pgrun.continue_jobs); one outcome per job, in
        order: continued (with run_at), cancelled, lease_lost, state_too_large or state_invalid."""
        return self._run(_continue_jobs(continuations))

    def report_progress(self, job_id: Id, lease_token: Id, progress: JsonObject) -> bool:
        """Store the job's progress (pgrun.report_progress); returns True when a cancel was requested."""
        return self._run(_report_progress(job_id, lease_token, progress))

    def append_job_log(
        self,
        job_id: Id,
        lease_token: Id,
        message: str,
        *,
        level: str = "info",
        fields: JsonObject | None = None,
    ) -> int | None:
        """Append a log line to the job's current attempt (pgrun.append_job_log); returns its id.

        None: the attempt already holds 1000 lines, so the line was counted, not stored.
        """
        return self._run(_append_job_log(job_id, lease_token, message, level=level, fields=fields))

    def append_job_logs(
        self, lines: Sequence[LogLine], *, durable: bool = True, logged_rows: bool = True
    ) -> list[LogOutcome]:
        """Append many log lines in one statement (pgrun.append_job_logs); one outcome per line,
        in order: logged, counted (the attempt holds its 1000 lines), lease_lost or invalid.
        ``durable=False``: the call's commit does not wait for the WAL flush (the lines are
        durable once a later durable commit of the server is: the worker writes its outcomes
        right after them; a server crash before that may lose them). With ``logged_rows=False``
        only the lines whose outcome is not logged come back."""
        return self._run(_append_job_logs(lines, durable=durable, logged_rows=logged_rows))

    def cancel_job(self, job_id: Id, *, reason: str | None = None, organization_id: Id | None = None) -> str:
        """Cancel a job (pgrun.cancel_job); returns cancelled or cancel_requested."""
        return self._run(_cancel_job(job_id, reason=reason, organization_id=organization_id))

    def requeue_job(
        self, job_id: Id, *, organization_id: Id | None = None, run_at: datetime | None = None
    ) -> datetime:
        """Put a dead or cancelled job back in the queue (pgrun.requeue_job); returns its run_at.

        A workflow step's job is refused: ConflictError ``job.in_workflow_run`` (enqueue a new run).
        """
        return self._run(_requeue_job(job_id, organization_id=organization_id, run_at=run_at))

    def reap_expired_leases(
        self, *, max_jobs: int = 1000, retry_delay: Seconds | None = None
    ) -> list[ReapedJob]:
        """Recover running jobs whose lease expired (pgrun.reap_expired_leases)."""
        return self._run(_reap_expired_leases(max_jobs=max_jobs, retry_delay=retry_delay))

    def purge_finished_jobs(
        self, older_than: Seconds, *, max_jobs: int = 10000, organization_id: Id | None = None
    ) -> int:
        """Delete finished jobs older than older_than (pgrun.purge_finished_jobs); returns how many."""
        return self._run(_purge_finished_jobs(older_than, max_jobs=max_jobs, organization_id=organization_id))

    def get_job(self, job_id: Id, *, organization_id: Id | None = None) -> JsonObject:
        """One job with its attempts and dead letters (pgrun.get_job)."""
        return self._run(_get_job(job_id, organization_id=organization_id))

    def list_jobs(
        self,
        *,
        status: str | None = None,
        job_type: str | None = None,
        queue: str | None = None,
        organization_id: Id | None = None,
        workflow_run_id: Id | None = None,
        after_id: Id | None = None,
        max_rows: int = 50,
    ) -> list[JobSummary]:
        """A page of jobs, oldest first (pgrun.list_jobs); pass the last id as after_id for the next page."""
        return self._run(
            _list_jobs(
                status=status,
                job_type=job_type,
                queue=queue,
                organization_id=organization_id,
                workflow_run_id=workflow_run_id,
                after_id=after_id,
                max_rows=max_rows,
            )
        )

    def upsert_job_definition(
        self,
        job_type: str,
        *,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        backoff_base_seconds: float | None = None,
        backoff_max_seconds: float | None = None,
        backoff_jitter: float | None = None,
        max_result_bytes: int | None = None,
    ) -> JobDefinition:
        """State a job type's definition (pgrun.upsert_job_definition); None = default.

        ``max_result_bytes`` caps a job's result and continue state (bytes of jsonb, 1 KiB..16 MiB;
        None = 1 MiB).
        """
        return self._run(
            _upsert_job_definition(
                job_type,
                queue=queue,
                priority=priority,
                max_attempts=max_attempts,
                timeout_seconds=timeout_seconds,
                backoff_base_seconds=backoff_base_seconds,
                backoff_max_seconds=backoff_max_seconds,
                backoff_jitter=backoff_jitter,
                max_result_bytes=max_result_bytes,
            )
        )

    def set_job_runtime_config(
        self,
        job_type: str,
        *,
        paused: bool | None = None,
        max_concurrency: int | None = None,
        clear_max_concurrency: bool = False,
    ) -> RuntimeConfig:
        """Pause/resume or cap a job type (pgrun.set_job_runtime_config); None = leave it."""
        return self._run(
            _set_job_runtime_config(
                job_type,
                paused=paused,
                max_concurrency=max_concurrency,
                clear_max_concurrency=clear_max_concurrency,
            )
        )

    def queue_depth(self, *, organization_id: Id | None = None) -> list[QueueDepth]:
        """Ready, delayed and running jobs per queue and type (pgrun.queue_depth), of the
        jobs this role may see (one organization's with ``organization_id``)."""
        return self._run(_queue_depth(organization_id=organization_id))

    def job_metrics(self, *, organization_id: Id | None = None) -> list[JobMetrics]:
        """Counts, rates and latencies per type and queue (pgrun.job_metrics), of the jobs
        this role may see (one organization's with ``organization_id``)."""
        return self._run(_job_metrics(organization_id=organization_id))

    def count_jobs(
        self,
        *,
        status: str | None = None,
        job_type: str | None = None,
        queue: str | None = None,
        organization_id: Id | None = None,
        workflow_run_id: Id | None = None,
    ) -> list[JobCount]:
        """How many jobs are in each status (pgrun.count_jobs), of the jobs this role may see:
        one row per status in lifecycle order (queued, running, succeeded, dead, cancelled), zeros
        included, or with ``status`` just that one. Filters as list_jobs. Counting queued or running
        jobs reads only their partial index; a finished status, or all, scans the jobs table."""
        return self._run(
            _count_jobs(
                status=status,
                job_type=job_type,
                queue=queue,
                organization_id=organization_id,
                workflow_run_id=workflow_run_id,
            )
        )

    def enqueue_workflow(self, spec: JsonObject | WorkflowLike) -> EnqueuedRun:
        """Start a workflow run (pgrun.enqueue_workflow) from a spec dict or a pgrun.workflow.Workflow."""
        return self._run(_enqueue_workflow(spec))

    def complete_external_step(
        self,
        run_id: Id,
        step_key: str,
        *,
        succeeded: bool = True,
        output: Json = None,
        organization_id: Id | None = None,
    ) -> ExternalStepResult:
        """Close a waiting external step (pgrun.complete_external_step)."""
        return self._run(
            _complete_external_step(
                run_id, step_key, succeeded=succeeded, output=output, organization_id=organization_id
            )
        )

    def append_workflow_steps(
        self,
        run_id: Id,
        steps: Sequence[JsonObject],
        *,
        mutation_key: str | None = None,
        organization_id: Id | None = None,
    ) -> AppendResult:
        """Add steps to a running run (pgrun.append_workflow_steps); idempotent per mutation_key."""
        return self._run(
            _append_workflow_steps(run_id, steps, mutation_key=mutation_key, organization_id=organization_id)
        )

    def cancel_workflow_run(
        self, run_id: Id, *, reason: str | None = None, organization_id: Id | None = None
    ) -> CancelRunResult:
        """Cancel a running workflow run (pgrun.cancel_workflow_run)."""
        return self._run(_cancel_workflow_run(run_id, reason=reason, organization_id=organization_id))

    def get_workflow_run(self, run_id: Id, *, organization_id: Id | None = None) -> JsonObject:
        """One run with its steps, dependencies and mutations (pgrun.get_workflow_run)."""
        return self._run(_get_workflow_run(run_id, organization_id=organization_id))

    def list_workflow_runs(
        self,
        *,
        status: str | None = None,
        organization_id: Id | None = None,
        after_id: Id | None = None,
        max_rows: int = 50,
    ) -> list[WorkflowRunSummary]:
        """A page of runs, oldest first (pgrun.list_workflow_runs)."""
        return self._run(
            _list_workflow_runs(
                status=status, organization_id=organization_id, after_id=after_id, max_rows=max_rows
            )
        )

    def upsert_schedule(
        self,
        name: str,
        cron: str,
        job_type: str,
        payload: JsonObject | None = None,
        *,
        timezone: str = "UTC",
        queue: str | None = None,
        priority: int | None = None,
        catch_up: str = "latest",
        backfill_limit: int = 100,
        enabled: bool = True,
        organization_id: Id | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        misfire_grace_seconds: int = 60,
        scope_kind: str = "none",
        scopes: Sequence[str] | None = None,
        forbid_stale_reentry: bool = False,
    ) -> UpsertedSchedule:
        """Declare a cron schedule, or restate it by (name, organization) (pgrun.upsert_schedule).

        The call states the whole declaration: what it leaves out takes its default. An
        operator's pause survives it. ``pgrun.scheduler.validate_cron`` makes the scheduler's
        own check (grammar, then croniter) before anything is sent, if wanted.
        """
        return self._run(
            _upsert_schedule(
                name,
                cron,
                job_type,
                payload,
                timezone=timezone,
                queue=queue,
                priority=priority,
                catch_up=catch_up,
                backfill_limit=backfill_limit,
                enabled=enabled,
                organization_id=organization_id,
                max_attempts=max_attempts,
                timeout_seconds=timeout_seconds,
                misfire_grace_seconds=misfire_grace_seconds,
                scope_kind=scope_kind,
                scopes=scopes,
                forbid_stale_reentry=forbid_stale_reentry,
            )
        )

    def claim_due_schedules(
        self, scheduler_id: str, *, max_schedules: int = 10, lease_seconds: int = 60
    ) -> list[ClaimedSchedule]:
        """Claim up to max_schedules due schedules for lease_seconds (pgrun.claim_due_schedules),
        with what planning them needs, the database's now included. The scheduler loop's call."""
        return self._run(
            _claim_due_schedules(scheduler_id, max_schedules=max_schedules, lease_seconds=lease_seconds)
        )

    def fire_schedule(
        self,
        schedule_id: Id,
        plan_times: Sequence[datetime],
        next_run_at: datetime,
        *,
        claim_token: Id | None = None,
        planned_until: datetime | None = None,
        scheduler_id: str | None = None,
        keep_claim: bool = False,
    ) -> list[FiredTick]:
        """Make one job per (scope, plan time), ever, under a live claim (pgrun.fire_schedule);
        a plan time fired before returns its job with created false. The scheduler loop's call."""
        return self._run(
            _fire_schedule(
                schedule_id,
                plan_times,
                next_run_at,
                claim_token=claim_token,
                planned_until=planned_until,
                scheduler_id=scheduler_id,
                keep_claim=keep_claim,
            )
        )

    def pause_unplannable_schedule(self, schedule_id: Id, claim_token: Id, reason: str) -> datetime:
        """Pause a claimed schedule this scheduler cannot plan, keeping why
        (pgrun.pause_unplannable_schedule); returns paused_at. The scheduler loop's call."""
        return self._run(_pause_unplannable_schedule(schedule_id, claim_token, reason))

    def list_schedules(
        self, *, organization_id: Id | None = None, after_id: Id | None = None, max_rows: int = 100
    ) -> list[ScheduleSummary]:
        """A page of schedules in creation order (pgrun.list_schedules); pass the last
        schedule_id as after_id for the next page (max_rows 1..1000)."""
        return self._run(
            _list_schedules(organization_id=organization_id, after_id=after_id, max_rows=max_rows)
        )

    def pause_schedule(self, name: str, *, organization_id: Id | None = None) -> PausedSchedule:
        """Pause a schedule (pgrun.pause_schedule): no scheduler claims it until resumed; jobs
        already made are untouched. NotFoundError ``schedule.not_found`` when there is none."""
        return self._run(_pause_schedule(name, organization_id=organization_id))

    def resume_schedule(self, name: str, *, organization_id: Id | None = None) -> ResumedSchedule:
        """Resume a paused schedule (pgrun.resume_schedule), due at once; whether the paused
        window is replayed is its catch-up policy's call (all replays it)."""
        return self._run(_resume_schedule(name, organization_id=organization_id))

    def delete_schedule(self, name: str, *, organization_id: Id | None = None) -> DeletedSchedule:
        """Delete a schedule and its ticks (pgrun.delete_schedule); the jobs it made stay."""
        return self._run(_delete_schedule(name, organization_id=organization_id))

    def run_schedule_now(self, name: str, *, organization_id: Id | None = None) -> list[FiredTick]:
        """Fire a schedule once now, one job per scope (pgrun.run_schedule_now); its planning
        state is left as it is."""
        return self._run(_run_schedule_now(name, organization_id=organization_id))


class AsyncClient:
    """asyncio client over a ``psycopg_pool.AsyncConnectionPool``; the methods of Client, awaited."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self.pool = pool

    @classmethod
    async def connect(cls, dsn: str, *, min_size: int = 1, max_size: int = 4) -> AsyncClient:
        """A client with its own pool, closed by ``close()`` or at the end of its ``(async) with`` block."""
        pool: AsyncConnectionPool = AsyncConnectionPool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            kwargs=_pool_kwargs(dsn),
            configure=configure_async_connection,
            check=_check_if_idle_async,
            open=False,
        )
        await pool.open(wait=True)
        return cls(pool)

    async def close(self) -> None:
        await self.pool.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _run(self, call: Call[R]) -> R:
        async with self.pool.connection() as conn:
            try:
                return await _run_on_async(conn, call)
            finally:
                _returned_at[conn] = time.monotonic()

    async def enqueue_job(
        self,
        job_type: str,
        payload: JsonObject | None = None,
        *,
        queue: str | None = None,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay: Seconds | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        idempotency_key: str | None = None,
        organization_id: Id | None = None,
    ) -> EnqueuedJob:
        """Enqueue one job (pgrun.enqueue_job); left-out settings come from the job type's definition."""
        return await self._run(
            _enqueue_job(
                job_type,
                payload,
                queue=queue,
                priority=priority,
                run_at=run_at,
                delay=delay,
                max_attempts=max_attempts,
                timeout_seconds=timeout_seconds,
                idempotency_key=idempotency_key,
                organization_id=organization_id,
            )
        )

    async def enqueue_jobs(self, jobs: Sequence[JsonObject]) -> list[EnqueuedBatchItem]:
        """Enqueue many jobs in one statement (pgrun.enqueue_jobs), keyed like enqueue_job."""
        return await self._run(_enqueue_jobs(jobs))

    async def claim_jobs(
        self,
        worker_id: str,
        *,
        lease_seconds: int = 30,
        max_jobs: int = 1,
        queues: Sequence[str] | None = None,
        job_types: Sequence[str] | None = None,
        max_held: int | None = None,
    ) -> list[ClaimedJob]:
        """Claim up to max_jobs ready jobs under fresh leases (pgrun.claim_jobs); max_held: the
        most running jobs of any one capped type the caller holds (its slots), None: no bound."""
        return await self._run(
            _claim_jobs(
                worker_id,
                lease_seconds=lease_seconds,
                max_jobs=max_jobs,
                queues=queues,
                job_types=job_types,
                max_held=max_held,
            )
        )

    async def next_run_at(
        self, *, queues: Sequence[str] | None = None, job_types: Sequence[str] | None = None
    ) -> datetime | None:
        """When the next delayed job of these queues and job types comes due; None when
        none is queued (pgrun.next_run_at)."""
        return await self._run(_next_run_at(queues=queues, job_types=job_types))

    async def heartbeat_jobs(
        self, worker_id: str, leases: Sequence[tuple[Id, Id]], *, lease_seconds: int = 30
    ) -> list[Heartbeat]:
        """Renew (job_id, lease_token) leases in one statement (pgrun.heartbeat_jobs)."""
        return await self._run(_heartbeat_jobs(worker_id, leases, lease_seconds=lease_seconds))

    async def complete_job(self, job_id: Id, lease_token: Id, result: Json = None) -> str:
        """Complete a job under its lease (pgrun.complete_job); returns succeeded or cancelled."""
        return await self._run(_complete_job(job_id, lease_token, result))

    async def complete_jobs(
        self, completions: Sequence[tuple[Id, Id, Json]], *, succeeded_rows: bool = True
    ) -> list[BatchOutcome]:
        """Complete (job_id, lease_token, result) triples (pgrun.complete_jobs): one outcome per
        job, in order; with ``succeeded_rows=False`` only those whose outcome is not succeeded."""
        return await self._run(_complete_jobs(completions, succeeded_rows=succeeded_rows))

    async def release_jobs(self, leases: Sequence[tuple[Id, Id]]) -> list[BatchOutcome]:
        """Hand claimed, never started (job_id, lease_token) jobs back to the queue
        (pgrun.release_jobs); one outcome per job, in order: released, cancelled or lease_lost."""
        return await self._run(_release_jobs(leases))

    async def fail_job(
        self,
        job_id: Id,
        lease_token: Id,
        *,
        error_code: str | None = None,
        message: str | None = None,
        retryable: bool = True,
        retry_delay: Seconds | None = None,
    ) -> Outcome:
        """Fail a job under its lease (pgrun.fail_job): retried, dead or cancelled as the SQL decides."""
        return await self._run(
            _fail_job(
                job_id,
                lease_token,
                error_code=error_code,
                message=message,
                retryable=retryable,
                retry_delay=retry_delay,
            )
        )

    async def fail_jobs(self, failures: Sequence[Failure]) -> list[BatchOutcome]:
        """Fail a batch in one statement (pgrun.fail_jobs); one outcome per job, in order."""
        return await self._run(_fail_jobs(failures))

    async def continue_job(
        self,
        job_id: Id,
        lease_token: Id,
        next_step: str,
        *,
        state: Json = None,
        delay: Seconds | None = None,
        max_attempts: int | None = None,
        retry_delay: Seconds | None = None,
    ) -> Outcome:
        """Queue the same job at next_step (pgrun.continue_job); state None keeps it.

        max_attempts and retry_delay give the next step its own attempt budget and retry delay
        (None: the job's max_attempts and its type's backoff).
        """
        return await self._run(
            _continue_job(
                job_id,
                lease_token,
                next_step,
                state=state,
                delay=delay,
                max_attempts=max_attempts,
                retry_delay=retry_delay,
            )
        )

    async def continue_jobs(self, continuations: Sequence[Continuation]) -> list[BatchOutcome]:
        """Continue a batch in one statement (pgrun.continue_jobs); one outcome per job, in
        order: continued (with run_at), cancelled, lease_lost, state_too_large or state_invalid."""
        return await self._run(_continue_jobs(continuations))

    async def report_progress(self, job_id: Id, lease_token: Id, progress: JsonObject) -> bool:
        """Store the job's progress (pgrun.report_progress); returns True when a cancel was requested."""
        return await self._run(_report_progress(job_id, lease_token, progress))

    async def append_job_log(
        self,
        job_id: Id,
        lease_token: Id,
        message: str,
        *,
        level: str = "info",
        fields: JsonObject | None = None,
    ) -> int | None:
        """Append a log line to the job's current attempt (pgrun.append_job_log); returns its id.

        None: the attempt already holds 1000 lines, so the line was counted, not stored.
        """
        return await self._run(_append_job_log(job_id, lease_token, message, level=level, fields=fields))

    async def append_job_logs(
        self, lines: Sequence[LogLine], *, durable: bool = True, logged_rows: bool = True
    ) -> list[LogOutcome]:
        """Append many log lines in one statement (pgrun.append_job_logs); one outcome per line,
        in order: logged, counted (the attempt holds its 1000 lines), lease_lost or invalid.
        ``durable=False``: the call's commit does not wait for the WAL flush (the lines are
        durable once a later durable commit of the server is: the worker writes its outcomes
        right after them; a server crash before that may lose them). With ``logged_rows=False``
        only the lines whose outcome is not logged come back."""
        return await self._run(_append_job_logs(lines, durable=durable, logged_rows=logged_rows))

    async def cancel_job(
        self, job_id: Id, *, reason: str | None = None, organization_id: Id | None = None
    ) -> str:
        """Cancel a job (pgrun.cancel_job); returns cancelled or cancel_requested."""
        return await self._run(_cancel_job(job_id, reason=reason, organization_id=organization_id))

    async def requeue_job(
        self, job_id: Id, *, organization_id: Id | None = None, run_at: datetime | None = None
    ) -> datetime:
        """Put a dead or cancelled job back in the queue (pgrun.requeue_job); returns its run_at.

        A workflow step's job is refused: ConflictError ``job.in_workflow_run`` (enqueue a new run).
        """
        return await self._run(_requeue_job(job_id, organization_id=organization_id, run_at=run_at))

    async def reap_expired_leases(
        self, *, max_jobs: int = 1000, retry_delay: Seconds | None = None
    ) -> list[ReapedJob]:
        """Recover running jobs whose lease expired (pgrun.reap_expired_leases)."""
        return await self._run(_reap_expired_leases(max_jobs=max_jobs, retry_delay=retry_delay))

    async def purge_finished_jobs(
        self, older_than: Seconds, *, max_jobs: int = 10000, organization_id: Id | None = None
    ) -> int:
        """Delete finished jobs older than older_than (pgrun.purge_finished_jobs); returns how many."""
        return await self._run(
            _purge_finished_jobs(older_than, max_jobs=max_jobs, organization_id=organization_id)
        )

    async def get_job(self, job_id: Id, *, organization_id: Id | None = None) -> JsonObject:
        """One job with its attempts and dead letters (pgrun.get_job)."""
        return await self._run(_get_job(job_id, organization_id=organization_id))

    async def list_jobs(
        self,
        *,
        status: str | None = None,
        job_type: str | None = None,
        queue: str | None = None,
        organization_id: Id | None = None,
        workflow_run_id: Id | None = None,
        after_id: Id | None = None,
        max_rows: int = 50,
    ) -> list[JobSummary]:
        """A page of jobs, oldest first (pgrun.list_jobs); pass the last id as after_id for the next page."""
        return await self._run(
            _list_jobs(
                status=status,
                job_type=job_type,
                queue=queue,
                organization_id=organization_id,
                workflow_run_id=workflow_run_id,
                after_id=after_id,
                max_rows=max_rows,
            )
        )

    async def upsert_job_definition(
        self,
        job_type: str,
        *,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        backoff_base_seconds: float | None = None,
        backoff_max_seconds: float | None = None,
        backoff_jitter: float | None = None,
        max_result_bytes: int | None = None,
    ) -> JobDefinition:
        """State a job type's definition (pgrun.upsert_job_definition); None = default.

        ``max_result_bytes`` caps a job's result and continue state (bytes of jsonb, 1 KiB..16 MiB;
        None = 1 MiB).
        """
        return await self._run(
            _upsert_job_definition(
                job_type,
                queue=queue,
                priority=priority,
                max_attempts=max_attempts,
                timeout_seconds=timeout_seconds,
                backoff_base_seconds=backoff_base_seconds,
                backoff_max_seconds=backoff_max_seconds,
                backoff_jitter=backoff_jitter,
                max_result_bytes=max_result_bytes,
            )
        )

    async def set_job_runtime_config(
        self,
        job_type: str,
        *,
        paused: bool | None = None,
        max_concurrency: int | None = None,
        clear_max_concurrency: bool = False,
    ) -> RuntimeConfig:
        """Pause/resume or cap a job type (pgrun.set_job_runtime_config); None = leave it."""
        return await self._run(
            _set_job_runtime_config(
                job_type,
                paused=paused,
                max_concurrency=max_concurrency,
                clear_max_concurrency=clear_max_concurrency,
            )
        )

    async def queue_depth(self, *, organization_id: Id | None = None) -> list[QueueDepth]:
        """Ready, delayed and running jobs per queue and type (pgrun.queue_depth), of the
        jobs this role may see (one organization's with ``organization_id``)."""
        return await self._run(_queue_depth(organization_id=organization_id))

    async def job_metrics(self, *, organization_id: Id | None = None) -> list[JobMetrics]:
        """Counts, rates and latencies per type and queue (pgrun.job_metrics), of the jobs
        this role may see (one organization's with ``organization_id``)."""
        return await self._run(_job_metrics(organization_id=organization_id))

    async def count_jobs(
        self,
        *,
        status: str | None = None,
        job_type: str | None = None,
        queue: str | None = None,
        organization_id: Id | None = None,
        workflow_run_id: Id | None = None,
    ) -> list[JobCount]:
        """How many jobs are in each status (pgrun.count_jobs), of the jobs this role may see:
        one row per status in lifecycle order (queued, running, succeeded, dead, cancelled), zeros
        included, or with ``status`` just that one. Filters as list_jobs. Counting queued or running
        jobs reads only their partial index; a finished status, or all, scans the jobs table."""
        return await self._run(
            _count_jobs(
                status=status,
                job_type=job_type,
                queue=queue,
                organization_id=organization_id,
                workflow_run_id=workflow_run_id,
            )
        )

    async def enqueue_workflow(self, spec: JsonObject | WorkflowLike) -> EnqueuedRun:
        """Start a workflow run (pgrun.enqueue_workflow) from a spec dict or a pgrun.workflow.Workflow."""
        return await self._run(_enqueue_workflow(spec))

    async def complete_external_step(
        self,
        run_id: Id,
        step_key: str,
        *,
        succeeded: bool = True,
        output: Json = None,
        organization_id: Id | None = None,
    ) -> ExternalStepResult:
        """Close a waiting external step (pgrun.complete_external_step)."""
        return await self._run(
            _complete_external_step(
                run_id, step_key, succeeded=succeeded, output=output, organization_id=organization_id
            )
        )

    async def append_workflow_steps(
        self,
        run_id: Id,
        steps: Sequence[JsonObject],
        *,
        mutation_key: str | None = None,
        organization_id: Id | None = None,
    ) -> AppendResult:
        """Add steps to a running run (pgrun.append_workflow_steps); idempotent per mutation_key."""
        return await self._run(
            _append_workflow_steps(run_id, steps, mutation_key=mutation_key, organization_id=organization_id)
        )

    async def cancel_workflow_run(
        self, run_id: Id, *, reason: str | None = None, organization_id: Id | None = None
    ) -> CancelRunResult:
        """Cancel a running workflow run (pgrun.cancel_workflow_run)."""
        return await self._run(_cancel_workflow_run(run_id, reason=reason, organization_id=organization_id))

    async def get_workflow_run(self, run_id: Id, *, organization_id: Id | None = None) -> JsonObject:
        """One run with its steps, dependencies and mutations (pgrun.get_workflow_run)."""
        return await self._run(_get_workflow_run(run_id, organization_id=organization_id))

    async def list_workflow_runs(
        self,
        *,
        status: str | None = None,
        organization_id: Id | None = None,
        after_id: Id | None = None,
        max_rows: int = 50,
    ) -> list[WorkflowRunSummary]:
        """A page of runs, oldest first (pgrun.list_workflow_runs)."""
        return await self._run(
            _list_workflow_runs(
                status=status, organization_id=organization_id, after_id=after_id, max_rows=max_rows
            )
        )

    async def upsert_schedule(
        self,
        name: str,
        cron: str,
        job_type: str,
        payload: JsonObject | None = None,
        *,
        timezone: str = "UTC",
        queue: str | None = None,
        priority: int | None = None,
        catch_up: str = "latest",
        backfill_limit: int = 100,
        enabled: bool = True,
        organization_id: Id | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        misfire_grace_seconds: int = 60,
        scope_kind: str = "none",
        scopes: Sequence[str] | None = None,
        forbid_stale_reentry: bool = False,
    ) -> UpsertedSchedule:
        """Declare a cron schedule, or restate it by (name, organization) (pgrun.upsert_schedule).

        The call states the whole declaration: what it leaves out takes its default. An
        operator's pause survives it. ``pgrun.scheduler.validate_cron`` makes the scheduler's
        own check (grammar, then croniter) before anything is sent, if wanted.
        """
        return await self._run(
            _upsert_schedule(
                name,
                cron,
                job_type,
                payload,
                timezone=timezone,
                queue=queue,
                priority=priority,
                catch_up=catch_up,
                backfill_limit=backfill_limit,
                enabled=enabled,
                organization_id=organization_id,
                max_attempts=max_attempts,
                timeout_seconds=timeout_seconds,
                misfire_grace_seconds=misfire_grace_seconds,
                scope_kind=scope_kind,
                scopes=scopes,
                forbid_stale_reentry=forbid_stale_reentry,
            )
        )

    async def claim_due_schedules(
        self, scheduler_id: str, *, max_schedules: int = 10, lease_seconds: int = 60
    ) -> list[ClaimedSchedule]:
        """Claim up to max_schedules due schedules for lease_seconds (pgrun.claim_due_schedules),
        with what planning them needs, the database's now included. The scheduler loop's call."""
        return await self._run(
            _claim_due_schedules(scheduler_id, max_schedules=max_schedules, lease_seconds=lease_seconds)
        )

    async def fire_schedule(
        self,
        schedule_id: Id,
        plan_times: Sequence[datetime],
        next_run_at: datetime,
        *,
        claim_token: Id | None = None,
        planned_until: datetime | None = None,
        scheduler_id: str | None = None,
        keep_claim: bool = False,
    ) -> list[FiredTick]:
        """Make one job per (scope, plan time), ever, under a live claim (pgrun.fire_schedule);
        a plan time fired before returns its job with created false. The scheduler loop's call."""
        return await self._run(
            _fire_schedule(
                schedule_id,
                plan_times,
                next_run_at,
                claim_token=claim_token,
                planned_until=planned_until,
                scheduler_id=scheduler_id,
                keep_claim=keep_claim,
            )
        )

    async def pause_unplannable_schedule(self, schedule_id: Id, claim_token: Id, reason: str) -> datetime:
        """Pause a claimed schedule this scheduler cannot plan, keeping why
        (pgrun.pause_unplannable_schedule); returns paused_at. The scheduler loop's call."""
        return await self._run(_pause_unplannable_schedule(schedule_id, claim_token, reason))

    async def list_schedules(
        self, *, organization_id: Id | None = None, after_id: Id | None = None, max_rows: int = 100
    ) -> list[ScheduleSummary]:
        """A page of schedules in creation order (pgrun.list_schedules); pass the last
        schedule_id as after_id for the next page (max_rows 1..1000)."""
        return await self._run(
            _list_schedules(organization_id=organization_id, after_id=after_id, max_rows=max_rows)
        )

    async def pause_schedule(self, name: str, *, organization_id: Id | None = None) -> PausedSchedule:
        """Pause a schedule (pgrun.pause_schedule): no scheduler claims it until resumed; jobs
        already made are untouched. NotFoundError ``schedule.not_found`` when there is none."""
        return await self._run(_pause_schedule(name, organization_id=organization_id))

    async def resume_schedule(self, name: str, *, organization_id: Id | None = None) -> ResumedSchedule:
        """Resume a paused schedule (pgrun.resume_schedule), due at once; whether the paused
        window is replayed is its catch-up policy's call (all replays it)."""
        return await self._run(_resume_schedule(name, organization_id=organization_id))

    async def delete_schedule(self, name: str, *, organization_id: Id | None = None) -> DeletedSchedule:
        """Delete a schedule and its ticks (pgrun.delete_schedule); the jobs it made stay."""
        return await self._run(_delete_schedule(name, organization_id=organization_id))

    async def run_schedule_now(self, name: str, *, organization_id: Id | None = None) -> list[FiredTick]:
        """Fire a schedule once now, one job per scope (pgrun.run_schedule_now); its planning
        state is left as it is."""
        return await self._run(_run_schedule_now(name, organization_id=organization_id))


class KeepingAsyncClient(AsyncClient):
    """An AsyncClient that keeps one connection, its last call's, instead of handing it back
    to the pool: the next call skips the pool's lending and return, ~0.05 ms each on an idle
    machine, and calls one after another reach one backend (the worker's claims and
    heartbeats go through one, its outcome writes through another). A call made while the kept
    connection is in use takes one from the pool and gives it back as usual, so the pool lends
    at most one connection more than before. The kept connection goes back to the pool when it
    sat unused for ``CHECK_IDLE_SECONDS`` (the next call then takes one through the pool's own
    check) or when its call failed (the pool drops a broken one); ``release`` and ``close``
    hand it back."""

    def __init__(self, pool: AsyncConnectionPool) -> None:
        super().__init__(pool)
        #: The kept connection and when it was last used (monotonic), or None.
        self._kept: tuple[psycopg.AsyncConnection[Any], float] | None = None

    async def _run(self, call: Call[R]) -> R:
        conn = None
        if self._kept is not None:
            (conn, used), self._kept = self._kept, None
            if time.monotonic() - used >= CHECK_IDLE_SECONDS:
                await self._give_back(conn, used)
                conn = None
        if conn is None:
            conn = await self.pool.getconn()
        try:
            result = await _run_on_async(conn, call)
        except BaseException:
            await self._give_back(conn, time.monotonic())
            raise
        if self._kept is None:
            self._kept = (conn, time.monotonic())
        else:  # another call keeps one already
            await self._give_back(conn, time.monotonic())
        return result

    async def _give_back(self, conn: psycopg.AsyncConnection[Any], used: float) -> None:
        _returned_at[conn] = used
        await self.pool.putconn(conn)

    async def release(self) -> None:
        """Hand the kept connection back to the pool."""
        if self._kept is not None:
            kept, self._kept = self._kept, None
            await self._give_back(*kept)

    async def close(self) -> None:
        await self.release()
        await super().close()
