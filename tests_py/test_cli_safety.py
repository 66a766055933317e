"""Two holes in the command line (docs/security.md, "The command line"): a module planted in
the folder `pgrun worker` starts in must not take the place of an installed one, and a
password given with --database-url (which `ps` shows to everyone) is warned about, never
echoed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

PGRUN_SCRIPT = str(Path(sys.executable).parent / "pgrun")

APP = """
from pgrun.app import App, JobContext

app = App("planted")


@app.periodic("0 0 1 1 *", job_type="planted.tick", name="planted.tick")
@app.job("planted.tick")
async def tick(ctx: JobContext) -> None:
    return None
"""

# A stray croniter.py: if the worker ever imports it, it leaves a mark and breaks the import.
PLANTED = """
from pathlib import Path

Path(__file__).with_name("planted-module-ran").write_text("ran")
raise ImportError("the planted croniter.py was imported")
"""


def _env(dsn: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PGRUN_SCHEMA_DIR", "PYTHONSAFEPATH")}
    return {**env, "DATABASE_URL": dsn, "JOBS_WORKER_ID": "planted", "JOBS_POLL_INTERVAL_MS": "100"}


def run_worker_until_started(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break  # it exited
            lines.append(line)
            if "pgrun planted started:" in line:
                break
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=30)
    return "".join(lines) + rest


@pytest.mark.parametrize("how", ["script", "module", "app-dir"])
def test_a_module_planted_next_to_the_app_does_not_replace_an_installed_one(
    how: str, db: str, tmp_path: Path
) -> None:
    app_dir = tmp_path / "project"
    app_dir.mkdir()
    (app_dir / "planted_app.py").write_text(APP)
    (app_dir / "croniter.py").write_text(PLANTED)
    command = {
        # the console script, and `python -m pgrun`, which puts the working directory first
        "script": [PGRUN_SCRIPT, "worker", "planted_app:app"],
        "module": [sys.executable, "-m", "pgrun", "worker", "planted_app:app"],
        "app-dir": [PGRUN_SCRIPT, "worker", "planted_app:app", "--app-dir", str(app_dir)],
    }[how]
    cwd = tmp_path if how == "app-dir" else app_dir

    output = run_worker_until_started(command, cwd, _env(db))

    assert "pgrun planted started:" in output, output
    assert "scheduler" in output, "the scheduler loop (which imports croniter) ran"
    assert not (app_dir / "planted-module-ran").exists(), output


def test_a_password_on_the_command_line_is_warned_about_and_never_printed(db: str, tmp_path: Path) -> None:
    dsn, password = db, str(conninfo_to_dict(db)["password"])
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PGRUN_SCHEMA_DIR")}
    as_url = "postgresql://{user}:{password}@{host}:{port}/{dbname}".format(**conninfo_to_dict(dsn))
    for url in (dsn, as_url):
        for args in (["status", "--database-url", url], ["check-schema", "--database-url", url]):
            result = subprocess.run(
                [sys.executable, "-m", "pgrun", *args], env=env, capture_output=True, text=True, check=False
            )
            assert result.returncode == 0, result.stderr
            assert "pgrun: warning: --database-url carries a password" in result.stderr
            assert "DATABASE_URL" in result.stderr and "PGPASSFILE" in result.stderr
            assert password not in result.stderr + result.stdout

    # The same URL in DATABASE_URL, or the password in a password file: no warning.
    quiet = subprocess.run(
        [sys.executable, "-m", "pgrun", "status"],
        env={**env, "DATABASE_URL": dsn},
        capture_output=True,
        text=True,
        check=False,
    )
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    params = conninfo_to_dict(dsn)
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"{params['host']}:{params['port']}:*:{params['user']}:{password}\n")
    passfile.chmod(0o600)
    without = make_conninfo("", **{k: v for k, v in params.items() if k != "password"})
    with_passfile = subprocess.run(
        [sys.executable, "-m", "pgrun", "status", "--database-url", without],
        env={**env, "PGPASSFILE": str(passfile)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert with_passfile.returncode == 0 and with_passfile.stderr == "", with_passfile.stderr
