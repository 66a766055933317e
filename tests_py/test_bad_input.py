"""The bad-input battery: every public function of schema pgrun, one argument at a time.

For each public function (the catalog's, not a list: a function without a baseline in
tests_py/bad_input_calls.py fails the battery) one valid call runs against a small realistic
state, then every argument in turn is replaced by hostile values of its type: NULL, empty
and blank strings, a 1 MiB string, odd characters, -1 / 0 / the type's extremes, NaN and
infinities, the nil and an unknown uuid, wrong JSON kinds, a 5000-deep and a 2 MiB document,
infinite and year-10000 timestamps, 1000000-year and negative intervals, empty, NULL-element,
two-dimensional and 100,001-element arrays, each element of an array, and text the
argument's type cannot parse. Structured JSON arguments (a batch, a workflow spec, steps) have
each documented key set to hostile JSON values too.

Each call runs as the superuser (the admin path; role refusals are pinned in tests_sql/access)
in its own transaction, rolled back, under a 10 s statement_timeout. It must either succeed or
fail with one of these:

* a pgrun error: MESSAGE a code of docs/errors.md raised inside the function, with the
  SQLSTATE the catalogue gives it, and listed there as raised by this function; its DETAIL
  at most 300 characters (echoed values are clipped);
* the caller's own type error: for a value its type cannot parse (kind ``wrong_type``),
  PostgreSQL's cast error (22P02, 22007, 22008, 22003) raised while evaluating the argument,
  before the call (no function in the error's context).

Anything else raised inside pgrun — a raw PostgreSQL error (22008, 22003, 54000, 23xxx,
XX000, a statement timeout, ...) — is a finding. When a call fails, a fingerprint of every
pgrun table (found in the catalog, so new tables are included) must equal the one before.
When it succeeds the state may change, but not by storing what is clearly wrong: more than
256 KiB of new text in one table (a hostile value kept whole), a timestamp Python cannot
read (infinite, or outside years 1..9999) stored or returned, a write made with the nil or an
unknown id, a written empty/blank value for an argument that names something, or any write
given a 5000-deep document (no stored JSON nests more than 100 levels).

Set PGRUN_BAD_INPUT_REPORT=<file> to have the run write a Markdown report of every finding
and observation there.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.types.string import TextLoader

from bad_input_calls import (
    BASELINES,
    FIELD_MUTATIONS,
    JSON_FIELD_VALUES,
    LONG_ARRAY,
    NAMING_TEXT_ARGS,
    TYPICAL_ELEMENT,
    VALUES_BY_TYPE,
    Value,
)
from pgrun.testing import LoginRole, scratch_database

REPO = Path(__file__).resolve().parents[1]
ERRORS_DOC = REPO / "docs" / "errors.md"

STATEMENT_TIMEOUT = "10s"
# SQLSTATEs of PostgreSQL's own input functions: the caller's text did not parse as the
# argument's type (22P02 invalid text, 22007 bad datetime format, 22008 datetime out of
# range, 22003 number out of range). Accepted only for wrong_type values, and only when raised
# before the call.
CALLER_TYPE_ERRORS = frozenset({"22P02", "22007", "22008", "22003"})
# An echoed value is clipped to ~200 characters: a DETAIL (or HINT) holding a run of more than
# ECHO_RUN copies of one character echoes one of the battery's huge values (all are runs of one
# character: 'x' * 1 MiB, '[' * 5000, 1e400's zeros) unclipped; none may be over MAX_DETAIL.
ECHO_RUN = 220
MAX_DETAIL = 600
MAX_GROWTH = 256 * 1024
SLOW_SECONDS = 5.0
# The error's context names a function: PL/pgSQL ("PL/pgSQL function pgrun.x(...) line 3 at
# RAISE") or SQL ('SQL function "x" statement 1'). A cast error in the call's own arguments
# has none (or only e.g. "JSON data, line 1: ...").
INSIDE_PGRUN = re.compile(r"PL/pgSQL function |SQL function \"")
UNREADABLE_TIMESTAMP = re.compile(r"(?<![\d.])(\d{5,}-\d\d-\d\d|\d{4}-\d\d-\d\d[^,}\"]* BC|-?infinity)")
TIMESTAMPTZ_OIDS = frozenset({1184, 1185})  # timestamptz, timestamptz[]
# Returned values are loaded as text: a value Python cannot represent is judged, not raised.
# (oids: timestamptz and its array, timestamp, its array, date, interval and its array, json,
# its array, jsonb and its array)
TEXT_LOADED = (1184, 1185, 1114, 1115, 1082, 1186, 1187, 114, 199, 3802, 3807)


def longest_run(text: str) -> int:
    """The most copies of one character in a row in ``text``."""
    return max((len(m.group(0)) for m in re.finditer(r"(.)\1*", text, re.S)), default=0)


# --- the error catalogue -------------------------------------------------------------------


def documented_codes() -> dict[str, tuple[str, frozenset[str]]]:
    """docs/errors.md's code table: code -> (SQLSTATE, the functions it is raised by)."""
    codes: dict[str, tuple[str, frozenset[str]]] = {}
    row = re.compile(r"^\| `([a-z_]+\.[a-z_]+)` \| `([0-9A-Z]{5})` \| ([^|]*) \|", re.M)
    for code, sqlstate, raised_by in row.findall(ERRORS_DOC.read_text()):
        names: set[str] = set()
        for name, plural in re.findall(r"`([a-z_]+)(\(s\))?`", raised_by):
            names.add(name)
            if plural:
                names.add(name + "s")
        codes[code] = (sqlstate, frozenset(names))
    return codes


