"""The migration runner: versioned sql/ files, then the repeatable plpgsql/ tree.

* ``sql/NNNN_name.sql`` files are applied once each, in version order, each in its
  own transaction. Inside that transaction the history row is written first, so a
  second migrator that somehow got past the advisory lock collides on the primary key
  instead of running the file twice. (The very first file creates the history table,
  so its row is written right after it, still in the same transaction.)
* The ``plpgsql/`` tree is concatenated in a fixed order (``PLPGSQL_ORDER``, then file
  name) and applied as one repeatable unit whenever its checksum differs from the one
  recorded. Its files only hold ``CREATE OR REPLACE`` and ``COMMENT`` statements.
* Everything runs under one session advisory lock, so any number of app instances
  may migrate at once: one applies, the others wait and then find nothing to do.
* A released migration whose checksum changed, or a database that has applied
  migrations this code does not know, stops the run before anything is applied.

The files ship inside the wheel as package data (``pgrun/_schema``); in a source
checkout the repository's own ``sql/`` and ``plpgsql/`` folders are read instead.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

import psycopg

# One key for every pgrun migrator: the first 8 bytes of sha256("pgrun.migrate").
ADVISORY_LOCK_KEY = int.from_bytes(hashlib.sha256(b"pgrun.migrate").digest()[:8], "big", signed=True)
PLPGSQL_ORDER = ("util", "jobs", "workflows", "schedules", "admin")
REPEATABLE_VERSION = "plpgsql"
_VERSIONED_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


class MigrationError(RuntimeError):
    """The schema cannot be migrated or checked as asked; the message says what to do."""


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    kind: str  # 'versioned' or 'repeatable'
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()

    @property
    def label(self) -> str:
        return self.name if self.kind == "repeatable" else f"{self.version}_{self.name}"


@dataclass(frozen=True)
class AppliedMigration:
    version: str
    name: str
    kind: str
    checksum: str


def schema_root() -> Traversable:
    """The folder holding ``sql/`` and ``plpgsql/``: package data, else the checkout.

    ``PGRUN_SCHEMA_DIR`` points elsewhere (tests use it to stage edited migrations).
    """
    override = os.environ.get("PGRUN_SCHEMA_DIR")
    if override:
        return Path(override)
    packaged = resources.files("pgrun") / "_schema"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "sql").is_dir():
        return checkout
    raise MigrationError("pgrun's SQL files are missing from this installation; reinstall pgrun")


def _read(item: Traversable) -> str:
    # Normalise line endings so a checkout with CRLF conversion has the same checksums.
    return item.read_text(encoding="utf-8").replace("\r\n", "\n")


def versioned_migrations(root: Traversable | None = None) -> list[Migration]:
    root = root or schema_root()
    found: list[Migration] = []
    for item in (root / "sql").iterdir():
        if not item.name.endswith(".sql"):
            continue
        match = _VERSIONED_NAME.match(item.name)
        if not match:
            raise MigrationError(f"sql/{item.name}: migration files are named NNNN_name.sql")
        found.append(Migration(match.group(1), match.group(2), "versioned", _read(item)))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two sql/ files share a version: {versions}")
    return found


def _sql_files(folder: Traversable) -> Iterable[Traversable]:
    for item in sorted(folder.iterdir(), key=lambda i: i.name):
        if item.is_dir():
            yield from _sql_files(item)
        elif item.name.endswith(".sql"):
            yield item


def plpgsql_tree(root: Traversable | None = None) -> Migration:
    """The plpgsql/ tree as one repeatable migration, in the fixed load order."""
    root = root or schema_root()
    base = root / "plpgsql"
    # Empty folders do not survive git or the wheel, so a missing folder is an empty one.
    present = {item.name for item in base.iterdir() if item.is_dir()} if base.is_dir() else set()
    unknown = present - set(PLPGSQL_ORDER)
    if unknown:
        raise MigrationError(
            f"plpgsql/ has folders outside the load order {PLPGSQL_ORDER}: {sorted(unknown)}"
        )
    parts: list[str] = []
    for family in PLPGSQL_ORDER:
        if family not in present:
            continue
        for item in _sql_files(base / family):
            parts.append(f"-- plpgsql/{family}/{item.name}\n{_read(item)}")
    return Migration(REPEATABLE_VERSION, "plpgsql", "repeatable", "\n".join(parts))


def all_migrations() -> list[Migration]:
    return [*versioned_migrations(), plpgsql_tree()]


def read_history(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, AppliedMigration] | None:
    """The recorded history, or None when pgrun was never installed here."""
    row = conn.execute("SELECT to_regclass('pgrun.schema_migrations') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return None
    rows = conn.execute(
        "SELECT version, name, kind, checksum FROM pgrun.schema_migrations ORDER BY version"
    ).fetchall()
    return {
        str(version): AppliedMigration(str(version), str(name), str(kind), str(checksum))
        for version, name, kind, checksum in rows
    }


@dataclass(frozen=True)
class Problem:
    """One way the database differs from the code. ``blocking``: migrate must not proceed
    (an edited released file, a database newer than the code); the rest migrate repairs."""

    message: str
    blocking: bool = False


def find_problems(history: dict[str, AppliedMigration] | None, code: list[Migration]) -> list[Problem]:
    """Everything that makes the database differ from the code, one sentence each."""
    if history is None:
        return [
            Problem(
                "pgrun is not installed in this database (no pgrun.schema_migrations table). "
                "Run `pgrun migrate` (or `make migrate`)."
            )
        ]
    problems: list[Problem] = []
    known = {m.version: m for m in code}
    newer = sorted(v for v in history if v not in known)
    if newer:
        names = ", ".join(f"{v}_{history[v].name}" for v in newer)
        problems.append(
            Problem(
                f"the database has migrations this code does not know: {names}. The database is "
                "newer than this code: deploy the pgrun version that wrote them (or a newer one).",
                blocking=True,
            )
        )
    for migration in code:
        applied = history.get(migration.version)
        if applied is None:
            if migration.kind == "versioned":
                problems.append(Problem(f"migration {migration.label} is not applied. Run `pgrun migrate`."))
            else:
                problems.append(Problem("the plpgsql functions are not installed. Run `pgrun migrate`."))
        elif applied.checksum != migration.checksum:
            if migration.kind == "versioned":
                problems.append(
                    Problem(
                        f"migration {migration.label} changed after it was applied (database "
                        f"checksum {applied.checksum[:12]}, code {migration.checksum[:12]}). Released "
                        "migrations are immutable: restore the file and put the change in a new "
                        "sql/NNNN_name.sql.",
                        blocking=True,
                    )
                )
            else:
                problems.append(
                    Problem(
                        "the plpgsql functions in the database differ from this code (checksum "
                        f"{applied.checksum[:12]}, code {migration.checksum[:12]}). Run `pgrun migrate`."
                    )
                )
    return problems


def check_schema(dsn: str) -> list[str]:
    """Read-only: the problems that stand between this database and this code."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.read_only = True
        return [p.message for p in find_problems(read_history(conn), all_migrations())]


