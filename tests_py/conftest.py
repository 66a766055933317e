"""Shared fixtures: one PostgreSQL server per session, a database per test.

The server is DATABASE_URL / PGRUN_TEST_DSN when set (``make test`` sets it to its
embedded cluster), else an embedded cluster this session starts and stops.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrun.server import server_from_environment
from pgrun.testing import LoginRole, login_roles, migrated_template, scratch_database

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def admin_dsn() -> Iterator[str]:
    with server_from_environment() as dsn:
        yield dsn


@pytest.fixture
def empty_db(admin_dsn: str) -> Iterator[str]:
    """A fresh database with nothing in it."""
    with scratch_database(admin_dsn) as dsn:
        yield dsn


@pytest.fixture(scope="session")
def template_db(admin_dsn: str) -> Iterator[str]:
    with migrated_template(admin_dsn) as name:
        yield name


@pytest.fixture
def db(admin_dsn: str, template_db: str) -> Iterator[str]:
    """A fresh database with the schema migrated, cloned from a template."""
    with scratch_database(admin_dsn, template=template_db) as dsn:
        yield dsn


@pytest.fixture
def cli_env(admin_dsn: str) -> dict[str, str]:
    """Environment for running the `pgrun` command in a subprocess."""
    env = dict(os.environ)
    env.pop("PGRUN_SCHEMA_DIR", None)
    return env


@pytest.fixture(scope="session")
def roles(admin_dsn: str, template_db: str) -> Iterator[dict[str, LoginRole]]:
    """Login roles, one a member of each pgrun client role: admin, producer, worker, reader
    (the template's migrate made the group roles). ``roles["worker"].dsn(db)`` connects as one."""
    kinds: dict[str, str | None] = {kind: kind for kind in ("admin", "producer", "worker", "reader")}
    with login_roles(admin_dsn, kinds) as made:
        yield made
