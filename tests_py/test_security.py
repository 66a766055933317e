"""The role model across migrations, roles and databases (docs/security.md): an upgrade of a
hardened install keeps its privileges and tenant mappings, drift is reported and repaired,
a non-superuser with CREATEROLE installs it, one without is told what a DBA must run, and two
installs in one cluster keep their roles apart."""

from __future__ import annotations

import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pgrun import migrate
from pgrun.client import Client
from pgrun.errors import PermissionDeniedError
from pgrun.server import find_bindir
from pgrun.testing import (
    LoginRole,
    create_login,
    drop_login,
    extract_schema,
    login_roles,
    scratch_database,
    set_database_owner,
)

REPO = Path(__file__).resolve().parents[1]
# The last commit before migration 0007 (no roles: every function EXECUTE to PUBLIC).
BEFORE_0007 = "5672efb"

# Everything the role model decides, by name (never by oid): owners and ACLs of the schema,
# its relations and its functions, and the memberships of pgrun's group roles.
PRIVILEGES = """
SELECT 'schema', n.nspname, n.nspowner::regrole::text, n.nspacl::text
FROM pg_namespace AS n WHERE n.nspname = 'pgrun'
UNION ALL
SELECT 'relation', c.oid::regclass::text, c.relowner::regrole::text, c.relacl::text
FROM pg_class AS c WHERE c.relnamespace = 'pgrun'::regnamespace
UNION ALL
SELECT 'function', p.oid::regprocedure::text, p.proowner::regrole::text,
    (p.proacl::text || CASE WHEN p.prosecdef THEN ' definer' ELSE '' END)
FROM pg_proc AS p WHERE p.pronamespace = 'pgrun'::regnamespace
ORDER BY 1, 2
"""


def privileges(dsn: str) -> list[tuple[str, ...]]:
    with psycopg.connect(dsn) as conn:
        return [tuple(str(v) for v in row) for row in conn.execute(PRIVILEGES).fetchall()]


def mappings(dsn: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT role::text, organization_ids, any_organization, queues, job_types"
            " FROM pgrun.role_access ORDER BY 1"
        ).fetchall()


def cli(args: list[str], dsn: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgrun", *args, "--database-url", dsn],
        capture_output=True,
        text=True,
        check=False,
    )


def test_an_upgrade_hardens_an_open_install_and_later_upgrades_keep_its_privileges_and_mappings(
    empty_db: str, roles: dict[str, LoginRole], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before 0007 the API works for its owner only: no other role may even use the schema.
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(extract_schema(BEFORE_0007, tmp_path / "old")))
    migrate.migrate(empty_db)
    with (
        psycopg.connect(roles["reader"].dsn(empty_db)) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="schema pgrun"),
    ):
        conn.execute("SELECT count(*) FROM pgrun.list_jobs()")

    # The upgrade: roles, ownership and grants in the same migrate.
    staged = tmp_path / "new"
    for folder in ("sql", "plpgsql"):
        shutil.copytree(REPO / folder, staged / folder)
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(staged))
    assert migrate.migrate(empty_db) == [m.label for m in migrate.all_migrations() if m.label >= "0007"]
    with psycopg.connect(roles["reader"].dsn(empty_db)) as conn:
        assert conn.execute("SELECT count(*) FROM pgrun.list_jobs()").fetchone() == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="function purge_finished_jobs"):
            conn.execute("SELECT pgrun.purge_finished_jobs('0 s')")
    org = "5b2d0c7e-0000-4000-8000-000000000001"
    with Client.connect(empty_db) as admin:
        admin.enqueue_job("up.grade", organization_id=org)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(
            "SELECT pgrun.set_role_access(%s, organization_ids => ARRAY[%s]::uuid[])",
            (roles["producer"].name, org),
        )
    hardened, mapped = privileges(empty_db), mappings(empty_db)
    assert any(kind == "function" and "pgrun_producer=X" in (acl or "") for kind, _, _, acl in hardened)

    # A later release changes the function tree: migrate drops and re-creates every function.
    body = staged / "plpgsql" / "jobs" / "cancel.sql"
    body.write_text(body.read_text().replace("-- cancel_job:", "-- cancel_job (changed):", 1))
    assert migrate.migrate(empty_db) == ["plpgsql"]
    assert privileges(empty_db) == hardened, "the re-created functions carry exactly the grants they had"
    assert mappings(empty_db) == mapped, "tenant mappings are rows: an upgrade leaves them"
    assert migrate.check_schema(empty_db) == []
    # ... and the producer, granted its group role once, still works as its tenant.
    with Client.connect(roles["producer"].dsn(empty_db)) as producer:
        assert [j.job_type for j in producer.list_jobs()] == ["up.grade"]


