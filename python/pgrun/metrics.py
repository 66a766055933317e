"""Prometheus metrics: what a worker did, and how deep the queues are (docs/metrics.md).

Two sources, kept apart:

* ``WorkerMetrics`` — counters and histograms one worker process updates as it claims, runs
  and writes outcomes (``pgrun worker --metrics-port``). Whether a failure was retried or
  the job is dead is what ``fail_jobs`` answered for it, never decided here.
* ``QueueDepthCollector`` — gauges read from ``pgrun.queue_depth()`` when Prometheus
  scrapes, under a short ``statement_timeout``. Run it in ONE process (the dashboard's
  ``/metrics``, ``make_metrics_asgi_app``, or one worker with ``--metrics-queue-depth``):
  every copy asks the database the same question.

``prometheus_client`` (the ``pgrun[dashboard]`` extra) is imported only when metrics are
turned on, so a worker installed without the extra runs as before. With metrics off the
worker holds ``NO_METRICS``, whose methods do nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.rows import class_row

from pgrun import queries as q
from pgrun.config import tcp_settings
from pgrun.results import ClaimedJob, QueueDepth

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

log = logging.getLogger("pgrun.metrics")

#: The one line a metrics option prints when prometheus_client is not installed.
MISSING = (
    "metrics need the prometheus_client package, which is not installed: "
    "pip install 'pgrun[dashboard]' (or pip install prometheus-client)"
)

#: Handler run times: from a few milliseconds to an hour.
HANDLER_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
#: How long a ready job waited for a claim: milliseconds on an idle worker, up to hours in a
#: backlog.
LATENCY_BUCKETS = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    300,
    900,
    3600,
)
#: Round trips to the database (claim_jobs, an outcome flush).
ROUND_TRIP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)

#: How long one scrape may spend in queue_depth() (milliseconds) and in connecting (seconds).
QUEUE_DEPTH_STATEMENT_TIMEOUT_MS = 2000
QUEUE_DEPTH_CONNECT_TIMEOUT = 3


class MetricsUnavailable(RuntimeError):
    """prometheus_client is not installed; ``str()`` is the line to show (``MISSING``)."""


def available() -> bool:
    """Whether prometheus_client can be imported."""
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        return False
    return True


def _require() -> None:
    if not available():
        raise MetricsUnavailable(MISSING)


class NoMetrics:
    """Metrics off: every hook does nothing (the worker's default)."""

    enabled = False

    def claimed(self, jobs: Sequence[ClaimedJob], seconds: float) -> None:
        pass

    def handled(self, job: ClaimedJob, seconds: float) -> None:
        pass

    def outcome(self, kind: str, job: ClaimedJob) -> None:
        pass

    def flushed(self, seconds: float) -> None:
        pass

    def watch_buffer(self, size: Callable[[], int]) -> None:
        pass

    def watch_waiting(self, size: Callable[[], int]) -> None:
        pass

    def log_lines(self, outcomes: Mapping[str, int]) -> None:
        pass


NO_METRICS = NoMetrics()

# What fail_jobs / complete_jobs / continue_job answered for an outcome -> the counters it moves.
_OUTCOME_COUNTERS: dict[str, tuple[str, ...]] = {
    "succeeded": ("succeeded",),
    "retry_scheduled": ("failed", "retried"),
    "dead": ("failed", "dead"),
    "cancelled": ("cancelled",),
    "lease_lost": ("lease_lost",),
    "continued": ("continued",),
}


class WorkerMetrics(NoMetrics):
    """The counters and histograms of one worker process, in ``registry`` (a new one by
    default). Raises ``MetricsUnavailable`` without prometheus_client."""

    enabled = True

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        _require()
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = registry if registry is not None else CollectorRegistry()
        labels = ("job_type", "queue")

        def counter(name: str, text: str) -> Any:
            return Counter(name, text, labels, registry=self.registry)

        self._claimed = counter("pgrun_jobs_claimed_total", "Jobs this worker claimed (claim_jobs).")
        self._counters: dict[str, Any] = {
            "succeeded": counter("pgrun_jobs_succeeded_total", "Jobs complete_jobs recorded as succeeded."),
            "failed": counter(
                "pgrun_jobs_failed_total",
                "Failed attempts fail_jobs recorded (retried + dead; cancelled ones not included).",
            ),
            "retried": counter(
                "pgrun_jobs_retried_total",
                "Failed attempts fail_jobs scheduled for a retry (retry_scheduled).",
            ),
            "dead": counter("pgrun_jobs_dead_total", "Failed attempts fail_jobs ended as dead (no retry)."),
            "cancelled": counter(
                "pgrun_jobs_cancelled_total",
                "Outcomes the SQL recorded as cancelled (a cancel was requested).",
            ),
            "lease_lost": counter(
                "pgrun_jobs_lease_lost_total",
                "Jobs whose lease this worker lost (heartbeat not renewed, or a write refused): "
                "their outcome was not written.",
            ),
            "continued": counter(
                "pgrun_jobs_continued_total", "Steps that ended with Continue, written by continue_job."
            ),
        }
        self._handler = Histogram(
            "pgrun_job_handler_duration_seconds",
            "How long handlers ran, whatever they returned or raised.",
            labels,
            buckets=HANDLER_BUCKETS,
            registry=self.registry,
        )
        self._latency = Histogram(
            "pgrun_job_start_latency_seconds",
            "How long a claimed job had been ready: the claim's time minus its run_at (due time), "
            "both on the database clock.",
            labels,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._claim = Histogram(
            "pgrun_claim_duration_seconds",
            "Round trip of one claim_jobs call.",
            buckets=ROUND_TRIP_BUCKETS,
            registry=self.registry,
        )
        self._flush = Histogram(
            "pgrun_flush_duration_seconds",
            "Writing one batch of buffered outcomes (complete_jobs, fail_jobs, continue_job calls).",
            buckets=ROUND_TRIP_BUCKETS,
            registry=self.registry,
        )
        #: Labelled children by (metric, job_type, queue): labels() costs as much as the update.
        self._children: dict[tuple[str, str, str], Any] = {}
        self._buffered = Gauge(
            "pgrun_outcomes_buffered",
            "Outcomes waiting to be written (the buffer, plus those parked with a workflow run).",
            registry=self.registry,
        )
        self._waiting = Gauge(
            "pgrun_worker_waiting_jobs",
            "Jobs this worker claimed ahead of its free slots, not started yet (its local queue).",
            registry=self.registry,
        )
        self._log_lines = Counter(
            "pgrun_log_lines_total",
            "Log lines handlers wrote (ctx.log), by what became of them: logged; counted (beyond "
            "the attempt's 1000, not stored); lease_lost; invalid (a level or fields the server "
            "refuses); dropped (fields that are not JSON, or a write that failed for good).",
            ("outcome",),
            registry=self.registry,
        )

    def _child(self, name: str, job: ClaimedJob) -> Any:
        key = (name, job.job_type, job.queue)
        child = self._children.get(key)
        if child is None:
            parent = {"claimed": self._claimed, "handler": self._handler, "latency": self._latency}.get(
                name
            ) or self._counters[name]
            child = self._children[key] = parent.labels(job.job_type, job.queue)
        return child

    def claimed(self, jobs: Sequence[ClaimedJob], seconds: float) -> None:
        self._claim.observe(seconds)
        for job in jobs:
            self._child("claimed", job).inc()
            self._child("latency", job).observe(max(0.0, (job.started_at - job.run_at).total_seconds()))

    def handled(self, job: ClaimedJob, seconds: float) -> None:
        self._child("handler", job).observe(seconds)

    def outcome(self, kind: str, job: ClaimedJob) -> None:
        """``kind``: what the SQL answered (succeeded, retry_scheduled, dead, cancelled,
        lease_lost) or ``continued``; anything else moves nothing."""
        for name in _OUTCOME_COUNTERS.get(kind, ()):
            self._child(name, job).inc()

    def flushed(self, seconds: float) -> None:
        self._flush.observe(seconds)

    def watch_buffer(self, size: Callable[[], int]) -> None:
        """Read the buffer's size when scraped (nothing to update on the hot path)."""
        self._buffered.set_function(size)

    def watch_waiting(self, size: Callable[[], int]) -> None:
        """Read how many claimed jobs wait for a slot when scraped."""
        self._waiting.set_function(size)

    def log_lines(self, outcomes: Mapping[str, int]) -> None:
        """Count a write's log lines by outcome (append_job_logs' answers, or ``dropped``)."""
        for outcome, n in outcomes.items():
            self._log_lines.labels(outcome).inc(n)


class QueueDepthCollector:
    """Gauges from ``pgrun.queue_depth()``, read at scrape time over one connection of its own
    (opened on the first scrape, opened again after an error), each call limited to
    ``statement_timeout_ms``, and given up in seconds when its peer vanishes (the TCP
    settings of pgrun.config.tcp_settings, unless the DSN names its own). A failed read logs
    a warning and reports ``pgrun_queue_depth_up 0`` without depth series; Prometheus keeps
    scraping."""

    def __init__(
        self,
        dsn: str,
        *,
        organization_id: str | None = None,
        statement_timeout_ms: int = QUEUE_DEPTH_STATEMENT_TIMEOUT_MS,
        connect_timeout: int = QUEUE_DEPTH_CONNECT_TIMEOUT,
    ) -> None:
        _require()
        self.dsn = dsn
        self.organization_id = organization_id
        self.statement_timeout_ms = statement_timeout_ms
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        #: The last failure logged as a warning: the same one again is logged at debug level.
        self._last_error: str | None = None

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def read(self) -> list[QueueDepth]:
        """One queue_depth() call (raises psycopg.Error when the database refuses or is gone)."""
        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    # a peer that vanished fails the scrape in seconds (it would hold the lock,
                    # and every later scrape behind it, until the kernel gave up: hours)
                    tcp: dict[str, Any] = tcp_settings(self.dsn, self.statement_timeout_ms / 1000)
                    conn = psycopg.connect(
                        self.dsn, autocommit=True, connect_timeout=self.connect_timeout, **tcp
                    )
                    conn.execute(
                        "SELECT set_config('statement_timeout', %s, false)", (str(self.statement_timeout_ms),)
                    )
                    conn.execute("SELECT set_config('application_name', 'pgrun metrics', false)")
                    self._conn = conn
                with self._conn.cursor(row_factory=class_row(QueueDepth)) as cur:
                    cur.execute(q.QUEUE_DEPTH, {"organization_id": self.organization_id})
                    return cur.fetchall()
            except psycopg.Error:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None
                raise

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def collect(self) -> Iterable[Metric]:
        started = time.perf_counter()
        try:
            rows: list[QueueDepth] | None = self.read()
        except psycopg.Error as exc:
            rows = None
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if exc.sqlstate == "42501":
                why += (
                    "; the role needs EXECUTE on pgrun.queue_depth: grant it the reader role "
                    "(<prefix>_reader, pgrun_reader by default; docs/metrics.md)"
                )
            # every scrape fails the same way until someone acts: say it once
            log.log(
                logging.DEBUG if why == self._last_error else logging.WARNING,
                "queue depth for metrics: %s",
                why,
            )
            self._last_error = why
        else:
            self._last_error = None
        return self._families(rows, time.perf_counter() - started)

    def _families(
        self, rows: list[QueueDepth] | None = None, seconds: float | None = None
    ) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        labels = ["queue", "job_type"]
        gauges = {
            "ready": GaugeMetricFamily(
                "pgrun_queue_ready_jobs", "Queued jobs whose run_at has come (claimable now).", labels=labels
            ),
            "delayed": GaugeMetricFamily(
                "pgrun_queue_delayed_jobs", "Queued jobs whose run_at is still ahead.", labels=labels
            ),
            "running": GaugeMetricFamily(
                "pgrun_queue_running_jobs", "Jobs running under a lease.", labels=labels
            ),
            "age": GaugeMetricFamily(
                "pgrun_queue_oldest_ready_age_seconds",
                "How long the oldest ready job has waited past its run_at (0 when none is ready).",
                labels=labels,
            ),
            "paused": GaugeMetricFamily(
                "pgrun_queue_paused", "1 when the job type is paused (set_job_runtime_config).", labels=labels
            ),
            "cap": GaugeMetricFamily(
                "pgrun_queue_max_concurrency",
                "The job type's cap on running jobs (max_concurrency); no series when it has none.",
                labels=labels,
            ),
        }
        up = GaugeMetricFamily("pgrun_queue_depth_up", "1 when the last queue_depth() read succeeded.")
        took = GaugeMetricFamily(
            "pgrun_queue_depth_scrape_duration_seconds", "How long the last queue_depth() read took."
        )
        if seconds is not None:
            up.add_metric([], 0 if rows is None else 1)
            took.add_metric([], seconds)
        for row in rows or ():
            key = [row.queue, row.job_type]
            gauges["ready"].add_metric(key, row.ready)
            gauges["delayed"].add_metric(key, row.delayed)
            gauges["running"].add_metric(key, row.running)
            age = row.oldest_ready_age.total_seconds() if row.oldest_ready_age is not None else 0.0
            gauges["age"].add_metric(key, age)
            gauges["paused"].add_metric(key, 1 if row.paused else 0)
            if row.max_concurrency is not None:
                gauges["cap"].add_metric(key, row.max_concurrency)
        yield from gauges.values()
        yield up
        yield took


def queue_depth_registry(dsn: str, *, organization_id: str | None = None) -> CollectorRegistry:
    """A registry holding one QueueDepthCollector for ``dsn``."""
    _require()
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    registry.register(QueueDepthCollector(dsn, organization_id=organization_id))
    return registry


def make_metrics_asgi_app(dsn: str, *, organization_id: str | None = None) -> Any:
    """An ASGI app serving the queue-depth gauges of ``dsn`` in Prometheus' text format
    (prometheus_client's make_asgi_app), for any ASGI application to mount at ``/metrics``.

    The read runs on the event loop when scraped; queue_depth() reads only queued and running
    rows and is cut off after QUEUE_DEPTH_STATEMENT_TIMEOUT_MS. (``pgrun dashboard`` registers
    a QueueDepthCollector itself and reads it in a worker thread.)"""
    from prometheus_client import make_asgi_app

    return make_asgi_app(registry=queue_depth_registry(dsn, organization_id=organization_id))


def add_process_collectors(registry: CollectorRegistry) -> None:
    """The process_* (CPU, memory, open files) and python_* series, as the default registry has."""
    from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR

    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)


def serve(registry: CollectorRegistry, port: int, host: str = "127.0.0.1") -> Any:
    """Start prometheus_client's HTTP server for ``registry`` in a daemon thread; returns the
    server (``server.server_port`` is the port, useful with port 0). Raises OSError when the
    address cannot be bound."""
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server
