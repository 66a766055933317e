"""Run several loops (worker, reaper, scheduler, ...) on one connection pool until stopped.

``pgrun worker app.module:app`` calls ``run(app, config)``: it opens one
``AsyncConnectionPool``, builds the loops, runs them side by side and stops them all on
SIGTERM / SIGINT (a second signal exits at once). Which loops run is a list of
``(name, factory)`` pairs: ``default_loops`` gives worker and reaper, and every loop an
app registered with ``App.add_loop`` (the cron scheduler's hook) joins them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence

from pgrun.app import App, Loop
from pgrun.client import AsyncClient, loops_pool
from pgrun.config import Config
from pgrun.eventloop import loop_kind, run_until_complete
from pgrun.metrics import NO_METRICS, NoMetrics
from pgrun.reaper import Reaper
from pgrun.worker import Worker

log = logging.getLogger("pgrun.runner")

LoopBuilder = Callable[[AsyncClient, Config], Loop]


def default_loops(
    app: App,
    *,
    queues: Iterable[str] | None = None,
    worker: bool = True,
    reaper: bool = True,
    exclude: Sequence[str] = (),
    metrics: NoMetrics = NO_METRICS,
) -> list[tuple[str, LoopBuilder]]:
    """The loops ``pgrun worker`` runs: worker, reaper, then the app's own (minus ``exclude``).
    ``metrics``: the worker's (pgrun.metrics.WorkerMetrics), or none."""
    built: dict[str, Worker] = {}

    def make_worker(client: AsyncClient, config: Config) -> Loop:
        built["worker"] = Worker(app, client, config, queues=queues, metrics=metrics)
        return built["worker"]

    def make_reaper(client: AsyncClient, config: Config) -> Loop:
        # Reaped jobs are ready again: let this process's worker claim them at once.
        found = built.get("worker")
        if found is None:
            return Reaper(client, config)
        # its first pass after the worker's first claim (the start's critical path)
        return Reaper(client, config, on_ready=found.poke, after=found.claimed_once)

    loops: list[tuple[str, LoopBuilder]] = []
    if worker:
        loops.append(("worker", make_worker))
    if reaper:
        loops.append(("reaper", make_reaper))
    loops += [(name, factory) for name, factory in app.loops.items() if name not in exclude]
    return loops


def pool_size(config: Config, loop_count: int) -> int:
    """Claims, flushes, heartbeats, reaper; plus room for handlers' progress and log writes."""
    return loop_count + 3 + min(config.max_global_concurrency, 16)


# Runs of the loops that overlap in one process (tests, an application running two) share the
# collector: the first saves the interpreter's thresholds, the last to end puts them back.
_gc_runs = 0
_gc_saved: tuple[int, int, int] = (0, 0, 0)


@contextlib.contextmanager
def gc_threshold(threshold: int) -> Iterator[None]:
    """Python's youngest-generation GC threshold set to ``threshold`` (0: left alone) for the
    block, the interpreter's thresholds put back when the last such block ends
    (Config.gc_threshold)."""
    global _gc_runs, _gc_saved
    if not threshold:
        yield
        return
    if _gc_runs == 0:
        _gc_saved = gc.get_threshold()
    _gc_runs += 1
    gc.set_threshold(threshold, *_gc_saved[1:])
    try:
        yield
    finally:
        _gc_runs -= 1
        if _gc_runs == 0:
            gc.set_threshold(*_gc_saved)


async def run_loops(
    loops: Sequence[tuple[str, LoopBuilder]], config: Config, stop: asyncio.Event | None = None
) -> None:
    """Open the pool, run every loop until ``stop`` (or a signal), close the pool. The
    garbage collector runs with ``config.gc_threshold`` meanwhile."""
    with gc_threshold(config.gc_threshold):
        await _run_loops(loops, config, stop)


async def _run_loops(
    loops: Sequence[tuple[str, LoopBuilder]], config: Config, stop: asyncio.Event | None
) -> None:
    stop = stop or asyncio.Event()
    pool = loops_pool(config, pool_size(config, len(loops)))
    await pool.open(wait=False)
    client = AsyncClient(pool)
    running = [(name, builder(client, config)) for name, builder in loops]
    tasks = [asyncio.create_task(loop.run(stop), name=f"pgrun-{name}") for name, loop in running]
    log.info(
        "pgrun %s started: %s (concurrency %d, batch %d, lease %d s, gc threshold %d, %s loop)",
        config.worker_id,
        ", ".join(name for name, _ in running),
        config.max_global_concurrency,
        config.claim_batch_size,
        config.lease_ttl_seconds,
        gc.get_threshold()[0],
        loop_kind(asyncio.get_running_loop()),
    )
    try:
        for finished in asyncio.as_completed(tasks):
            try:
                await finished
            except Exception:
                log.exception("a loop crashed; stopping the others")
            stop.set()  # one loop ending (crash or stop) ends them all
    finally:
        await pool.close()
    log.info("pgrun %s stopped", config.worker_id)


def run(app: App, config: Config, loops: Sequence[tuple[str, LoopBuilder]] | None = None) -> int:
    """Run the loops in this process until SIGTERM / SIGINT; returns the exit code."""
    chosen = default_loops(app) if loops is None else loops

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            if stop.is_set():
                log.warning("second %s: exiting now", signal.Signals(signum).name)
                os._exit(128 + signum)
            log.info(
                "%s: stopping (no new claims; running jobs get the grace period)", signal.Signals(signum).name
            )
            stop.set()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal, signum)
        await run_loops(chosen, config, stop)

    run_until_complete(main(), config)
    return 0
