"""Migrate cannot be stalled (docs/migrations.md, "The migration lock").

It serialises on pgrun's own history table, which no client role may lock, so a role with
nothing but CONNECT holding the advisory key migrate used before changes nothing. A session
that really holds the migration lock (another migrate, or someone's open transaction) makes
migrate wait a bounded time and then stop with one line naming it. A first install has no
table yet and serialises on the advisory key, with the same bounded wait and the same report.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from pgrun import migrate
from pgrun.server import find_bindir
from pgrun.testing import LoginRole, create_login, drop_login

REPO = Path(__file__).resolve().parents[1]
PSQL = str(find_bindir() / "psql")
GATE_KEY = 4242  # the advisory key a staged migration waits for, held by the test


@pytest.fixture
def connect_only(admin_dsn: str) -> Iterator[LoginRole]:
    """A login role with no privilege at all beyond PUBLIC's CONNECT."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        role = create_login(conn, f"pgrun_t_nobody_{time.monotonic_ns() % 10**8}")
    try:
        yield role
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            drop_login(conn, role.name)


@pytest.fixture
def staged(tmp_path: Path) -> Path:
    """This code's schema plus sql/9000_later.sql, which waits for advisory key GATE_KEY."""
    root = tmp_path / "schema"
    shutil.copytree(REPO / "sql", root / "sql")
    shutil.copytree(REPO / "plpgsql", root / "plpgsql")
    (root / "sql" / "9000_later.sql").write_text(
        f"SELECT pg_catalog.pg_advisory_xact_lock({GATE_KEY});\nCREATE TABLE pgrun.later_table (id int);\n"
    )
    return root


def pgrun_migrate(dsn: str, schema: Path | None, timeout: float, **env: str) -> subprocess.Popen[str]:
    environment = {**_base_env(), "DATABASE_URL": dsn, "PGRUN_MIGRATE_LOCK_TIMEOUT": f"{timeout:g}", **env}
    if schema is not None:
        environment["PGRUN_SCHEMA_DIR"] = str(schema)
    return subprocess.Popen(
        [sys.executable, "-m", "pgrun", "migrate"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _base_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PGRUN_SCHEMA_DIR", None)
    env.pop("PGRUN_MIGRATE_LOCK_TIMEOUT", None)
    return env


def poll(check: Callable[[], object], timeout: float = 30.0) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not true within {timeout} s")


def user_of(dsn: str) -> str:
    return str(conninfo_to_dict(dsn)["user"])


def has_later_table(dsn: str) -> bool:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT to_regclass('pgrun.later_table') IS NOT NULL").fetchone()
    return bool(row and row[0])


def waiting_on_the_gate(gate: psycopg.Connection[tuple[object, ...]]) -> int:
    """The pid of the session waiting for GATE_KEY (a migrate inside 9000_later's step)."""
    row = poll(
        lambda: gate.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = %s AND NOT granted",
            (GATE_KEY,),
        ).fetchone()
    )
    return int(row[0])  # type: ignore[index]


def test_a_connect_only_role_holding_the_old_advisory_key_does_not_stall_migrate(
    db: str, staged: Path, connect_only: LoginRole
) -> None:
    with psycopg.connect(connect_only.dsn(db), autocommit=True) as squatter:
        squatter.execute("SELECT pg_advisory_lock(%s)", (migrate.ADVISORY_LOCK_KEY,))
        squatter.execute("SELECT pg_advisory_lock(%s)", (GATE_KEY + 1,))  # not the gate

        process = pgrun_migrate(db, staged, timeout=60)
        try:
            out, err = process.communicate(timeout=60)
        finally:
            process.kill()
        assert process.returncode == 0, err
        assert "applied 9000_later" in out
        assert has_later_table(db)


def test_a_second_migrate_waits_for_the_first_then_names_it_and_stops(db: str, staged: Path) -> None:
    with psycopg.connect(db, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (GATE_KEY,))
        first = pgrun_migrate(db, staged, timeout=60)
        try:
            # The first migrate is inside 9000_later's step (holding the migration lock),
            # waiting for the gate.
            pid = waiting_on_the_gate(gate)
            started = time.monotonic()
            second = pgrun_migrate(db, staged, timeout=2)
            out, err = second.communicate(timeout=60)
            waited = time.monotonic() - started
        finally:
            gate.execute("SELECT pg_advisory_unlock(%s)", (GATE_KEY,))
            first_out, first_err = first.communicate(timeout=60)

    assert second.returncode == 1, out + err
    line = err.strip()
    assert "\n" not in line, "one line"
    assert line.startswith(
        "pgrun migrate: pgrun.migrate_locked: the migration lock (table pgrun.schema_migrations)"
    )
    assert f"pid {pid} (role {user_of(db)}, application_name 'pgrun migrate', since 20" in line
    assert "waited 2 s" in line and f"pg_terminate_backend({pid})" in line
    assert waited >= 2.0, "it gave up before its wait was over"
    # The first one carried on once the gate opened; the second changed nothing.
    assert first.returncode == 0, first_err
    assert "applied 9000_later" in first_out
    assert has_later_table(db)


def test_migrate_waits_for_a_holder_that_lets_go_within_the_wait(db: str, staged: Path) -> None:
    with psycopg.connect(db) as holder:
        holder.execute("SET application_name = 'a long report'")
        holder.execute("LOCK TABLE pgrun.schema_migrations IN EXCLUSIVE MODE")
        holder_pid = holder.info.backend_pid

        with pytest.raises(migrate.MigrationError) as refused:
            migrate.migrate(db, lock_timeout=0.5)
        message = str(refused.value)
        assert f"pid {holder_pid} (role {user_of(db)}, application_name 'a long report', since 20" in message
        assert "idle in transaction" in message

        applied: list[list[str]] = []
        worker = threading.Thread(target=lambda: applied.append(migrate.migrate(db, lock_timeout=60)))
        with psycopg.connect(db, autocommit=True) as observer:
            worker.start()
            poll(
                lambda: observer.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE application_name = 'pgrun migrate'"
                    " AND wait_event_type = 'Lock'"
                ).fetchone()
            )
        holder.commit()
    worker.join(60)
    assert applied == [[]], "it waited, then found nothing to do"


