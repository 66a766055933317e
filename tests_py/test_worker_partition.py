"""A connection of pgrun's whose peer vanishes without a reset fails in seconds, not hours.

The worker's, reaper's and scheduler's connections, and the metrics' queue-depth reader's,
carry libpq's TCP keepalive settings and a tcp_user_timeout (pgrun.config.tcp_settings). The
first tests read them off the sockets. The last two cut a real connection in the kernel:
`pgrun worker` runs in a network namespace of its own (tests_py/partitioned_worker.py), and the
connection of a claim, or of a heartbeat, is blackholed by routing rules while the call waits
for its answer; no probe is answered and nothing is acknowledged, as when the server's host or
the network between them is gone. Without the settings such a call waits until the kernel's
defaults give up (over two hours): a claim holds the jobs of the claims sent after it,
heartbeated, so they never expire either; a heartbeat stops every renewal.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

from partitioned_worker import pump
from pgrun import migrate, runner, scheduler
from pgrun.client import AsyncClient, Client, loops_pool
from pgrun.config import Config, tcp_settings
from pgrun.metrics import QueueDepthCollector
from pgrun.worker import async_commit_pool

TESTS = Path(__file__).resolve().parent

SOCKET_OPTIONS = {
    "keepalives": (socket.SOL_SOCKET, socket.SO_KEEPALIVE),
    "keepalives_idle": (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
    "keepalives_interval": (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
    "keepalives_count": (socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
    "tcp_user_timeout": (socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
}


def socket_settings(fileno: int) -> dict[str, int]:
    sock = socket.socket(fileno=os.dup(fileno))
    try:
        return {name: sock.getsockopt(*option) for name, option in SOCKET_OPTIONS.items()}
    finally:
        sock.close()


class Probe:
    """A loop for runner.run_loops that reads the TCP settings of a connection of the runner's
    pool and of the worker's claims pool made from it, then stops the run."""

    def __init__(self, client: AsyncClient, config: Config) -> None:
        self.client = client
        self.seen: dict[str, dict[str, int]] = {}

    async def run(self, stop: asyncio.Event) -> None:
        async with self.client.pool.connection() as conn:
            self.seen["pool"] = socket_settings(conn.fileno())
        claims = async_commit_pool(self.client.pool)
        assert isinstance(claims, AsyncConnectionPool)
        async with claims, claims.connection() as conn:
            self.seen["claims"] = socket_settings(conn.fileno())
        stop.set()


def probed(config: Config) -> dict[str, dict[str, int]]:
    """The TCP settings of the connections runner.run_loops opens for ``config``."""
    probes: list[Probe] = []

    def build(client: AsyncClient, config: Config) -> Probe:
        probes.append(Probe(client, config))
        return probes[-1]

    asyncio.run(runner.run_loops([("probe", build)], config))
    return probes[0].seen


@pytest.mark.parametrize(("lease", "given_up_ms"), [(10, 4000), (30, 10_000), (86_400, 25_000)])
def test_the_loops_connections_carry_the_tcp_settings(db: str, lease: int, given_up_ms: int) -> None:
    config = Config(database_url=db, lease_ttl_seconds=lease)
    seen = probed(config)
    assert seen["pool"]["tcp_user_timeout"] == given_up_ms
    assert seen["pool"]["keepalives"] == 1
    assert seen == {"pool": config.tcp_settings, "claims": config.tcp_settings}


def test_a_database_url_that_names_a_tcp_setting_keeps_its_own(db: str) -> None:
    config = Config(database_url=make_conninfo(db, keepalives_idle=7))
    assert config.tcp_settings == {}
    seen = probed(config)["pool"]
    assert seen["keepalives_idle"] == 7
    assert seen["tcp_user_timeout"] == 0  # libpq's default: the kernel's