# --- the catalog ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Arg:
    name: str
    type: str  # format_type, e.g. "uuid[]"

    @property
    def element(self) -> str | None:
        return self.type[:-2] if self.type.endswith("[]") else None


def public_functions(conn: psycopg.Connection[Any]) -> dict[str, list[list[Arg]]]:
    """Every public function of schema pgrun: name -> the input argument lists of its overloads."""
    rows = conn.execute(
        """
        SELECT p.proname, p.proargnames, p.proargmodes::text[],
               array(SELECT format_type(t, NULL)
                     FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, n) ORDER BY n)
        FROM pg_proc AS p
        WHERE p.pronamespace = 'pgrun'::regnamespace AND p.proname !~ '^_' AND p.prokind = 'f'
        ORDER BY p.proname
        """
    ).fetchall()
    found: dict[str, list[list[Arg]]] = {}
    for name, argnames, modes, types in rows:
        argnames = argnames or []
        in_names = [n for i, n in enumerate(argnames) if modes is None or modes[i] in ("i", "b", "v")]
        found.setdefault(name, []).append([Arg(n, t) for n, t in zip(in_names, types, strict=True)])
    return found


def fingerprint_query(conn: psycopg.Connection[Any]) -> str:
    """One query: per pgrun table, md5 of its rows in text order, their total text length and
    the count of timestamps Python cannot read (infinite, or outside years 1..9999)."""
    tables = conn.execute(
        """
        SELECT c.oid::regclass::text,
               coalesce((SELECT string_agg(format('%I', a.attname), ',')
                         FROM pg_attribute AS a
                         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                           AND a.atttypid = 'timestamptz'::regtype), '')
        FROM pg_class AS c
        WHERE c.relnamespace = 'pgrun'::regnamespace AND c.relkind IN ('r', 'p')
        ORDER BY 1
        """
    ).fetchall()
    assert tables, "no pgrun tables"
    parts = []
    for table, ts_columns in tables:
        unreadable = " + ".join(
            f"count(*) FILTER (WHERE NOT isfinite(t.{c}) OR t.{c} >= '10000-01-01'"
            f" OR t.{c} < '0001-01-01 00:00:00+00')"
            for c in ts_columns.split(",")
            if c
        )
        parts.append(
            f"SELECT '{table}' AS tab, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')),"
            f" coalesce(sum(length(t::text)), 0)::bigint, ({unreadable or '0'})::bigint FROM {table} AS t"
        )
    return " UNION ALL ".join(parts)


