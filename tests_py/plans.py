"""The plans of what one call runs, read from the server (auto_explain): shared by the plan
stability tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg


def statement_plans(
    dsn: str, call: str, params: tuple[Any, ...], *, analyze: bool = False
) -> list[dict[str, Any]]:
    """auto_explain's JSON document (``Query Text``, ``Plan``) of every statement ``call`` runs,
    nested ones included; the call is rolled back. ``analyze``: with each node's actual rows,
    loops and the rows its filters removed (no timing)."""
    notices: list[str] = []
    with psycopg.connect(dsn) as conn:
        conn.add_notice_handler(lambda diag: notices.append(diag.message_primary or ""))
        conn.execute("LOAD 'auto_explain'")
        for setting, value in (
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_nested_statements", "on"),
            ("auto_explain.log_level", "notice"),
            ("auto_explain.log_format", "json"),
            ("auto_explain.log_analyze", "on" if analyze else "off"),
            ("auto_explain.log_timing", "off"),
        ):
            conn.execute("SELECT set_config(%s, %s, true)", (setting, value))
        conn.execute(call, params)
        conn.rollback()
    plans = []
    for notice in notices:
        _, _, body = notice.partition("plan:")
        if body.strip().startswith("{"):
            plans.append(json.loads(body))
    assert plans, "auto_explain reported no plan"
    return plans


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A plan node and every node under it."""
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)
