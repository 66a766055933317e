"""What the model-based tests (tests_py/test_*_model.py) share: a Hypothesis state machine
over real connections, and how a call that must be refused is read."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import psycopg
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

#: Multiplies every model's number of examples: ``PGRUN_MODEL_SCALE=20 make pytest`` searches
#: far deeper than ``make test`` has time for (each model then runs for minutes).
SCALE_ENV = "PGRUN_MODEL_SCALE"


def run_model(machine: Callable[[], RuleBasedStateMachine], examples: int, steps: int) -> None:
    """Run ``machine`` (a fresh one per example) for ``examples`` sequences (times
    PGRUN_MODEL_SCALE) of at most ``steps`` steps. No deadline: a step is a few database
    calls, and the machines are shared."""
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples * int(os.environ.get(SCALE_ENV, "1")),
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def refusal(
    conn: psycopg.Connection[Any], sql: str, params: tuple[Any, ...]
) -> tuple[str | None, str | None]:
    """Run a call that should raise, in a transaction of its own; (sqlstate, message) when it
    did (a pgrun error's message is its code), else (None, None)."""
    try:
        with conn.transaction():
            conn.execute(sql, params).fetchall()
    except psycopg.Error as exc:
        return exc.sqlstate, exc.diag.message_primary
    return None, None