@dataclass(frozen=True)
class Fingerprint:
    tables: dict[str, tuple[str, int, int]]  # table -> (md5, text length, unreadable timestamps)

    def changed(self, other: Fingerprint) -> list[str]:
        return sorted(
            t for t in self.tables.keys() | other.tables.keys() if self.tables.get(t) != other.tables.get(t)
        )


def fingerprint(conn: psycopg.Connection[Any], query: str) -> Fingerprint:
    return Fingerprint({tab: (md5, size, bad) for tab, md5, size, bad in conn.execute(query).fetchall()})


# --- the state -----------------------------------------------------------------------------


def build_state(conn: psycopg.Connection[Any], producer: str, reader: str) -> dict[str, str]:
    """The small realistic state every baseline runs against (bad_input_calls.STATE_DOC)."""
    q = conn.execute
    state: dict[str, str] = {"org": "3f2504e0-4f89-41d3-9a0c-0305e82c3301"}

    def enqueue(job_type: str, **extra: Any) -> str:
        args = ", ".join(f"{k} => %({k})s" for k in extra)
        sql = f"SELECT job_id FROM pgrun.enqueue_job(job_type => %(t)s{', ' if args else ''}{args})"
        row = q(sql, {"t": job_type, **extra}).fetchone()
        assert row is not None
        return str(row[0])

    def claim(job_type: str, lease: int) -> tuple[str, str]:
        row = q(
            "SELECT job_id, lease_token FROM pgrun.claim_jobs(worker_id => 'w-1', lease_seconds => %s,"
            " max_jobs => 1, job_types => ARRAY[%s])",
            (lease, job_type),
        ).fetchone()
        assert row is not None, f"nothing to claim of {job_type}"
        return str(row[0]), str(row[1])

    state["queued"] = enqueue("bad.queued")
    state["org_job"] = enqueue("bad.org", organization_id=state["org"])
    enqueue("bad.running", max_attempts=3)
    state["running"], state["running_token"] = claim("bad.running", 3600)
    enqueue("bad.expired", max_attempts=3)
    state["expired"], state["expired_token"] = claim("bad.expired", 1)
    enqueue("bad.dead", max_attempts=1)
    dead, token = claim("bad.dead", 60)
    q(
        "SELECT pgrun.fail_job(job_id => %s, lease_token => %s, error_code => 'boom', retryable => false)",
        (dead, token),
    )
    state["dead"] = dead
    enqueue("bad.done")
    done, token = claim("bad.done", 60)
    q("SELECT pgrun.complete_job(job_id => %s, lease_token => %s)", (done, token))
    state["done"] = done

    row = q(
        """SELECT run_id FROM pgrun.enqueue_workflow(spec => '{"name": "state", "steps": [
            {"key": "a", "job_type": "bad.step"},
            {"key": "ext", "kind": "external"},
            {"key": "b", "job_type": "bad.step", "depends_on": ["a"]}]}')"""
    ).fetchone()
    assert row is not None
    state["run"] = str(row[0])

    q("SELECT pgrun.upsert_job_definition(job_type => 'bad.defined', queue => 'bad_q')")
    for name in ("claimed", "hourly", "paused"):
        q(
            "SELECT pgrun.upsert_schedule(name => %s, cron => '* * * * *', job_type => 'bad.scheduled')",
            (name,),
        )
    q("SELECT pgrun.pause_schedule(name => 'paused')")
    # Claim only 'claimed': the others are made unclaimable for the moment by their own claim.
    row = q(
        "SELECT schedule_id, claim_token, db_now FROM pgrun.claim_due_schedules("
        "scheduler_id => 'sched-1', max_schedules => 10, lease_seconds => 3600) WHERE name = 'claimed'"
    ).fetchone()
    assert row is not None
    state["schedule"], state["claim_token"] = str(row[0]), str(row[1])
    state["db_now"] = str(row[2])  # loaded as text (TEXT_LOADED)
    q("SELECT pgrun.pause_schedule(name => 'hourly')")
    q("SELECT pgrun.resume_schedule(name => 'hourly')")

    q(
        "SELECT pgrun.set_role_access(role_name => %s, organization_ids => ARRAY[%s]::uuid[])",
        (reader, state["org"]),
    )
    state["producer_role"], state["reader_role"] = producer, reader
    for key, value in state.items():
        assert re.fullmatch(r"[\w:.+ -]+", value), f"state {key} = {value!r} cannot go into a literal"
    return state


