"""Asynchronous claims (JOBS_ASYNC_CLAIMS): claims and heartbeats skip the WAL flush, and a
server crashing again and again loses no acknowledged enqueue or completion.

The crash test runs its own durable cluster (fsync, synchronous_commit, full_page_writes on)
and stops it in immediate mode (SIGQUIT to the postmaster, what ``pg_ctl stop -m immediate``
sends: no checkpoint, the WAL not yet written is lost) CYCLES times while a producer enqueues
and a worker process (tests_py/crash_worker.py) runs the jobs. ``wal_writer_delay`` is at its
maximum (10 s) and autovacuum off, so an asynchronous commit stays unwritten until a durable
commit (or the WAL writer's next round) writes it: each cycle ends with a quiet phase (delayed
slow jobs claimed after the producer paused and the short jobs' completions are written, so no
durable commit follows their claims) just before the crash, which is when claims are lost.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from pgrun import migrate
from pgrun.client import configure_async_connection
from pgrun.config import from_env
from pgrun.server import EmbeddedServer
from pgrun.worker import async_commit_pool

TESTS = Path(__file__).resolve().parent
CYCLES = 10
#: Seconds of steady enqueueing per cycle (drawn from this range).
BUSY = (1.0, 2.0)
#: Slow jobs per cycle: due SLOW_DELAY s after they are enqueued, each sleeps SLOW_SLEEP s.
SLOW_JOBS, SLOW_DELAY, SLOW_SLEEP = 4, 0.5, 3.0
#: The crash comes this long after the slow jobs were enqueued (they were claimed meanwhile).
CRASH_AFTER = 1.3


def test_async_claims_is_on_by_default_and_can_be_turned_off() -> None:
    assert from_env({}).async_claims is True
    assert from_env({"JOBS_ASYNC_CLAIMS": "0"}).async_claims is False
    assert from_env({"JOBS_ASYNC_CLAIMS": "off"}).async_claims is False
    assert from_env({"JOBS_ASYNC_CLAIMS": "maybe"}).async_claims is True  # a bad value: the default


def test_the_claims_pool_commits_asynchronously_and_the_durable_pool_does_not(db: str) -> None:
    async def main() -> tuple[str, str, str]:
        durable = AsyncConnectionPool(
            db,
            min_size=1,
            max_size=2,
            kwargs={"autocommit": True, "options": "-c application_name=pgrun-test"},
            configure=configure_async_connection,
            open=False,
        )
        await durable.open(wait=True)
        claims = async_commit_pool(durable)
        assert claims is not None
        await claims.open(wait=True)
        try:
            async with claims.connection() as conn:
                cursor = await conn.execute(
                    "SELECT current_setting('synchronous_commit'), current_setting('application_name')"
                )
                row = await cursor.fetchone()
                assert row is not None
                claim_setting, name = row
            async with durable.connection() as conn:
                cursor = await conn.execute("SELECT current_setting('synchronous_commit')")
                row = await cursor.fetchone()
                assert row is not None
                durable_setting = row[0]
        finally:
            await claims.close()
            await durable.close()
        return claim_setting, name, durable_setting

    claim_setting, name, durable_setting = asyncio.run(main())
    assert claim_setting == "off"
    # the pool's own startup options are kept beside the new one
    assert name == "pgrun-test"
    # the durable pool keeps the server's own setting (the suites' shared server may run with
    # synchronous_commit off for speed; the crash test below has a durable cluster of its own)
    with psycopg.connect(db) as plain:
        row = plain.execute("SELECT current_setting('synchronous_commit')").fetchone()
    assert row is not None and durable_setting == row[0]


def test_no_claims_pool_for_a_pool_it_cannot_copy() -> None:
    assert async_commit_pool(object()) is None


# -- the crash test ---------------------------------------------------------------------------


@pytest.fixture
def crash_server() -> Iterator[EmbeddedServer]:
    """A durable cluster of this test's own, which it crashes and starts again on one port."""
    home = Path(tempfile.mkdtemp(prefix="pgrun-crash-home-"))
    home.chmod(0o755)
    server = EmbeddedServer(
        home=home, ephemeral=False, settings={"wal_writer_delay": "10s", "autovacuum": "off"}
    )
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def crash(server: EmbeddedServer) -> None:
    """Immediate shutdown: SIGQUIT to the postmaster (pg_ctl stop -m immediate), no checkpoint."""
    process = server._process  # the postmaster is the server object's child process
    assert process is not None and process.poll() is None, "the server is running"
    process.send_signal(signal.SIGQUIT)
    process.wait(60)
    server._process = None


