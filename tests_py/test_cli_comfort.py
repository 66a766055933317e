"""CLI comfort (issue 16): `pgrun status --watch`, progress lines of migrate and purge, and
`pgrun enqueue --from-file` (chunks, each one transaction; the first bad line stops the run)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from pgrun.client import Client

CLEAR = "\x1b[H\x1b[2J"


def pgrun(dsn: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgrun", *args],
        env={**os.environ, "DATABASE_URL": dsn},
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
        check=False,
    )


def count_jobs(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM pgrun.jobs").fetchone()
        assert row is not None
        return int(row[0])


# -- status --watch ----------------------------------------------------------------------------


def read_until(fd: int, proc: subprocess.Popen[bytes], wanted: str, count: int, timeout: float) -> str:
    """Read ``fd`` until ``wanted`` appeared ``count`` times (or fail after ``timeout``)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while seen.decode(errors="replace").count(wanted) < count:
        if time.monotonic() > deadline:
            raise AssertionError(f"{wanted!r} not seen {count} times: {seen.decode(errors='replace')!r}")
        if proc.poll() is not None and not select.select([fd], [], [], 0)[0]:
            raise AssertionError(f"pgrun exited ({proc.returncode}): {seen.decode(errors='replace')!r}")
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # a pty whose other end closed
                chunk = b""
            seen += chunk
    return seen.decode(errors="replace")


