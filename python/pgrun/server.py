"""The embedded default: a private PostgreSQL cluster from the local server binaries.

`EmbeddedServer` runs ``initdb`` into a folder under the project (``.pgrun/`` in the
working directory unless ``PGRUN_HOME`` says otherwise), then runs ``postgres`` itself
as a child process on a free 127.0.0.1 port. Running the postmaster as our own child,
rather than daemonised by ``pg_ctl``, is what lets it die with us: the child asks the
kernel for a parent-death signal (``SIGINT``, PostgreSQL's fast shutdown), so a caller
killed with ``SIGKILL`` leaves no orphaned postmaster behind.

PostgreSQL refuses to run as root. When we are root the cluster runs as an
unprivileged account (``PGRUN_SERVER_USER``, else ``postgres``, else ``nobody``) and
its data folder is owned by that account.

Connections use password authentication (a random password per cluster) over TCP on
the loopback address only; the Unix socket is disabled.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

import psycopg
from psycopg import sql

_REQUIRED = ("initdb", "postgres")
_PR_SET_PDEATHSIG = 1
_DEBIAN_HINT = (
    "install the PostgreSQL server binaries, e.g. `apt-get install postgresql` "
    "(Debian/Ubuntu: package postgresql-15 or newer), or point DATABASE_URL at an "
    "existing server"
)


class ServerError(RuntimeError):
    """The embedded server could not be found, started or stopped."""


def _version_key(path: Path) -> tuple[int, ...]:
    """Sort key for /usr/lib/postgresql/<version>/bin: newest version first."""
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.name)) or (0,)


def candidate_bindirs() -> list[Path]:
    """Folders that may hold the server binaries, in the order we try them.

    ``PATH`` first, then ``pg_config --bindir``, then ``/usr/lib/postgresql/*/bin``
    with the newest version first.
    """
    found: list[Path] = []
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if entry:
            found.append(Path(entry))
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out:
            found.append(Path(out))
    found.extend(sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True))
    unique: list[Path] = []
    for path in found:
        if path not in unique:
            unique.append(path)
    return unique


def find_bindir() -> Path:
    """The first candidate folder holding every binary the cluster needs."""
    override = os.environ.get("PGRUN_PG_BINDIR")
    candidates = [Path(override)] if override else candidate_bindirs()
    for path in candidates:
        if all(os.access(path / name, os.X_OK) for name in _REQUIRED):
            # A PATH entry may hold symlinks to the real folder, which has every tool.
            return (path / "initdb").resolve().parent
    searched = ", ".join(str(p) for p in candidates) or "(nothing)"
    raise ServerError(
        f"PostgreSQL server binaries (initdb, postgres) not found; searched {searched}. "
        f"To fix: {_DEBIAN_HINT}."
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def default_home() -> Path:
    """The folder that holds embedded clusters: ``$PGRUN_HOME`` or ``./.pgrun``."""
    return Path(os.environ.get("PGRUN_HOME") or Path.cwd() / ".pgrun").absolute()


@dataclass(frozen=True)
class _Account:
    uid: int
    gid: int
    name: str


def _server_account() -> _Account | None:
    """The account the server runs as, or None to run as ourselves."""
    if os.geteuid() != 0:
        return None
    names = [os.environ.get("PGRUN_SERVER_USER", ""), "postgres", "nobody"]
    for name in names:
        if not name:
            continue
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_uid != 0:
            return _Account(entry.pw_uid, entry.pw_gid, name)
    raise ServerError(
        "running as root and no unprivileged account (postgres, nobody) exists to run the "
        "server; set PGRUN_SERVER_USER to one"
    )


def _demote(account: _Account | None, death_signal: int | None) -> Callable[[], None]:
    """A pre-exec hook: drop to `account`, then ask for `death_signal` when we die.

    The parent-death signal is set after the credential change because Linux clears it
    on a change of user or group.
    """

    def hook() -> None:
        os.setsid()
        if account is not None:
            os.setgroups([])
            os.setgid(account.gid)
            os.setuid(account.uid)
        if death_signal is not None:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, death_signal, 0, 0, 0)

    return hook


def _chown_tree(path: Path, account: _Account | None) -> None:
    if account is None:
        return
    os.chown(path, account.uid, account.gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), account.uid, account.gid)


def _reachable_by(path: Path, account: _Account | None) -> bool:
    """Whether `account` may traverse every folder above `path`."""
    if account is None:
        return True
    for parent in path.parents:
        try:
            st = parent.stat()
        except OSError:
            return False
        if st.st_uid == account.uid:
            continue
        if not st.st_mode & 0o001:
            return False
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_clusters(home: Path) -> list[Path]:
    """Delete ephemeral cluster folders whose postmaster is gone (a crashed caller)."""
    removed: list[Path] = []
    tmp = home / "tmp"
    if not tmp.is_dir():
        return removed
    for folder in tmp.iterdir():
        owner_pid_file = folder / "owner.pid"
        try:
            owner = int(owner_pid_file.read_text().strip())
        except (OSError, ValueError):
            owner = 0
        postmaster_pid = 0
        with suppress(OSError, ValueError, IndexError):
            postmaster_pid = int((folder / "data" / "postmaster.pid").read_text().split()[0])
        if (owner and _pid_alive(owner)) or (postmaster_pid and _pid_alive(postmaster_pid)):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


@dataclass
class EmbeddedServer:
    """A private PostgreSQL cluster. Use as a context manager, or start()/stop().

    With ``ephemeral=True`` (tests) the cluster lives in ``<home>/tmp/<random>`` with
    durability switched off, and its folder is deleted on stop. Otherwise (``pgrun
    dev``) it lives in ``<home>/dev`` and keeps its data between runs.
    """

    home: Path = field(default_factory=default_home)
    ephemeral: bool = True
    database: str = "pgrun"
    user: str = "postgres"
    port: int = 0
    settings: dict[str, str] = field(default_factory=dict)
    root: Path = field(init=False)
    password: str = field(init=False, default="")
    _process: subprocess.Popen[bytes] | None = field(init=False, default=None)
    _bindir: Path | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.home = Path(self.home).absolute()
        if self.ephemeral:
            self.root = self.home / "tmp" / secrets.token_hex(6)
        else:
            self.root = self.home / "dev"

    # -- public surface -------------------------------------------------------------

    @property
    def bindir(self) -> Path:
        if self._bindir is None:
            self._bindir = find_bindir()
        return self._bindir

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def dsn(self) -> str:
        return self.dsn_for(self.database)

    def dsn_for(self, database: str) -> str:
        return (
            f"postgresql://{quote(self.user)}:{quote(self.password)}@127.0.0.1:{self.port}/{quote(database)}"
        )

    def env(self) -> dict[str, str]:
        """Variables that point libpq tools (psql, pg_prove, pg_dump) and pgrun here."""
        return {
            "DATABASE_URL": self.dsn,
            "PGHOST": "127.0.0.1",
            "PGPORT": str(self.port),
            "PGUSER": self.user,
            "PGPASSWORD": self.password,
            "PGDATABASE": self.database,
            "PGRUN_PG_BINDIR": str(self.bindir),
        }

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 60.0) -> EmbeddedServer:
        account = _server_account()
        if self.ephemeral:
            remove_stale_clusters(self.home)
        self.root.mkdir(parents=True, exist_ok=True)
        for folder in (self.home, self.root.parent, self.root):
            # Our own folders must be traversable by the server account, whatever the umask.
            if folder.stat().st_uid == os.geteuid():
                folder.chmod(folder.stat().st_mode | 0o711)
        if not _reachable_by(self.root, account):
            # The project sits somewhere the unprivileged server account cannot enter
            # (e.g. under /root): keep the cluster in a private folder under /tmp instead.
            shutil.rmtree(self.root, ignore_errors=True)
            digest = hashlib.sha256(str(self.home).encode()).hexdigest()[:10]
            relative = self.root.relative_to(self.home)
            self.home = Path(tempfile.gettempdir()) / f"pgrun-{digest}"
            self.root = self.home / relative
            if self.ephemeral:
                remove_stale_clusters(self.home)
            self.root.mkdir(parents=True, exist_ok=True)
            for folder in (self.home, self.root.parent, self.root):
                folder.chmod(0o711)
            if not _reachable_by(self.root, account):
                assert account is not None
                raise ServerError(
                    f"the server account {account.name!r} cannot reach {self.root}; set "
                    "PGRUN_HOME to a folder it can traverse"
                )
        (self.root / "owner.pid").write_text(f"{os.getpid()}\n")
        password_file = self.root / "password"
        if not (self.data_dir / "PG_VERSION").exists():
            self.password = secrets.token_urlsafe(18)
            password_file.write_text(self.password + "\n")
            password_file.chmod(0o600)
            self._initdb(account, password_file)
        else:
            self.password = password_file.read_text().strip()
        last_error = ""
        for _ in range(5):
            self.port = self.port or free_port()
            try:
                self._launch(account, timeout)
            except ServerError as exc:
                last_error = str(exc)
                if "could not bind" in last_error or "Address already in use" in last_error:
                    self.port = 0
                    continue
                self.stop()
                raise
            self._ensure_database()
            return self
        raise ServerError(f"could not start PostgreSQL after 5 attempts: {last_error}")

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown (disconnects clients); escalate if it does not finish in time."""
        process = self._process
        self._process = None
        if process is not None and process.poll() is None:
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 10.0), (signal.SIGKILL, 10.0)):
                try:
                    process.send_signal(sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.ephemeral:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- internals ------------------------------------------------------------------

    def _run_as(self, account: _Account | None, args: list[str]) -> None:
        result = subprocess.run(
            args,
            capture_output=True,
            text=True,
            preexec_fn=_demote(account, None),
            cwd=self.root,
            check=False,
        )
        if result.returncode != 0:
            raise ServerError(f"{' '.join(args[:1])} failed:\n{result.stdout}\n{result.stderr}")

    def _initdb(self, account: _Account | None, password_file: Path) -> None:
        shutil.rmtree(self.data_dir, ignore_errors=True)
        _chown_tree(self.root, account)
        self._run_as(
            account,
            [
                str(self.bindir / "initdb"),
                "--pgdata",
                str(self.data_dir),
                "--username",
                self.user,
                "--pwfile",
                str(password_file),
                "--auth",
                "scram-sha-256",
                "--encoding",
                "UTF8",
                "--locale",
                "C",
                "--no-sync",
            ],
        )

    def _server_settings(self) -> dict[str, str]:
        base = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": "",
            "max_connections": "200",
            "shared_buffers": "256MB",
            "logging_collector": "off",
            "log_min_messages": "warning",
            "max_locks_per_transaction": "256",
        }
        if self.ephemeral:
            # A test cluster is thrown away: trade durability for speed.
            base.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        base.update(self.settings)
        return base

    def _launch(self, account: _Account | None, timeout: float) -> None:
        log_path = self.root / "server.log"
        with open(log_path, "ab") as log:
            if account is not None:
                os.chown(log_path, account.uid, account.gid)
            args = [str(self.bindir / "postgres"), "-D", str(self.data_dir)]
            for key, value in self._server_settings().items():
                args += ["-c", f"{key}={value}"]
            log_start = log_path.stat().st_size
            self._process = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_demote(account, signal.SIGINT),
                cwd=self.root,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                self._process = None
                raise ServerError("PostgreSQL exited during start-up:\n" + _tail(log_path, log_start))
            try:
                with psycopg.connect(self.dsn_for("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"PostgreSQL did not accept connections within {timeout:.0f}s:\n"
                        + _tail(log_path, log_start)
                    ) from None
                time.sleep(0.05)

    def _ensure_database(self) -> None:
        with psycopg.connect(self.dsn_for("postgres"), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self.database)))


def _tail(path: Path, start: int, limit: int = 4000) -> str:
    with open(path, "rb") as handle:
        handle.seek(start)
        return handle.read()[-limit:].decode(errors="replace")


@contextmanager
def server_from_environment(ephemeral: bool = True) -> Iterator[str]:
    """Yield a DSN: ``PGRUN_TEST_DSN`` or ``DATABASE_URL`` if set, else an embedded server.

    ``PGRUN_TEST_DOCKER=1`` asks for a testcontainers PostgreSQL instead (needs Docker).
    """
    existing = os.environ.get("PGRUN_TEST_DSN") or os.environ.get("DATABASE_URL")
    if existing:
        yield existing
        return
    if os.environ.get("PGRUN_TEST_DOCKER") == "1":
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer("postgres:15", driver=None) as container:
            yield str(container.get_connection_url())
        return
    with EmbeddedServer(ephemeral=ephemeral) as server:
        yield server.dsn
