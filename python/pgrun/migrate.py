"""The migration runner: versioned sql/ files, then the repeatable plpgsql/ tree.

* ``sql/NNNN_name.sql`` files are applied once each, in version order, each in its
  own transaction. Inside that transaction the history row is written first, so a
  second migrator that somehow got past the migration lock collides on the primary key
  instead of running the file twice. (The very first file creates the history table,
  so its row is written right after it, still in the same transaction.)
* The ``plpgsql/`` tree is concatenated in a fixed order (``PLPGSQL_ORDER``, then file
  name) and applied as one repeatable unit whenever its checksum differs from the one
  recorded. Its files only hold ``CREATE OR REPLACE`` and ``COMMENT`` statements.
* Each step (read the history, apply the next file) is one transaction that first locks the
  history table, ``pgrun.schema_migrations``, in EXCLUSIVE mode: an object only pgrun's
  owner and the migrating role may lock, so any number of app instances may migrate at
  once (one applies, the others wait and then find nothing to do) and no client role can
  stall them. The very first install has no table yet: it serialises on a transaction
  advisory lock instead, until 0001 has made the table. Either wait is bounded
  (``lock_timeout``, default 60 s); then migrate stops and names the session holding it.
  A step idle for ``IDLE_IN_STEP_SECONDS`` between two statements has lost its client: the
  server ends it (``idle_in_transaction_session_timeout``), so its locks do not outlive it;
  one whose client is gone while a statement runs ends within ``CLIENT_CHECK_SECONDS``
  (``client_connection_check_interval``).
* Every connection the runner opens pins ``search_path`` to ``pg_catalog, pg_temp`` before
  its first statement, so no schema the migrator's role or session puts on its path (and
  another role may write, like PostgreSQL 14's ``public``) can put a function in the way
  of a built-in call; the psql bundle pins it the same way.
* The role model (docs/security.md) is applied by ``pgrun._security_apply()`` in the
  transaction of every migration, once the plpgsql tree defines it: pgrun's group roles,
  the ownership of every object, and EXECUTE on each function for exactly the roles the
  matrix names. The tree drops and re-creates its functions, so their grants are never
  left to a hand-made ``GRANT``. When nothing else is due and the privileges drifted (a
  dropped role, a hand-made grant), migrate repairs them on their own.
* A released migration whose checksum changed, or a database that has applied
  migrations this code does not know, stops the run before anything is applied.

The files ship inside the wheel as package data (``pgrun/_schema``); in a source
checkout the repository's own ``sql/`` and ``plpgsql/`` folders are read instead.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, cast

import psycopg

from pgrun.config import TCP_GIVE_UP_MAX, tcp_settings

# The lock of a first install (no history table yet): the first 8 bytes of sha256("pgrun.migrate").
ADVISORY_LOCK_KEY = int.from_bytes(hashlib.sha256(b"pgrun.migrate").digest()[:8], "big", signed=True)
PLPGSQL_ORDER = ("util", "jobs", "workflows", "schedules", "admin")
REPEATABLE_VERSION = "plpgsql"
_VERSIONED_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
#: The prefix of pgrun's group roles (<prefix>_owner, _admin, _producer, _worker, _reader),
#: chosen when migration 0007 first runs in a database and recorded in pgrun.install_roles.
DEFAULT_ROLE_PREFIX = "pgrun"
_ROLE_PREFIX = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_SECURITY_APPLY = "SELECT pgrun._security_apply()"
_HAS_SECURITY = "SELECT pg_catalog.to_regprocedure('pgrun._security_apply()') IS NOT NULL"
#: The search_path of every statement the runner and the bundle run (docs/security.md).
PINNED_SEARCH_PATH = "pg_catalog, pg_temp"
#: How long migrate waits for the migration lock before it names the holder and stops.
DEFAULT_LOCK_TIMEOUT = 60.0
LOCK_TIMEOUT_ENV = "PGRUN_MIGRATE_LOCK_TIMEOUT"
#: The longest a step's transaction may sit idle between two of migrate's statements before
#: the server ends the session (``idle_in_transaction_session_timeout``). Migrate sends them
#: back to back, so a step idle that long has lost its client (killed, frozen, its network
#: gone), and the locks it holds, which stall every worker, go in a minute rather than when
#: the server's TCP keepalive notices (two hours by the usual kernel defaults).
IDLE_IN_STEP_SECONDS = 60
#: How often the server looks whether migrate's client is still there while one of its
#: statements runs (``client_connection_check_interval``): a migrate killed inside a long
#: statement (an index built on a large table, a wait for a lock) would otherwise leave that
#: statement running to its end, holding the step's locks, before the server noticed.
CLIENT_CHECK_SECONDS = 1


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
    if not _has_history_table(conn):
        return None
    rows = conn.execute(
        "SELECT version, name, kind, checksum FROM pgrun.schema_migrations ORDER BY version"
    ).fetchall()
    return {
        str(version): AppliedMigration(str(version), str(name), str(kind), str(checksum))
        for version, name, kind, checksum in rows
    }


# A query of the catalog, not to_regclass(): it reads with the statement's snapshot, so right
# after the first-install lock it sees the table another migrator has just committed (a name
# lookup may still answer from this backend's cache of "no such relation").
_HISTORY_TABLE_EXISTS = """
SELECT EXISTS (
    SELECT FROM pg_catalog.pg_class AS c
    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
    WHERE n.nspname = 'pgrun' AND c.relname = 'schema_migrations'
)
"""


def _has_history_table(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(_HISTORY_TABLE_EXISTS).fetchone()
    return bool(row and row[0])


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


def role_prefix(explicit: str | None = None) -> str | None:
    """The role prefix asked for: ``explicit``, else ``PGRUN_ROLE_PREFIX``, else None (the
    database's recorded prefix, or the default on a first install)."""
    prefix = explicit or os.environ.get("PGRUN_ROLE_PREFIX") or None
    if prefix is not None and not _ROLE_PREFIX.match(prefix):
        raise MigrationError(
            f"role prefix {prefix!r} is not 1..40 lowercase letters, digits or _ starting with a letter"
        )
    return prefix


def _recorded_prefix(conn: psycopg.Connection[tuple[object, ...]]) -> str | None:
    row = conn.execute("SELECT to_regclass('pgrun.install_roles') IS NOT NULL").fetchone()
    if row is None or not row[0]:
        return None
    owner = conn.execute("SELECT role_name FROM pgrun.install_roles WHERE kind = 'owner'").fetchone()
    return str(owner[0]).removesuffix("_owner") if owner else None


ROLE_KINDS = ("owner", "admin", "producer", "worker", "reader")
#: The migration that brought the role model: older trees (a staged one) need no roles.
ROLE_MODEL_VERSION = "0007"


def _role_problems(conn: psycopg.Connection[tuple[object, ...]], prefix: str) -> list[str]:
    """What keeps this login from setting up pgrun's roles, found before anything is applied:
    missing group roles it may not create, or an owner role it is not a member of and may
    not join (it must own what it re-creates)."""
    names = [f"{prefix}_{kind}" for kind in ROLE_KINDS]
    row = conn.execute(
        "SELECT r.rolsuper OR r.rolcreaterole, quote_ident(current_user), "
        "  array(SELECT n FROM unnest(%s::text[]) AS n WHERE to_regrole(quote_ident(n)) IS NULL), "
        "  to_regrole(quote_ident(%s)) IS NOT NULL AND NOT pg_has_role(current_user, %s, 'MEMBER') "
        "FROM pg_roles AS r WHERE r.rolname = current_user",
        (names, names[0], names[0]),
    ).fetchone()
    if row is None or row[0]:
        return []
    me, missing, outsider = str(row[1]), cast(list[str], row[2]), bool(row[3])
    problems: list[str] = []
    if missing:
        statements = " ".join(f'CREATE ROLE "{name}" NOLOGIN;' for name in missing)
        problems.append(
            f"pgrun's group roles {', '.join(missing)} do not exist and {me} may not create roles "
            f'(no CREATEROLE). Have a DBA run: {statements} GRANT "{names[0]}" TO {me}; '
            "then migrate again (docs/security.md)."
        )
    elif outsider:
        problems.append(
            f"{me} is not a member of {names[0]}, which owns pgrun's objects, and may not join it. "
            f'Have a DBA run: GRANT "{names[0]}" TO {me}; then migrate again (docs/security.md).'
        )
    return problems


def security_drift(conn: psycopg.Connection[tuple[object, ...]]) -> list[str] | None:
    """The statements that would bring roles, ownership and grants to the role model; None
    when this database has no role model yet or this role may not read it."""
    row = conn.execute(
        "SELECT to_regprocedure('pgrun._security_plan(boolean)') IS NOT NULL AND "
        "has_function_privilege('pgrun._security_plan(boolean)', 'EXECUTE')"
    ).fetchone()
    if row is None or not row[0]:
        return None
    return [str(r[0]) for r in conn.execute("SELECT statement FROM pgrun._security_plan(false)")]


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _connect(dsn: str) -> tuple[psycopg.Connection[tuple[object, ...]], list[str]]:
    """An autocommit connection whose search_path is pinned to ``pg_catalog, pg_temp`` before
    any other statement, and the schemas that were on its path before (the role's or the
    session's own: ``"$user", public`` by default)."""
    # a server that vanished fails migrate in seconds (pgrun.config.tcp_settings), not hours
    tcp: dict[str, Any] = tcp_settings(dsn, TCP_GIVE_UP_MAX)
    conn = psycopg.connect(dsn, autocommit=True, fallback_application_name="pgrun migrate", **tcp)
    try:
        # Schema-qualified, so nothing on the path it reads can stand in for it.
        row = conn.execute("SELECT pg_catalog.current_schemas(false)").fetchone()
        conn.execute(f"SET search_path = {PINNED_SEARCH_PATH}")
    except BaseException:
        conn.close()
        raise
    return conn, [str(name) for name in cast(list[str], row[0] if row else [])]


_WRITABLE_SCHEMAS = """
SELECT s.name, has_schema_privilege('public', n.oid, 'CREATE'),
    array(
        SELECT r.rolname::text FROM pg_roles AS r
        WHERE r.rolname <> current_user AND NOT r.rolsuper AND r.rolname !~ '^pg_'
          AND has_schema_privilege(r.oid, n.oid, 'CREATE')
        ORDER BY r.rolname
    )
FROM unnest(%s::text[]) WITH ORDINALITY AS s (name, position)
JOIN pg_namespace AS n ON n.nspname = s.name
WHERE s.name <> 'pg_catalog'
ORDER BY s.position
"""


def writable_path_schemas(conn: psycopg.Connection[tuple[object, ...]], path: list[str]) -> list[str]:
    """One warning per schema on ``path`` (the migrating role's own search_path) in which
    another role may create objects: PUBLIC, or any role but this one, the superusers and
    PostgreSQL's predefined pg_* roles (members of the owner count: they may write too)."""
    warnings: list[str] = []
    for name, by_public, roles in conn.execute(_WRITABLE_SCHEMAS, (path,)).fetchall():
        others = cast(list[str], roles)
        if by_public:
            who, revoke = "every role (PUBLIC)", "PUBLIC"
        elif others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            who, revoke = f"role(s) {shown}", ", ".join(_quote_ident(r) for r in others)
        else:
            continue
        warnings.append(
            f"schema {name} is on this role's search_path and {who} may create objects in it: a "
            "function planted there can take the place of a built-in one in a session that does not "
            "pin its search_path (pgrun migrate and the bundle pin theirs). "
            f"REVOKE CREATE ON SCHEMA {_quote_ident(str(name))} FROM {revoke}; or take it off the "
            "role's search_path (docs/security.md)."
        )
    return warnings


def check_schema(dsn: str, warnings: list[str] | None = None) -> list[str]:
    """Read-only: the problems that stand between this database and this code. ``warnings``,
    when given, receives what is not a problem of the schema but a risk to it (a schema on
    the path that others may write)."""
    conn, path = _connect(dsn)
    with conn:
        conn.read_only = True
        if warnings is not None:
            warnings += writable_path_schemas(conn, path)
        problems = [p.message for p in find_problems(read_history(conn), all_migrations())]
        drift = security_drift(conn) if not problems else None
        if drift:
            problems.append(
                f"pgrun's roles, ownership or privileges differ from its role model ({len(drift)} "
                f"change(s), e.g. {drift[0]}). Run `pgrun migrate` (docs/security.md)."
            )
        if not problems and has_test_clock(conn):
            problems.append(
                "pgrun.now() honours the pgrun.fake_now setting: the test suites' clock is installed "
                "here (pgrun.testing.install_test_clock), so any session may move pgrun's clock. "
                "A production database must not carry it (docs/security.md)."
            )
        return problems


def has_test_clock(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """Whether pgrun.now() is the test suites' clock (it reads the pgrun.fake_now setting)."""
    row = conn.execute(
        "SELECT position('pgrun.fake_now' IN p.prosrc) > 0 FROM pg_proc AS p"
        " WHERE p.oid = to_regprocedure('pgrun.now()')"
    ).fetchone()
    return bool(row and row[0])


def lock_timeout_seconds(explicit: float | None = None) -> float:
    """How long migrate waits for the migration lock: ``explicit``, else
    ``PGRUN_MIGRATE_LOCK_TIMEOUT``, else 60 s; 0 waits as long as it takes."""
    value: object = explicit
    if value is None:
        value = os.environ.get(LOCK_TIMEOUT_ENV) or DEFAULT_LOCK_TIMEOUT
    try:
        seconds = float(cast(float, value))
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 86400:
        raise MigrationError(
            f"lock timeout {value!r} is not a number of seconds from 0 (no limit) to 86400 "
            f"(--lock-timeout, {LOCK_TIMEOUT_ENV})"
        )
    return seconds


def migrate(
    dsn: str,
    log: list[str] | None = None,
    *,
    prefix: str | None = None,
    lock_timeout: float | None = None,
    warnings: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[str]:
    """Apply what is missing; return the labels applied (empty when up to date).

    ``prefix`` names pgrun's group roles on a first install (default ``pgrun``; also
    ``PGRUN_ROLE_PREFIX``); on a database that has them it must match the recorded one.
    ``lock_timeout`` (seconds, see ``lock_timeout_seconds``) bounds the wait for the
    migration lock. ``warnings``, when given, receives the risks ``check_schema`` warns of.
    ``progress``, when given, is called with each migration's label before it is applied."""
    code = all_migrations()
    applied: list[str] = []
    wanted_prefix = role_prefix(prefix)
    timeout = lock_timeout_seconds(lock_timeout)
    conn, path = _connect(dsn)
    with conn:
        if warnings is not None:
            warnings += writable_path_schemas(conn, path)
        # The migrations' own statements wait for the locks they need as long as it takes.
        conn.execute("SET lock_timeout = 0")
        conn.execute(f"SET idle_in_transaction_session_timeout = '{IDLE_IN_STEP_SECONDS}s'")
        conn.execute(f"SET client_connection_check_interval = '{CLIENT_CHECK_SECONDS}s'")
        if wanted_prefix:
            conn.execute("SELECT set_config('pgrun.role_prefix', %s, false)", (wanted_prefix,))
        # One transaction per step: lock, read the history, refuse or apply the next file.
        while True:
            with conn.transaction():
                history = _lock(conn, timeout)
                _refuse(conn, code, history, wanted_prefix)
                due = next((m for m in code if not _is_applied(m, history)), None)
                if due is not None and due.label in applied:
                    # Another migrator recorded other code over what this run applied (two
                    # versions of the app migrating at once, e.g. in a rolling deploy). Applying
                    # ours again would make the two take turns for ever: the later one stands.
                    note = (
                        f"{due.label}: another migrate applied different code after this one; "
                        "left as it is (check-schema shows which code the database runs)"
                    )
                    if warnings is not None:
                        warnings.append(note)
                    if log is not None:
                        log.append(f"not applied again: {note}")
                    break
                if due is None:
                    if not applied and security_drift(conn):
                        row = conn.execute(_SECURITY_APPLY).fetchone()
                        changes = row[0] if row else 0
                        if log is not None:
                            log.append(f"applied {changes} privilege change(s) (docs/security.md)")
                    break
                if progress is not None:
                    progress(due.label)
                _apply(conn, due, history_exists=history is not None)
            applied.append(due.label)
            if log is not None:
                log.append(f"applied {due.label}")
    return applied


def _is_applied(migration: Migration, history: dict[str, AppliedMigration] | None) -> bool:
    done = (history or {}).get(migration.version)
    return done is not None and done.checksum == migration.checksum


def _refuse(
    conn: psycopg.Connection[tuple[object, ...]],
    code: list[Migration],
    history: dict[str, AppliedMigration] | None,
    wanted_prefix: str | None,
) -> None:
    """Raise what stops migrate before anything is applied (checked again at every step:
    another migrator may have moved the database on in between)."""
    blocking = [p.message for p in find_problems(history, code) if p.blocking]
    recorded_prefix = _recorded_prefix(conn)
    if wanted_prefix and recorded_prefix and wanted_prefix != recorded_prefix:
        blocking.append(
            f"this database's pgrun roles use the prefix {recorded_prefix!r}, not {wanted_prefix!r}; "
            "a database keeps the prefix it was installed with"
        )
    if any(m.version >= ROLE_MODEL_VERSION for m in code if m.kind == "versioned"):
        blocking += _role_problems(conn, recorded_prefix or wanted_prefix or DEFAULT_ROLE_PREFIX)
    if blocking:
        raise MigrationError("\n".join(blocking))


# The sessions holding (or queued ahead for) a lock that conflicts with ours, first the holders.
_LOCK_HOLDERS = """
SELECT l.pid, a.usename, a.application_name,
    to_char(coalesce(a.xact_start, a.backend_start) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'),
    a.state, l.granted
FROM pg_locks AS l
LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE l.pid <> pg_backend_pid()
  AND l.database = (SELECT d.oid FROM pg_database AS d WHERE d.datname = current_database())
  AND {target}
ORDER BY l.granted DESC, a.xact_start NULLS LAST, l.pid
LIMIT 3
"""
_TABLE_TARGET = (
    "l.locktype = 'relation' AND l.relation = 'pgrun.schema_migrations'::regclass "
    "AND l.mode <> 'AccessShareLock'"
)
_ADVISORY_TARGET = "l.locktype = 'advisory' AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid"


def _lock(conn: psycopg.Connection[tuple[object, ...]], timeout: float) -> dict[str, AppliedMigration] | None:
    """Take the migration lock for the rest of this transaction, waiting at most ``timeout``
    seconds; return the history read under it.

    The lock is the history table itself in EXCLUSIVE mode: only its owner (pgrun's owner
    role, which the migrating role is a member of) may take a conflicting lock on it, so no
    client role can stall migrate. Readers (check-schema) are not blocked. A first install
    has no table: it takes a transaction advisory lock, whose key anyone could hold; a holder
    there makes the first migrate wait ``timeout`` and say who it is, like the table."""
    conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{max(round(timeout * 1000), 0)}ms",))
    if not _has_history_table(conn):
        hi, lo = (ADVISORY_LOCK_KEY >> 32) & 0xFFFFFFFF, ADVISORY_LOCK_KEY & 0xFFFFFFFF
        _wait(
            conn,
            "SELECT pg_advisory_xact_lock(%s)",
            (ADVISORY_LOCK_KEY,),
            _ADVISORY_TARGET,
            (hi, lo),
            f"the first-install advisory lock {ADVISORY_LOCK_KEY}",
            timeout,
        )
    if _has_history_table(conn):
        _wait(
            conn,
            "LOCK TABLE pgrun.schema_migrations IN EXCLUSIVE MODE",
            None,
            _TABLE_TARGET,
            None,
            "table pgrun.schema_migrations",
            timeout,
        )
    conn.execute("SELECT set_config('lock_timeout', '0', true)")
    return read_history(conn)


def _wait(
    conn: psycopg.Connection[tuple[object, ...]],
    statement: str,
    params: tuple[object, ...] | None,
    target: str,
    target_params: tuple[object, ...] | None,
    what: str,
    timeout: float,
) -> None:
    try:
        # A savepoint: when the wait times out, the step's transaction can still ask who holds it.
        with conn.transaction():
            conn.execute(statement, params)
    except psycopg.errors.LockNotAvailable:
        holders = conn.execute(_LOCK_HOLDERS.replace("{target}", target), target_params).fetchall()
        raise MigrationError(locked_message(what, holders, timeout)) from None


def locked_message(what: str, holders: list[tuple[object, ...]], timeout: float) -> str:
    """One line: who holds the migration lock, and what to do."""
    described = [
        f"pid {pid} (role {user or '?'}, application_name '{app or ''}', since {since or '?'}, "
        f"{state or 'state unknown'}{'' if granted else ', queued ahead'})"
        for pid, user, app, since, state, granted in holders
    ]
    held_by = "; ".join(described) if described else "a session that has let go of it since: migrate again"
    first = f" (SELECT pg_terminate_backend({holders[0][0]}))" if holders else ""
    return (
        f"pgrun.migrate_locked: the migration lock ({what}) is held by {held_by}; migrate waited "
        f"{timeout:g} s for it. Let that session finish or end it{first}, then migrate again; "
        f"--lock-timeout or {LOCK_TIMEOUT_ENV} sets the wait (docs/migrations.md)."
    )


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
        EXECUTE pg_catalog.format('DROP FUNCTION %s', v_function);
    END LOOP;
END;
$pgrun_prepare$;
"""

_RECORD = """
INSERT INTO pgrun.schema_migrations (version, name, kind, checksum)
VALUES (%(version)s, %(name)s, %(kind)s, %(checksum)s)
ON CONFLICT (version) DO UPDATE
SET name = excluded.name, checksum = excluded.checksum, applied_at = pg_catalog.clock_timestamp()
WHERE pgrun.schema_migrations.kind = 'repeatable'
"""


def _apply(conn: psycopg.Connection[tuple[object, ...]], migration: Migration, history_exists: bool) -> None:
    """Apply one migration in the caller's transaction (which holds the migration lock)."""
    params = {
        "version": migration.version,
        "name": migration.name,
        "kind": migration.kind,
        "checksum": migration.checksum,
    }
    if history_exists:
        _record(conn, params)
    try:
        if migration.kind == "repeatable":
            conn.execute(PREPARE_TREE.encode())
        # No parameters: psycopg sends the text as one simple query, statements and all.
        conn.execute(migration.sql.encode())
        row = conn.execute(_HAS_SECURITY).fetchone()
        if row is not None and row[0]:
            conn.execute(_SECURITY_APPLY)
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
-- Names resolve in pg_catalog and nowhere else, whatever this session's search_path was, so
-- no function planted in a schema others may write runs here (docs/security.md).
SET LOCAL search_path = pg_catalog, pg_temp;
-- The transaction holds locks that stall every worker: a psql that falls silent in it (killed,
-- frozen, its network gone) has the server end it after {idle} s idle (docs/migrations.md).
SET LOCAL idle_in_transaction_session_timeout = '{idle}s';
-- ... and one killed while a statement runs has it end then, not when the statement would.
SET LOCAL client_connection_check_interval = '{check}s';
-- pgrun's group roles are <prefix>_owner, _admin, _producer, _worker, _reader (docs/security.md);
-- the prefix of a first install comes from: psql -v role_prefix=... (default pgrun)
\\if :{{?role_prefix}}
SELECT pg_catalog.set_config('pgrun.role_prefix', :'role_prefix', true);
\\endif
-- The wait for the migration lock: psql -v migrate_lock_timeout=... (default 60s, 0 = no limit)
\\if :{{?migrate_lock_timeout}}
SELECT pg_catalog.set_config('pgrun.migrate_lock_timeout', :'migrate_lock_timeout', true);
\\endif
DO $pgrun_check$
DECLARE
    v_wait text := coalesce(
        nullif(pg_catalog.current_setting('pgrun.migrate_lock_timeout', true), ''), '60s'
    );
    v_saved text := pg_catalog.current_setting('lock_timeout');
    v_what text;
    v_holders text;
    v_problem text;
BEGIN
    -- The migration lock, held to COMMIT: the history table (only pgrun's owner may lock it),
    -- or on a first install, which has no table yet, an advisory lock (docs/migrations.md).
    PERFORM pg_catalog.set_config('lock_timeout', v_wait, true);
    BEGIN
        IF pg_catalog.to_regclass('pgrun.schema_migrations') IS NULL THEN
            v_what := 'the first-install advisory lock {lock_key}';
            PERFORM pg_catalog.pg_advisory_xact_lock({lock_key});
        END IF;
        -- (the catalog itself, not to_regclass: it sees a table committed while we waited)
        IF EXISTS (
            SELECT FROM pg_catalog.pg_class AS c
            JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
            WHERE n.nspname = 'pgrun' AND c.relname = 'schema_migrations'
        ) THEN
            v_what := 'table pgrun.schema_migrations';
            LOCK TABLE pgrun.schema_migrations IN EXCLUSIVE MODE;
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        SELECT pg_catalog.string_agg(pg_catalog.format(
            'pid %s (role %s, application_name %L, since %s, %s)', l.pid, a.usename, a.application_name,
            coalesce(a.xact_start, a.backend_start), a.state), '; ' ORDER BY l.pid)
        INTO v_holders
        FROM pg_catalog.pg_locks AS l
        LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid
        WHERE l.granted AND l.pid <> pg_catalog.pg_backend_pid()
          AND l.database = (
              SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname = pg_catalog.current_database()
          )
          AND (
              (l.locktype = 'relation' AND l.relation = pg_catalog.to_regclass('pgrun.schema_migrations')
               AND l.mode <> 'AccessShareLock')
              OR (l.locktype = 'advisory' AND l.classid = {lock_hi} AND l.objid = {lock_lo})
          );
        RAISE EXCEPTION 'pgrun.migrate_locked'
            USING ERRCODE = 'lock_not_available',
                  DETAIL = pg_catalog.format('the migration lock (%s) is held by %s; waited %s for it',
                      v_what, coalesce(v_holders, 'a session that has let go of it since'), v_wait),
                  HINT = 'Let that session finish or end it (pg_terminate_backend), then apply the bundle '
                      'again; psql -v migrate_lock_timeout=... sets the wait.';
    END;
    PERFORM pg_catalog.set_config('lock_timeout', v_saved, true);
    IF pg_catalog.to_regclass('pgrun.schema_migrations') IS NULL THEN
        RETURN;
    END IF;
    SELECT pg_catalog.string_agg(pg_catalog.format('%s (%s)', h.version, CASE WHEN c.version IS NULL
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
SELECT pg_catalog.to_regclass('pgrun.schema_migrations') IS NOT NULL AS pgrun_has_history \\gset
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
SET name = excluded.name, checksum = excluded.checksum, applied_at = pg_catalog.clock_timestamp();
\\endif
"""


def sql_bundle(idle_seconds: int = IDLE_IN_STEP_SECONDS) -> str:
    """One psql script that installs or upgrades the schema like `pgrun migrate` does
    (``idle_seconds``: its transaction's idle_in_transaction_session_timeout)."""
    code = all_migrations()
    known = ", ".join(f"('{m.version}', '{m.checksum}')" for m in code if m.kind == "versioned")
    parts = [
        _BUNDLE_HEADER.format(
            lock_key=ADVISORY_LOCK_KEY,
            lock_hi=(ADVISORY_LOCK_KEY >> 32) & 0xFFFFFFFF,
            lock_lo=ADVISORY_LOCK_KEY & 0xFFFFFFFF,
            known=known,
            idle=idle_seconds,
            check=CLIENT_CHECK_SECONDS,
        )
    ]
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
    parts.append(
        "\n-- the role model: group roles, ownership, grants (docs/security.md)\n"
        f"{_SECURITY_APPLY};\nCOMMIT;\n"
    )
    return "".join(parts)