# --- the cases -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    function: str
    arg: str  # "" for the baseline; "jobs[1].priority" for a field
    value: Value | None
    args: dict[str, str]  # argument -> SQL expression

    @property
    def label(self) -> str:
        return "baseline" if self.value is None else f"{self.arg} = {self.value.label}"

    def sql(self, state: dict[str, str]) -> str:
        call = ", ".join(f"{name} => {expr}" for name, expr in self.args.items())
        text = f"SELECT * FROM pgrun.{self.function}({call})"
        return re.sub(r"\$\{(\w+)\}", lambda m: state[m.group(1)], text)


def render(arg: Arg, baseline: str | list[str]) -> str:
    if isinstance(baseline, list):
        return f"ARRAY[{', '.join(baseline)}]::{arg.type}"
    return baseline


def array_values(arg: Arg, baseline: str | list[str] | None) -> list[tuple[str, Value]]:
    """(argument label, value) for an array argument: the array as a whole, then each
    element mutation in the first element's place."""
    element = arg.element
    assert element is not None
    if element not in VALUES_BY_TYPE:
        raise AssertionError(f"no hostile values for element type {element} ({arg.name})")
    first = baseline[0] if isinstance(baseline, list) and baseline else TYPICAL_ELEMENT[element]
    rest = baseline[1:] if isinstance(baseline, list) else []
    t = arg.type
    out = [
        (arg.name, Value("NULL", f"NULL::{t}", "null")),
        (arg.name, Value("{}", f"'{{}}'::{t}", "empty")),
        (arg.name, Value("{NULL}", f"ARRAY[NULL]::{t}", "null")),
        (arg.name, Value("2-D", f"ARRAY[[{first}], [{first}]]::{t}", "edge")),
        (
            arg.name,
            Value(
                f"{LONG_ARRAY:,} elements", f"array_fill(({first})::{element}, ARRAY[{LONG_ARRAY}])", "huge"
            ),
        ),
        (arg.name, Value("'abc'", f"'abc'::{t}", "wrong_type")),
    ]
    for value in VALUES_BY_TYPE[element]:
        if value.kind in ("null", "wrong_type"):
            continue
        elements = ", ".join([value.sql, *rest])
        out.append((f"{arg.name}[1]", Value(value.label, f"ARRAY[{elements}]::{t}", value.kind)))
    return out


def field_values(function: str, arg: str) -> list[tuple[str, Value]]:
    out = []
    for mutation in FIELD_MUTATIONS.get((function, arg), []):
        for key in mutation.keys:
            for value in JSON_FIELD_VALUES:
                obj = f"jsonb_set('{mutation.obj}'::jsonb, ARRAY['{key}'], {value.sql})"
                template = mutation.template
                if template == "@":
                    expr = obj
                else:
                    before, after = template.split("@")
                    expr = f"('{before}' || ({obj})::text || '{after}')::jsonb"
                where = f"{arg}.{key}" if template == "@" else f"{arg}[…].{key}"
                out.append((where, Value(value.label, expr, value.kind)))
    return out


def cases_for(function: str, args: list[Arg]) -> list[Case]:
    baseline = BASELINES[function]
    names = {a.name for a in args}
    unknown = set(baseline) - names
    assert not unknown, f"{function}: the baseline passes arguments the function lacks: {sorted(unknown)}"
    base = {a.name: render(a, baseline[a.name]) for a in args if a.name in baseline}
    cases = [Case(function, "", None, base)]
    for arg in args:
        if arg.element is not None:
            mutations = array_values(arg, baseline.get(arg.name))
        else:
            if arg.type not in VALUES_BY_TYPE:
                raise AssertionError(f"no hostile values for type {arg.type} ({function}.{arg.name})")
            mutations = [(arg.name, v) for v in VALUES_BY_TYPE[arg.type]]
        mutations += field_values(function, arg.name)
        for label, value in mutations:
            cases.append(Case(function, label, value, {**base, arg.name: value.sql}))
    return cases