def test_a_first_install_serialises_on_the_advisory_key_with_the_same_bounded_wait(
    empty_db: str, connect_only: LoginRole
) -> None:
    with psycopg.connect(connect_only.dsn(empty_db), autocommit=True) as squatter:
        squatter.execute("SELECT pg_advisory_lock(%s)", (migrate.ADVISORY_LOCK_KEY,))
        with pytest.raises(migrate.MigrationError) as refused:
            migrate.migrate(empty_db, lock_timeout=0.5)
        message = str(refused.value)
        assert "the first-install advisory lock" in message
        assert f"pid {squatter.info.backend_pid} (role {connect_only.name}," in message
        with psycopg.connect(empty_db) as conn:
            assert conn.execute("SELECT to_regnamespace('pgrun')").fetchone() == (None,)
        squatter.execute("SELECT pg_advisory_unlock_all()")
    assert migrate.migrate(empty_db, lock_timeout=5)[-1] == "plpgsql"


def test_two_first_installs_that_waited_on_the_advisory_key_end_with_one_schema(empty_db: str) -> None:
    """The second installer looked for the history table before it waited (none yet): once it
    has the key it must see the table the first one committed meanwhile, not its own stale
    answer, and take the table's lock instead of installing again."""
    with psycopg.connect(empty_db, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (migrate.ADVISORY_LOCK_KEY,))
        installers = [pgrun_migrate(empty_db, None, timeout=60) for _ in range(2)]
        try:
            poll(
                lambda: gate.execute(
                    "SELECT count(*) = 2 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone()[0]  # type: ignore[index]
            )
        finally:
            gate.execute("SELECT pg_advisory_unlock_all()")
        outputs = [process.communicate(timeout=120) for process in installers]
    assert [process.returncode for process in installers] == [0, 0], outputs
    applied = sorted(
        line.removeprefix("applied ")
        for out, _ in outputs
        for line in out.splitlines()
        if line.startswith("applied ") and "migration(s)" not in line
    )
    assert applied == sorted(m.label for m in migrate.all_migrations())


def test_the_bundle_waits_a_bounded_time_and_names_the_holder(db: str, tmp_path: Path) -> None:
    bundle = tmp_path / "pgrun.sql"
    bundle.write_text(migrate.sql_bundle())
    with psycopg.connect(db) as holder:
        holder.execute("SET application_name = 'a long report'")
        holder.execute("LOCK TABLE pgrun.schema_migrations IN EXCLUSIVE MODE")
        result = subprocess.run(
            [
                PSQL,
                db,
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-v",
                "migrate_lock_timeout=1s",
                "-f",
                str(bundle),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        holder_pid = holder.info.backend_pid
    assert result.returncode != 0
    assert "pgrun.migrate_locked" in result.stderr
    assert f"pid {holder_pid} (role {user_of(db)}, application_name 'a long report'" in result.stderr
    # Once the holder is gone the same bundle applies (nothing to do on a migrated database).
    subprocess.run([PSQL, db, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(bundle)], check=True, timeout=60)


def alive(gate: psycopg.Connection[tuple[object, ...]], pid: int) -> bool:
    return bool(gate.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0])  # type: ignore[index]


def psql_applying(db: str, bundle: Path) -> subprocess.Popen[str]:
    """psql applying ``bundle`` to ``db``, as docs/migrations.md says to, left running."""
    return subprocess.Popen(
        [PSQL, db, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(bundle)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def a_second_migrate_applies_the_later_step(db: str, staged: Path) -> None:
    second = pgrun_migrate(db, staged, timeout=5)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert "applied 9000_later" in out
    assert has_later_table(db)


def fall_silent_then_migrate_again(db: str, staged: Path, silent: subprocess.Popen[str]) -> float:
    """``silent`` is started, about to enter 9000_later's step, with the gate held: it is
    stopped (SIGSTOP) while it waits there, the gate is let go, so its step's statement ends
    and the server waits for a next statement that never comes. A second migrate then applies
    the step while the silent one is still stopped; how long until its session was gone."""
    with psycopg.connect(db, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (GATE_KEY,))
        try:
            pid = waiting_on_the_gate(gate)
            os.kill(silent.pid, signal.SIGSTOP)
        finally:
            gate.execute("SELECT pg_advisory_unlock(%s)", (GATE_KEY,))
        stopped = time.monotonic()
        try:
            poll(lambda: not alive(gate, pid), timeout=20)
            gone = time.monotonic() - stopped
            a_second_migrate_applies_the_later_step(db, staged)
        finally:
            os.kill(silent.pid, signal.SIGCONT)
            silent.kill()
            silent.communicate(timeout=30)
    return gone


def test_a_migrate_that_falls_silent_in_a_step_lets_go_of_the_lock(db: str, staged: Path) -> None:
    """A migrate frozen (or cut off) in a step holds the migration lock and what its step
    locked, which stall every worker, until the server notices its client is gone: with
    idle_in_transaction_session_timeout the server ends the session after IDLE_IN_STEP_SECONDS
    (2 here), its transaction rolls back and the next migrate applies the step."""
    code = (
        "import sys; from pgrun import cli, migrate; migrate.IDLE_IN_STEP_SECONDS = 2; "
        "sys.exit(cli.main(['migrate']))"
    )
    env = {**_base_env(), "DATABASE_URL": db, "PGRUN_SCHEMA_DIR": str(staged)}
    silent = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    gone = fall_silent_then_migrate_again(db, staged, silent)
    assert gone < 10, gone


def test_a_bundle_whose_psql_falls_silent_lets_go_of_the_lock(
    db: str, staged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for the psql bundle, whose one transaction holds the locks to its COMMIT."""
    bundle = tmp_path / "pgrun.sql"
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(staged))
    bundle.write_text(migrate.sql_bundle(idle_seconds=2))
    gone = fall_silent_then_migrate_again(db, staged, psql_applying(db, bundle))
    assert gone < 10, gone


def killed_in_a_statement_then_migrate_again(db: str, staged: Path, doomed: subprocess.Popen[str]) -> float:
    """``doomed`` is started, about to enter 9000_later's step, with the gate held: it is
    killed (SIGKILL: its kernel closes the connection, nothing is sent first) while its step's
    statement waits there, and the gate stays held, so that statement would wait on. How long
    until its session was gone; then, the gate let go, a second migrate applies the step."""
    with psycopg.connect(db, autocommit=True) as gate:
        gate.execute("SELECT pg_advisory_lock(%s)", (GATE_KEY,))
        try:
            pid = waiting_on_the_gate(gate)
            doomed.kill()
            doomed.communicate(timeout=30)
            killed = time.monotonic()
            poll(lambda: not alive(gate, pid), timeout=20)
            gone = time.monotonic() - killed
        finally:
            gate.execute("SELECT pg_advisory_unlock(%s)", (GATE_KEY,))
    a_second_migrate_applies_the_later_step(db, staged)
    return gone


def test_a_migrate_killed_inside_a_statement_lets_go_at_once(db: str, staged: Path) -> None:
    """A migrate killed while one of its statements runs (an index build, a wait for a lock)
    left the server running that statement to its end, with the step's locks held: here, for
    as long as the gate is held. With client_connection_check_interval the server looks at
    the client every CLIENT_CHECK_SECONDS while a statement runs and ends the session."""
    doomed = pgrun_migrate(db, staged, timeout=5)
    assert killed_in_a_statement_then_migrate_again(db, staged, doomed) < 10


def test_a_bundle_whose_psql_is_killed_inside_a_statement_lets_go_at_once(
    db: str, staged: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same for the psql bundle."""
    bundle = tmp_path / "pgrun.sql"
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(staged))
    bundle.write_text(migrate.sql_bundle())
    assert killed_in_a_statement_then_migrate_again(db, staged, psql_applying(db, bundle)) < 10


@pytest.mark.parametrize("value", ["soon", "-1", "1e9"])
def test_a_lock_timeout_that_is_not_a_number_of_seconds_is_refused(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(migrate.LOCK_TIMEOUT_ENV, value)
    with pytest.raises(migrate.MigrationError, match="lock timeout"):
        migrate.lock_timeout_seconds()
    assert migrate.lock_timeout_seconds(2.5) == 2.5


def _tree_with_comment(tmp_path: Path, name: str) -> Path:
    """This code's schema with one comment added to the plpgsql tree: another version of it."""
    root = tmp_path / name
    shutil.copytree(REPO / "sql", root / "sql")
    shutil.copytree(REPO / "plpgsql", root / "plpgsql")
    util = root / "plpgsql" / "util" / "uuid.sql"
    util.write_text(util.read_text() + f"\n-- tree {name}\n")
    return root


def _recorded_tree_checksum(dsn: str) -> str:
    version = migrate.plpgsql_tree().version
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT checksum FROM pgrun.schema_migrations WHERE version = %s", [version]
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_two_versions_migrating_at_once_do_not_take_turns_for_ever(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migrate A applies its plpgsql tree; before its next step, migrate B (other code) applies
    its own. A then finds B's tree recorded and leaves it: applying its own again is how two
    versions of the app (a rolling deploy) re-applied their trees in turn for ever."""
    tree_a, tree_b = _tree_with_comment(tmp_path, "a"), _tree_with_comment(tmp_path, "b")
    checksum_b = migrate.plpgsql_tree(tree_b).checksum
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(tree_a))
    real_lock = migrate._lock
    steps: list[int] = []

    def lock_after_b_ran(conn: psycopg.Connection[tuple[object, ...]], timeout: float) -> object:
        steps.append(1)
        if len(steps) == 2:  # A applied its tree and committed; B runs to its end in between
            other = pgrun_migrate(db, tree_b, 30)
            _, err = other.communicate(timeout=120)
            assert other.returncode == 0, err
            assert _recorded_tree_checksum(db) == checksum_b
        return real_lock(conn, timeout)

    monkeypatch.setattr(migrate, "_lock", lock_after_b_ran)
    warnings: list[str] = []
    applied = migrate.migrate(db, warnings=warnings)
    assert applied == [migrate.plpgsql_tree(tree_a).label]
    assert _recorded_tree_checksum(db) == checksum_b, "A applied its tree again over B's"
    assert len(steps) == 2
    assert any("another migrate applied different code after this one" in w for w in warnings), warnings
