"""Every command that talks to the database, pointed at one it cannot reach: one line on
stderr (where it tried, why it failed, never the password), exit code 2, in seconds, no
traceback. (Before: check-schema and migrate printed a traceback, status waited 30 s for a
PoolTimeout.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

COMMANDS = [
    ["check-schema"],
    ["migrate"],
    ["status"],
    ["jobs"],
    ["job", "00000000-0000-4000-8000-000000000001"],
    ["schedules"],
    ["runs"],
    ["purge"],
    ["enqueue", "t.x"],
]


def _closed_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_command_on_an_unreachable_database_says_so_in_one_line(command: list[str]) -> None:
    url = f"postgresql://someone:s3cret-pw@127.0.0.1:{_closed_port()}/appdb"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["DATABASE_URL"] = url
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pgrun", *command], env=env, capture_output=True, text=True, timeout=60
    )
    took = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"pgrun {command[0]}: cannot reach the database at 127.0.0.1:"), lines[0]
    assert "/appdb" in lines[0] and "refused" in lines[0].lower()
    assert "s3cret-pw" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert took < 15, f"{command[0]} took {took:.1f} s"


def test_a_server_that_never_answers_is_given_up_after_the_connect_timeout() -> None:
    """A listener that accepts the connection and then says nothing (a hung server, a black-holed
    proxy) must not hang a command: pgrun sets libpq's connect timeout (5 s) unless the user set
    one."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever answers
        port = silent.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["DATABASE_URL"] = f"postgresql://someone@127.0.0.1:{port}/appdb?sslmode=disable"
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "pgrun", "status"], env=env, capture_output=True, text=True, timeout=60
        )
        took = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    assert f"cannot reach the database at 127.0.0.1:{port}/appdb" in done.stderr
    assert "timeout" in done.stderr.lower(), done.stderr
    assert 4 <= took < 15, f"gave up after {took:.1f} s"
