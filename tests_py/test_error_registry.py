"""Errors from one place: the registry (plpgsql/util/_errors.sql) and docs/errors.md agree.

Every code a pgrun function raises has one SQLSTATE, given by ``pgrun._error_codes()``; every
RAISE in plpgsql/ goes through ``pgrun._raise(code, detail, hint)``, which looks it up. These
tests hold the registry and the catalogue to each other, code for code, both ways, and find
no SQLSTATE typed at a raise site outside the helper.
"""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
ERRORS_DOC = REPO / "docs" / "errors.md"
PLPGSQL = REPO / "plpgsql"
RAISE_HELPER = PLPGSQL / "util" / "_errors.sql"

TABLE_ROW = re.compile(r"^\| `([a-z_]+\.[a-z_]+)` \| `([0-9A-Z]{5})` \|", re.M)
# Codes raised and caught inside one function, documented in a sentence instead of the table.
CAUGHT_INSIDE = re.compile(r"^Not in the table: `([a-z_]+\.[a-z_]+)` \(`([0-9A-Z]{5})`\)", re.M)
# A typed SQLSTATE, or a RAISE statement other than a bare re-raise (`RAISE;` keeps the
# caught error's SQLSTATE).
TYPED = re.compile(r"\bERRCODE\b|\bRAISE\b(?!\s*;)")
LITERAL_SITE = re.compile(r"RAISE EXCEPTION '([a-z_]+\.[a-z_]+)'[^;]*?ERRCODE\s*=\s*'([0-9A-Z]{5})'")


def documented_codes() -> dict[str, str]:
    text = ERRORS_DOC.read_text()
    table = dict(TABLE_ROW.findall(text))
    caught = dict(CAUGHT_INSIDE.findall(text))
    assert table and caught, "docs/errors.md: the code table or the raised-and-caught sentence is gone"
    assert not set(table) & set(caught)
    return table | caught


def registry(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT code, sqlstate FROM pgrun._error_codes()").fetchall()
    codes = {code: sqlstate for code, sqlstate in rows}
    assert len(codes) == len(rows), "the registry lists a code twice"
    return codes


def code_lines(path: Path) -> str:
    """The file without its -- comments (a header may say RAISE in prose)."""
    return "\n".join(line.split("--", 1)[0] for line in path.read_text().splitlines())


def test_every_documented_code_is_registered_with_its_sqlstate(db: str) -> None:
    registered = registry(db)
    documented = documented_codes()
    wrong = {
        code: (sqlstate, registered.get(code))
        for code, sqlstate in documented.items()
        if registered.get(code) != sqlstate
    }
    assert wrong == {}, "documented code: (docs/errors.md's SQLSTATE, the registry's)"


def test_every_registered_code_is_documented(db: str) -> None:
    assert sorted(set(registry(db)) - set(documented_codes())) == []


def test_no_raise_site_outside_the_helper_types_a_sqlstate() -> None:
    files = sorted(PLPGSQL.rglob("*.sql"))
    assert RAISE_HELPER in files
    typed = []
    for path in files:
        name = path.relative_to(PLPGSQL).as_posix()
        if path == RAISE_HELPER:
            continue
        text = code_lines(path)
        typed += [f"{name}: {m.group(0)}" for m in TYPED.finditer(text)]
    assert typed == [], "raise through pgrun._raise(code, detail, hint): the registry gives the SQLSTATE"


def test_the_raise_sites_left_carry_the_registry_sqlstate(db: str) -> None:
    """The versioned migrations raise with literal SQLSTATEs (each is applied once, never rewritten)."""
    registered = registry(db)
    paths = sorted((REPO / "sql").glob("*.sql"))
    sites = [
        (path.relative_to(REPO).as_posix(), code, sqlstate)
        for path in paths
        if path.exists()
        for code, sqlstate in LITERAL_SITE.findall(code_lines(path))
    ]
    assert any(where.startswith("sql/") for where, _, _ in sites), "no literal site found: the pattern broke"
    wrong = [site for site in sites if registered.get(site[1]) != site[2]]
    assert wrong == [], "(file, code, SQLSTATE at the site) that the registry does not give the code"