# --- running one case ----------------------------------------------------------------------


@dataclass
class Result:
    case: Case
    seconds: float
    sqlstate: str | None = None
    message: str | None = None
    detail_len: int = 0
    caller_error: bool = False
    where: str = ""  # a raw error's innermost context line
    changed: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)  # fail the battery
    notes: list[str] = field(default_factory=list)  # worth a look, do not fail it


@dataclass
class Battery:
    conn: psycopg.Connection[Any]
    state: dict[str, str]
    functions: dict[str, list[list[Arg]]]
    codes: dict[str, tuple[str, frozenset[str]]]
    fp_query: str
    before: Fingerprint
    results: list[Result] = field(default_factory=list)

    def run(self, case: Case) -> Result:
        conn = self.conn
        conn.execute("BEGIN")
        conn.execute(f"SET LOCAL statement_timeout = '{STATEMENT_TIMEOUT}'")
        started = time.monotonic()
        error: psycopg.Error | None = None
        rows: list[Any] = []
        returned_timestamps: list[str] = []
        try:
            cursor = conn.execute(case.sql(self.state))
            rows = cursor.fetchall()
            stamped = [i for i, c in enumerate(cursor.description or []) if c.type_code in TIMESTAMPTZ_OIDS]
            returned_timestamps = [str(row[i]) for row in rows for i in stamped if row[i] is not None]
        except psycopg.Error as raised:
            error = raised
        result = Result(case, time.monotonic() - started)
        if error is None:
            after = fingerprint(conn, self.fp_query)
            conn.execute("ROLLBACK")
            result.changed = self.before.changed(after)
            self.judge_success(result, returned_timestamps, after)
        else:
            conn.execute("ROLLBACK")
            after = fingerprint(conn, self.fp_query)
            result.changed = self.before.changed(after)
            self.judge_error(result, error)
        if result.seconds > SLOW_SECONDS:
            result.findings.append(f"took {result.seconds:.1f} s")
        self.results.append(result)
        return result

    def judge_error(self, result: Result, error: psycopg.Error) -> None:
        case = result.case
        diag = error.diag
        result.sqlstate = diag.sqlstate
        result.message = diag.message_primary or str(error)
        result.detail_len = len(diag.message_detail or "")
        inside = bool(INSIDE_PGRUN.search(diag.context or ""))
        if result.changed:
            result.findings.append(f"the call failed but changed {', '.join(result.changed)}")
        if case.value is None:
            result.findings.append("the baseline call failed (the battery's table is wrong)")
        if not inside:
            result.caller_error = True
            if case.value is None or case.value.kind != "wrong_type":
                result.findings.append("an error before the call for a well-typed value")
            elif result.sqlstate not in CALLER_TYPE_ERRORS:
                result.findings.append("the caller's type error has an unexpected SQLSTATE")
            return
        echo = max(longest_run(diag.message_detail or ""), longest_run(diag.message_hint or ""))
        if echo > ECHO_RUN or result.detail_len > MAX_DETAIL:
            result.findings.append(
                f"DETAIL is {result.detail_len:,} characters, echoing {echo:,} copies of one character"
            )
        documented = self.codes.get(result.message)
        if documented is None:
            if re.fullmatch(r"[a-z_]+\.[a-z_]+", result.message):
                result.findings.append("a pgrun code missing from docs/errors.md")
                return
            what = "statement timeout" if result.sqlstate == "57014" else "raw PostgreSQL error"
            frames = (diag.context or "").splitlines()
            result.where = next((f for f in frames if "function" in f), frames[0] if frames else "")[:140]
            result.findings.append(f"{what} inside pgrun")
            return
        sqlstate, raised_by = documented
        if sqlstate != result.sqlstate:
            result.findings.append(f"docs/errors.md gives {result.message} SQLSTATE {sqlstate}")
        if case.function not in raised_by:
            result.findings.append(
                f"docs/errors.md does not list {case.function} as raising {result.message}"
            )

    def judge_success(self, result: Result, returned_timestamps: list[str], after: Fingerprint) -> None:
        case = result.case
        value = case.value
        if value is None:
            return
        for table in result.changed:
            _, size_before, bad_before = self.before.tables.get(table, ("", 0, 0))
            _, size_after, bad_after = after.tables[table]
            if size_after - size_before > MAX_GROWTH:
                result.findings.append(
                    f"accepted and stored {size_after - size_before:,} more characters in {table}"
                )
            if bad_after > bad_before:
                result.findings.append(f"stored a timestamp Python cannot read in {table}")
        if any(UNREADABLE_TIMESTAMP.search(t) for t in returned_timestamps):
            result.findings.append("returned a timestamp Python cannot read")
        if result.changed:
            name = case.arg.split("[")[0].split(".")[0]
            leaf = case.arg.rsplit(".", 1)[-1]
            if value.kind == "nil_uuid" or (value.kind == "nil_uuid_text" and leaf == "organization_id"):
                result.findings.append("acted (wrote) given the nil uuid")
            elif value.kind == "unknown_uuid" and "organization" not in name:
                result.findings.append("acted (wrote) given an unknown id")
            elif value.kind in ("empty", "blank") and case.arg in NAMING_TEXT_ARGS:
                result.findings.append("wrote an empty or blank name")
            elif value.kind == "deep":
                # every stored client value is nested at most 100 levels (docs/errors.md, Limits)
                handed_back = leaf in ("payload", "state", "progress")
                result.findings.append(
                    "accepted a 5000-deep JSON document: Python's json cannot load it (RecursionError)"
                    + (", and claim_jobs hands it to the worker" if handed_back else "")
                )


