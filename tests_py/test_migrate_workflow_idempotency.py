"""Migration 0012 on a database with keyed workflow runs: the idempotency key becomes unique per
(workflow name, organization), and every run enqueued before still replays to itself.

The old schema is the commit before 0012 (extracted with pgrun.testing.extract_schema); the
new one is the committed HEAD, so a half-edited working tree does not take part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pgrun import migrate
from schema_versions import schemas_around

ORG = "22222222-2222-2222-2222-222222222222"

#: keyed specs enqueued on the old schema, one per way a key was held
SPECS: dict[str, dict[str, Any]] = {
    "named": {
        "idempotency_key": "order:42",
        "name": "ship",
        "steps": [
            {"key": "pack", "job_type": "ship.pack"},
            {"key": "send", "job_type": "ship.send", "depends_on": ["pack"]},
        ],
    },
    "unnamed": {"idempotency_key": "order:43", "steps": [{"key": "a", "job_type": "plain.a"}]},
    "tenant": {
        "idempotency_key": "order:42",
        "name": "ship",
        "organization_id": ORG,
        "steps": [{"key": "pack", "job_type": "ship.pack", "payload": {"n": 1}}],
    },
}


@pytest.fixture
def schemas(tmp_path: Path) -> tuple[Path, Path]:
    return schemas_around("sql/0012_workflow_idempotency_name.sql", tmp_path)


def _enqueue(conn: psycopg.Connection[Any], spec: dict[str, Any]) -> tuple[Any, bool]:
    row = conn.execute("SELECT run_id, created FROM pgrun.enqueue_workflow(%s)", (Jsonb(spec),)).fetchone()
    assert row is not None
    return row[0], row[1]


def _unique_indexes(conn: psycopg.Connection[Any]) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT c.relname FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'pgrun.workflow_runs'::regclass AND i.indisunique AND NOT i.indisprimary "
            "ORDER BY 1"
        ).fetchall()
    ]


def test_0012_keyed_runs_replay_after_the_upgrade(
    empty_db: str, schemas: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = schemas
    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(old))
    migrate.migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        before = {}
        for name, spec in SPECS.items():
            run, created = _enqueue(conn, spec)
            assert created, name
            before[name] = run
        # the old key was per organization only: another name with the same key conflicted
        with pytest.raises(psycopg.Error, match=r"workflow\.enqueue_conflicting_retry"):
            _enqueue(conn, {**SPECS["named"], "name": "invoice"})
        assert _unique_indexes(conn) == ["workflow_runs_idempotency_idx"]

    monkeypatch.setenv("PGRUN_SCHEMA_DIR", str(new))
    assert "0012_workflow_idempotency_name" in migrate.migrate(empty_db)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        assert _unique_indexes(conn) == ["workflow_runs_idempotency_name_idx"]
        for name, spec in SPECS.items():
            assert _enqueue(conn, spec) == (before[name], False), name
        # a changed request under the same (name, organization, key) still conflicts
        with pytest.raises(psycopg.Error, match=r"workflow\.enqueue_conflicting_retry"):
            _enqueue(conn, {**SPECS["named"], "steps": [{"key": "pack", "job_type": "ship.other"}]})
        # and the key is now free for another kind of workflow
        invoice, created = _enqueue(conn, {**SPECS["named"], "name": "invoice"})
        assert created and invoice not in before.values()
        assert _enqueue(conn, {**SPECS["named"], "name": "invoice"}) == (invoice, False)
        count = conn.execute(
            "SELECT count(*) FROM pgrun.workflow_runs WHERE idempotency_key IS NOT NULL"
        ).fetchone()
        assert count == (4,)
