"""Plain-text tables for the CLI and the demo (no colours, no dependencies)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pgrun.results import JobMetrics, JobSummary, JsonObject, QueueDepth, WorkflowRunSummary


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, timedelta):
        return seconds(value.total_seconds())
    if isinstance(value, float | Decimal):
        return f"{value:.2f}"
    return str(value)


def clip(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns, a rule under the header."""
    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in text]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in text]
    return "\n".join(lines)


def status_table(depths: Sequence[QueueDepth], metrics: Sequence[JobMetrics]) -> str:
    """One row per (queue, job type): depth now, totals, and the last 5 minutes' rates."""
    keys = sorted({(d.queue, d.job_type) for d in depths} | {(m.queue, m.job_type) for m in metrics})
    by_depth = {(d.queue, d.job_type): d for d in depths}
    by_metric = {(m.queue, m.job_type): m for m in metrics}
    rows = []
    for key in keys:
        d, m = by_depth.get(key), by_metric.get(key)
        rows.append(
            [
                key[0],
                key[1],
                d.ready if d else 0,
                d.delayed if d else 0,
                d.running if d else (m.running if m else 0),
                m.succeeded if m else 0,
                m.dead if m else 0,
                m.cancelled if m else 0,
                m.succeeded_per_minute if m else None,
                seconds(m.latency_p50_seconds) if m else "-",
                seconds(m.duration_p95_seconds) if m else "-",
                "paused" if d and d.paused else "",
            ]
        )
    headers = [
        "queue",
        "job type",
        "ready",
        "delayed",
        "running",
        "succeeded",
        "dead",
        "cancelled",
        "ok/min",
        "start p50",
        "run p95",
        "",
    ]
    return table(headers, rows) if rows else "no jobs"


def jobs_table(jobs: Sequence[JobSummary]) -> str:
    rows = [
        [
            j.job_id,
            j.job_type,
            j.queue,
            j.status,
            f"{j.attempt}/{j.max_attempts}",
            j.step,
            j.error_code,
            j.created_at,
        ]
        for j in jobs
    ]
    return table(["id", "type", "queue", "status", "attempt", "step", "error", "created"], rows)


def runs_table(runs: Sequence[WorkflowRunSummary]) -> str:
    rows = [[r.run_id, r.name, r.status, r.open_step_count, r.created_at, r.finished_at] for r in runs]
    return table(["id", "name", "status", "open steps", "created", "finished"], rows)


def _time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


def run_report(run: JsonObject) -> str:
    """A run and its steps in dependency order, with when each was released and how long it took."""
    raw = run.get("steps") or []
    steps: list[JsonObject] = list(raw.values()) if isinstance(raw, dict) else list(raw)
    edges: list[JsonObject] = run.get("dependencies") or []
    deps: dict[str, list[str]] = {}
    for edge in edges:
        mode = "" if edge.get("release_mode") == "on_success" else " (on_terminal)"
        deps.setdefault(edge["step"], []).append(f"{edge['depends_on']}{mode}")
    start = _time(run.get("created_at"))
    finished = _time(run.get("finished_at"))

    def order(step: JsonObject) -> tuple[datetime, str]:
        return (
            _time(step.get("released_at")) or datetime.max.replace(tzinfo=start.tzinfo if start else None),
            step["key"],
        )

    rows = []
    for step in sorted(steps, key=order):
        released, done = _time(step.get("released_at")), _time(step.get("finished_at"))
        rows.append(
            [
                step["key"],
                step.get("job_type") or step.get("kind"),
                step["status"],
                ", ".join(sorted(deps.get(step["key"], []))) or "-",
                seconds((released - start).total_seconds()) if released and start else "-",
                seconds((done - released).total_seconds()) if done and released else "-",
            ]
        )
    total = seconds((finished - start).total_seconds()) if finished and start else "still running"
    # run_id; "id" alone in a document from a server migrated before run_id was added
    run_id = run.get("run_id", run.get("id"))
    header = f"run {run_id}  {run.get('name') or ''}  status: {run.get('status')}  ({total})"
    return header + "\n" + table(["step", "type", "status", "depends on", "released at +", "took"], rows)
