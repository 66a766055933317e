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
