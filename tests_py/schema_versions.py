"""Older schemas for upgrade tests: the schema as it was just before a migration was added,
and this checkout's, each extracted from git (pgrun.testing.extract_schema)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pgrun.testing import extract_schema

REPO = Path(__file__).resolve().parents[1]


def commit_adding(path: str) -> str:
    """The commit that added ``path`` (e.g. sql/0010_limits.sql)."""
    out = subprocess.run(
        ["git", "-C", str(REPO), "log", "--diff-filter=A", "--format=%H", "-1", "--", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out, f"{path} is not committed"
    return out


def schemas_around(migration: str, into: Path) -> tuple[Path, Path]:
    """(the schema of the commit before ``migration`` was added, HEAD's schema), under ``into``."""
    old = extract_schema(commit_adding(migration) + "^", into / "old")
    new = extract_schema("HEAD", into / "new")
    assert not (old / migration).exists()
    return old, new
