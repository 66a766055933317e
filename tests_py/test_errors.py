"""pgrun.errors maps every documented SQLSTATE category, and real server errors, by code."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from pgrun import errors

DOC = Path(__file__).resolve().parents[1] / "docs" / "errors.md"


def test_every_documented_category_has_one_exception_class() -> None:
    documented = dict(
        re.findall(r"^\| `(RQ\d{3}|42501)` \| [^|]+ \| `(\w+)` \|", DOC.read_text(), flags=re.M)
    )
    assert documented, "docs/errors.md lists no categories"
    assert {code: errors.BY_SQLSTATE[code].__name__ for code in documented} == documented
    assert set(errors.BY_SQLSTATE) == set(documented)


def test_a_raised_pgrun_error_translates_by_sqlstate_and_keeps_code_detail_hint(db: str) -> None:
    with psycopg.connect(db) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(
            "DO $$ BEGIN RAISE EXCEPTION 'job.lease_lost' USING ERRCODE = 'RQ004', "
            "DETAIL = 'job x: lease expired', HINT = 'stop'; END $$"
        )
    translated = errors.translate(raised.value)
    assert isinstance(translated, errors.LeaseLostError)
    assert (translated.code, translated.detail, translated.hint) == (
        "job.lease_lost",
        "job x: lease expired",
        "stop",
    )


def test_other_errors_are_not_translated(db: str) -> None:
    with psycopg.connect(db) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute("SELECT 1/0")
    assert errors.translate(raised.value) is None


def test_str_is_fit_for_an_end_user_and_the_detail_stays_apart(db: str) -> None:
    """str(e) names the category and the code only; the server's DETAIL (ids, values) and HINT
    are attributes, and describe() joins code and detail for operators."""
    with psycopg.connect(db) as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(
            "DO $$ BEGIN RAISE EXCEPTION 'job.not_found' USING ERRCODE = 'RQ002', "
            "DETAIL = 'no job 0190d3c1 in organization acme-secret', HINT = 'check the id'; END $$"
        )
    translated = errors.translate(raised.value)
    assert isinstance(translated, errors.NotFoundError)
    assert str(translated) == translated.message == "Not found. (job.not_found)"
    assert "acme-secret" not in str(translated) and "acme-secret" not in repr(translated.args)
    assert translated.detail == "no job 0190d3c1 in organization acme-secret"
    assert translated.hint == "check the id"
    assert translated.describe() == "job.not_found: no job 0190d3c1 in organization acme-secret"
    for cls in errors.CATEGORIES:
        assert cls.public_message and cls.public_message != errors.PgrunError.public_message, cls