def default_sigint() -> None:
    """In the child, before exec: SIGINT back to its default. A shell that starts a job in the
    background without job control ignores SIGINT for it, the ignore is inherited, and Python
    then installs no KeyboardInterrupt handler: Ctrl-C (our SIGINT) would do nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_status_watch_piped_prints_frames_and_exits_0_on_ctrl_c(db: str) -> None:
    with Client.connect(db) as client:
        client.enqueue_job("watch.me", {}, queue="wq")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrun", "status", "--watch", "--interval", "0.2", "--database-url", db],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    try:
        assert proc.stdout is not None
        text = read_until(proc.stdout.fileno(), proc, "watch.me", 3, 30)
    finally:
        code = interrupt(proc)
    assert code == 0
    assert CLEAR not in text  # not a terminal: frames follow each other
    assert text.count("pgrun status  ") >= 3
    assert "Ctrl-C to stop" in text and "wq" in text
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read().decode()


def test_status_watch_on_a_terminal_redraws_the_screen(db: str) -> None:
    with Client.connect(db) as client:
        client.enqueue_job("watch.tty", {})
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgrun", "status", "--watch", "--interval", "0.2", "--database-url", db],
        stdout=follower,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )
    os.close(follower)
    try:
        text = read_until(leader, proc, CLEAR, 2, 30)
    finally:
        code = interrupt(proc)
        os.close(leader)
    assert code == 0
    assert "watch.tty" in text
    assert text.index(CLEAR) < text.index("watch.tty")


def test_status_watch_refuses_a_bad_interval(db: str) -> None:
    for bad in ("0", "-1", "soon"):
        result = pgrun(db, "status", "--watch", "--interval", bad)
        assert result.returncode == 2, result.stderr
        assert "--interval" in result.stderr


def test_status_without_watch_prints_once(db: str) -> None:
    with Client.connect(db) as client:
        client.enqueue_job("once.only", {})
    result = pgrun(db, "status")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("once.only") == 1 and CLEAR not in result.stdout


# -- migrate -------------------------------------------------------------------------------------


def test_migrate_names_each_migration_as_it_starts(empty_db: str) -> None:
    first = pgrun(empty_db, "migrate")
    assert first.returncode == 0, first.stderr
    applied = [
        line.removeprefix("applied ") for line in first.stdout.splitlines() if line.startswith("applied ")
    ]
    applied = [label for label in applied if "privilege change" not in label and "migration(s)" not in label]
    announced = [
        line.split("applying ", 1)[1]
        for line in first.stderr.splitlines()
        if line.startswith("pgrun migrate: [")
    ]
    assert len(applied) >= 2
    assert announced == applied
    again = pgrun(empty_db, "migrate")
    assert again.returncode == 0, again.stderr
    assert "applying" not in again.stderr
    assert "schema is up to date" in again.stdout


# -- purge ----------------------------------------------------------------------------------------


def finish_jobs(dsn: str, n: int) -> None:
    with Client.connect(dsn) as client:
        client.enqueue_jobs([{"job_type": "old.done"} for _ in range(n)])
        jobs = client.claim_jobs("purge-test", max_jobs=n, job_types=["old.done"])
        assert len(jobs) == n
        client.complete_jobs([(job.job_id, job.lease_token, None) for job in jobs])


def test_purge_reports_each_full_batch(db: str) -> None:
    finish_jobs(db, 7)
    with Client.connect(db) as client:
        client.enqueue_job("still.queued", {})
    time.sleep(0.05)  # finished strictly before the purge's now()
    result = pgrun(db, "purge", "--older-than", "0", "--batch-size", "3")
    assert result.returncode == 0, result.stderr
    batches = [line for line in result.stderr.splitlines() if line.startswith("pgrun purge: [")]
    assert len(batches) == 2, result.stderr
    assert "batch 1: 3 deleted (3 so far)" in batches[0]
    assert "batch 2: 3 deleted (6 so far)" in batches[1]
    assert "purged 7 finished job(s)" in result.stdout
    assert count_jobs(db) == 1


def test_purge_in_one_short_batch_prints_no_progress(db: str) -> None:
    finish_jobs(db, 2)
    time.sleep(0.05)
    result = pgrun(db, "purge", "--older-than", "0")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "purged 2 finished job(s)" in result.stdout


# -- enqueue --from-file --------------------------------------------------------------------------


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def job_line(i: int, **extra: object) -> str:
    return json.dumps({"job_type": "bulk.item", "payload": {"i": i}, **extra})


def test_enqueue_from_file_sends_chunks_and_reports_progress(db: str, tmp_path: Path) -> None:
    lines = [job_line(i) for i in range(1, 26)]
    lines.insert(5, "")  # a blank line is skipped, and still counted in line numbers
    lines.append(job_line(99, idempotency_key="k1", queue="bulkq"))
    lines.append(job_line(99, idempotency_key="k1", queue="bulkq"))  # the same request: existing job
    source = write_lines(tmp_path / "jobs.jsonl", lines)
    result = pgrun(db, "enqueue", "--from-file", str(source), "--chunk-size", "10")
    assert result.returncode == 0, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith("pgrun enqueue: [")]
    assert len(progress) == 3
    assert "lines 1-11: 10 job(s) enqueued (10 so far)" in progress[0]
    assert "lines 12-21: 10 job(s) enqueued (20 so far)" in progress[1]
    assert "lines 22-28: 7 job(s) enqueued (27 so far)" in progress[2]
    assert result.stdout.strip() == f"enqueued 27 job(s) from {source} (26 new, 1 existing)"
    assert count_jobs(db) == 26
    with Client.connect(db) as client:
        keyed = client.list_jobs(queue="bulkq")
        assert len(keyed) == 1 and keyed[0].idempotency_key == "k1"
        payloads = sorted(client.get_job(j.id)["payload"]["i"] for j in client.list_jobs(max_rows=100))
    assert payloads == [*range(1, 26), 99]


def test_enqueue_from_file_stops_at_a_line_that_is_not_json(db: str, tmp_path: Path) -> None:
    lines = [job_line(i) for i in range(1, 21)]
    lines[16] = '{"job_type": "bulk.item", '  # line 17
    source = write_lines(tmp_path / "bad.jsonl", lines)
    result = pgrun(db, "enqueue", "--from-file", str(source), "--chunk-size", "10")
    assert result.returncode == 1
    assert f"{source}: line 17: not valid JSON" in result.stderr
    assert "lines 1-10 landed: 10 job(s), 10 new, 0 existing" in result.stderr
    assert "nothing from line 11 on was enqueued" in result.stderr
    assert count_jobs(db) == 10


def test_enqueue_from_file_names_the_line_the_server_refused(db: str, tmp_path: Path) -> None:
    lines = [job_line(i) for i in range(1, 21)]
    lines[13] = json.dumps({"job_type": "bulk.item", "priority": "high"})  # line 14
    source = write_lines(tmp_path / "refused.jsonl", lines)
    result = pgrun(db, "enqueue", "--from-file", str(source), "--chunk-size", "10")
    assert result.returncode == 1
    assert f"{source}: line 14: job.invalid_priority" in result.stderr, result.stderr
    assert "element" not in result.stderr.split("line 14:")[1].splitlines()[0]
    assert "nothing from line 11 on was enqueued" in result.stderr
    # the refused chunk (lines 11-20) is one transaction: none of it landed
    assert count_jobs(db) == 10


def test_enqueue_from_file_refuses_a_line_that_is_not_an_object(db: str, tmp_path: Path) -> None:
    source = write_lines(tmp_path / "array.jsonl", [job_line(1), "[1, 2]"])
    result = pgrun(db, "enqueue", "--from-file", str(source))
    assert result.returncode == 1
    assert "line 2: a JSON list, not an object" in result.stderr
    assert "nothing was enqueued" in result.stderr
    assert count_jobs(db) == 0


def test_enqueue_from_stdin(db: str) -> None:
    result = pgrun(db, "enqueue", "--from-file", "-", stdin=job_line(1) + "\n" + job_line(2) + "\n")
    assert result.returncode == 0, result.stderr
    assert "enqueued 2 job(s) from -" in result.stdout
    assert count_jobs(db) == 2


def test_enqueue_from_file_and_one_job_options_do_not_mix(db: str, tmp_path: Path) -> None:
    source = write_lines(tmp_path / "one.jsonl", [job_line(1)])
    mixed = pgrun(db, "enqueue", "bulk.item", "--from-file", str(source), "--queue", "q")
    assert mixed.returncode == 1
    assert "drop TYPE, --queue" in mixed.stderr
    neither = pgrun(db, "enqueue")
    assert neither.returncode == 1 and "name a job type, or give --from-file" in neither.stderr
    missing = pgrun(db, "enqueue", "--from-file", str(tmp_path / "absent.jsonl"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    assert count_jobs(db) == 0
    # one job, as before
    single = pgrun(db, "enqueue", "bulk.item", "--payload", '{"i": 1}')
    assert single.returncode == 0 and single.stdout.split()[1] == "queued"
