"""JOBS_* configuration: defaults, parsing, clamping with a warning, never a crash."""

from __future__ import annotations

import logging

import pytest

from pgrun.config import Config, from_env


def test_defaults_and_a_generated_worker_id() -> None:
    config = from_env({"DATABASE_URL": "postgresql://x"})
    assert config.database_url == "postgresql://x"
    assert config.worker_id.startswith("worker-")
    assert (config.poll_interval_ms, config.claim_batch_size, config.lease_ttl_seconds) == (1000, 500, 30)
    assert config.claims_in_flight == 2
    assert from_env({"JOBS_CLAIMS_IN_FLIGHT": "2"}).claims_in_flight == 2
    assert from_env({"JOBS_WORKER_ID": "   "}).worker_id.startswith("worker-")
    assert from_env({"JOBS_WORKER_ID": "host-1"}).worker_id == "host-1"
    # the reaper retries with each job type's backoff unless a delay is asked for; 0 is one
    assert config.reaper_retry_delay_ms is None
    assert from_env({"JOBS_REAPER_RETRY_DELAY_MS": "0"}).reaper_retry_delay_ms == 0
    assert from_env({"JOBS_REAPER_RETRY_DELAY_MS": "soon"}).reaper_retry_delay_ms is None
    # the worker's GC threshold: 0 leaves Python's own
    assert config.gc_threshold == 10_000
    assert from_env({"JOBS_GC_THRESHOLD": "0"}).gc_threshold == 0
    assert from_env({"JOBS_GC_THRESHOLD": "50000"}).gc_threshold == 50_000


def test_values_are_read() -> None:
    config = from_env(
        {
            "JOBS_POLL_INTERVAL_MS": "250",
            "JOBS_CLAIM_BATCH_SIZE": "50",
            "JOBS_LEASE_TTL_SECONDS": "60",
            "JOBS_MAX_GLOBAL_CONCURRENCY": "64",
            "JOBS_REAPER_INTERVAL_SECONDS": "5",
            "JOBS_SCHEDULE_POLL_INTERVAL_SECONDS": "2",
            "JOBS_REAPER_RETRY_DELAY_MS": "1500",
        }
    )
    assert config == Config(
        worker_id=config.worker_id,
        poll_interval_ms=250,
        claim_batch_size=50,
        lease_ttl_seconds=60,
        max_global_concurrency=64,
        reaper_interval_seconds=5,
        schedule_poll_interval_seconds=2,
        reaper_retry_delay_ms=1500,
    )
    assert config.heartbeat_interval == 20


@pytest.mark.parametrize(
    ("variable", "raw", "field", "expected"),
    [
        ("JOBS_LEASE_TTL_SECONDS", "3", "lease_ttl_seconds", 10),
        ("JOBS_LEASE_TTL_SECONDS", "-5", "lease_ttl_seconds", 10),
        ("JOBS_POLL_INTERVAL_MS", "0", "poll_interval_ms", 10),
        ("JOBS_CLAIM_BATCH_SIZE", "0", "claim_batch_size", 1),
        ("JOBS_CLAIM_BATCH_SIZE", "100000", "claim_batch_size", 1000),
        ("JOBS_CLAIMS_IN_FLIGHT", "0", "claims_in_flight", 1),
        ("JOBS_CLAIMS_IN_FLIGHT", "9", "claims_in_flight", 4),
        ("JOBS_CLAIMS_IN_FLIGHT", "two", "claims_in_flight", 2),
        ("JOBS_MAX_GLOBAL_CONCURRENCY", "-1", "max_global_concurrency", 1),
        ("JOBS_REAPER_INTERVAL_SECONDS", "0", "reaper_interval_seconds", 1),
        ("JOBS_SCHEDULE_POLL_INTERVAL_SECONDS", "0", "schedule_poll_interval_seconds", 1),
        ("JOBS_REAPER_RETRY_DELAY_MS", "-10", "reaper_retry_delay_ms", 0),
        ("JOBS_LEASE_TTL_SECONDS", "ten", "lease_ttl_seconds", 30),
        ("JOBS_CLAIM_BATCH_SIZE", "2.5", "claim_batch_size", 500),
        ("JOBS_GC_THRESHOLD", "-1", "gc_threshold", 0),
        ("JOBS_GC_THRESHOLD", "20000000", "gc_threshold", 10_000_000),
        ("JOBS_GC_THRESHOLD", "lots", "gc_threshold", 10_000),
    ],
)
def test_bad_values_are_clamped_with_a_warning(
    variable: str, raw: str, field: str, expected: int, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="pgrun.config"):
        config = from_env({variable: raw})
    assert getattr(config, field) == expected
    assert variable in caplog.text


def test_overrides_are_clamped_too() -> None:
    config = from_env({}).with_overrides(max_global_concurrency=0, lease_ttl_seconds=1)
    assert (config.max_global_concurrency, config.lease_ttl_seconds) == (1, 10)
    assert from_env({}).with_overrides(event_loop="tokio").event_loop == "uvloop"
    assert from_env({"JOBS_WORKER_ID": "x" * 300}).worker_id == "x" * 200


def test_the_event_loop_is_uvloop_unless_asyncio_is_named() -> None:
    assert Config().event_loop == "uvloop"
    assert from_env({}).event_loop == "uvloop"
    assert from_env({"JOBS_EVENT_LOOP": " AsyncIO "}).event_loop == "asyncio"
    assert from_env({"JOBS_EVENT_LOOP": "uvloop"}).event_loop == "uvloop"
    assert from_env({"JOBS_EVENT_LOOP": ""}).event_loop == "uvloop"


@pytest.mark.parametrize("raw", ["trio", "libuv", "asyncio2"])
def test_an_unknown_event_loop_is_replaced_with_a_warning(raw: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pgrun.config"):
        config = from_env({"JOBS_EVENT_LOOP": raw})
    assert config.event_loop == "uvloop"
    assert "JOBS_EVENT_LOOP" in caplog.text
    assert raw in caplog.text
