"""Worker configuration from the environment: the ``JOBS_*`` variables and ``DATABASE_URL``.

A bad value never stops a worker: it is replaced by the default (unparsable) or clamped to
the nearest safe value (out of range), with a warning that names the variable.

| variable | default | range |
|---|---|---|
| JOBS_WORKER_ID | worker-<uuid> when blank | text, at most 200 characters |
| JOBS_POLL_INTERVAL_MS | 1000 | 10 .. 60000 |
| JOBS_CLAIM_BATCH_SIZE | 500 | 1 .. 1000 |
| JOBS_CLAIMS_IN_FLIGHT | 2 | 1 .. 4: claims the worker runs at once |
| JOBS_LEASE_TTL_SECONDS | 30 | 10 .. 86400 |
| JOBS_MAX_GLOBAL_CONCURRENCY | 10 | 1 .. 10000 |
| JOBS_PREFETCH | unset: 0.1 s of throughput (see docs/python.md) | 0 .. 1000; 0 = free slots only |
| JOBS_REAPER_INTERVAL_SECONDS | 10 | 1 .. 3600 |
| JOBS_SCHEDULE_POLL_INTERVAL_SECONDS | 5 | 1 .. 3600 |
| JOBS_REAPER_RETRY_DELAY_MS | unset: each job type's backoff | 0 .. 86400000 (0 = retry at once) |
| JOBS_RETENTION_HOURS | 168 (7 days) | 0 .. 876000; 0 = never purge |
| JOBS_SHUTDOWN_GRACE_SECONDS | 30 | 0 .. 86400 |
| JOBS_STORE_TRACEBACKS | false | true/false (1/0, yes/no, on/off) |
| JOBS_METRICS_PORT | unset: no metrics endpoint | 1 .. 65535 |
| JOBS_METRICS_HOST | 127.0.0.1 | the address the metrics endpoint binds |
| JOBS_METRICS_QUEUE_DEPTH | false | true/false: this worker also serves the queue-depth gauges |
| JOBS_ASYNC_CLAIMS | true | true/false: claims and heartbeats commit without waiting for the WAL flush |
| JOBS_GC_THRESHOLD | 10000 | 0 .. 10000000: the young GC generation's threshold; 0 = Python's own |
| JOBS_EVENT_LOOP | uvloop | uvloop or asyncio: the event loop `pgrun worker` and the scheduler run on |
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import psycopg
from psycopg.conninfo import conninfo_to_dict

log = logging.getLogger("pgrun.config")


@dataclass(frozen=True)
class Config:
    database_url: str = ""
    worker_id: str = field(default_factory=lambda: f"worker-{uuid.uuid4()}")
    poll_interval_ms: int = 1000
    claim_batch_size: int = 500
    #: How many claim_jobs calls the worker runs at once: a second one starts only when the
    #: local queue runs low while the first is out (the claims cannot keep the handlers fed),
    #: which a worker of slow handlers seldom sees. It fills the database's idle time between
    #: one claim's answer and the next; each claim walks past the rows the other holds
    #: (docs/performance.md, seventeenth pass: +3-19 % jobs/s and +4 % server CPU a job on a
    #: 2-core machine running both). Two claims out may start jobs of equal rank out of
    #: order by up to a claim's worth; a worker of one slot keeps one claim out. Each takes
    #: a connection of the claims pool.
    claims_in_flight: int = 2
    lease_ttl_seconds: int = 30
    max_global_concurrency: int = 10
    #: How many jobs the worker claims ahead of its free slots and holds, not started, in a
    #: local queue (heartbeated like running ones), so a freed slot starts the next job
    #: without a claim round trip. None: what the worker's handlers finish in 0.1 s at their
    #: recent rate, at least max_global_concurrency, at most 1000; 0: claim only for free
    #: slots. Prefetched jobs are out of other workers' reach until started or handed back.
    prefetch: int | None = None
    reaper_interval_seconds: int = 10
    schedule_poll_interval_seconds: int = 5
    #: The retry delay the reaper passes for expired leases; None: each job type's backoff.
    reaper_retry_delay_ms: int | None = None
    retention_hours: int = 168
    shutdown_grace_seconds: int = 30
    #: Store a crashed handler's whole traceback as its error message (default: the exception's
    #: type and clipped text only; the traceback always goes to the worker's log).
    store_tracebacks: bool = False
    #: Serve Prometheus metrics on this port (docs/metrics.md); None: no endpoint.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    #: Also read queue_depth() for the metrics endpoint: turn it on for one worker only.
    metrics_queue_depth: bool = False
    #: Claims and heartbeats commit with synchronous_commit = off (docs/lease-machine.md,
    #: "Durability"): a claim-run-complete cycle waits for one WAL flush (the outcomes')
    #: instead of two; a claim lost in a server crash leaves its job queued, to run again.
    #: Enqueues and outcomes stay durable either way.
    async_claims: bool = True
    #: The threshold of Python's youngest garbage-collector generation while the loops run
    #: (pgrun.runner.run_loops sets it and puts Python's back after): how many container
    #: objects are allocated, net, between two of its collections. Python's own 700 makes a
    #: busy worker collect every few jobs and promote the jobs it holds to the old generations,
    #: whose full collections walk every live object (~8 % of a no-op job's time at
    #: concurrency 10, docs/performance.md). 0 leaves the interpreter's setting alone.
    gc_threshold: int = 10_000
    #: The event loop the command-line runners (``pgrun worker``, ``python -m pgrun.scheduler``)
    #: run on: "uvloop" (libuv's loop; the worker spends ~12 % less CPU a job,
    #: docs/performance.md) or "asyncio" (the standard library's). Where uvloop is not
    #: installed, asyncio's, with a warning. Code that runs the loops itself picks its own loop.
    event_loop: str = "uvloop"

    @property
    def poll_interval(self) -> float:
        return self.poll_interval_ms / 1000

    @property
    def prefetch_limit(self) -> int:
        """How many claimed, not started jobs the worker holds at most (``prefetch``; unset,
        the adaptive bound's ceiling)."""
        return 1000 if self.prefetch is None else self.prefetch

    @property
    def heartbeat_interval(self) -> float:
        """Every lease is renewed three times per lease length."""
        return self.lease_ttl_seconds / 3

    @property
    def tcp_settings(self) -> dict[str, int]:
        """libpq's TCP settings for the worker's, reaper's and scheduler's connections
        (``tcp_settings``): a connection whose peer vanished is given up in a third of the
        lease, so that a heartbeat waiting on one fails, and the next renews the leases on
        another connection, before they run out."""
        return tcp_settings(self.database_url, self.lease_ttl_seconds / 3)

    def with_overrides(self, **changes: object) -> Config:
        """A copy with some fields replaced, clamped like the environment's values."""
        return _clamped(replace(self, **changes))  # type: ignore[arg-type]


#: tcp_settings: unanswered keepalive probes before a connection is given up; the longest
#: silence before the first probe and between probes; so the shortest and the longest it takes
#: to give up a connection whose peer vanished (seconds).
TCP_KEEPALIVE_PROBES = 3
TCP_IDLE_MAX = 10
TCP_INTERVAL_MAX = 5
TCP_GIVE_UP_MIN = 1 + TCP_KEEPALIVE_PROBES
TCP_GIVE_UP_MAX = TCP_IDLE_MAX + TCP_KEEPALIVE_PROBES * TCP_INTERVAL_MAX


def tcp_settings(conninfo: str, give_up_after: float) -> dict[str, int]:
    """libpq's TCP settings for a connection to ``conninfo`` that pgrun keeps open, unless
    ``conninfo`` names any of them (then it has them all its own way): keepalive probes after
    a few seconds of silence and a ``tcp_user_timeout``, so that a connection whose peer
    vanished without a reset (a host gone, a network partition, a firewall or NAT that dropped
    the flow) fails after about ``give_up_after`` seconds (``TCP_GIVE_UP_MIN`` ..
    ``TCP_GIVE_UP_MAX``), instead of when the kernel's defaults give up (a call waiting on its
    answer: over two hours). A live server's kernel answers the probes even while a statement
    runs for long; on a Unix socket libpq ignores them (tests_py/test_worker_partition.py)."""
    seconds = int(give_up_after)
    interval = min(max(1, seconds // 5), TCP_INTERVAL_MAX)
    idle = min(max(1, seconds - TCP_KEEPALIVE_PROBES * interval), TCP_IDLE_MAX)
    settings = {
        "keepalives": 1,
        "keepalives_idle": idle,
        "keepalives_interval": interval,
        "keepalives_count": TCP_KEEPALIVE_PROBES,
        # with keepalives on, Linux gives a connection up when this runs out (data sent and
        # not acknowledged, or probes not answered), so the two agree
        "tcp_user_timeout": (idle + TCP_KEEPALIVE_PROBES * interval) * 1000,
    }
    try:
        named = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:  # the connection reports a malformed conninfo itself
        named = {}
    return {} if named.keys() & settings.keys() else settings


# variable, field, minimum, maximum
_INTEGERS: tuple[tuple[str, str, int, int], ...] = (
    ("JOBS_POLL_INTERVAL_MS", "poll_interval_ms", 10, 60_000),
    ("JOBS_CLAIM_BATCH_SIZE", "claim_batch_size", 1, 1000),
    ("JOBS_CLAIMS_IN_FLIGHT", "claims_in_flight", 1, 4),
    ("JOBS_LEASE_TTL_SECONDS", "lease_ttl_seconds", 10, 86_400),
    ("JOBS_MAX_GLOBAL_CONCURRENCY", "max_global_concurrency", 1, 10_000),
    ("JOBS_PREFETCH", "prefetch", 0, 1000),
    ("JOBS_REAPER_INTERVAL_SECONDS", "reaper_interval_seconds", 1, 3600),
    ("JOBS_SCHEDULE_POLL_INTERVAL_SECONDS", "schedule_poll_interval_seconds", 1, 3600),
    ("JOBS_REAPER_RETRY_DELAY_MS", "reaper_retry_delay_ms", 0, 86_400_000),
    ("JOBS_RETENTION_HOURS", "retention_hours", 0, 876_000),
    ("JOBS_SHUTDOWN_GRACE_SECONDS", "shutdown_grace_seconds", 0, 86_400),
    ("JOBS_METRICS_PORT", "metrics_port", 1, 65_535),
    ("JOBS_GC_THRESHOLD", "gc_threshold", 0, 10_000_000),
)
_MAX_WORKER_ID = 200
# variable, field
_BOOLEANS: tuple[tuple[str, str], ...] = (
    ("JOBS_STORE_TRACEBACKS", "store_tracebacks"),
    ("JOBS_METRICS_QUEUE_DEPTH", "metrics_queue_depth"),
    ("JOBS_ASYNC_CLAIMS", "async_claims"),
)
# variable, field, allowed values
_CHOICES: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("JOBS_EVENT_LOOP", "event_loop", frozenset({"uvloop", "asyncio"})),
)
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _clamp(name: str, value: int, low: int, high: int) -> int:
    if value < low or value > high:
        clamped = min(max(value, low), high)
        log.warning("%s=%s is outside %s..%s; using %s", name, value, low, high, clamped)
        return clamped
    return value


def _clamped(config: Config) -> Config:
    changes: dict[str, int | str] = {}
    for name, attr, low, high in _INTEGERS:
        value = getattr(config, attr)
        if value is None:  # an optional setting left unset
            continue
        fixed = _clamp(name, value, low, high)
        if fixed != value:
            changes[attr] = fixed
    for name, attr, allowed in _CHOICES:
        value = getattr(config, attr)
        if value not in allowed:
            default = getattr(Config, attr)
            log.warning("%s=%r is not one of %s; using %s", name, value, ", ".join(sorted(allowed)), default)
            changes[attr] = default
    worker_id = config.worker_id.strip()
    if not worker_id:
        worker_id = f"worker-{uuid.uuid4()}"
    elif len(worker_id) > _MAX_WORKER_ID:
        log.warning("JOBS_WORKER_ID is over %s characters; truncating it", _MAX_WORKER_ID)
        worker_id = worker_id[:_MAX_WORKER_ID]
    if worker_id != config.worker_id:
        changes["worker_id"] = worker_id
    return replace(config, **changes) if changes else config  # type: ignore[arg-type]


def from_env(environ: Mapping[str, str] | None = None) -> Config:
    """The configuration the environment describes, every value made safe."""
    env = os.environ if environ is None else environ
    defaults = Config()
    values: dict[str, int | str | bool] = {}
    for name, attr, _low, _high in _INTEGERS:
        raw = env.get(name, "").strip()
        if not raw:
            continue
        try:
            values[attr] = int(raw)
        except ValueError:
            default = getattr(defaults, attr)
            log.warning("%s=%r is not an integer; using %s", name, raw, default)
    for name, attr in _BOOLEANS:
        raw = env.get(name, "").strip().lower()
        if not raw:
            continue
        if raw in _TRUE or raw in _FALSE:
            values[attr] = raw in _TRUE
        else:
            default = getattr(defaults, attr)
            log.warning("%s=%r is not true or false (1/0, yes/no, on/off); using %s", name, raw, default)
    for name, attr, _allowed in _CHOICES:
        raw = env.get(name, "").strip().lower()
        if not raw:
            continue
        values[attr] = raw  # _clamped replaces a value not allowed, with a warning
    values["worker_id"] = env.get("JOBS_WORKER_ID", "")
    host = env.get("JOBS_METRICS_HOST", "").strip()
    if host:
        values["metrics_host"] = host
    values["database_url"] = env.get("DATABASE_URL", "")
    return _clamped(replace(defaults, **values))  # type: ignore[arg-type]
