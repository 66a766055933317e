"""Migrations cannot be hijacked through search_path (docs/security.md, "Migrations").

A role that may CREATE in a schema on the migrator's search_path (PostgreSQL 14's default
``public``; PostgreSQL 15 only after ``GRANT CREATE ON SCHEMA public``) plants functions that
match pgrun's calls better than the built-ins do: ``cardinality(text[])`` beats
``pg_catalog.cardinality(anyarray)`` in two CHECK constraints, ``format(text, regprocedure)``
beats ``pg_catalog.format(text, VARIADIC "any")`` in the DO blocks of migrate and the bundle.
Each planted function records that it ran and tries to make its author SUPERUSER. None may
run, at install or at an upgrade, through `pgrun migrate` or the psql bundle, and no pgrun
object may end up bound to them.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pgrun import migrate
from pgrun.server import find_bindir
from pgrun.testing import LoginRole, create_login, drop_login, extract_schema

REPO = Path(__file__).resolve().parents[1]
PSQL = str(find_bindir() / "psql")
# The last commit before migrations pinned their search_path: sql/ 0001-0007 and a plpgsql
# tree that an upgrade re-applies (so the tree's preparing DO block runs again).
BEFORE_PINNING = "b51089f"

PLANT = """
CREATE TABLE public.hijack_log (
    fn text NOT NULL,
    ran_as text NOT NULL,
    at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
GRANT INSERT ON public.hijack_log TO PUBLIC;

CREATE FUNCTION public._hijack(p_fn text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hijack_log (fn, ran_as) VALUES (p_fn, pg_catalog.current_user());
    BEGIN
        -- succeeds only when a superuser (the migrator) runs it
        EXECUTE pg_catalog.format('ALTER ROLE %I SUPERUSER', {attacker});
    EXCEPTION WHEN OTHERS THEN
        NULL;
    END;
END;
$$;

CREATE FUNCTION public.cardinality(text[]) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    PERFORM public._hijack('cardinality');
    RETURN pg_catalog.cardinality($1);
END;
$$;

CREATE FUNCTION public.format(text, regprocedure) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM public._hijack('format');
    RETURN pg_catalog.format($1, $2);
END;
$$;
"""

# Every pgrun object (constraint, default, view, function body bound at creation) that
# depends on a function outside pg_catalog and pgrun.
BOUND_ELSEWHERE = """
SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
    || ' -> ' || p.pronamespace::pg_catalog.regnamespace::text || '.' || p.oid::pg_catalog.regprocedure::text
FROM pg_catalog.pg_depend AS d
JOIN pg_catalog.pg_proc AS p
    ON d.refclassid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = d.refobjid
WHERE p.pronamespace::pg_catalog.regnamespace::text NOT IN ('pg_catalog', 'information_schema', 'pgrun')
ORDER BY 1
"""


@pytest.fixture
def attacker(admin_dsn: str, empty_db: str) -> Iterator[LoginRole]:
    """A login role with no privilege but CREATE on public in ``empty_db`` (PostgreSQL 14's
    default, granted by hand on 15)."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        role = create_login(conn, f"pgrun_t_attacker_{secrets.token_hex(4)}")
    try:
        with psycopg.connect(empty_db, autocommit=True) as conn:
            conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(role.name)))
        yield role
    finally:
        with psycopg.connect(empty_db, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP OWNED BY {} CASCADE").format(sql.Identifier(role.name)))
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            drop_login(conn, role.name)


def plant(dsn: str, attacker: LoginRole) -> None:
    """The attacker, connected as itself, plants the functions."""
    with psycopg.connect(attacker.dsn(dsn), autocommit=True) as conn:
        conn.execute(PLANT.replace("{attacker}", sql.Literal(attacker.name).as_string(conn)).encode())


def assert_not_hijacked(dsn: str, attacker: LoginRole) -> None:
    with psycopg.connect(dsn) as conn:
        ran = conn.execute("SELECT fn, ran_as FROM public.hijack_log ORDER BY at").fetchall()
        superuser = conn.execute(
            "SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = %s", (attacker.name,)
        ).fetchone()
        bound = [str(r[0]) for r in conn.execute(BOUND_ELSEWHERE)]
        # the planted functions are still there: nothing just dropped them
        planted = conn.execute(
            "SELECT count(*) FROM pg_catalog.pg_proc WHERE pronamespace = 'public'::regnamespace"
            " AND proname IN ('cardinality', 'format')"
        ).fetchone()
    assert ran == [], f"planted functions ran during the migration: {ran}"
    assert superuser == (False,), "the attacker became a superuser"
    assert bound == [], f"pgrun objects are bound to planted functions: {bound}"
    assert planted == (2,)


def install(how: str, dsn: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Install or upgrade to the schema PGRUN_SCHEMA_DIR (or the checkout) holds."""
    if how == "migrate":
        migrate.migrate(dsn)
        return
    bundle = tmp_path / f"pgrun-{len(list(tmp_path.glob('pgrun-*.sql')))}.sql"
    bundle.write_text(migrate.sql_bundle())
    subprocess.run(
        [PSQL, dsn, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(bundle)],
        check=True,
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("how", ["migrate", "bundle"])
def test_functions_planted_before_install_never_run(
    how: str, empty_db: str, attacker: LoginRole, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    plant(empty_db, attacker)

    install(how, empty_db, monkeypatch, tmp_path)

    assert_not_hijacked(empty_db, attacker)
    assert migrate.check_schema(empty_db) == []


@pytest.mark.parametrize("how", ["migrate", "bundle"])
def test_functions_planted_before_an_upgrade_never_run(
    how: str, empty_db: str, attacker: LoginRole, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A clean install of the older release, before anyone planted anything.
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(extract_schema(BEFORE_PINNING, tmp_path / "old")))
    migrate.migrate(empty_db)
    plant(empty_db, attacker)

    # The upgrade: this code's versioned files and a changed function tree, so migrate drops
    # and re-creates every function (the DO block that formats DROP FUNCTION statements).
    staged = tmp_path / "new"
    for folder in ("sql", "plpgsql"):
        shutil.copytree(REPO / folder, staged / folder)
    body = staged / "plpgsql" / "jobs" / "cancel.sql"
    body.write_text(body.read_text() + "\n-- an upgrade that changes the function tree\n")
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(staged))
    install(how, empty_db, monkeypatch, tmp_path)

    assert_not_hijacked(empty_db, attacker)
    assert migrate.check_schema(empty_db) == []


def test_an_upgrade_rebinds_constraints_an_earlier_hijack_bound_to_planted_functions(
    empty_db: str, attacker: LoginRole, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An install made while the functions were planted (by an older pgrun, whose files ran
    with the default search_path) has its two CHECK constraints bound to public.cardinality:
    the upgrade re-creates them on pg_catalog.cardinality, under the same names."""
    plant(empty_db, attacker)
    old = extract_schema(BEFORE_PINNING, tmp_path / "old")
    # The older release's versioned files as its runner applied them: the default search_path.
    with psycopg.connect(empty_db, autocommit=True) as conn:
        for m in migrate.versioned_migrations(old):
            conn.execute(m.sql.encode())
            conn.execute(
                "INSERT INTO pgrun.schema_migrations (version, name, kind, checksum) VALUES (%s, %s, %s, %s)",
                (m.version, m.name, m.kind, m.checksum),
            )
        bound = [str(r[0]) for r in conn.execute(BOUND_ELSEWHERE)]
    assert sorted(b.split(" -> ")[0] for b in bound) == [
        "constraint job_schedules_scope_check on table pgrun.job_schedules",
        "constraint workflow_run_mutations_steps_check on table pgrun.workflow_run_mutations",
    ], bound
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    assert migrate.migrate(empty_db) == ["plpgsql"]

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(REPO))
    migrate.migrate(empty_db)

    assert_not_hijacked(empty_db, attacker)
    with psycopg.connect(empty_db) as conn:
        checks = dict(
            conn.execute(
                "SELECT conname, pg_catalog.pg_get_constraintdef(oid) FROM pg_catalog.pg_constraint"
                " WHERE conname IN ('job_schedules_scope_check', 'workflow_run_mutations_steps_check')"
            ).fetchall()
        )
    assert sorted(checks) == ["job_schedules_scope_check", "workflow_run_mutations_steps_check"]
    assert all("cardinality(" in d for d in checks.values()), checks


def pgrun_cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PGRUN_SCHEMA_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "pgrun", *args],
        env={**env, "DATABASE_URL": dsn},
        capture_output=True,
        text=True,
        check=False,
    )


def test_check_schema_and_migrate_warn_of_a_schema_on_the_path_that_others_may_write(
    empty_db: str, attacker: LoginRole
) -> None:
    migrated = pgrun_cli(empty_db, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    warning = (
        f"warning: schema public is on this role's search_path and role(s) {attacker.name} may create "
        "objects in it"
    )
    assert warning in migrated.stderr
    checked = pgrun_cli(empty_db, "check-schema")
    assert checked.returncode == 0, "a warning is not a difference between the schema and the code"
    assert f"pgrun check-schema: {warning}" in checked.stderr
    assert f'REVOKE CREATE ON SCHEMA "public" FROM "{attacker.name}"' in checked.stderr

    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("GRANT CREATE ON SCHEMA public TO PUBLIC")  # PostgreSQL 14's default
    checked = pgrun_cli(empty_db, "check-schema")
    assert "schema public is on this role's search_path and every role (PUBLIC) may create" in checked.stderr
    assert 'REVOKE CREATE ON SCHEMA "public" FROM PUBLIC' in checked.stderr

    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA public FROM {}").format(sql.Identifier(attacker.name)))
    checked = pgrun_cli(empty_db, "check-schema")
    assert checked.returncode == 0 and checked.stderr == "", checked.stderr
