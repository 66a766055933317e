"""Helpers for tests against a real PostgreSQL: throw-away databases and templates.

Tests that must commit get their own database, cloned from a migrated template with
``CREATE DATABASE ... TEMPLATE`` (milliseconds), and dropped afterwards. Tests (and
benchmarks) that must connect as someone other than the owner make login roles that are
members of pgrun's group roles (docs/security.md) with ``login_roles``.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgrun import migrate


def with_database(dsn: str, database: str) -> str:
    """`dsn` pointing at another database on the same server."""
    params = conninfo_to_dict(dsn)
    params["dbname"] = database
    return make_conninfo("", **params)


def create_database(admin_dsn: str, prefix: str = "pgrun_t", template: str | None = None) -> str:
    """Create a database with a fresh name; return its name."""
    name = f"{prefix}_{secrets.token_hex(5)}"
    query = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        query = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(template)
        )
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(query)
    return name


def drop_database(admin_dsn: str, name: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def scratch_database(admin_dsn: str, template: str | None = None, prefix: str = "pgrun_t") -> Iterator[str]:
    """A database that exists for the duration of the block; yields its DSN."""
    name = create_database(admin_dsn, prefix=prefix, template=template)
    try:
        yield with_database(admin_dsn, name)
    finally:
        drop_database(admin_dsn, name)


@contextmanager
def migrated_template(admin_dsn: str) -> Iterator[str]:
    """A migrated database to clone from; yields its name."""
    name = create_database(admin_dsn, prefix="pgrun_template")
    try:
        migrate.migrate(with_database(admin_dsn, name))
        yield name
    finally:
        drop_database(admin_dsn, name)


# The clock-aware pgrun.now() of the test suites: the pgrun.fake_now setting, when set, is the
# time, so tests move time instead of sleeping. An install never carries it (migration 0008
# made pgrun.now() the database clock alone); `pgrun check-schema` reports one that does.
TEST_CLOCK_SETTING = "pgrun.fake_now"
_TEST_CLOCK = f"""
CREATE OR REPLACE FUNCTION pgrun.now()
RETURNS timestamptz
LANGUAGE sql
STABLE
PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN pg_catalog.current_setting('{TEST_CLOCK_SETTING}', true) OPERATOR(pg_catalog.<>) ''
            THEN pg_catalog.current_setting('{TEST_CLOCK_SETTING}', true)::pg_catalog.timestamptz
        ELSE pg_catalog.now()
    END
$$
"""


def install_test_clock(dsn: str) -> None:
    """Make pgrun.now() honour the pgrun.fake_now setting in the database of ``dsn`` (tests
    only; needs the owner or a superuser). Owner and grants stay as they were."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(_TEST_CLOCK)


@dataclass(frozen=True)
class LoginRole:
    name: str
    password: str

    def dsn(self, dsn: str) -> str:
        """``dsn`` (any database on the server), connecting as this role."""
        params = conninfo_to_dict(dsn)
        params["user"] = self.name
        params["password"] = self.password
        return make_conninfo("", **params)


def create_login(
    conn: psycopg.Connection[Any], name: str, *member_of: str, attributes: str = ""
) -> LoginRole:
    """A LOGIN role with a random password, a member of ``member_of`` (group role names)."""
    password = secrets.token_urlsafe(16)
    conn.execute(
        sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} " + attributes).format(
            sql.Identifier(name), sql.Literal(password)
        )
    )
    for group in member_of:
        conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(name)))
    return LoginRole(name, password)


def drop_login(conn: psycopg.Connection[Any], name: str) -> None:
    # Connections of the role (a worker still shutting down) would block the drop.
    conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (name,))
    conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


@contextmanager
def login_roles(
    admin_dsn: str, kinds: Mapping[str, str | None], prefix: str = "pgrun"
) -> Iterator[dict[str, LoginRole]]:
    """One login role per entry: ``{"producer": "producer", "app": None}`` makes a member of
    ``<prefix>_producer`` and a role of no pgrun group."""
    suffix = secrets.token_hex(4)
    made: dict[str, LoginRole] = {}
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        try:
            for label, kind in kinds.items():
                groups = [f"{prefix}_{kind}"] if kind else []
                made[label] = create_login(conn, f"pgrun_t_{label}_{suffix}", *groups)
            yield made
        finally:
            for role in made.values():
                drop_login(conn, role.name)


def set_database_owner(admin_dsn: str, dsn: str, owner: str) -> None:
    """Make role ``owner`` the owner of ``dsn``'s database (so it may create a schema there)."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(str(conninfo_to_dict(dsn)["dbname"])), sql.Identifier(owner)
            )
        )


def extract_schema(commit: str, dest: Path, folders: tuple[str, ...] = ("sql", "plpgsql")) -> Path:
    """``sql/`` and ``plpgsql/`` (or the ``folders`` named, e.g. ``python`` too for an older
    package) as they were at ``commit`` of this source checkout, extracted into ``dest`` (point
    ``PGRUN_SCHEMA_DIR`` at it to migrate an older schema)."""
    checkout = Path(__file__).resolve().parents[2]
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(checkout), "archive", commit, *folders], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest
