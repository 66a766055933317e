"""Two first upserts of one schedule name racing: the second waits for the first's insert,
then takes the row it made (the lookup-or-insert loop of upsert_schedule) and states its own
definition over it: one schedule, the last writer's."""

from __future__ import annotations

from typing import Any

import psycopg

from sessions import blocked_call

UPSERT = "SELECT * FROM pgrun.upsert_schedule(%s, %s, 'report.build')"


def test_a_first_upsert_racing_another_takes_the_row_it_made_and_restates_it(db: str) -> None:
    with (
        psycopg.connect(db, autocommit=True) as first,
        psycopg.connect(db, autocommit=True) as second,
        psycopg.connect(db, autocommit=True) as observer,
    ):
        first.execute("BEGIN")
        made: Any = first.execute(UPSERT, ("nightly", "0 3 * * *")).fetchone()
        assert made is not None and made[1] is True  # created

        # the second insert waits on the first's uncommitted key, then finds it committed
        with blocked_call(
            observer, second, lambda: second.execute(UPSERT, ("nightly", "0 4 * * *")).fetchone()
        ) as raced:
            first.execute("COMMIT")

        assert raced.value is not None
        schedule_id, created, changed, _ = raced.value
        assert (schedule_id, created, changed) == (made[0], False, True)
        rows = observer.execute("SELECT id, cron FROM pgrun.job_schedules WHERE name = 'nightly'").fetchall()
        assert rows == [(made[0], "0 4 * * *")]
