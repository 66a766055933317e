"""`pgrun worker` as a real process: SIGKILL mid-job, SIGTERM, and a server restart.

The app is tests_py/worker_apps.py; its handler logs "<name> start|done <attempt>" lines to
a file so the tests can count executions across processes.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import pytest

from pgrun import migrate, queries
from pgrun.client import Client
from pgrun.server import EmbeddedServer

TESTS = Path(__file__).resolve().parent


def start_worker(
    dsn: str, *, log_level: str = "warning", output: IO[bytes] | None = None, **env: str
) -> subprocess.Popen[bytes]:
    """`pgrun worker worker_apps:app` with short intervals (``env`` overrides them); its log
    goes to ``output`` (stdout and stderr) when given."""
    environ = {
        **os.environ,
        "DATABASE_URL": dsn,
        "JOBS_LEASE_TTL_SECONDS": "10",
        "JOBS_POLL_INTERVAL_MS": "100",
        "JOBS_REAPER_INTERVAL_SECONDS": "1",
        **env,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "pgrun", "worker", "worker_apps:app", "--log-level", log_level],
        cwd=TESTS,
        env=environ,
        stdout=output,
        stderr=None if output is None else subprocess.STDOUT,
    )


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def log_file(tmp_path: Path) -> Path:
    return tmp_path / "handler.log"


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def test_a_worker_killed_mid_job_is_recovered_and_the_job_succeeds_once(db: str, log_file: Path) -> None:
    with Client.connect(db) as client:
        job_id = client.enqueue_job(
            "test.sleep", {"log": str(log_file), "name": "job", "hang_first": True}, max_attempts=3
        ).job_id
        first = start_worker(db, JOBS_WORKER_ID="first")
        try:
            wait_for(lambda: "job start 1" in lines(log_file), 20, "the first attempt to start")
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        finally:
            stop(first)
        second = start_worker(db, JOBS_WORKER_ID="second")
        try:
            # the lease (10 s) expires, the second worker's reaper retries the job, it claims it
            wait_for(lambda: client.get_job(job_id)["status"] == "succeeded", 30, "the job to succeed")
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(20)
        job = client.get_job(job_id)
    assert [a["outcome"] for a in job["attempts"]] == ["lease_expired", "succeeded"]
    assert [a["worker_id"] for a in job["attempts"]] == ["first", "second"]
    assert lines(log_file) == ["job start 1", "job start 2", "job done 2"]
    assert second.returncode == 0


def test_a_worker_killed_with_jobs_claimed_ahead_loses_none_and_runs_each_once(
    db: str, log_file: Path
) -> None:
    """One slot and JOBS_PREFETCH=3: the first job hangs, three wait claimed in the local
    queue; SIGKILL. Their leases expire, the second worker's reaper queues them again, and
    every job succeeds exactly once (the waiting ones never started in the first worker)."""
    names = ["hang", "w1", "w2", "w3"]
    with Client.connect(db) as client:
        ids = [
            client.enqueue_job(
                "test.sleep",
                {"log": str(log_file), "name": name, "hang_first": name == "hang"},
                max_attempts=3,
            ).job_id
            for name in names
        ]
        first = start_worker(db, JOBS_WORKER_ID="first", JOBS_MAX_GLOBAL_CONCURRENCY="1", JOBS_PREFETCH="3")
        try:
            wait_for(lambda: "hang start 1" in lines(log_file), 20, "the first job to start")
            wait_for(
                lambda: [client.get_job(i)["status"] for i in ids] == ["running"] * 4,
                20,
                "the other three to be claimed ahead",
            )
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        finally:
            stop(first)
        assert lines(log_file) == ["hang start 1"], "the waiting jobs never started"
        second = start_worker(db, JOBS_WORKER_ID="second", JOBS_PREFETCH="3")
        try:
            wait_for(
                lambda: [client.get_job(i)["status"] for i in ids] == ["succeeded"] * 4,
                40,
                "every job to succeed",
            )
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(20)
        jobs = [client.get_job(i) for i in ids]
    for job in jobs:
        assert [a["outcome"] for a in job["attempts"]] == ["lease_expired", "succeeded"]
        assert [a["worker_id"] for a in job["attempts"]] == ["first", "second"]
    done = [line for line in lines(log_file) if " done " in line]
    assert sorted(done) == sorted(f"{name} done 2" for name in names), "each succeeded once"
    assert second.returncode == 0


def test_sigterm_hands_jobs_claimed_ahead_back_at_once(db: str, log_file: Path) -> None:
    with Client.connect(db) as client:
        slow = client.enqueue_job("test.sleep", {"log": str(log_file), "name": "slow", "seconds": 4}).job_id
        rest = [
            client.enqueue_job("test.sleep", {"log": str(log_file), "name": f"j{i}"}).job_id for i in range(3)
        ]
        worker = start_worker(
            db, JOBS_MAX_GLOBAL_CONCURRENCY="1", JOBS_PREFETCH="3", JOBS_LEASE_TTL_SECONDS="60"
        )
        try:
            wait_for(lambda: client.get_job(slow)["status"] == "running", 20, "the slow job to start")
            wait_for(
                lambda: [client.get_job(i)["status"] for i in rest] == ["running"] * 3,
                20,
                "three claimed ahead",
            )
            worker.send_signal(signal.SIGTERM)
            # queued again while the slow job still runs out its grace, not after 60 s leases
            wait_for(
                lambda: [client.get_job(i)["status"] for i in rest] == ["queued"] * 3, 3, "the hand-back"
            )
            assert worker.poll() is None
            assert worker.wait(20) == 0
        finally:
            stop(worker)
        assert client.get_job(slow)["status"] == "succeeded"
        assert [(client.get_job(i)["attempt"], client.get_job(i)["attempts"]) for i in rest] == [(0, [])] * 3
    assert lines(log_file) == ["slow start 1", "slow done 1"]


def test_sigterm_lets_running_jobs_finish_and_claims_nothing_more(db: str, log_file: Path) -> None:
    with Client.connect(db) as client:
        ids = [
            client.enqueue_job("test.sleep", {"log": str(log_file), "name": f"j{i}", "seconds": 2}).job_id
            for i in range(5)
        ]
        worker = start_worker(db, JOBS_MAX_GLOBAL_CONCURRENCY="2")
        try:
            wait_for(lambda: sum(" start " in line for line in lines(log_file)) == 2, 20, "two jobs to start")
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(20) == 0
        finally:
            stop(worker)
        jobs = [client.get_job(job_id) for job_id in ids]
    assert sorted(j["status"] for j in jobs) == ["queued", "queued", "queued", "succeeded", "succeeded"]
    assert sum(" done " in line for line in lines(log_file)) == 2


@pytest.fixture
def own_server() -> Iterator[EmbeddedServer]:
    """A durable server this test may stop and start on the same port."""
    home = Path(tempfile.mkdtemp(prefix="pgrun-test-home-"))
    home.chmod(0o755)
    server = EmbeddedServer(home=home, ephemeral=False)
    try:
        yield server.start()
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def test_the_worker_reconnects_after_a_server_restart_and_loses_nothing(
    own_server: EmbeddedServer, log_file: Path
) -> None:
    dsn = own_server.dsn
    migrate.migrate(dsn)
    names = [f"j{i}" for i in range(40)]
    with Client.connect(dsn) as client:
        client.enqueue_jobs(
            [
                {"job_type": "test.sleep", "payload": {"log": str(log_file), "name": n, "seconds": 0.1}}
                for n in names
            ]
        )
    worker = start_worker(dsn, JOBS_MAX_GLOBAL_CONCURRENCY="4")
    try:
        wait_for(lambda: sum(" done " in line for line in lines(log_file)) >= 8, 30, "some jobs to finish")
        own_server.stop()
        time.sleep(1.5)
        own_server.start()
        with Client.connect(dsn) as client:

            def all_succeeded() -> bool:
                return [s.status for s in client.list_jobs(max_rows=100)] == ["succeeded"] * 40

            wait_for(all_succeeded, 60, "every job to succeed after the restart")
        assert worker.poll() is None, "the worker survived the outage"
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(20) == 0
    finally:
        stop(worker)
    done: dict[str, Any] = {}
    for line in lines(log_file):
        name, what, _attempt = line.split()
        if what == "done":
            done[name] = done.get(name, 0) + 1
    assert sorted(done) == sorted(names), "every job ran to completion"


def listening(client: Client) -> bool:
    """Whether a worker's listener has run its LISTEN (a NOTIFY sent from now on reaches it)."""
    with client.pool.connection() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = %s",
            (queries.LISTEN,),
        ).fetchone()
    return row is not None and row[0] > 0


