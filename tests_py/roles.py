"""Login roles for tests that must connect as someone other than the owner: each is a member
of one of pgrun's group roles (docs/security.md), has a random password, and is dropped when
the block ends. Roles are cluster-wide, so names carry a random suffix."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo


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
    admin_dsn: str, kinds: dict[str, str | None], prefix: str = "pgrun"
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
