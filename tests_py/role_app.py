"""A pgrun app for the least-privilege tests (`pgrun worker role_app:app`, cwd tests_py/): one
job type with a definition, and a schedule declared in code, so the worker role declares both
at start-up."""

from __future__ import annotations

from typing import Any

from pgrun.app import App, JobContext

app = App("roles")


@app.job("role.echo", max_attempts=4)
async def echo(ctx: JobContext) -> Any:
    await ctx.progress({"seen": True})
    await ctx.log("echoing", n=ctx.payload.get("n"))
    return {"echo": ctx.payload}


@app.periodic("* * * * * *", job_type="role.tick", name="role.tick")  # six fields: every second
@app.job("role.tick")
async def tick(ctx: JobContext) -> Any:
    return {"ticked": True}
