"""Helpers for tests against a real PostgreSQL: throw-away databases and templates.

Tests that must commit get their own database, cloned from a migrated template with
``CREATE DATABASE ... TEMPLATE`` (milliseconds), and dropped afterwards.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

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
