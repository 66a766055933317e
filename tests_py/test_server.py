"""The embedded server: start, stop, no orphans after a crashed caller, clear errors."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgrun.server import EmbeddedServer, ServerError, find_bindir, remove_stale_clusters


@pytest.fixture
def home() -> Iterator[Path]:
    """A PGRUN_HOME the unprivileged server account can enter (pytest's tmp_path is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="pgrun-test-home-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); look at its state.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


def _wait_gone(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_start_query_stop_removes_an_ephemeral_cluster(home: Path) -> None:
    server = EmbeddedServer(home=home)
    with server:
        with psycopg.connect(server.dsn) as conn:
            row = conn.execute("SELECT current_database(), inet_server_addr()::text").fetchone()
        assert row == ("pgrun", "127.0.0.1/32")
        pid = int((server.data_dir / "postmaster.pid").read_text().split()[0])
        root = server.root
        if os.geteuid() == 0:
            assert (server.data_dir).stat().st_uid != 0, "the server must not run as root"
    assert _wait_gone(pid)
    assert not root.exists()


def test_the_password_is_required(home: Path) -> None:
    with EmbeddedServer(home=home) as server:
        wrong = server.dsn.replace(server.password, "not-the-password")
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(wrong, connect_timeout=5).close()


def test_a_caller_killed_with_sigkill_leaves_no_postmaster(home: Path) -> None:
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from pgrun.server import EmbeddedServer\n"
        f"server = EmbeddedServer(home=Path({str(home)!r})).start()\n"
        "pid = (server.data_dir / 'postmaster.pid').read_text().split()[0]\n"
        "print(pid, server.root, flush=True)\n"
        "time.sleep(600)\n"
    )
    caller = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert caller.stdout is not None
    pid_text, root = caller.stdout.readline().split()
    postmaster = int(pid_text)
    assert _alive(postmaster)

    caller.send_signal(signal.SIGKILL)
    caller.wait(10)

    assert _wait_gone(postmaster), "the postmaster outlived its killed caller"
    # The next start sweeps the abandoned folder away.
    assert Path(root) in remove_stale_clusters(home)
    assert not Path(root).exists()


def test_pgrun_dev_prints_a_working_url_and_stops_on_sigint(home: Path) -> None:
    env = {**os.environ, "PGRUN_HOME": str(home)}
    env.pop("DATABASE_URL", None)
    # SIGINT back to its default in the child: a shell that starts the suite in the background
    # without job control ignores it, and an inherited ignore would make our Ctrl-C do nothing.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrun", "dev"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith("export DATABASE_URL='postgresql://")
    url = line.split("=", 1)[1].strip("'")
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    pid = int((home / "dev" / "data" / "postmaster.pid").read_text().split()[0])

    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 0
    assert _wait_gone(pid)
    assert (home / "dev" / "data" / "PG_VERSION").exists(), "the dev cluster keeps its data"


def test_pgrun_dev_runs_a_command_and_passes_its_exit_code(home: Path) -> None:
    env = {**os.environ, "PGRUN_HOME": str(home)}
    result = subprocess.run(
        [sys.executable, "-m", "pgrun", "dev", "--", "sh", "-c", 'test -n "$DATABASE_URL" && exit 7'],
        env=env,
        check=False,
    )
    assert result.returncode == 7
    assert not any((home / "tmp").iterdir()), "the throw-away cluster is removed"


def test_missing_binaries_name_the_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGRUN_PG_BINDIR", "/nonexistent/bin")
    with pytest.raises(ServerError, match=r"apt-get install postgresql"):
        find_bindir()