def test_the_scheduler_run_alone_carries_them_too(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m pgrun.scheduler` (pgrun.scheduler.serve) opens its pool with them as well."""
    config = Config(database_url=db)
    pools: list[AsyncConnectionPool] = []

    def kept(config: Config, max_size: int) -> AsyncConnectionPool:
        pools.append(loops_pool(config, max_size))
        return pools[-1]

    monkeypatch.setattr(scheduler, "loops_pool", kept)

    async def main() -> dict[str, int]:
        stop = asyncio.Event()
        serving = asyncio.create_task(scheduler.serve(config, stop=stop))
        async with asyncio.timeout(10):
            while not pools:  # serve made its pool through loops_pool
                await asyncio.sleep(0.01)
        async with pools[0].connection() as conn:
            seen = socket_settings(conn.fileno())
        stop.set()
        await serving
        return seen

    assert asyncio.run(main()) == config.tcp_settings


def test_the_queue_depth_collectors_connection_carries_them(db: str) -> None:
    """The metrics endpoint's queue-depth reads (a worker's, the dashboard's) keep one
    connection behind a lock: a scrape waiting on a vanished peer would hold every later one."""
    collector = QueueDepthCollector(db)
    try:
        collector.read()
        assert collector._conn is not None
        seen = socket_settings(collector._conn.fileno())
    finally:
        collector.close()
    assert seen == tcp_settings(db, 2) == {**seen, "tcp_user_timeout": 4000}


LONGEST = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 25_000,
}


def test_a_clients_own_pool_gives_a_vanished_peer_up_after_25_s(db: str) -> None:
    """Client.connect / AsyncClient.connect (an application's enqueues, the CLI, the
    dashboard): the longest of the settings, unless the URL names its own."""
    with Client.connect(db) as client, client.pool.connection() as conn:
        assert socket_settings(conn.fileno()) == LONGEST

    async def through_async(dsn: str) -> dict[str, int]:
        async with await AsyncClient.connect(dsn) as client, client.pool.connection() as conn:
            return socket_settings(conn.fileno())

    assert asyncio.run(through_async(db)) == LONGEST
    assert asyncio.run(through_async(make_conninfo(db, keepalives_idle=7)))["tcp_user_timeout"] == 0


def test_migrates_connection_gives_a_vanished_server_up_after_25_s(db: str) -> None:
    conn, _path = migrate._connect(db)
    with conn:
        assert socket_settings(conn.fileno()) == LONGEST


# -- a real partition ------------------------------------------------------------------------


def unshare_command() -> list[str] | None:
    """How to run a command in a network namespace of its own (and be root there), or None."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return None
    for command in (["unshare", "--net"], ["unshare", "--net", "--map-root-user"]):
        probe = subprocess.run(
            [*command, "ip", "rule", "add", "pref", "10", "ipproto", "tcp", "dport", "1", "blackhole"],
            capture_output=True,
        )
        if probe.returncode == 0:
            return command
    return None


class UnixBridge:
    """A Unix socket that carries each connection to the server's TCP address: the namespaced
    worker's way out. Its loop runs in a thread of its own; leaving the block closes every
    connection it carries and the loop."""

    def __init__(self, path: Path, dsn: str) -> None:
        params = conninfo_to_dict(dsn)
        self.path = path
        self.host = str(params.get("host") or "127.0.0.1")
        self.port = int(params.get("port") or 5432)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.server: asyncio.AbstractServer | None = None
        self.carried: set[asyncio.Task[None]] = set()

    def __enter__(self) -> UnixBridge:
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            asyncio.start_unix_server(self.connection, str(self.path)), self.loop
        ).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        for task in self.carried:
            task.cancel()
        await asyncio.gather(*self.carried, return_exceptions=True)
        await self.server.wait_closed()

    async def connection(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        task = cast("asyncio.Task[None]", asyncio.current_task())
        self.carried.add(task)
        server_out: asyncio.StreamWriter | None = None
        try:
            server_in, server_out = await asyncio.open_connection(self.host, self.port)
            back = asyncio.create_task(pump(server_in, client_out))
            try:
                await pump(client_in, server_out)
            finally:
                back.cancel()
                await asyncio.gather(back, return_exceptions=True)
        finally:
            for writer in (client_out, server_out):
                if writer is not None:
                    writer.close()
            self.carried.discard(task)


@pytest.fixture
def unshare() -> list[str]:
    command = unshare_command()
    if command is None:
        pytest.skip("needs unshare and ip, and the right to make a network namespace")
    return command


class Partitioned:
    """A `pgrun worker` in a network namespace (tests_py/partitioned_worker.py): its handlers'
    log, its own log, and the files that arm the cut and tell it happened."""

    def __init__(self, where: Path) -> None:
        self.dir = where
        self.handler_log = where / "handler.log"
        self.worker_log = where / "worker.log"
        self.armed = where / "armed"
        self.cut = where / "cut"

    def started(self) -> Counter[str]:
        """How many times each job's handler started (by the payload's name)."""
        text = self.handler_log.read_text() if self.handler_log.exists() else ""
        return Counter(line.split()[0] for line in text.splitlines() if line.split()[1] == "start")

    def payload(self, name: str, **more: Any) -> dict[str, Any]:
        return {"log": str(self.handler_log), "name": name, **more}


@contextmanager
def partitioned_worker(db: str, unshare: list[str], kind: str, **env: str) -> Iterator[Partitioned]:
    """Run the worker (the shortest lease, 10 s: a vanished peer is given up after 1 s + 3 x
    1 s; the reaper every second) until the block ends; its first claim or heartbeat (``kind``)
    after ``armed`` exists is cut."""
    # a short path: a Unix socket's path is limited to about 100 bytes
    where = Partitioned(Path(tempfile.mkdtemp(prefix="pgrun-part-")))
    socket_path = str(where.dir / "pg.sock")
    try:
        with UnixBridge(Path(socket_path), db), where.worker_log.open("wb") as output:
            command = [sys.executable, "partitioned_worker.py", socket_path, str(where.armed), str(where.cut)]
            worker = subprocess.Popen(
                [*unshare, *command, kind],
                cwd=TESTS,
                env={
                    **os.environ,
                    "DATABASE_URL": db,
                    "JOBS_WORKER_ID": "partitioned",
                    "JOBS_LEASE_TTL_SECONDS": "10",
                    "JOBS_POLL_INTERVAL_MS": "100",
                    "JOBS_REAPER_INTERVAL_SECONDS": "1",
                    **env,
                },
                stdout=output,
                stderr=subprocess.STDOUT,
            )
            try:
                yield where
            finally:
                worker.kill()
                worker.wait(10)
    finally:
        shutil.rmtree(where.dir, ignore_errors=True)


def wait_for(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def twenty_jobs_across_a_cut(db: str, unshare: list[str], call: str) -> str:
    """One job to see the worker at work, then the cut armed and twenty jobs enqueued: each of
    them succeeds on its first attempt, started once, all within 10 s of the cut (given up after
    the kernel's probes, 4 s, not by a lease running out, 10 s). The worker's log."""
    with partitioned_worker(db, unshare, call) as worker, Client.connect(db) as client:
        first = client.enqueue_job("test.sleep", worker.payload("first")).job_id
        wait_for(lambda: client.get_job(first)["status"] == "succeeded", 30, "the first job")
        worker.armed.touch()
        ids = [client.enqueue_job("test.sleep", worker.payload(f"job{n}")).job_id for n in range(20)]
        wait_for(worker.cut.exists, 10, f"a {call} to be cut")
        cut_at = time.monotonic()
        wait_for(
            lambda: all(client.get_job(job_id)["status"] == "succeeded" for job_id in ids),
            30,
            "every job after the cut",
        )
        took = time.monotonic() - cut_at
        attempts = {client.get_job(job_id)["attempt"] for job_id in ids}
        log, started = worker.worker_log.read_text(), worker.started()
    assert attempts == {1}
    assert started == Counter({f"job{n}": 1 for n in range(20)} | {"first": 1})
    assert took < 10, took
    return log


def test_a_claim_whose_connection_vanishes_fails_and_the_worker_goes_on(db: str, unshare: list[str]) -> None:
    log = twenty_jobs_across_a_cut(db, unshare, "claim")
    assert "claim failed" in log, log


def test_a_heartbeat_whose_connection_vanishes_is_sent_again_in_time(db: str, unshare: list[str]) -> None:
    """A job runs 12 s under a 10 s lease. The first heartbeat after the cut (~3.3 s in) waits on
    a dead connection: it fails ~4 s later, the next goes out one second after that on another
    connection and renews the lease before it runs out, and the job succeeds on its first
    attempt. Without the TCP settings the heartbeat loop waits on it for good: the lease runs
    out and the reaper takes the job back."""
    with partitioned_worker(db, unshare, "heartbeat") as worker, Client.connect(db) as client:
        worker.armed.touch()
        job_id = client.enqueue_job("test.sleep", worker.payload("long", seconds=12), max_attempts=3).job_id
        wait_for(worker.cut.exists, 10, "a heartbeat to be cut")
        renewed_before = client.get_job(job_id)["heartbeat_at"]
        wait_for(lambda: client.get_job(job_id)["status"] != "running", 30, "the job to end")
        job = client.get_job(job_id)
        log, started = worker.worker_log.read_text(), worker.started()
    assert "heartbeat failed" in log, log
    assert (job["status"], job["attempt"]) == ("succeeded", 1), job
    assert job["heartbeat_at"] is None or job["heartbeat_at"] > renewed_before
    assert started == Counter({"long": 1})


def test_a_flush_whose_connection_vanishes_is_written_again(db: str, unshare: list[str]) -> None:
    """The first completions after the cut wait on a dead connection: the flush fails after
    ~4 s, the outcomes stay buffered and the next flush writes them on another connection.
    Without the TCP settings the flush loop waits on it for good, and the jobs stay running,
    their leases renewed by the heartbeat, with no outcome ever written."""
    log = twenty_jobs_across_a_cut(db, unshare, "complete")
    assert "outcome(s) failed" in log, log


def test_a_listener_whose_connection_vanishes_listens_again(db: str, unshare: list[str]) -> None:
    """With a 60 s poll only a notification starts a job at once. The LISTEN connection, idle,
    is cut: its probes go unanswered, it is given up after ~4 s, the listener connects again
    and claims what came meanwhile. Without the TCP settings the notifications go nowhere and
    the job waits for the poll."""
    with (
        partitioned_worker(db, unshare, "listen", JOBS_POLL_INTERVAL_MS="60000") as worker,
        Client.connect(db) as client,
    ):
        first = client.enqueue_job("test.sleep", worker.payload("first")).job_id
        wait_for(lambda: client.get_job(first)["status"] == "succeeded", 30, "the first job")
        worker.armed.touch()
        wait_for(worker.cut.exists, 10, "the listener to be cut")
        job_id = client.enqueue_job("test.sleep", worker.payload("after")).job_id
        enqueued = time.monotonic()
        wait_for(lambda: client.get_job(job_id)["status"] == "succeeded", 30, "the job after the cut")
        took = time.monotonic() - enqueued
        log = worker.worker_log.read_text()
    assert "listener connection lost" in log, log
    assert took < 10, took
