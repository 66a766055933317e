"""A worker process for tests_py/test_crash_async_claims.py: ``python crash_worker.py <dir>``.

It runs pgrun's own loops (worker and reaper, from the JOBS_* environment) with one job type,
``crash.job``, and writes two files in ``<dir>``, each line flushed as it is written (only
PostgreSQL is crashed by the test, never this process, so a flushed line is kept):

* ``executions``: ``<job id> <lease token>`` when a handler starts, before anything else;
* ``outcomes``: ``<outcome> <job id> <lease token>`` for what the server acknowledged for a
  job (``succeeded``, ``lease_lost``, ...), reported through the worker's metrics hook, which
  is called with the rows complete_jobs / fail_jobs returned, after their commit.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import TextIO

from pgrun.app import App, JobContext
from pgrun.config import from_env
from pgrun.metrics import NoMetrics
from pgrun.results import ClaimedJob
from pgrun.runner import default_loops, run

app = App("crash")
_files: dict[str, TextIO] = {}


def _record(name: str, line: str) -> None:
    handle = _files[name]
    handle.write(line + "\n")
    handle.flush()


@app.job("crash.job", max_attempts=1000)
async def crash_job(ctx: JobContext) -> None:
    """Records its execution, then sleeps payload["sleep"] seconds."""
    _record("executions", f"{ctx.job_id} {ctx.job.lease_token}")
    await asyncio.sleep(float(ctx.payload.get("sleep", 0)))


class Acknowledged(NoMetrics):
    """Writes every outcome the server answered for a job."""

    def outcome(self, kind: str, job: ClaimedJob) -> None:
        _record("outcomes", f"{kind} {job.job_id} {job.lease_token}")


def main(folder: Path) -> int:
    logging.basicConfig(level=logging.ERROR, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for name in ("executions", "outcomes"):
        _files[name] = (folder / name).open("a", encoding="utf-8")
    return run(app, from_env(), default_loops(app, metrics=Acknowledged()))


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
