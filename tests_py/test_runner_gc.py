"""The worker process's garbage-collector threshold (Config.gc_threshold, JOBS_GC_THRESHOLD):
set for the loops' run, the interpreter's own put back after it."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from pgrun.client import AsyncClient
from pgrun.config import Config
from pgrun.runner import gc_threshold, run_loops
from worker_support import fast_config


@pytest.fixture(autouse=True)
def interpreter_thresholds() -> Iterator[tuple[int, int, int]]:
    """Known thresholds before each test (not Python's defaults, so a reset to those shows),
    and the session's own put back after it."""
    before = gc.get_threshold()
    gc.set_threshold(701, 11, 12)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*before)


def test_the_youngest_generation_only_and_put_back(interpreter_thresholds: tuple[int, int, int]) -> None:
    with gc_threshold(20_000):
        assert gc.get_threshold() == (20_000, 11, 12)
    assert gc.get_threshold() == interpreter_thresholds


def test_zero_leaves_the_interpreter_alone(interpreter_thresholds: tuple[int, int, int]) -> None:
    with gc_threshold(0):
        assert gc.get_threshold() == interpreter_thresholds
    assert gc.get_threshold() == interpreter_thresholds


def test_put_back_when_the_block_raises(interpreter_thresholds: tuple[int, int, int]) -> None:
    with pytest.raises(RuntimeError), gc_threshold(5_000):
        raise RuntimeError("a loop crashed")
    assert gc.get_threshold() == interpreter_thresholds


def test_overlapping_runs_put_the_interpreters_back_when_the_last_ends(
    interpreter_thresholds: tuple[int, int, int],
) -> None:
    first, second = gc_threshold(20_000), gc_threshold(30_000)
    first.__enter__()
    second.__enter__()
    assert gc.get_threshold() == (30_000, 11, 12)
    first.__exit__(None, None, None)
    assert gc.get_threshold() == (30_000, 11, 12)  # the second run still goes on
    second.__exit__(None, None, None)
    assert gc.get_threshold() == interpreter_thresholds


class _Seer:
    """A loop that notes the thresholds it runs under, then ends (which ends the run)."""

    def __init__(self) -> None:
        self.seen: tuple[int, int, int] | None = None

    async def run(self, stop: asyncio.Event) -> None:
        self.seen = gc.get_threshold()


@pytest.mark.parametrize("threshold", [10_000, 0])
def test_run_loops_runs_under_the_configured_threshold(
    db: str, threshold: int, interpreter_thresholds: tuple[int, int, int]
) -> None:
    seer = _Seer()

    def build(client: AsyncClient, config: Config) -> _Seer:
        return seer

    asyncio.run(run_loops([("seer", build)], fast_config(db, gc_threshold=threshold)))
    expected = (threshold, 11, 12) if threshold else interpreter_thresholds
    assert seer.seen == expected
    assert gc.get_threshold() == interpreter_thresholds


def test_the_default_is_ten_thousand() -> None:
    assert Config().gc_threshold == 10_000
