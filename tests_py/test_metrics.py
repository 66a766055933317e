"""Prometheus metrics (docs/metrics.md): the worker's counters and histograms scraped over HTTP
while it runs known jobs, the queue-depth gauges against queue_depth(), the CLI wiring, the
configuration, and the Grafana dashboard's metric names."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from pgrun import config as configuration
from pgrun.app import App, Fail, JobContext, Retry
from pgrun.client import AsyncClient, Client
from pgrun.metrics import (
    QueueDepthCollector,
    WorkerMetrics,
    make_metrics_asgi_app,
    serve,
)
from pgrun.results import QueueDepth
from pgrun.testing import LoginRole
from pgrun.worker import Worker
from worker_support import fast_config, run_worker_until

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return parse(response.read().decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- the worker's counters and histograms -------------------------------------------------------

N_OK, M_FLAKY = 5, 3


def counting_app() -> App:
    app = App("metrics-test")

    @app.job("m.ok", queue="mq")
    async def ok(ctx: JobContext) -> Any:
        return {"ok": True}

    @app.job("m.flaky", queue="mq", max_attempts=5)
    async def flaky(ctx: JobContext) -> Any:
        if ctx.attempt == 1:
            raise Retry(delay=0)
        return {"attempt": ctx.attempt}

    @app.job("m.doomed", queue="mq", max_attempts=5)
    async def doomed(ctx: JobContext) -> Any:
        raise Fail("never works", retryable=False)

    return app


def counters(samples: Samples) -> dict[str, float]:
    """Every pgrun_jobs_* counter and histogram count by job type, as one comparable dict."""
    found: dict[str, float] = {}
    for (name, labels), number in samples.items():
        if name.startswith("pgrun_jobs_") and name.endswith("_total"):
            found[f"{name}{{{dict(labels)['job_type']}}}"] = number
        if name == "pgrun_job_handler_duration_seconds_count":
            found[f"handler_count{{{dict(labels)['job_type']}}}"] = number
        if name == "pgrun_job_start_latency_seconds_count":
            found[f"latency_count{{{dict(labels)['job_type']}}}"] = number
    return {key: number for key, number in found.items() if number}


def test_counters_move_by_what_the_worker_did(db: str) -> None:
    metrics = WorkerMetrics()
    server = serve(metrics.registry, 0)
    port = server.server_port
    try:
        assert counters(scrape(port)) == {}
        with Client.connect(db) as client:
            ids = [client.enqueue_job("m.ok", {}, queue="mq").job_id for _ in range(N_OK)]
            ids += [client.enqueue_job("m.flaky", {}, queue="mq").job_id for _ in range(M_FLAKY)]
            ids.append(client.enqueue_job("m.doomed", {}, queue="mq").job_id)

        expected = {
            "pgrun_jobs_claimed_total{m.ok}": N_OK,
            "pgrun_jobs_claimed_total{m.flaky}": 2 * M_FLAKY,
            "pgrun_jobs_claimed_total{m.doomed}": 1,
            "pgrun_jobs_succeeded_total{m.ok}": N_OK,
            "pgrun_jobs_succeeded_total{m.flaky}": M_FLAKY,
            "pgrun_jobs_failed_total{m.flaky}": M_FLAKY,
            "pgrun_jobs_retried_total{m.flaky}": M_FLAKY,
            "pgrun_jobs_failed_total{m.doomed}": 1,
            "pgrun_jobs_dead_total{m.doomed}": 1,
            "handler_count{m.ok}": N_OK,
            "handler_count{m.flaky}": 2 * M_FLAKY,
            "handler_count{m.doomed}": 1,
            "latency_count{m.ok}": N_OK,
            "latency_count{m.flaky}": 2 * M_FLAKY,
            "latency_count{m.doomed}": 1,
        }
        seen: list[Samples] = []

        def done(client: Client) -> bool:
            statuses = [client.get_job(job_id)["status"] for job_id in ids]
            if any(status not in ("succeeded", "dead") for status in statuses):
                return False
            # The database has every outcome: scrape while the worker runs, until it has
            # counted the answers of its last write too.
            seen.append(scrape(port))
            return counters(seen[-1]) == expected

        run_worker_until(counting_app(), fast_config(db), done, timeout=30, metrics=metrics)
        assert counters(seen[-1]) == expected
        samples = seen[-1]
        # a retry waits for nothing here: every job ran and was written
        assert value(samples, "pgrun_claim_duration_seconds_count") >= 1
        assert value(samples, "pgrun_flush_duration_seconds_count") >= 1
        assert value(samples, "pgrun_outcomes_buffered") == 0
        assert value(samples, "pgrun_worker_waiting_jobs") == 0
        total = sum(
            value(samples, "pgrun_job_handler_duration_seconds_sum", job_type=t, queue="mq")
            for t in ("m.ok", "m.flaky", "m.doomed")
        )
        assert 0 <= total < 30
        # every claim waited a little (never negative) and no claim waited the whole run
        waited = sum(
            value(samples, "pgrun_job_start_latency_seconds_sum", job_type=t, queue="mq")
            for t in ("m.ok", "m.flaky", "m.doomed")
        )
        assert 0 < waited < 30 * (N_OK + 2 * M_FLAKY + 1)
        # stopped: nothing more moved (no outcome counted twice at shutdown)
        assert counters(scrape(port)) == expected
    finally:
        server.shutdown()


def test_the_jobs_waiting_in_the_local_queue_are_read_when_scraped() -> None:
    """pgrun_worker_waiting_jobs: the claimed jobs not started yet, in the local queue and in
    claims held until an earlier one answers (docs/python.md, "The local queue")."""
    metrics = WorkerMetrics()
    worker = Worker(App(), cast(AsyncClient, None), configuration.Config(), metrics=metrics)
    assert value(parse_registry(metrics.registry), "pgrun_worker_waiting_jobs") == 0
    worker._queue.extend(cast(Any, ["a", "b"]))
    worker._held[7] = cast(Any, ["c"])
    assert value(parse_registry(metrics.registry), "pgrun_worker_waiting_jobs") == 3


def test_log_lines_are_counted_by_what_became_of_them(db: str) -> None:
    """pgrun_log_lines_total{outcome}: the lines a handler wrote, by append_job_logs' answer
    (logged, invalid here) or dropped by the worker (fields that are not JSON)."""
    metrics = WorkerMetrics()
    app = App()

    @app.job("m.logs")
    async def logs(ctx: JobContext) -> None:
        await ctx.log("one")
        await ctx.log("two", n=2)
        await ctx.log("a level the server refuses", level="loud")
        await ctx.log("fields that are not JSON", when=object())

    with Client.connect(db) as client:
        job_id = client.enqueue_job("m.logs").job_id

        def counted(c: Client) -> bool:
            samples = parse_registry(metrics.registry)
            return c.get_job(job_id)["status"] == "succeeded" and all(
                value(samples, "pgrun_log_lines_total", outcome=k) == n
                for k, n in (("logged", 2), ("invalid", 1), ("dropped", 1))
            )

        run_worker_until(app, fast_config(db), counted, timeout=20, metrics=metrics)
    assert value(parse_registry(metrics.registry), "pgrun_log_lines_total", outcome="counted") == 0


def test_a_lost_lease_is_counted_once(db: str) -> None:
    """The first attempt's lease is made to expire while its handler runs: the reaper hands
    the job on, the heartbeat finds the lease gone, the late result is dropped. One lease_lost
    is counted (not one per write that learns of it), and the second attempt succeeds."""
    app = App("metrics-lease")
    release = threading.Event()

    @app.job("m.slow", queue="lq", max_attempts=5)
    async def slow(ctx: JobContext) -> Any:
        if ctx.attempt == 1:
            deadline = time.monotonic() + 30
            while not release.is_set() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return {"late": True}
        return {"attempt": ctx.attempt}

    metrics = WorkerMetrics()
    with Client.connect(db) as client:
        job_id = client.enqueue_job("m.slow", {}, queue="lq").job_id

    def lost(client: Client) -> bool:
        job = client.get_job(job_id)
        if job["status"] == "running" and job["attempt"] == 1:
            # another worker's reaper would do this once the lease expired: hand it on now
            with client.pool.connection() as conn:
                conn.execute(
                    "UPDATE pgrun.jobs SET lease_expires_at = now() - interval '1 second' "
                    "WHERE id = %s AND status = 'running' AND attempt = 1",  # the reaper may be first
                    (job_id,),
                )
            return False
        if job["status"] == "succeeded":
            release.set()
            samples = parse_registry(metrics.registry)
            return value(samples, "pgrun_jobs_lease_lost_total", job_type="m.slow", queue="lq") >= 1
        return False

    config = fast_config(db, lease_ttl_seconds=3)
    run_worker_until(app, config, lost, timeout=40, metrics=metrics)
    samples = parse_registry(metrics.registry)
    assert value(samples, "pgrun_jobs_lease_lost_total", job_type="m.slow", queue="lq") == 1
    assert value(samples, "pgrun_jobs_succeeded_total", job_type="m.slow", queue="lq") == 1


def parse_registry(registry: CollectorRegistry) -> Samples:
    from prometheus_client import generate_latest

    return parse(generate_latest(registry).decode())


# -- queue depth ---------------------------------------------------------------------------------


def depth_rows(client: Client) -> list[QueueDepth]:
    return client.queue_depth()


def gauges_match(samples: Samples, rows: list[QueueDepth]) -> None:
    assert rows, "the test needs some queued or running jobs"
    for row in rows:
        key = {"queue": row.queue, "job_type": row.job_type}
        assert value(samples, "pgrun_queue_ready_jobs", **key) == row.ready
        assert value(samples, "pgrun_queue_delayed_jobs", **key) == row.delayed
        assert value(samples, "pgrun_queue_running_jobs", **key) == row.running
        assert value(samples, "pgrun_queue_paused", **key) == (1 if row.paused else 0)
        # the cap's series only for a capped type
        assert samples.get(("pgrun_queue_max_concurrency", frozenset(key.items()))) == row.max_concurrency
        age = value(samples, "pgrun_queue_oldest_ready_age_seconds", **key)
        if row.oldest_ready_age is None:
            assert age == 0
        else:
            # read a moment apart: the age grows between the two reads
            assert abs(age - row.oldest_ready_age.total_seconds()) < 5
    assert value(samples, "pgrun_queue_depth_up") == 1
    series = {(name, labels) for name, labels in samples if name == "pgrun_queue_ready_jobs"}
    assert len(series) == len(rows)


def fill_queues(client: Client) -> None:
    for _ in range(3):
        client.enqueue_job("d.ready", {}, queue="qa")
    for _ in range(2):
        client.enqueue_job("d.later", {}, queue="qb", delay=3600)
    client.enqueue_job("d.run", {}, queue="qa")
    claimed = client.claim_jobs("depth-test", job_types=["d.run"])
    assert len(claimed) == 1
    client.set_job_runtime_config("d.later", paused=True)
    client.set_job_runtime_config("d.run", max_concurrency=4)


def test_queue_depth_gauges_equal_queue_depth_through_the_asgi_app(db: str) -> None:
    with Client.connect(db) as client:
        fill_queues(client)
        rows = depth_rows(client)

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=make_metrics_asgi_app(db))
        async with httpx.AsyncClient(transport=transport, base_url="http://metrics") as http:
            return await http.get("/metrics")

    response = asyncio.run(get())
    assert response.status_code == 200
    gauges_match(parse(response.text), rows)


def test_queue_depth_down_reports_up_zero_and_recovers(db: str, caplog: pytest.LogCaptureFixture) -> None:
    with Client.connect(db) as client:
        fill_queues(client)
        rows = depth_rows(client)
    collector = QueueDepthCollector(db)
    registry = CollectorRegistry()
    registry.register(collector)
    gauges_match(parse_registry(registry), rows)
    # the connection goes away (a restart, an idle timeout): one scrape says so, the next reconnects
    assert collector._conn is not None
    with Client.connect(db) as client, client.pool.connection() as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgrun metrics'"
        )
    with caplog.at_level(logging.WARNING, logger="pgrun.metrics"):
        broken = parse_registry(registry)
    assert value(broken, "pgrun_queue_depth_up") == 0
    assert not [name for name, _ in broken if name == "pgrun_queue_ready_jobs"]
    assert "queue depth for metrics" in caplog.text
    gauges_match(parse_registry(registry), rows)
    collector.close()


def test_queue_depth_as_a_worker_role_says_what_to_grant_once(
    db: str, roles: dict[str, LoginRole], caplog: pytest.LogCaptureFixture
) -> None:
    """The worker role may not call queue_depth (docs/security.md): a worker serving the gauges
    needs the reader role too. Each scrape reports up 0; the warning says so once."""
    registry = CollectorRegistry()
    collector = QueueDepthCollector(roles["worker"].dsn(db))
    registry.register(collector)
    with caplog.at_level(logging.WARNING, logger="pgrun.metrics"):
        for _ in range(3):
            assert value(parse_registry(registry), "pgrun_queue_depth_up") == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "permission denied" in warnings[0] and "reader role" in warnings[0]
    collector.close()
    reader = QueueDepthCollector(roles["reader"].dsn(db))
    assert reader.read() == []
    reader.close()


def test_queue_depth_is_cut_off_by_its_statement_timeout(db: str) -> None:
    collector = QueueDepthCollector(db, statement_timeout_ms=1234)
    collector.read()  # connects and sets the timeout
    assert collector._conn is not None
    shown = collector._conn.execute("SHOW statement_timeout").fetchone()
    assert shown is not None and shown[0] == "1234ms"
    collector.close()


# -- the command line --------------------------------------------------------------------------


def start_worker(dsn: str, *args: str, **env: str) -> subprocess.Popen[bytes]:
    environ = {
        **os.environ,
        "DATABASE_URL": dsn,
        "JOBS_LEASE_TTL_SECONDS": "10",
        "JOBS_POLL_INTERVAL_MS": "100",
        **env,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "pgrun", "worker", "worker_apps:app", "--log-level", "warning", *args],
        cwd=TESTS,
        env=environ,
        stderr=subprocess.PIPE,
    )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    if proc.stderr is not None:  # else an unclosed file, reported when the collector finds it
        proc.stderr.close()


def test_pgrun_worker_serves_metrics_with_queue_depth(db: str, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "handler.log"
    with Client.connect(db) as client:
        ids = [client.enqueue_job("test.sleep", {"log": str(log)}).job_id for _ in range(4)]
        client.enqueue_job("test.sleep", {"log": str(log)}, delay=3600)
        worker = start_worker(db, "--metrics-port", str(port), "--metrics-queue-depth", "--no-scheduler")
        try:

            def counted() -> bool:
                if worker.poll() is not None:
                    raise AssertionError(worker.stderr.read().decode() if worker.stderr else "exited")
                try:
                    samples = scrape(port)
                except OSError:
                    return False
                ok = {"job_type": "test.sleep", "queue": "default"}
                succeeded = value(samples, "pgrun_jobs_succeeded_total", **ok)
                return succeeded == 4

            wait_for(counted, 30, "the worker's metrics to count 4 successes")
            assert all(client.get_job(job_id)["status"] == "succeeded" for job_id in ids)
            samples = scrape(port)
            assert value(samples, "pgrun_jobs_claimed_total", job_type="test.sleep", queue="default") == 4
            assert value(samples, "pgrun_jobs_failed_total", job_type="test.sleep", queue="default") == 0
            gauges_match(samples, depth_rows(client))
            assert value(samples, "pgrun_queue_delayed_jobs", job_type="test.sleep", queue="default") == 1
            assert any(name.startswith("process_") for name, _ in samples)
        finally:
            stop(worker)


def test_a_worker_without_metrics_does_not_serve_them(db: str) -> None:
    """No --metrics-port: nothing listens, and prometheus_client is never imported."""
    code = (
        "import sys; from pgrun import cli; from pgrun.config import Config; "
        "m = cli._start_metrics(Config(database_url='x')); "
        "assert not m.enabled; assert 'prometheus_client' not in sys.modules, 'imported'; "
        "import pgrun.worker, pgrun.runner; assert 'prometheus_client' not in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_metrics_port_without_prometheus_client_fails_in_one_line(db: str, tmp_path: Path) -> None:
    hidden = tmp_path / "prometheus_client"
    hidden.mkdir()
    (hidden / "__init__.py").write_text("raise ImportError('hidden for the test')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    result = subprocess.run(
        [sys.executable, "-m", "pgrun", "worker", "worker_apps:app", "--metrics-port", str(free_port())],
        cwd=TESTS,
        env={**env, "DATABASE_URL": db},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "prometheus_client" in lines[0] and "pgrun[dashboard]" in lines[0]


def test_a_taken_metrics_port_fails_in_one_line(db: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "pgrun", "worker", "worker_apps:app", "--metrics-port", str(port)],
            cwd=TESTS,
            env={**os.environ, "DATABASE_URL": db},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot serve metrics on 127.0.0.1:{port}" in lines[0], result.stderr


def test_metrics_configuration_from_the_environment(caplog: pytest.LogCaptureFixture) -> None:
    assert configuration.from_env({}).metrics_port is None
    config = configuration.from_env(
        {"JOBS_METRICS_PORT": "9464", "JOBS_METRICS_HOST": "0.0.0.0", "JOBS_METRICS_QUEUE_DEPTH": "yes"}
    )
    assert (config.metrics_port, config.metrics_host, config.metrics_queue_depth) == (9464, "0.0.0.0", True)
    with caplog.at_level(logging.WARNING, logger="pgrun.config"):
        assert configuration.from_env({"JOBS_METRICS_PORT": "70000"}).metrics_port == 65535
        assert configuration.from_env({"JOBS_METRICS_PORT": "http"}).metrics_port is None
        assert configuration.from_env({"JOBS_METRICS_QUEUE_DEPTH": "maybe"}).metrics_queue_depth is False
    assert "JOBS_METRICS_PORT=70000 is outside 1..65535" in caplog.text
    assert "JOBS_METRICS_PORT='http' is not an integer" in caplog.text
    assert "JOBS_METRICS_QUEUE_DEPTH='maybe'" in caplog.text


# -- the Grafana dashboard ---------------------------------------------------------------------

_SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created")}


def exposed_names(registry: CollectorRegistry) -> tuple[set[str], set[str]]:
    """The metrics the registry can expose, by the name docs use (a counter's with _total), and
    every series name a query may use; from describe(), so the database is not read."""
    metrics: set[str] = set()
    series: set[str] = set()
    for collector in list(registry._collector_to_names):
        describe = getattr(collector, "describe", None)
        for family in describe() if describe else collector.collect():
            metrics.add(family.name + "_total" if family.type == "counter" else family.name)
            series.add(family.name)
            series.update(family.name + suffix for suffix in _SUFFIXES.get(family.type, ()))
    return metrics, series


def test_the_grafana_dashboard_uses_only_metrics_that_exist(db: str) -> None:
    dashboard = json.loads((REPO / "docs" / "grafana-pgrun.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert len(exprs) >= 10
    used = {name for expr in exprs for name in re.findall(r"\bpgrun_[a-z_]+", expr)}
    registry = WorkerMetrics().registry
    registry.register(QueueDepthCollector(db))
    metrics, series = exposed_names(registry)
    assert used - series == set()
    # every metric docs/metrics.md names exists, and every one that exists is documented
    documented = set(re.findall(r"`(pgrun_[a-z_]+)`", (REPO / "docs" / "metrics.md").read_text()))
    assert documented - series == set()
    assert metrics - documented == set()
