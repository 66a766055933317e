"""What the database records of one job, read the way the upgrade tests compare it: the stored
job_events rows, and the events get_job_history shows (stored or derived from the job row)."""

from __future__ import annotations

from typing import Any

import psycopg


def stored_events(conn: psycopg.Connection[Any], job_id: Any) -> list[str]:
    """The job's job_events rows, oldest first, by event name."""
    rows = conn.execute("SELECT event FROM pgrun.job_events WHERE job_id = %s ORDER BY id", (job_id,))
    return [r[0] for r in rows.fetchall()]


def history_events(conn: psycopg.Connection[Any], job_id: Any) -> list[tuple[str, bool]]:
    """get_job_history's events, oldest first: (event, derived from the job row?)."""
    row = conn.execute("SELECT pgrun.get_job_history(%s) -> 'events'", (job_id,)).fetchone()
    assert row is not None
    return [(e["event"], bool(e.get("derived"))) for e in row[0]]