def migrate(dsn: str, log: list[str] | None = None) -> list[str]:
    """Apply what is missing; return the labels applied (empty when up to date)."""
    code = all_migrations()
    applied: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET lock_timeout = 0")
        conn.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK_KEY,))
        try:
            history = read_history(conn)
            blocking = [p.message for p in find_problems(history, code) if p.blocking]
            if blocking:
                raise MigrationError("\n".join(blocking))
            # The first migration creates the history table; every later one finds it.
            history_exists = history is not None
            recorded = history or {}
            for migration in code:
                done = recorded.get(migration.version)
                if done is not None and done.checksum == migration.checksum:
                    continue
                _apply(conn, migration, history_exists=history_exists)
                history_exists = True
                applied.append(migration.label)
                if log is not None:
                    log.append(f"applied {migration.label}")
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_KEY,))
    return applied


# Before the plpgsql/ tree is (re)applied, every pgrun function that no table, view or
# other non-function object depends on is dropped, so a renamed parameter, a changed
# result type or a removed function never blocks or outlives a migrate. Functions that
# DDL needs (column defaults such as pgrun.uuidv7()) have dependents and stay.
PREPARE_TREE = """
DO $pgrun_prepare$
DECLARE
    v_function regprocedure;
BEGIN
    FOR v_function IN
        SELECT p.oid::regprocedure
        FROM pg_catalog.pg_proc AS p
        WHERE p.pronamespace = 'pgrun'::regnamespace
          AND NOT EXISTS (
              SELECT FROM pg_catalog.pg_depend AS d
              WHERE d.refclassid = 'pg_catalog.pg_proc'::regclass
                AND d.refobjid = p.oid
                AND d.classid <> 'pg_catalog.pg_proc'::regclass
          )
        ORDER BY p.oid
    LOOP
        EXECUTE format('DROP FUNCTION %s', v_function);
    END LOOP;
END;
$pgrun_prepare$;
"""