# --- fixtures and tests --------------------------------------------------------------------


@pytest.fixture(scope="module")
def battery(admin_dsn: str, template_db: str, roles: dict[str, LoginRole]) -> Iterator[Battery]:
    with (
        scratch_database(admin_dsn, template=template_db) as dsn,
        psycopg.connect(dsn, autocommit=True) as conn,
    ):
        for name in TEXT_LOADED:
            conn.adapters.register_loader(name, TextLoader)
        state = build_state(conn, roles["producer"].name, roles["reader"].name)
        time.sleep(1.5)  # the expired job's one-second lease runs out
        query = fingerprint_query(conn)
        made = Battery(
            conn, state, public_functions(conn), documented_codes(), query, fingerprint(conn, query)
        )
        yield made
        report = os.environ.get("PGRUN_BAD_INPUT_REPORT")
        if report:
            write_report(made, Path(report))


def test_every_public_function_has_a_baseline(battery: Battery) -> None:
    missing = sorted(set(battery.functions) - set(BASELINES))
    stale = sorted(set(BASELINES) - set(battery.functions))
    assert not missing, (
        f"public functions without a bad-input baseline (tests_py/bad_input_calls.py): {missing}"
    )
    assert not stale, f"baselines for functions that no longer exist: {stale}"
    overloaded = sorted(name for name, sigs in battery.functions.items() if len(sigs) > 1)
    assert not overloaded, f"overloaded public functions (the battery keys by name): {overloaded}"


def test_the_catalogue_parses(battery: Battery) -> None:
    assert len(battery.codes) > 50
    assert battery.codes["job.lease_lost"][0] == "RQ004"
    assert "complete_jobs" in battery.codes["workflow.release_conflict"][1]


def test_the_fingerprint_sees_every_table_and_a_change(battery: Battery) -> None:
    tables = set(battery.before.tables)
    assert {"pgrun.jobs", "pgrun.workflow_runs", "pgrun.job_schedules", "pgrun.role_access"} <= tables
    conn = battery.conn
    conn.execute("BEGIN")
    conn.execute("UPDATE pgrun.jobs SET priority = priority + 1 WHERE id = %s", (battery.state["queued"],))
    changed = battery.before.changed(fingerprint(conn, battery.fp_query))
    conn.execute("ROLLBACK")
    assert changed == ["pgrun.jobs"]


