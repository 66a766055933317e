"""`pgrun schedules pause|resume|delete NAME [--organization ID]` (issue 14 item 2): what each
prints, its exit code (0 done, 1 refused with the code and the hint on stderr, 2 the database
cannot be reached, 2 a usage error), and that `pgrun schedules` alone still lists."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pgrun import cli
from pgrun.client import Client

NIL = "00000000-0000-0000-0000-000000000000"


def pgrun(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def url(db: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The database, in DATABASE_URL (a password on the command line is warned about)."""
    monkeypatch.setenv("DATABASE_URL", db)
    return db


@pytest.fixture
def nightly(url: str) -> str:
    with Client.connect(url) as client:
        client.upsert_schedule("nightly", "0 3 * * *", "report.build")
    return url


def state_of(capsys: pytest.CaptureFixture[str], name: str) -> str:
    code, out, _ = pgrun(capsys, "schedules")
    assert code == 0
    line = next(row for row in out.splitlines() if row.startswith(f"{name} "))
    return line


def test_pause_resume_delete_print_what_changed(nightly: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = pgrun(capsys, "schedules", "pause", "nightly")
    assert (code, err) == (0, "")
    assert out.startswith("schedule nightly: paused (since ")
    assert " paused " in state_of(capsys, "nightly") + " "

    code, out, _ = pgrun(capsys, "schedules", "pause", "nightly")
    assert code == 0 and out.startswith("schedule nightly: already paused (since ")

    code, out, _ = pgrun(capsys, "schedules", "resume", "nightly")
    assert code == 0 and out.startswith("schedule nightly: resumed (due at ")
    assert " enabled " in state_of(capsys, "nightly")

    code, out, _ = pgrun(capsys, "schedules", "resume", "nightly")
    assert (code, out) == (0, "schedule nightly: not paused (nothing changed)\n")

    code, out, _ = pgrun(capsys, "schedules", "delete", "nightly")
    assert (code, out) == (0, "schedule nightly: deleted with its 0 tick(s); the jobs it made stay\n")
    code, out, _ = pgrun(capsys, "schedules")
    assert (code, out) == (0, "no schedules\n")


@pytest.mark.parametrize("action", ["pause", "resume", "delete"])
def test_an_unknown_schedule_is_exit_1_with_the_code_and_the_hint(
    url: str, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    code, out, err = pgrun(capsys, "schedules", action, "nope")
    assert (code, out) == (1, "")
    first, hint = err.splitlines()
    assert first.startswith(f"pgrun schedules {action}: schedule.not_found: no schedule 'nope'")
    assert hint.startswith("hint: ")


def test_the_organization_is_taken_before_or_after_the_action(
    nightly: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ("schedules", "--organization", NIL, "pause", "nightly"),
        ("schedules", "pause", "nightly", "--organization", NIL),
    ):
        code, out, err = pgrun(capsys, *argv)
        assert (code, out) == (1, ""), argv
        assert err.startswith("pgrun schedules pause: schedule.invalid_organization"), argv
    # none of them paused the schedule without an organization
    assert " enabled " in state_of(capsys, "nightly")


@pytest.mark.parametrize("before", [True, False], ids=["url-before-action", "url-after-action"])
def test_an_unreachable_database_is_exit_2_in_one_line(
    url: str, capsys: pytest.CaptureFixture[str], before: bool
) -> None:
    """--database-url wins over DATABASE_URL (a reachable database here) on either side of
    the action."""
    flag = ("--database-url", "host=127.0.0.1 port=1 dbname=none")
    argv = ("schedules", *flag, "pause", "nightly") if before else ("schedules", "pause", "nightly", *flag)
    code, out, err = pgrun(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("pgrun schedules: cannot reach the database at 127.0.0.1:1/none: ")
    assert len(err.strip().splitlines()) == 1


def test_a_missing_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["schedules", "pause"])
    assert exited.value.code == 2
    assert "the following arguments are required: name" in capsys.readouterr().err


def test_the_console_command(nightly: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pgrun", "schedules", "pause", "nightly"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("schedule nightly: paused (since ")
