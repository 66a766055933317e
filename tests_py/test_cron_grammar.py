"""One cron grammar: the SQL check and the Python scheduler accept exactly the same expressions.

Every row of ``tests_data/cron_grammar.csv`` goes through both sides and both must give the
row's verdict: SQL is ``pgrun.upsert_schedule`` (accept, or ``schedule.invalid_cron``);
Python is ``pgrun.scheduler.validate_cron`` (the grammar, croniter's construction, and the
next fire time). What both accept must also be plannable for years on end: croniter finds
the next fire time from any moment, never more than 8 years ahead (fire_schedule refuses a
next run more than 10 years away). A property test then draws expressions from the fields'
grammars (valid and broken pieces alike) and asserts the two sides agree on each.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest
from croniter import croniter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pgrun.errors import InvalidInputError
from pgrun.scheduler import ScheduleDeclaration, next_after, validate_cron
from pgrun.testing import scratch_database

TABLE = Path(__file__).resolve().parents[1] / "tests_data" / "cron_grammar.csv"

# moments to look for the next fire time from: a leap day, an ordinary start, the end of a
# century that skips its leap year, a DST change in Berlin
STARTS = (
    datetime(2000, 2, 29, 12, 0, tzinfo=UTC),
    datetime(2031, 3, 3, 0, 0, tzinfo=UTC),
    datetime(2099, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime(2030, 3, 31, 0, 59, 30, tzinfo=UTC),
)
LONGEST_GAP = timedelta(days=8 * 366 + 1)


def load_table() -> list[tuple[str, str, str]]:
    with TABLE.open(newline="", encoding="ascii") as f:
        lines = [line for line in f if not line.startswith("#")]
    rows = []
    for row in csv.DictReader(lines):
        expression = row["expression"].encode("ascii").decode("unicode_escape")
        rows.append((expression, row["verdict"], row["why"]))
    return rows


ROWS = load_table()


@pytest.fixture(scope="module")
def conn(admin_dsn: str, template_db: str) -> Iterator[psycopg.Connection[Any]]:
    """One migrated database for the module: every call is rolled back."""
    with scratch_database(admin_dsn, template=template_db) as dsn, psycopg.connect(dsn) as c:
        yield c


def sql_verdict(conn: psycopg.Connection[Any], expression: str) -> tuple[str, str | None]:
    """accept (with the stored form) or refuse; any other error fails the test."""
    try:
        conn.execute("SELECT pgrun.upsert_schedule('grammar', %s, 'test.cron')", (expression,))
        stored = conn.execute("SELECT cron FROM pgrun.job_schedules WHERE name = 'grammar'").fetchone()
    except psycopg.Error as exc:
        conn.rollback()
        assert (exc.sqlstate, exc.diag.message_primary) == ("RQ003", "schedule.invalid_cron"), exc
        return "refuse", None
    conn.rollback()
    assert stored is not None
    return "accept", stored[0]


def python_verdict(expression: str) -> tuple[str, str | None]:
    try:
        normalized = validate_cron(expression)
    except InvalidInputError as exc:
        assert exc.code == "schedule.invalid_cron"
        return "refuse", None
    return "accept", normalized


def assert_plannable(expression: str) -> None:
    """croniter plans it from any moment, UTC and a zone with DST alike, and the next fire
    time is never more than 8 years away."""
    for zone in ("UTC", "Europe/Berlin"):
        for start in STARTS:
            it = croniter(expression, start.astimezone(ZoneInfo(zone)))
            first: datetime = it.get_next(datetime)
            second: datetime = it.get_next(datetime)
            assert start < first < second, (expression, zone, start)
            assert first - start <= LONGEST_GAP, (expression, zone, start, first)
            assert next_after(expression, zone, start) - start <= LONGEST_GAP


def test_the_table_covers_both_verdicts() -> None:
    verdicts = [v for _, v, _ in ROWS]
    assert set(verdicts) == {"accept", "refuse"}
    assert verdicts.count("accept") >= 50 and verdicts.count("refuse") >= 80
    assert len({e for e, _, _ in ROWS}) == len(ROWS), "an expression appears twice"


@pytest.mark.parametrize(
    ("expression", "verdict", "why"), ROWS, ids=[f"{i}:{r[2]}" for i, r in enumerate(ROWS)]
)
def test_sql_and_python_give_each_row_its_verdict(
    conn: psycopg.Connection[Any], expression: str, verdict: str, why: str
) -> None:
    sql, stored = sql_verdict(conn, expression)
    py, normalized = python_verdict(expression)
    assert (sql, py) == (verdict, verdict), why
    if verdict == "accept":
        assert stored == normalized, "SQL stores the form Python plans"
        assert normalized is not None
        assert_plannable(normalized)


def test_a_50_mb_expression_is_refused_by_its_length_on_both_sides(conn: psycopg.Connection[Any]) -> None:
    huge = "* " * 25_000_000
    started = datetime.now(UTC)
    assert sql_verdict(conn, huge) == ("refuse", None)
    assert python_verdict(huge) == ("refuse", None)
    # a regex over the whole string took 26 s; the length check takes milliseconds (plus
    # sending 50 MB): a generous bound that still catches a regex running first
    assert datetime.now(UTC) - started < timedelta(seconds=10)
    with pytest.raises(InvalidInputError) as caught:
        validate_cron(huge)
    assert caught.value.detail is not None and len(caught.value.detail) < 300


# -- property: expressions drawn from the fields' grammars ---------------------------------

_LOW = (0, 0, 1, 1, 0, 0)
_HIGH = (59, 23, 31, 12, 7, 59)
_NAMES = {
    3: ("jan", "feb", "MAR", "apr", "may", "Jun", "jul", "aug", "sep", "oct", "nov", "dec", "foo"),
    4: ("sun", "MON", "tue", "wed", "thu", "Fri", "sat", "xyz"),
}


@st.composite
def values(draw: st.DrawFn, index: int) -> str:
    """A value of the field: mostly in range, sometimes a name, sometimes out of range."""
    kind = draw(st.integers(0, 9))
    if index in _NAMES and kind < 3:
        return draw(st.sampled_from(_NAMES[index]))
    if kind == 9:
        return str(draw(st.integers(0, 120)))
    return str(draw(st.integers(_LOW[index], _HIGH[index])))


@st.composite
def items(draw: st.DrawFn, index: int) -> str:
    step = draw(st.integers(0, _HIGH[index] + 1))
    shapes = [
        "*",
        f"*/{step}",
        draw(values(index)),
        f"{draw(values(index))}-{draw(values(index))}",
        f"{draw(values(index))}-{draw(values(index))}/{step}",
        f"{draw(values(index))}/{step}",
        draw(st.sampled_from(["", "?", "L", "l", "W", "15W", "H", "-1", "1-", "*/", "005", "1.5"])),
    ]
    if index == 4:
        shapes.append(f"{draw(values(index))}#{draw(st.integers(0, 6))}")
    if index == 2:
        shapes.extend(["29", "30", "31", "L", "?"])
    if index == 3:
        shapes.extend(["2", "4", "6", "9", "11"])
    return draw(st.sampled_from(shapes))


@st.composite
def fields(draw: st.DrawFn, index: int) -> str:
    return ",".join(draw(st.lists(items(index), min_size=1, max_size=4)))


@st.composite
def expressions(draw: st.DrawFn) -> str:
    count = draw(st.sampled_from([5, 5, 5, 6, 4, 7]))
    parts = []
    for i in range(count):
        # the day fields carry most of the cross-field rules: the time fields are often fixed
        if i < 2 and draw(st.booleans()):
            parts.append("0")
        else:
            parts.append(draw(fields(min(i, 5))))
    separator = draw(st.sampled_from([" ", " ", "  ", "\t"]))
    return separator.join(parts)


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(expression=expressions())
def test_generated_expressions_get_one_verdict(conn: psycopg.Connection[Any], expression: str) -> None:
    sql, stored = sql_verdict(conn, expression)
    py, normalized = python_verdict(expression)
    assert sql == py, expression
    if sql == "accept":
        assert stored == normalized
        assert normalized is not None
        assert_plannable(normalized)


@pytest.mark.parametrize(
    ("expression", "warns"),
    [
        ("*/2 * * * * *", True),  # meant "every 2 s"; fires every second of even minutes
        ("0 */5 * * * *", True),  # meant "second 0, every 5 minutes"; fires each second of minute 0
        ("* * * * * */2", False),  # every 2 seconds, as written
        ("15 */2 * * * 30", False),
        ("* * * * * *", False),  # every second, and says so
        ("*/5 * * * *", False),
    ],
)
def test_a_seconds_field_that_looks_meant_as_the_first_draws_a_warning(
    expression: str, warns: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="pgrun.scheduler"):
        ScheduleDeclaration(cron=expression, job_type="t.tick", name="tick")
    warned = [r.getMessage() for r in caplog.records if "sixth field is seconds" in r.getMessage()]
    assert bool(warned) == warns, warned
    if warns:
        assert "'* * * * * */N'" in warned[0] and "'tick'" in warned[0]