def test_a_widened_or_lost_grant_is_reported_and_repaired(db: str, roles: dict[str, LoginRole]) -> None:
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute(
            "GRANT EXECUTE ON FUNCTION pgrun.purge_finished_jobs(interval, integer, uuid) TO pgrun_reader"
        )
        conn.execute("GRANT SELECT, UPDATE ON pgrun.jobs TO pgrun_worker")
        conn.execute(
            "REVOKE EXECUTE ON FUNCTION pgrun.claim_jobs(text, integer, integer, text[], text[], integer)"
            " FROM pgrun_worker"
        )
    problems = migrate.check_schema(db)
    assert len(problems) == 1 and "differ from its role model (3 change(s)" in problems[0], problems
    assert cli(["check-schema"], db).returncode == 1

    log: list[str] = []
    assert migrate.migrate(db, log) == []
    assert log == ["applied 3 privilege change(s) (docs/security.md)"]
    assert migrate.check_schema(db) == []
    with psycopg.connect(roles["worker"].dsn(db)) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE pgrun.jobs SET status = 'succeeded'")
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM pgrun.claim_jobs('w')").fetchone() == (0,)


def test_a_dropped_group_role_is_made_again(admin_dsn: str, empty_db: str) -> None:
    prefix = f"pgrun_t{secrets.token_hex(3)}"
    migrate.migrate(empty_db, prefix=prefix)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(f"{prefix}_reader")))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(f"{prefix}_reader")))
    try:
        assert "differ from its role model" in migrate.check_schema(empty_db)[0]
        assert migrate.migrate(empty_db) == []
        assert migrate.check_schema(empty_db) == []
    finally:
        _drop_group_roles(admin_dsn, empty_db, prefix)