def enqueue(conn: psycopg.Connection[Any], payload: dict[str, Any], delay: float | None = None) -> UUID:
    row = conn.execute(
        "SELECT job_id FROM pgrun.enqueue_job('crash.job', %s, delay => %s, max_attempts => 1000)",
        (Jsonb(payload), None if delay is None else f"{delay} seconds"),
    ).fetchone()
    assert row is not None
    return UUID(str(row[0]))


class Producer(threading.Thread):
    """Enqueues short jobs one durable call at a time while ``producing`` is set; keeps the
    ids the server acknowledged. A call that fails (the server went away) is not counted and
    the producer reconnects."""

    def __init__(self, dsn: str, seed: int) -> None:
        super().__init__(name="producer", daemon=True)
        self.dsn = dsn
        self.rng = random.Random(seed)
        self.acknowledged: list[UUID] = []
        self.failed_calls = 0
        self.producing = threading.Event()
        self.finished = threading.Event()
        #: Held around each call: whoever takes it knows no enqueue is in flight.
        self.in_flight = threading.Lock()

    def run(self) -> None:
        while not self.finished.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=3) as conn:
                    while not self.finished.is_set():
                        if not self.producing.wait(0.05):
                            continue
                        with self.in_flight:
                            if not self.producing.is_set():
                                continue
                            sleep = self.rng.choice((0, 0, 0, 0.005, 0.02))
                            self.acknowledged.append(enqueue(conn, {"sleep": sleep}))
                        time.sleep(0.003)
            except psycopg.Error:  # the server went away mid-call, or before it
                self.failed_calls += 1
                time.sleep(0.1)

    def pause(self) -> None:
        self.producing.clear()
        with self.in_flight:  # the call in flight, if any, has returned
            pass


def start_worker(dsn: str, folder: Path, log: Path) -> subprocess.Popen[bytes]:
    environ = {
        **os.environ,
        "DATABASE_URL": dsn,
        "JOBS_WORKER_ID": "crash-worker",
        "JOBS_LEASE_TTL_SECONDS": "20",
        "JOBS_POLL_INTERVAL_MS": "200",
        "JOBS_REAPER_INTERVAL_SECONDS": "1",
        "JOBS_MAX_GLOBAL_CONCURRENCY": "10",
        "JOBS_ASYNC_CLAIMS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])),
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, str(TESTS / "crash_worker.py"), str(folder)],
            cwd=TESTS,
            env=environ,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