@pytest.mark.parametrize("event_loop", ["uvloop", "asyncio"])
def test_the_worker_runs_on_the_configured_event_loop(
    db: str, log_file: Path, tmp_path: Path, event_loop: str
) -> None:
    """`pgrun worker` runs its loops on JOBS_EVENT_LOOP's loop (uvloop by default): a delayed job
    starts from its due timer, a sync handler reports progress and logs through the loop from its
    thread, and SIGTERM ends the process cleanly."""
    output = tmp_path / "worker.out"
    # uvloop's case leaves the variable empty: the default is under test
    chosen = {"JOBS_EVENT_LOOP": "asyncio" if event_loop == "asyncio" else ""}
    with Client.connect(db) as client, output.open("wb") as sink:
        worker = start_worker(
            db,
            log_level="info",
            output=sink,
            JOBS_POLL_INTERVAL_MS="60000",  # only the due timer can start the delayed job in time
            JOBS_WORKER_ID=f"on-{event_loop}",
            **chosen,
        )
        try:
            wait_for(lambda: listening(client), 20, "the worker to listen for enqueues")
            sync_id = client.enqueue_job("test.sync_progress", {"log": str(log_file), "name": "sync"}).job_id
            later = client.enqueue_job("test.sleep", {"log": str(log_file), "name": "later"}, delay=1.0)
            wait_for(lambda: client.get_job(later.job_id)["status"] == "succeeded", 10, "the delayed job")
            wait_for(lambda: client.get_job(sync_id)["status"] == "succeeded", 10, "the sync job")
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(20) == 0
        finally:
            stop(worker)
        sync_job = client.get_job(sync_id)
        started_at = datetime.fromisoformat(client.get_job(later.job_id)["started_at"])
        started_late = (started_at - later.run_at).total_seconds()
    assert sync_job["progress"] == {"step": 1}
    assert sync_job["result"] == {"cancel_requested": False}
    assert 0 <= started_late < 0.5
    assert f"{event_loop} loop)" in output.read_text()
    assert sorted(lines(log_file)) == ["later done 1", "later start 1", "sync done 1", "sync start 1"]
