"""Geometry for the dashboard's inline SVG: the overview's per-minute charts and a workflow
run's DAG. Pure functions from data to coordinates; the templates draw them
(templates/_macros.html), so no charting or graph library is shipped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# -- charts -------------------------------------------------------------------------------

WIDTH = 600
HEIGHT = 160
PAD_LEFT = 44
PAD_BOTTOM = 20
PAD_TOP = 8


@dataclass(frozen=True)
class Series:
    name: str
    css: str
    points: str  # "x,y x,y ..." for a polyline
    bars: list[tuple[float, float, float, float, str]] = field(default_factory=list)  # x, y, w, h, title
    dots: list[tuple[float, float, str]] = field(default_factory=list)  # x, y, title (lines: one per value)


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    width: int
    height: int
    series: list[Series]
    y_ticks: list[tuple[float, str]]  # y, label
    x_ticks: list[tuple[float, str]]  # x, label
    empty: bool


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = float(10 ** len(str(int(value))))
    for step in (0.1, 0.2, 0.25, 0.5, 1.0):
        if value <= magnitude * step:
            return magnitude * step
    return float(magnitude)


def _fmt(value: float) -> str:
    return f"{value:g}" if value < 1000 else f"{value / 1000:g}k"


def minute_chart(
    title: str,
    unit: str,
    minutes: Sequence[Mapping[str, Any]],
    columns: Sequence[tuple[str, str, str]],
    *,
    bars: bool,
) -> Chart:
    """A chart of ``columns`` (key, label, css class) over the overview's minutes: stacked bars
    (counts) or lines (values that may be missing: a gap where a minute has none)."""
    n = max(len(minutes), 1)
    plot_w = WIDTH - PAD_LEFT - 4
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM
    slot = plot_w / n

    def value(m: Mapping[str, Any], key: str) -> float | None:
        v = m.get(key)
        return None if v is None else float(v)

    if bars:
        top = max((sum(value(m, k) or 0 for k, _, _ in columns) for m in minutes), default=0)
    else:
        top = max((v for m in minutes for k, _, _ in columns if (v := value(m, k)) is not None), default=0)
    y_max = _nice_max(top)

    def y_of(v: float) -> float:
        return round(PAD_TOP + plot_h - v / y_max * plot_h, 1)

    series: list[Series] = []
    base = [0.0] * len(minutes)
    for key, label, css in columns:
        rects: list[tuple[float, float, float, float, str]] = []
        pts: list[str] = []
        dots: list[tuple[float, float, str]] = []
        for i, m in enumerate(minutes):
            v = value(m, key)
            x = PAD_LEFT + i * slot
            stamp = str(m.get("minute", ""))[11:16]
            if bars:
                if v:
                    y_top = y_of(base[i] + v)
                    rects.append(
                        (
                            round(x + 0.5, 1),
                            y_top,
                            round(max(slot - 1, 1), 1),
                            round(y_of(base[i]) - y_top, 1),
                            f"{stamp} {label}: {_fmt(v)}",
                        )
                    )
                    base[i] += v
            elif v is not None:
                pts.append(f"{round(x + slot / 2, 1)},{y_of(v)}")
                dots.append((round(x + slot / 2, 1), y_of(v), f"{stamp} {label}: {_fmt(round(v, 3))}"))
        series.append(Series(label, css, " ".join(pts), rects, dots))
    y_ticks = [(y_of(y_max * f), _fmt(y_max * f)) for f in (0, 0.5, 1)]
    x_ticks = [
        (round(PAD_LEFT + i * slot, 1), str(m.get("minute", ""))[11:16])
        for i, m in enumerate(minutes)
        if i % 15 == 0 or i == len(minutes) - 1
    ]
    empty = top == 0
    return Chart(title, unit, WIDTH, HEIGHT, series, y_ticks, x_ticks, empty)


# -- the DAG ------------------------------------------------------------------------------

BOX_W = 170
BOX_H = 46
GAP_X = 76
GAP_Y = 22
MARGIN = 12


@dataclass(frozen=True)
class Box:
    key: str
    kind: str
    status: str
    x: int
    y: int
    w: int
    h: int
    job_id: str | None


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    mode: str
    resolved: bool
    path: str
    label_x: float
    label_y: float


@dataclass(frozen=True)
class Dag:
    boxes: list[Box]
    edges: list[Edge]
    width: int
    height: int


def layout_dag(steps: Sequence[Mapping[str, Any]], dependencies: Sequence[Mapping[str, Any]]) -> Dag:
    """Left-to-right layers by longest path from a root (a step's column is one more than its
    deepest prerequisite's); inside a column, steps are ordered by the mean row of their
    prerequisites (fewer crossings), then by key."""
    keys = [str(s["key"]) for s in steps]
    parents: dict[str, list[str]] = {k: [] for k in keys}
    for d in dependencies:
        step, dep = str(d["step"]), str(d["depends_on"])
        if step in parents and dep in parents:
            parents[step].append(dep)

    layer: dict[str, int] = {}

    def depth(key: str, trail: frozenset[str]) -> int:
        if key in layer:
            return layer[key]
        if key in trail:  # the SQL refuses cycles; never loop on one anyway
            return 0
        value = 1 + max((depth(p, trail | {key}) for p in parents[key]), default=-1)
        layer[key] = value
        return value

    for k in keys:
        depth(k, frozenset())

    columns: dict[int, list[str]] = {}
    for k in sorted(keys, key=lambda k: (layer[k], k)):
        columns.setdefault(layer[k], []).append(k)
    row: dict[str, float] = {}
    for c in sorted(columns):
        members = columns[c]
        if c > 0:
            members.sort(key=lambda k: (sum(row[p] for p in parents[k]) / max(len(parents[k]), 1), k))
        for i, k in enumerate(members):
            row[k] = i

    by_key = {str(s["key"]): s for s in steps}
    boxes: dict[str, Box] = {}
    for k in keys:
        s = by_key[k]
        boxes[k] = Box(
            key=k,
            kind=str(s.get("kind") or "job"),
            status=str(s.get("status") or ""),
            x=MARGIN + layer[k] * (BOX_W + GAP_X),
            y=MARGIN + int(row[k]) * (BOX_H + GAP_Y),
            w=BOX_W,
            h=BOX_H,
            job_id=None if s.get("job_id") is None else str(s["job_id"]),
        )
    # each edge leaves its source and enters its target at a port of its own (spread along the
    # box's side in the order of the other ends), so fan-ins and fan-outs do not share a point
    # and each label sits by its own arrowhead
    pairs = [
        (str(d["depends_on"]), str(d["step"]), d)
        for d in dependencies
        if str(d["step"]) in boxes and str(d["depends_on"]) in boxes
    ]
    outs: dict[str, list[str]] = {}
    ins: dict[str, list[str]] = {}
    for src, dst, _ in pairs:
        outs.setdefault(src, []).append(dst)
        ins.setdefault(dst, []).append(src)
    for ends in (*outs.values(), *ins.values()):
        ends.sort(key=lambda k: (boxes[k].y, k))

    def port(box: Box, others: list[str], other: str) -> float:
        n = len(others)
        return box.y + box.h * (others.index(other) + 1) / (n + 1)

    rows = max((len(c) for c in columns.values()), default=1)
    # an edge that skips columns would run through the boxes between: it dips into a channel
    # below the lowest row instead
    channel = MARGIN + rows * (BOX_H + GAP_Y) - GAP_Y + 16
    long_edges = False
    edges: list[Edge] = []
    for src, dst, d in pairs:
        a, b = boxes[src], boxes[dst]
        x1, y1 = a.x + a.w, round(port(a, outs[src], dst), 1)
        x2, y2 = b.x, round(port(b, ins[dst], src), 1)
        if layer[dst] - layer[src] > 1:
            long_edges = True
            path = f"M{x1},{y1} C{x1 + 60},{channel + 14} {x2 - 60},{channel + 14} {x2 - 6},{y2}"
        else:
            mid = (x1 + x2) / 2
            path = f"M{x1},{y1} C{mid},{y1} {mid},{y2} {x2 - 6},{y2}"
        mode = str(d.get("release_mode") or "on_success")
        edges.append(Edge(src, dst, mode, bool(d.get("resolved")), path, x2 - 36, y2 - 3))
    width = MARGIN * 2 + (max(layer.values(), default=0) + 1) * (BOX_W + GAP_X) - GAP_X
    height = MARGIN * 2 + rows * (BOX_H + GAP_Y) - GAP_Y + (24 if long_edges else 0)
    return Dag(list(boxes.values()), edges, width, height)
