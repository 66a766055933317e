"""A pgrun app for the worker-process tests (`pgrun worker worker_apps:app`, cwd tests_py/).

Handlers append lines to the file named by payload["log"] so a test can count how often
each job started and finished, across processes and restarts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pgrun.app import App, JobContext, SyncJobContext

app = App("tests")


def _note(ctx: JobContext | SyncJobContext, what: str) -> None:
    with Path(ctx.payload["log"]).open("a", encoding="utf-8") as handle:
        handle.write(f"{ctx.payload.get('name', ctx.job_id)} {what} {ctx.attempt}\n")


@app.job("test.sleep")
async def sleep(ctx: JobContext) -> Any:
    """Sleeps payload["seconds"]; with hang_first, the first attempt hangs (to be killed)."""
    _note(ctx, "start")
    if ctx.payload.get("hang_first") and ctx.attempt == 1:
        await asyncio.sleep(600)
    await asyncio.sleep(float(ctx.payload.get("seconds", 0)))
    _note(ctx, "done")
    return {"attempt": ctx.attempt}


@app.job("test.sync_progress")
def sync_progress(ctx: SyncJobContext) -> Any:
    """A plain ``def`` handler (run on a thread) that reports progress and logs through the loop."""
    _note(ctx, "start")
    cancel_requested = ctx.progress({"step": 1})
    ctx.log("halfway", step=1)
    _note(ctx, "done")
    return {"cancel_requested": cancel_requested}