_RECORD = """
INSERT INTO pgrun.schema_migrations (version, name, kind, checksum)
VALUES (%(version)s, %(name)s, %(kind)s, %(checksum)s)
ON CONFLICT (version) DO UPDATE
SET name = excluded.name, checksum = excluded.checksum, applied_at = clock_timestamp()
WHERE pgrun.schema_migrations.kind = 'repeatable'
"""


def _apply(conn: psycopg.Connection[tuple[object, ...]], migration: Migration, history_exists: bool) -> None:
    params = {
        "version": migration.version,
        "name": migration.name,
        "kind": migration.kind,
        "checksum": migration.checksum,
    }
    with conn.transaction():
        if history_exists:
            _record(conn, params)
        try:
            if migration.kind == "repeatable":
                conn.execute(PREPARE_TREE.encode())
            # No parameters: psycopg sends the text as one simple query, statements and all.
            conn.execute(migration.sql.encode())
        except psycopg.Error as exc:
            raise MigrationError(f"{migration.label} failed: {exc}") from exc
        if not history_exists:
            _record(conn, params)


def _record(conn: psycopg.Connection[tuple[object, ...]], params: dict[str, str]) -> None:
    cur = conn.execute(_RECORD, params)
    if cur.rowcount != 1:
        raise MigrationError(
            f"migration {params['version']} is already recorded: another migrator applied it"
        )


# -- the psql bundle -------------------------------------------------------------------

_BUNDLE_HEADER = """\
-- pgrun schema bundle, written by `pgrun sql-bundle`: every migration pgrun has, in order.
-- Apply it with psql (it relies on psql's \\if and \\gset):
--     psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f pgrun.sql
-- It is safe to apply again and on top of `pgrun migrate`: applied versions are skipped,
-- and an edited released migration or a database newer than this bundle stops it.
\\set ON_ERROR_STOP on
BEGIN;
DO $pgrun_check$
DECLARE
    v_problem text;
BEGIN
    PERFORM pg_advisory_xact_lock({lock_key});
    IF to_regclass('pgrun.schema_migrations') IS NULL THEN
        RETURN;
    END IF;
    SELECT string_agg(format('%s (%s)', h.version, CASE WHEN c.version IS NULL
        THEN 'the database is newer than this bundle' ELSE 'changed after it was applied' END), ', ')
    INTO v_problem
    FROM pgrun.schema_migrations AS h
    LEFT JOIN (VALUES {known}) AS c (version, checksum) ON c.version = h.version
    WHERE h.kind = 'versioned' AND (c.version IS NULL OR c.checksum <> h.checksum);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'pgrun.schema_mismatch'
            USING DETAIL = 'migrations: ' || v_problem,
                  HINT = 'Use the bundle of the pgrun version that matches this database.';
    END IF;
END;
$pgrun_check$;
"""

_BUNDLE_STEP = """
-- {label}
SELECT to_regclass('pgrun.schema_migrations') IS NOT NULL AS pgrun_has_history \\gset
\\if :pgrun_has_history
SELECT NOT EXISTS (
    SELECT FROM pgrun.schema_migrations WHERE version = '{version}' AND checksum = '{checksum}'
) AS pgrun_apply \\gset
\\else
\\set pgrun_apply true
\\endif
\\if :pgrun_apply
{prepare}{sql}
INSERT INTO pgrun.schema_migrations (version, name, kind, checksum)
VALUES ('{version}', '{name}', '{kind}', '{checksum}')
ON CONFLICT (version) DO UPDATE
SET name = excluded.name, checksum = excluded.checksum, applied_at = clock_timestamp();
\\endif
"""


def sql_bundle() -> str:
    """One psql script that installs or upgrades the schema like `pgrun migrate` does."""
    code = all_migrations()
    known = ", ".join(f"('{m.version}', '{m.checksum}')" for m in code if m.kind == "versioned")
    parts = [_BUNDLE_HEADER.format(lock_key=ADVISORY_LOCK_KEY, known=known)]
    for m in code:
        parts.append(
            _BUNDLE_STEP.format(
                label=m.label,
                version=m.version,
                name=m.name,
                kind=m.kind,
                checksum=m.checksum,
                prepare=PREPARE_TREE.lstrip() if m.kind == "repeatable" else "",
                sql=m.sql.rstrip(),
            )
        )
    parts.append("COMMIT;\n")
    return "".join(parts)
