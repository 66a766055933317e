"""The migration runner, check-schema and the psql bundle, against a real server."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgrun import migrate
from pgrun.server import find_bindir
from pgrun.testing import extract_schema, install_test_clock

REPO = Path(__file__).resolve().parents[1]
PGRUN = [sys.executable, "-m", "pgrun"]
PSQL = str(find_bindir() / "psql")
PG_DUMP = str(find_bindir() / "pg_dump")


def history(dsn: str) -> list[tuple[str, str, str]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT version, checksum, applied_at::text FROM pgrun.schema_migrations ORDER BY version"
        ).fetchall()
    return [(str(v), str(c), str(a)) for v, c, a in rows]


def run_cli(args: list[str], dsn: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PGRUN, *args], env={**env, "DATABASE_URL": dsn}, capture_output=True, text=True, check=False
    )


@pytest.fixture
def staged_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_env: dict[str, str]) -> Path:
    """A copy of sql/ and plpgsql/ that a test may edit; the runner reads it instead."""
    root = tmp_path / "schema"
    shutil.copytree(REPO / "sql", root / "sql")
    shutil.copytree(REPO / "plpgsql", root / "plpgsql")
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(root))
    cli_env["PGRUN_SCHEMA_DIR"] = str(root)
    return root


def test_migrate_applies_everything_then_is_a_no_op(empty_db: str) -> None:
    first = migrate.migrate(empty_db)
    expected = [m.label for m in migrate.all_migrations()]
    assert first == expected
    before = history(empty_db)

    assert migrate.migrate(empty_db) == []
    assert history(empty_db) == before, "a second migrate must not touch the history"
    assert migrate.check_schema(empty_db) == []


def test_four_processes_migrating_at_once_apply_each_file_once(
    empty_db: str, cli_env: dict[str, str]
) -> None:
    procs = [
        subprocess.Popen(
            [*PGRUN, "migrate"],
            env={**cli_env, "DATABASE_URL": empty_db},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], outputs
    applied_lines = [line for out, _ in outputs for line in out.splitlines() if line.startswith("applied ")]
    labels = [m.label for m in migrate.all_migrations()]
    # Every file was applied by exactly one of the four processes.
    assert sorted(
        line.removeprefix("applied ") for line in applied_lines if "migration(s)" not in line
    ) == sorted(labels)
    assert [v for v, _, _ in history(empty_db)] == sorted(m.version for m in migrate.all_migrations())


def test_a_changed_released_migration_stops_migrate_and_changes_nothing(
    empty_db: str, staged_schema: Path, cli_env: dict[str, str]
) -> None:
    migrate.migrate(empty_db)
    before = history(empty_db)
    first = sorted((staged_schema / "sql").glob("0001_*.sql"))[0]
    first.write_text(first.read_text() + "\n-- an edit after release\n")
    (staged_schema / "sql" / "9000_later.sql").write_text("CREATE TABLE pgrun.later_table (id int);\n")

    result = run_cli(["migrate"], empty_db, cli_env)

    assert result.returncode == 1
    assert "0001_foundation changed after it was applied" in result.stderr
    assert "new sql/NNNN_name.sql" in result.stderr
    assert history(empty_db) == before
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regclass('pgrun.later_table')").fetchone() == (None,)


def test_check_schema_on_an_empty_database(empty_db: str, cli_env: dict[str, str]) -> None:
    result = run_cli(["check-schema"], empty_db, cli_env)
    assert result.returncode == 1
    assert "pgrun is not installed in this database" in result.stderr
    assert "Run `pgrun migrate`" in result.stderr


def test_check_schema_on_an_up_to_date_database(db: str, cli_env: dict[str, str]) -> None:
    result = run_cli(["check-schema"], db, cli_env)
    assert result.returncode == 0, result.stderr
    assert "schema matches this code" in result.stdout


def test_check_schema_reports_a_pending_migration(
    db: str, staged_schema: Path, cli_env: dict[str, str]
) -> None:
    (staged_schema / "sql" / "9000_later.sql").write_text("CREATE TABLE pgrun.later_table (id int);\n")
    result = run_cli(["check-schema"], db, cli_env)
    assert result.returncode == 1
    assert "migration 9000_later is not applied. Run `pgrun migrate`." in result.stderr


def test_check_schema_reports_an_edited_migration(
    db: str, staged_schema: Path, cli_env: dict[str, str]
) -> None:
    first = sorted((staged_schema / "sql").glob("0001_*.sql"))[0]
    first.write_text(first.read_text().replace("pgrun: a durable", "pgrun: an edited"))
    result = run_cli(["check-schema"], db, cli_env)
    assert result.returncode == 1
    assert "0001_foundation changed after it was applied" in result.stderr


def test_check_schema_reports_a_database_newer_than_the_code(db: str, cli_env: dict[str, str]) -> None:
    with psycopg.connect(db) as conn:
        conn.execute(
            "INSERT INTO pgrun.schema_migrations (version, name, kind, checksum) "
            "VALUES ('9999', 'from_the_future', 'versioned', repeat('a', 64))"
        )
    before = history(db)
    result = run_cli(["check-schema"], db, cli_env)
    assert result.returncode == 1
    assert "9999_from_the_future" in result.stderr
    assert "newer than this code" in result.stderr
    assert history(db) == before, "check-schema is read-only"

    refused = run_cli(["migrate"], db, cli_env)
    assert refused.returncode == 1
    assert "newer than this code" in refused.stderr


def test_check_schema_reports_drifted_functions_and_migrate_repairs_them(
    db: str, staged_schema: Path, cli_env: dict[str, str]
) -> None:
    extra = staged_schema / "plpgsql" / "util" / "zz_extra.sql"
    extra.parent.mkdir(parents=True, exist_ok=True)
    extra.write_text(
        "CREATE OR REPLACE FUNCTION pgrun._drift_probe() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;\n"
        "COMMENT ON FUNCTION pgrun._drift_probe() IS 'test';\n"
    )
    result = run_cli(["check-schema"], db, cli_env)
    assert result.returncode == 1
    assert "plpgsql functions in the database differ from this code" in result.stderr

    assert run_cli(["migrate"], db, cli_env).returncode == 0
    assert run_cli(["check-schema"], db, cli_env).returncode == 0


def _schema_dump(dsn: str) -> str:
    dump = subprocess.run(
        [PG_DUMP, "--schema-only", "--schema=pgrun", "--no-owner", "--no-privileges", dsn],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # Drop what differs between any two dumps: comments with names, and the random
    # \restrict key newer pg_dump releases write.
    lines = [
        line
        for line in dump.splitlines()
        if line.strip() and not line.startswith("--") and not re.match(r"\\(un)?restrict ", line)
    ]
    return "\n".join(lines)


def _apply_bundle(bundle: Path, dsn: str) -> None:
    subprocess.run(
        [PSQL, dsn, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(bundle)],
        check=True,
        capture_output=True,
        text=True,
    )


def test_the_sql_bundle_builds_the_same_schema_as_migrate(
    admin_dsn: str, empty_db: str, db: str, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    bundle = tmp_path / "pgrun.sql"
    assert run_cli(["sql-bundle", "-o", str(bundle)], empty_db, cli_env).returncode == 0

    _apply_bundle(bundle, empty_db)

    assert _schema_dump(empty_db) == _schema_dump(db)
    assert [(v, c) for v, c, _ in history(empty_db)] == [(v, c) for v, c, _ in history(db)]
    assert migrate.check_schema(empty_db) == []
    # Applying it again, or on top of `pgrun migrate`, changes nothing.
    before = history(empty_db)
    _apply_bundle(bundle, empty_db)
    _apply_bundle(bundle, db)
    assert history(empty_db) == before
    assert _schema_dump(empty_db) == _schema_dump(db)


def test_the_sql_bundle_refuses_a_database_with_an_edited_migration(
    db: str, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    with psycopg.connect(db) as conn:
        conn.execute("UPDATE pgrun.schema_migrations SET checksum = repeat('b', 64) WHERE version = '0001'")
    bundle = tmp_path / "pgrun.sql"
    assert run_cli(["sql-bundle", "-o", str(bundle)], db, cli_env).returncode == 0
    result = subprocess.run(
        [PSQL, db, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(bundle)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "pgrun.schema_mismatch" in result.stderr
    assert "0001 (changed after it was applied)" in result.stderr


def test_a_wheel_migrates_from_a_venv_outside_the_checkout(empty_db: str, tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        check=True,
        capture_output=True,
    )
    wheels = list(dist.glob("pgrun-*.whl"))
    assert len(wheels) == 1
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheels[0])],
        check=True,
        capture_output=True,
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {"PATH": "/usr/bin:/bin", "DATABASE_URL": empty_db, "HOME": str(tmp_path)}
    result = subprocess.run(
        [str(venv / "bin" / "pgrun"), "migrate"], cwd=outside, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "applied 0001_foundation" in result.stdout
    located = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "from pgrun.migrate import schema_root; print(schema_root())"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(venv) in located, "the SQL must come from the installed wheel, not the checkout"
    check = subprocess.run(
        [str(venv / "bin" / "pgrun"), "check-schema"], cwd=outside, env=env, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr


def test_the_function_tree_may_rename_parameters_change_results_and_drop_functions(
    db: str, staged_schema: Path, cli_env: dict[str, str]
) -> None:
    probe = staged_schema / "plpgsql" / "util" / "zz_probe.sql"
    probe.parent.mkdir(parents=True, exist_ok=True)
    # (private, so the role matrix of plpgsql/admin/security.sql needs no row for it)
    probe.write_text(
        "CREATE OR REPLACE FUNCTION pgrun._probe(first_name int) RETURNS int"
        " LANGUAGE sql AS $$ SELECT 1 $$;\n"
        "COMMENT ON FUNCTION pgrun._probe(int) IS 'probe';\n"
    )
    assert run_cli(["migrate"], db, cli_env).returncode == 0
    # CREATE OR REPLACE alone refuses both of these changes.
    probe.write_text(
        "CREATE OR REPLACE FUNCTION pgrun._probe(other_name int) RETURNS text"
        " LANGUAGE sql AS $$ SELECT 'x' $$;\n"
        "COMMENT ON FUNCTION pgrun._probe(int) IS 'probe';\n"
    )
    result = run_cli(["migrate"], db, cli_env)
    assert result.returncode == 0, result.stderr
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT pgrun._probe(other_name => 1)").fetchone() == ("x",)
    probe.unlink()
    assert run_cli(["migrate"], db, cli_env).returncode == 0
    with psycopg.connect(db) as conn:
        assert conn.execute("SELECT to_regprocedure('pgrun._probe(int)')").fetchone() == (None,)
        # Functions that table definitions use survive the sweep.
        assert conn.execute("SELECT to_regprocedure('pgrun.uuidv7()') IS NOT NULL").fetchone() == (True,)
    assert run_cli(["check-schema"], db, cli_env).returncode == 0


# The commit before migration 0005: sql/ holds 0001-0004 and plpgsql/ still writes
# finished attempts to pgrun.job_attempts_finished.
BEFORE_0005 = "743fe9a"
ATTEMPTS_SNAPSHOT = "SELECT * FROM pgrun.job_attempts ORDER BY job_id, attempt"


def _migrate_before_0005(dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = extract_schema(BEFORE_0005, tmp_path / "before_0005")
    assert sorted(p.name for p in (old / "sql").glob("*.sql")) == [
        "0001_foundation.sql",
        "0002_jobs.sql",
        "0003_workflows.sql",
        "0004_schedules.sql",
    ]
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    assert migrate.migrate(dsn) == [
        "0001_foundation",
        "0002_jobs",
        "0003_workflows",
        "0004_schedules",
        "plpgsql",
    ]


def _old_history(dsn: str) -> dict[str, object]:
    """Job history written by the functions before 0005, one job per way an attempt ends
    (and one still running); returns the job ids by name."""
    with psycopg.connect(dsn, autocommit=True) as conn:

        def at(ts: str) -> None:
            conn.execute("SELECT set_config('pgrun.fake_now', %s, false)", (ts,))

        def claim(name: str, lease_seconds: int = 30) -> object:
            row = conn.execute(
                "SELECT job_id, lease_token FROM pgrun.claim_jobs('worker-1', %s, 1, NULL, %s)",
                (lease_seconds, [f"mig.{name}"]),
            ).fetchone()
            assert row is not None and row[0] == jobs[name], name
            return row[1]

        at("2030-01-01 00:00:00+00")
        jobs: dict[str, object] = {}
        for name in ("complete", "retry", "timeout", "continue", "expire", "cancel", "running"):
            row = conn.execute(
                "SELECT job_id FROM pgrun.enqueue_job(%s, max_attempts => %s)",
                (f"mig.{name}", 1 if name == "timeout" else 3),
            ).fetchone()
            assert row is not None
            jobs[name] = row[0]

        at("2030-01-01 00:00:01+00")
        tokens = {name: claim(name, 86400 if name == "running" else 30) for name in jobs}

        at("2030-01-01 00:00:05+00")
        assert conn.execute(
            "SELECT pgrun.complete_job(%s, %s, '{\"ok\": true}')", (jobs["complete"], tokens["complete"])
        ).fetchone() == ("succeeded",)
        assert conn.execute(
            "SELECT outcome FROM pgrun.fail_job(%s, %s, 'http_500', 'boom', retry_delay => '10 seconds')",
            (jobs["retry"], tokens["retry"]),
        ).fetchone() == ("retry_scheduled",)
        assert conn.execute(
            "SELECT outcome FROM pgrun.fail_job(%s, %s, 'timeout', 'too slow')",
            (jobs["timeout"], tokens["timeout"]),
        ).fetchone() == ("dead",)
        assert conn.execute(
            "SELECT outcome FROM pgrun.continue_job(%s, %s, 'second', '{\"n\": 1}')",
            (jobs["continue"], tokens["continue"]),
        ).fetchone() == ("continued",)
        # A cancel request is a 'cancel_requested' event out of running for the same attempt:
        # the migration must skip it and move the attempt onto the 'cancelled' event.
        assert conn.execute("SELECT pgrun.cancel_job(%s, 'stop')", (jobs["cancel"],)).fetchone() == (
            "cancel_requested",
        )
        assert conn.execute(
            "SELECT pgrun.complete_job(%s, %s)", (jobs["cancel"], tokens["cancel"])
        ).fetchone() == ("cancelled",)

        at("2030-01-01 00:01:00+00")
        reaped = conn.execute("SELECT job_id, outcome FROM pgrun.reap_expired_leases()").fetchall()
        assert reaped == [(jobs["expire"], "lease_expired")]

        # The retried job's second attempt succeeds; the continued job's second step crashes.
        second = claim("retry")
        assert conn.execute("SELECT pgrun.complete_job(%s, %s)", (jobs["retry"], second)).fetchone() == (
            "succeeded",
        )
        step_two = claim("continue")
        assert conn.execute(
            "SELECT outcome FROM pgrun.fail_job(%s, %s, 'crashed', 'worker died')",
            (jobs["continue"], step_two),
        ).fetchone() == ("retry_scheduled",)

        outcomes = conn.execute("SELECT job_id, attempt, step, outcome, error_code FROM pgrun.job_attempts")
        assert sorted(outcomes.fetchall(), key=str) == sorted(
            [
                (jobs["complete"], 1, None, "succeeded", None),
                (jobs["retry"], 1, None, "failed", "http_500"),
                (jobs["retry"], 2, None, "succeeded", None),
                (jobs["timeout"], 1, None, "timed_out", "timeout"),
                (jobs["continue"], 1, None, "continued", None),
                (jobs["continue"], 2, "second", "crashed", "crashed"),
                (jobs["expire"], 1, None, "lease_expired", "lease_expired"),
                (jobs["cancel"], 1, None, "cancelled", None),
                (jobs["running"], 1, None, None, None),
            ],
            key=str,
        )
        assert conn.execute("SELECT count(*) FROM pgrun.job_attempts_finished").fetchone() == (8,)
    return jobs


def _attempts_snapshot(dsn: str) -> tuple[list[str], list[tuple[object, ...]]]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(ATTEMPTS_SNAPSHOT)
        assert cur.description is not None
        return [c.name for c in cur.description], cur.fetchall()


def _workers(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT id, status, worker_id FROM pgrun.jobs ORDER BY id").fetchall()


def test_0005_moves_attempts_written_by_the_old_functions_onto_their_events(
    empty_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _migrate_before_0005(empty_db, tmp_path, monkeypatch)
    jobs = _old_history(empty_db)
    before = _attempts_snapshot(empty_db)
    workers_before = _workers(empty_db)

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(REPO))
    assert migrate.migrate(empty_db) == [m.label for m in migrate.all_migrations() if m.label >= "0005"]

    assert _attempts_snapshot(empty_db) == before, "job_attempts must read the same after 0005"
    # 0006 only loosens jobs_lease_check: the rows stay as they were (finished jobs keep the
    # NULL worker the old functions left them).
    assert _workers(empty_db) == workers_before
    assert any(status != "running" and worker is None for _, status, worker in workers_before)
    install_test_clock(empty_db)  # 0008 made pgrun.now() the database clock alone
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regclass('pgrun.job_attempts_finished')").fetchone() == (None,)
        # Each finished attempt sits on exactly one event, the one out of running.
        assert conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE from_status = 'running' AND event <> 'cancel_requested')"
            " FROM pgrun.job_events WHERE outcome IS NOT NULL"
        ).fetchone() == (8, 8)
        conn.execute("SELECT set_config('pgrun.fake_now', '2030-01-01 00:02:00+00', false)")
        metrics = {
            row[0]: row[1:]
            for row in conn.execute(
                "SELECT job_type, succeeded, dead, crashed, lease_expired FROM pgrun.job_metrics()"
            ).fetchall()
        }
    assert metrics["mig.expire"] == (0, 0, 0, 1), "the reaped attempt is counted from its event"
    assert metrics["mig.timeout"] == (0, 1, 0, 0)
    assert metrics["mig.continue"] == (0, 0, 1, 0), "the crashed attempt is counted from its event"
    assert set(metrics) == {f"mig.{name}" for name in jobs}

    history_after = history(empty_db)
    assert migrate.migrate(empty_db) == []
    assert history(empty_db) == history_after
    # The one problem left is the test clock this test installed to read old metrics.
    assert [p.split(":")[0] for p in migrate.check_schema(empty_db)] == [
        "pgrun.now() honours the pgrun.fake_now setting"
    ]


def test_0005_refuses_an_attempt_without_its_event_and_changes_nothing(
    empty_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _migrate_before_0005(empty_db, tmp_path, monkeypatch)
    jobs = _old_history(empty_db)
    with psycopg.connect(empty_db) as conn:
        deleted = conn.execute(
            "DELETE FROM pgrun.job_events WHERE job_id = %s AND event = 'succeeded'", (jobs["complete"],)
        )
        assert deleted.rowcount == 1
    attempts = _attempts_snapshot(empty_db)
    recorded = history(empty_db)
    schema = _schema_dump(empty_db)

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(REPO))
    with pytest.raises(
        migrate.MigrationError,
        match=r"0005_job_hot_path failed: migration 0005: 1 finished attempts without exactly one event",
    ):
        migrate.migrate(empty_db)

    assert history(empty_db) == recorded, "no 0005 row, and the old function tree stays recorded"
    assert "0005" not in [v for v, _, _ in history(empty_db)]
    assert _schema_dump(empty_db) == schema, "the columns, constraint, views and table are as before"
    assert _attempts_snapshot(empty_db) == attempts
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT count(*) FROM pgrun.job_attempts_finished").fetchone() == (8,)
