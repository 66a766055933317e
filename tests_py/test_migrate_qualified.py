"""Every function a migration calls is named with its schema (docs/migrations.md, "Rules for
writing migrations"): the sql/ files from 0007 on, and the DO blocks and statements the runner
and the psql bundle add around them.

Migrate and the bundle pin search_path to ``pg_catalog, pg_temp`` (docs/security.md); the
qualified names are the second wall, for a file someone applies by hand. Parsed with pglast
(PostgreSQL's own parser, libpg_query): CHECK constraints, defaults, queries, the bodies of
SQL functions, and every expression and statement inside PL/pgSQL bodies and DO blocks.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pglast import ast, parse_plpgsql, parse_sql
from pglast.visitors import Visitor

from pgrun import migrate

REPO = Path(__file__).resolve().parents[1]
#: The first sql/ file written with every call qualified; every later one must be.
FIRST_QUALIFIED = "0007"


class _Calls(Visitor):  # type: ignore[misc]
    def __init__(self, found: list[str]) -> None:
        self.found = found

    def visit_FuncCall(self, ancestors: Any, node: ast.FuncCall) -> None:
        names = [part.sval for part in node.funcname]
        if len(names) < 2:
            self.found.append(names[0])


def _option(options: Any, name: str) -> Any:
    for option in options or ():
        if option.defname == name:
            return option.arg
    return None


def _plpgsql_queries(tree: Any) -> list[tuple[str, int]]:
    """(query text, parse mode) of every expression and statement in a PL/pgSQL parse tree."""
    found: list[tuple[str, int]] = []
    if isinstance(tree, dict):
        if isinstance(tree.get("query"), str):
            found.append((tree["query"], int(tree.get("parseMode", 0))))
        for value in tree.values():
            found += _plpgsql_queries(value)
    elif isinstance(tree, list):
        for value in tree:
            found += _plpgsql_queries(value)
    return found


def _plpgsql(function_sql: str) -> list[str]:
    found: list[str] = []
    for query, mode in _plpgsql_queries(parse_plpgsql(function_sql)):
        if mode == 0:  # a whole statement
            found += unqualified_calls(query)
        else:  # an expression, or an assignment `target := expression`
            expression = re.split(r":=|=", query, maxsplit=1)[1] if mode >= 3 else query
            found += unqualified_calls(f"SELECT {expression}")
    return found


def unqualified_calls(text: str) -> list[str]:
    """The names of the functions ``text`` calls without a schema, in order."""
    found: list[str] = []
    encoded = text.encode()
    for raw in parse_sql(text):
        statement = raw.stmt
        _Calls(found)(statement)
        end = raw.stmt_location + raw.stmt_len if raw.stmt_len else len(encoded)
        source = encoded[raw.stmt_location : end].decode()
        if isinstance(statement, ast.DoStmt):
            body = _option(statement.args, "as").sval
            found += _plpgsql(
                "CREATE FUNCTION pg_temp.do_block() RETURNS void LANGUAGE plpgsql "
                f"AS $pgrun_lint${body}$pgrun_lint$"
            )
        elif isinstance(statement, ast.CreateFunctionStmt):
            language = _option(statement.options, "language")
            body = _option(statement.options, "as")
            if body is None:  # BEGIN ATOMIC: already part of the tree visited above
                continue
            if language is not None and language.sval == "plpgsql":
                found += _plpgsql(source)
            elif language is not None and language.sval == "sql":
                found += unqualified_calls(body[0].sval)
    return found


def test_the_linter_finds_unqualified_calls_wherever_they_hide() -> None:
    sample = """
    CREATE TABLE pgrun.t (
        a text[] CHECK (cardinality(a) > 0),
        b timestamptz DEFAULT now(),
        c text CHECK (pg_catalog.length(c) < 10 AND trim(c) = c)
    );
    CREATE INDEX t_idx ON pgrun.t (lower(c));
    CREATE FUNCTION pgrun.f() RETURNS int LANGUAGE sql AS $$ SELECT abs(-1) $$;
    CREATE FUNCTION pgrun.g(p int) RETURNS int LANGUAGE plpgsql AS $$
    DECLARE
        v int := sign(p);
    BEGIN
        v := floor(v);
        PERFORM pg_sleep(0);
        FOR v IN SELECT generate_series(1, 2) LOOP NULL; END LOOP;
        RAISE EXCEPTION 'x' USING DETAIL = format('%s', v);
        RETURN coalesce(nullif(pg_catalog.ceil(v), 0), 1);
    END;
    $$;
    DO $$ BEGIN EXECUTE concat('SELECT ', 1); END; $$;
    """
    assert sorted(unqualified_calls(sample)) == [
        "abs",
        "cardinality",
        "concat",
        "floor",
        "format",
        "generate_series",
        "lower",
        "now",
        "pg_sleep",
        "sign",
    ]  # trim(c) is SQL syntax: the parser itself names pg_catalog.btrim


def _numbered(version: str) -> bool:
    return version >= FIRST_QUALIFIED


@pytest.mark.parametrize(
    "migration",
    [m for m in migrate.versioned_migrations(REPO) if _numbered(m.version)],
    ids=lambda m: m.label,
)
def test_sql_files_from_0007_on_qualify_every_call(migration: migrate.Migration) -> None:
    assert unqualified_calls(migration.sql) == [], (
        f"sql/{migration.label}.sql calls functions without their schema: write pg_catalog.<name> "
        "(or pgrun.<name>); a migration must not depend on the migrator's search_path"
    )


def _bundle_sql(bundle: str) -> str:
    """The bundle as plain SQL: psql's meta-commands out, its variables as literals."""
    lines = [line for line in bundle.splitlines() if not line.startswith("\\")]
    text = "\n".join(lines).replace(" \\gset", ";")
    return re.sub(r":'(\w+)'", r"'\1'", text)


def test_the_runner_and_the_bundle_qualify_every_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A schema of one trivial file and an empty function tree: what is left is the bundle's own SQL.
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "0001_only.sql").write_text("SELECT 1;\n")
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(tmp_path))
    bundle = migrate.sql_bundle()
    assert "DO $pgrun_check$" in bundle and "DO $pgrun_prepare$" in bundle
    assert unqualified_calls(_bundle_sql(bundle)) == []

    record = re.sub(r"%\((\w+)\)s", r"'\1'", migrate._RECORD)
    for statement in (migrate.PREPARE_TREE, record, migrate._HAS_SECURITY, migrate._SECURITY_APPLY):
        assert unqualified_calls(statement) == [], statement