@pytest.mark.parametrize("function", sorted(BASELINES))
def test_bad_input(battery: Battery, function: str) -> None:
    assert function in battery.functions, f"pgrun.{function} is not a public function"
    (args,) = battery.functions[function]
    results = [battery.run(case) for case in cases_for(function, args)]
    assert results[0].case.value is None and results[0].sqlstate is None, (
        f"the baseline call of {function} failed: {results[0].sqlstate} {results[0].message}"
    )
    bad = [r for r in results if r.findings]
    assert not bad, f"{len(bad)} of {len(results)} calls of pgrun.{function}:\n" + "\n".join(
        f"  {r.case.label}: {r.sqlstate or 'ok'} {(r.message or '')[:120]!r} — {'; '.join(r.findings)}"
        for r in bad
    )


# --- the report ----------------------------------------------------------------------------


def _family(function: str) -> str:
    for family, names in FAMILIES.items():
        if function in names:
            return family
    return "other"


FAMILIES = {
    "jobs": {
        "upsert_job_definition", "set_job_runtime_config", "enqueue_job", "enqueue_jobs", "claim_jobs",
        "next_run_at", "heartbeat_jobs", "report_progress", "append_job_log", "complete_job", "complete_jobs",
        "fail_job", "fail_jobs", "continue_job", "release_jobs", "cancel_job", "requeue_job",
        "reap_expired_leases", "purge_finished_jobs", "get_job", "list_jobs", "queue_depth", "job_metrics",
        "dashboard_overview", "get_job_history",
    },
    "workflows": {
        "enqueue_workflow", "append_workflow_steps", "complete_external_step", "cancel_workflow_run",
        "get_workflow_run", "list_workflow_runs",
    },
    "schedules": {
        "upsert_schedule", "claim_due_schedules", "fire_schedule", "run_schedule_now", "pause_schedule",
        "pause_unplannable_schedule", "resume_schedule", "delete_schedule", "list_schedules",
    },
    "admin and util": {
        "set_role_access", "remove_role_access", "list_role_access", "list_audit_log", "now", "uuidv7",
        "schema_version",
    },
}  # fmt: skip


def write_report(battery: Battery, path: Path) -> None:
    """Findings and notes grouped by family, then by function, outcome and kind of finding (the
    arguments and values that share them in one row)."""
    results = battery.results
    lines = [
        "# Bad-input battery: findings",
        "",
        f"{len(results)} calls over {len({r.case.function for r in results})} functions, "
        f"{sum(r.seconds for r in results):.1f} s in calls "
        f"(slowest {max(r.seconds for r in results):.2f} s); "
        f"{sum(1 for r in results if r.sqlstate is None)} succeeded, "
        f"{sum(1 for r in results if r.caller_error)} were the caller's own type errors, "
        f"{sum(1 for r in results if r.sqlstate and not r.caller_error)} raised inside pgrun; "
        f"{sum(1 for r in results if r.findings)} findings, {sum(1 for r in results if r.notes)} notes.",
        "",
    ]
    for family in FAMILIES:
        groups: dict[tuple[str, str, str, str], list[Result]] = {}
        for r in results:
            if _family(r.case.function) != family or not (r.findings or r.notes):
                continue
            what = "; ".join(r.findings + [f"(note) {n}" for n in r.notes])
            key = (
                r.case.function,
                r.sqlstate or "ok",
                (r.message or "")[:100],
                re.sub(r"[\d,]{2,}", "N", what),
            )
            groups.setdefault(key, []).append(r)
        lines += [f"## {family}", ""]
        if not groups:
            lines += ["No findings.", ""]
            continue
        lines += [
            "| function | argument = value | SQLSTATE | message | finding | DETAIL chars | max s |",
            "|---|---|---|---|---|---|---|",
        ]
        for (function, sqlstate, message, _), members in groups.items():
            what = "; ".join(members[0].findings + [f"(note) {n}" for n in members[0].notes])
            if members[0].where:
                what += f" (at {members[0].where})"
            labels = ", ".join(m.case.label for m in members)
            detail = max(m.detail_len for m in members)
            seconds = max(m.seconds for m in members)
            cells = [function, labels, sqlstate, message, what, f"{detail:,}", f"{seconds:.2f}"]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
        lines.append("")
    path.write_text("\n".join(lines))