def records(path: Path) -> list[list[str]]:
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def test_no_acknowledged_enqueue_or_completion_is_lost_and_nothing_succeeds_twice(
    crash_server: EmbeddedServer, tmp_path: Path
) -> None:
    dsn = crash_server.dsn
    migrate.migrate(dsn)
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"seed {seed}")
    worker_log = tmp_path / "worker.log"
    worker = start_worker(dsn, tmp_path, worker_log)
    producer = Producer(dsn, seed)
    slow_acknowledged: list[UUID] = []
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            wait_for(
                lambda: (
                    conn.execute(
                        "SELECT 1 FROM pgrun.job_definitions WHERE job_type = 'crash.job'"
                    ).fetchone()
                    is not None
                ),
                60,
                "the worker to register its job type",
            )
        producer.start()
        for _cycle in range(CYCLES):
            producer.producing.set()
            time.sleep(rng.uniform(*BUSY))
            producer.pause()
            # The quiet phase: slow jobs come due after the short ones are done; their claims
            # are the last commits before the crash.
            with psycopg.connect(dsn, autocommit=True) as conn:
                for _ in range(SLOW_JOBS):
                    slow_acknowledged.append(enqueue(conn, {"sleep": SLOW_SLEEP}, delay=SLOW_DELAY))
            time.sleep(CRASH_AFTER)
            crash(crash_server)
            time.sleep(rng.uniform(0.1, 1.0))
            crash_server.start()
        # After the last restart: some more enqueues, then every job must succeed.
        producer.producing.set()
        time.sleep(1.0)
        producer.pause()
        producer.finished.set()
        producer.join(30)
        acknowledged = producer.acknowledged + slow_acknowledged
        with psycopg.connect(dsn, autocommit=True) as conn:

            def all_succeeded() -> bool:
                row = conn.execute(
                    "SELECT count(*) FILTER (WHERE status <> 'succeeded'), count(*) FROM pgrun.jobs"
                ).fetchone()
                assert row is not None
                return row[0] == 0 and row[1] >= len(acknowledged)

            wait_for(all_succeeded, 120, "every job to succeed after the last restart")
        assert worker.poll() is None, "the worker process survived every crash"
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(60) == 0
    except BaseException:
        print(worker_log.read_text()[-5000:] if worker_log.exists() else "(no worker log)")
        raise
    finally:
        producer.finished.set()
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)

    with psycopg.connect(dsn, autocommit=True) as conn:
        statuses = {
            UUID(str(job_id)): status for job_id, status in conn.execute("SELECT id, status FROM pgrun.jobs")
        }
        # every attempt that ended: from the event that ended it, or (success) the job row
        ended = conn.execute(
            "SELECT job_id, outcome, lease_token FROM pgrun.job_attempts WHERE outcome IS NOT NULL"
        ).fetchall()
    succeeded_attempts = Counter(
        UUID(str(job_id)) for job_id, outcome, _token in ended if outcome == "succeeded"
    )
    success_tokens = {
        UUID(str(job_id)): str(token) for job_id, outcome, token in ended if outcome == "succeeded"
    }
    ending_tokens = {str(token) for _job_id, _outcome, token in ended if token is not None}

    assert len(producer.acknowledged) >= CYCLES * 20, "the producer kept enqueueing across restarts"
    # every acknowledged enqueue exists, and it succeeded
    missing = [job_id for job_id in acknowledged if job_id not in statuses]
    assert not missing, f"{len(missing)} acknowledged enqueue(s) lost, e.g. {missing[:3]}"
    assert set(statuses.values()) == {"succeeded"}
    # one succeeded ending per job: nothing succeeded twice, nothing was left out
    twice = [job_id for job_id, count in succeeded_attempts.items() if count > 1]
    assert not twice, f"{len(twice)} job(s) succeeded more than once, e.g. {twice[:3]}"
    assert set(succeeded_attempts) == set(statuses)
    # every completion the server acknowledged is still there, under the lease that wrote it
    outcomes = records(tmp_path / "outcomes")
    acked = [(UUID(job_id), token) for kind, job_id, token in outcomes if kind == "succeeded"]
    assert len(acked) >= len(statuses) // 2, "the worker recorded the completions it was acknowledged"
    lost = [(job_id, token) for job_id, token in acked if success_tokens.get(job_id) != token]
    assert not lost, f"{len(lost)} acknowledged completion(s) lost, e.g. {lost[:3]}"
    # A claim whose handler ran but whose attempt never ended was lost in a crash (asynchronous
    # commit, not yet written): its job ran again under a later claim. With durable claims
    # there would be none; the quiet phases make them happen in (nearly) every cycle.
    executions = records(tmp_path / "executions")
    lost_claims = [(job_id, token) for job_id, token in executions if token not in ending_tokens]
    print(
        f"{len(statuses)} jobs ({len(acknowledged)} acknowledged enqueues, {producer.failed_calls} "
        f"failed producer calls), {len(executions)} executions, {len(acked)} acknowledged "
        f"completions, {len(lost_claims)} claims lost in {CYCLES} crashes"
    )
    assert lost_claims, "no claim was lost: were the claims committed asynchronously?"
