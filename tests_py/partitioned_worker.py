"""`pgrun worker worker_apps:app` in a network namespace of its own, for
tests_py/test_worker_partition.py. Run it under ``unshare --net`` (cwd tests_py/):

    python partitioned_worker.py <unix socket> <armed file> <cut file> <call> [options]

The namespace has nothing but its loopback. A forwarder listens there on TCP and carries each
connection to ``<unix socket>`` (the test's bridge to the server: Unix sockets live in the file
system, which the namespaces share), and the worker connects to the forwarder, so every byte
between them crosses the kernel's TCP. DATABASE_URL names the database; its host and port are
replaced with the forwarder's.

Once ``<armed file>`` exists, the first call of the kind ``<call>`` names (claim, heartbeat or
complete) the forwarder sees, or with ``listen`` the worker's LISTEN connection, is cut as a
vanished peer would cut it: the forwarder stops reading its connection (the call never reaches
the server) and routing rules blackhole the connection's port, so the kernel drops its packets,
keepalive probes and their answers included, and acknowledges nothing. Other connections, and
new ones, still work. The cut connection's port is written to ``<cut file>``. Claims and
heartbeats are the calls on the worker's claims pool (its start-up packet asks for
synchronous_commit=off) that carry the worker's id (JOBS_WORKER_ID); a claim carries the app's
job types too, a heartbeat leases only. A completion goes through the worker's other pool and
carries the results (test.sleep returns {"attempt": n}).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgrun.cli import main

CLAIMS_POOL = b"synchronous_commit=off"
JOB_TYPE = b"test.sleep"
RESULT = b'{"attempt":'
LISTEN = b"LISTEN"


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True)


class Forwarder:
    def __init__(self, socket_path: str, armed: Path, cut: Path, kind: str, worker_id: bytes) -> None:
        self.socket_path = socket_path
        self.armed = armed
        self.cut = cut
        self.kind = kind
        self.worker_id = worker_id
        self.done = False
        self.port = 0
        #: The port of the worker's LISTEN connection, once it has listened.
        self.listener: int | None = None

    async def serve(self, ready: threading.Event) -> None:
        server = await asyncio.start_server(self.connection, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        if self.kind == "listen":
            # the listener sends nothing once it listens: it is cut when the test arms the cut
            while not (self.armed.exists() and self.listener is not None):
                await asyncio.sleep(0.02)
            self.done = True
            self.blackhole(self.listener)
        await server.serve_forever()

    async def connection(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        server_in, server_out = await asyncio.open_unix_connection(self.socket_path)
        port = client_out.get_extra_info("peername")[1]
        back = asyncio.create_task(pump(server_in, client_out))
        claims_pool = False
        try:
            while chunk := await client_in.read(65536):
                claims_pool = claims_pool or CLAIMS_POOL in chunk
                if LISTEN in chunk and self.listener is None:
                    self.listener = port
                if self.is_target(chunk, claims_pool):
                    self.done = True
                    self.blackhole(port)
                    await asyncio.Event().wait()  # never read from it again
                server_out.write(chunk)
                await server_out.drain()
        finally:
            back.cancel()
            server_out.close()

    def is_target(self, chunk: bytes, claims_pool: bool) -> bool:
        if self.done or not self.armed.exists() or self.kind == "listen":
            return False
        if self.kind == "complete":
            return not claims_pool and RESULT in chunk
        return claims_pool and self.worker_id in chunk and (JOB_TYPE in chunk) == (self.kind == "claim")

    def blackhole(self, port: int) -> None:
        for direction in ("sport", "dport"):
            ip("rule", "add", "pref", "10", "ipproto", "tcp", direction, str(port), "blackhole")
        self.cut.write_text(str(port))


async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    while chunk := await source.read(65536):
        sink.write(chunk)
        await sink.drain()


def start_forwarder(forwarder: Forwarder) -> None:
    ready = threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(forwarder.serve(ready)), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise SystemExit("the forwarder did not start")


if __name__ == "__main__":
    socket_path, armed, cut, kind, *options = sys.argv[1:]
    ip("link", "set", "lo", "up")
    # the blackhole rules go before the lookup of local addresses, which comes first by default
    ip("rule", "del", "pref", "0")
    ip("rule", "add", "pref", "100", "lookup", "local")
    worker_id = os.environ["JOBS_WORKER_ID"].encode()
    forwarder = Forwarder(socket_path, Path(armed), Path(cut), kind, worker_id)
    start_forwarder(forwarder)
    dsn = conninfo_to_dict(os.environ["DATABASE_URL"])
    os.environ["DATABASE_URL"] = make_conninfo(**{**dsn, "host": "127.0.0.1", "port": str(forwarder.port)})
    sys.exit(main(["worker", "worker_apps:app", *options]))