def _drop_group_roles(admin_dsn: str, dsn: str, prefix: str) -> None:
    """Drop a test prefix's roles (and the database that used them)."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        database = psycopg.conninfo.conninfo_to_dict(dsn)["dbname"]
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(str(database))))
        for kind in ("reader", "worker", "producer", "admin", "owner"):
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(f"{prefix}_{kind}")))


def test_a_non_superuser_with_createrole_installs_the_role_model(admin_dsn: str) -> None:
    prefix = f"pgrun_t{secrets.token_hex(3)}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        dba = create_login(conn, f"{prefix}_dba", attributes="CREATEROLE")
    try:
        with scratch_database(admin_dsn) as dsn:
            set_database_owner(admin_dsn, dsn, dba.name)
            assert migrate.migrate(dba.dsn(dsn), prefix=prefix)[-1] == "plpgsql"
            owners = {owner for _, _, owner, _ in privileges(dsn)}
            assert owners == {f"{prefix}_owner"}, (
                "the DBA's role owns nothing; the owner role owns everything"
            )
            with psycopg.connect(dba.dsn(dsn)) as conn:
                # It is a member of the owner role (it must own what migrate re-creates), so an admin.
                assert conn.execute("SELECT pgrun._caller_is_admin()").fetchone() == (True,)
            assert migrate.migrate(dba.dsn(dsn)) == []
            _drop_group_roles(admin_dsn, dsn, prefix)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            drop_login(conn, dba.name)


def test_a_migrator_that_may_not_create_roles_is_told_what_to_run_and_nothing_is_applied(
    admin_dsn: str,
) -> None:
    prefix = f"pgrun_t{secrets.token_hex(3)}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        plain = create_login(conn, f"{prefix}_plain")
    try:
        with scratch_database(admin_dsn) as dsn:
            set_database_owner(admin_dsn, dsn, plain.name)
            with pytest.raises(migrate.MigrationError) as refused:
                migrate.migrate(plain.dsn(dsn), prefix=prefix)
            message = str(refused.value)
            assert f'CREATE ROLE "{prefix}_owner" NOLOGIN;' in message
            assert f'GRANT "{prefix}_owner" TO {plain.name};' in message
            with psycopg.connect(dsn) as conn:
                assert conn.execute("SELECT to_regnamespace('pgrun')").fetchone() == (None,), (
                    "nothing applied"
                )
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            drop_login(conn, plain.name)


def test_two_installs_in_one_cluster_keep_their_roles_apart(
    admin_dsn: str, db: str, roles: dict[str, LoginRole]
) -> None:
    prefix = f"pgrun_t{secrets.token_hex(3)}"
    with scratch_database(admin_dsn) as other:
        migrate.migrate(other, prefix=prefix)
        try:
            with login_roles(admin_dsn, {"other_producer": "producer"}, prefix=prefix) as made:
                # Each producer works in its own install, and may not even see the other's schema.
                with Client.connect(made["other_producer"].dsn(other)) as producer:
                    producer.enqueue_job("other.install")
                with Client.connect(roles["producer"].dsn(db)) as producer:
                    producer.enqueue_job("first.install")
                for login, dsn in ((made["other_producer"], db), (roles["producer"], other)):
                    with (
                        Client.connect(login.dsn(dsn)) as stranger,
                        pytest.raises(PermissionDeniedError) as denied,
                    ):
                        stranger.enqueue_job("intruder")
                    assert denied.value.code == "access.denied"
                    assert "permission denied for schema pgrun" in (denied.value.detail or "")
            with pytest.raises(migrate.MigrationError, match="keeps the prefix it was installed with"):
                migrate.migrate(other, prefix="pgrun")
        finally:
            _drop_group_roles(admin_dsn, other, prefix)


def test_the_psql_bundle_applies_the_same_privileges_as_migrate(
    empty_db: str, db: str, tmp_path: Path
) -> None:
    bundle = tmp_path / "pgrun.sql"
    subprocess.run(
        [sys.executable, "-m", "pgrun", "sql-bundle", "-o", str(bundle)], check=True, capture_output=True
    )
    subprocess.run(
        [str(find_bindir() / "psql"), empty_db, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", str(bundle)],
        check=True,
        capture_output=True,
    )
    assert privileges(empty_db) == privileges(db)


def test_the_documented_matrix_is_the_one_migrate_applies(db: str) -> None:
    kinds = ("admin", "producer", "worker", "reader")
    text = (REPO / "docs" / "security.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \|\s*(A?)\s*\|\s*(A?)\s*\|\s*(A?)\s*\|\s*(A?)\s*\|$", text, flags=re.M)
    documented = {
        name: {kind for kind, mark in zip(kinds, marks, strict=True) if mark} for name, *marks in rows
    }
    with psycopg.connect(db) as conn:
        applied = {
            str(name): set(role_kinds)
            for name, role_kinds in conn.execute(
                "SELECT function_name, role_kinds FROM pgrun._security_matrix()"
            )
        }
    assert documented == applied


def test_a_malformed_role_prefix_is_refused_before_anything_is_applied(empty_db: str, tmp_path: Path) -> None:
    with pytest.raises(migrate.MigrationError, match="role prefix 'Bad-Prefix' is not"):
        migrate.migrate(empty_db, prefix="Bad-Prefix")
    # The psql bundle has no Python in front of it: migration 0007 itself refuses.
    bundle = tmp_path / "pgrun.sql"
    subprocess.run(
        [sys.executable, "-m", "pgrun", "sql-bundle", "-o", str(bundle)], check=True, capture_output=True
    )
    applied = subprocess.run(
        [
            str(find_bindir() / "psql"),
            empty_db,
            "-X",
            "-q",
            "-v",
            "role_prefix=Bad-Prefix",
            "-f",
            str(bundle),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert applied.returncode != 0
    assert "access.invalid_role_prefix" in applied.stderr
    with psycopg.connect(empty_db) as conn:
        assert conn.execute("SELECT to_regnamespace('pgrun')").fetchone() == (None,), (
            "the bundle is one transaction"
        )
