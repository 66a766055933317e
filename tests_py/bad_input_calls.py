"""The table behind tests_py/test_bad_input.py: one valid call per public function, the
state those calls run against, and the hostile values each argument type is tried with.

Every public function of schema pgrun (pg_proc, names not starting with ``_``) needs an
entry in BASELINES: the test fails for a function without one, so a new function cannot
escape the battery. A baseline names the arguments it passes (named notation); every
argument of the function's signature, passed or not, is then mutated one at a time with the
values VALUES_BY_TYPE gives for its type (read from the catalog, so a new argument is
covered without an edit here). Arguments whose value is structured JSON (a batch, a
workflow spec, steps) also get FIELD_MUTATIONS: each documented key of the object set to
each hostile JSON value in turn.

Values are SQL expressions, evaluated by the server (a 1 MiB string is ``repeat('x', ...)``,
not 1 MiB of parameter). ``${name}`` placeholders refer to STATE, the ids the fixture made;
the test substitutes them as quoted literals. An array argument's baseline is a Python list
of element expressions.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024

# The state the baselines run against, made by the test's fixture through the public
# functions (as the superuser): what each placeholder names.
STATE_DOC = {
    "org": "an organization id (uuid) that owns org_job",
    "queued": "a queued job (type bad.queued)",
    "org_job": "a queued job of organization org",
    "running": "a running job with a one-hour lease (type bad.running)",
    "running_token": "its lease token",
    "expired": "a running job whose one-second lease has expired (type bad.expired)",
    "expired_token": "its lease token",
    "dead": "a dead job (failed, not retryable)",
    "done": "a succeeded job",
    "run": "a running workflow run: job step a (queued), external step ext (waiting), b after a",
    "schedule": "schedule 'claimed' (every minute), claimed for an hour by scheduler sched-1",
    "claim_token": "that claim's token",
    "db_now": "the claim's db_now (a past instant by the time the battery runs)",
    "producer_role": "a login role in pgrun's producer role, without a role_access row",
    "reader_role": "a login role in pgrun's reader role, with a role_access row",
}

UUID_RANDOM = "'6b1f4ac2-58a1-4c8e-9a55-3d0f2a7c9e11'::uuid"
UUID_NIL = "'00000000-0000-0000-0000-000000000000'::uuid"


@dataclass(frozen=True)
class Value:
    """One hostile value: a SQL expression, a short label for reports and its kind.

    kinds: null, empty, blank, huge, odd, edge (an extreme but well-typed value), nil_uuid,
    nil_uuid_text (the nil uuid as a JSON string), unknown_uuid, json_kind, deep, and
    wrong_type (text the argument's type cannot parse: PostgreSQL's own cast error before the
    call is the expected outcome).
    """

    label: str
    sql: str
    kind: str


def _v(label: str, sql: str, kind: str = "edge") -> Value:
    return Value(label, sql, kind)


DEEP_JSON = "repeat('[', 5000) || repeat(']', 5000)"

# Hostile values per argument type (pg_catalog type names as format_type spells them).
VALUES_BY_TYPE: dict[str, list[Value]] = {
    "text": [
        _v("NULL", "NULL::text", "null"),
        _v("''", "''::text", "empty"),
        _v("'   '", "'   '::text", "blank"),
        _v("1 MiB string", f"repeat('x', {MIB})", "huge"),
        _v(
            "odd characters",
            "E'a\\tb\\nc \\\\ '' \" ; -- %s %I \u00e9 \u4e2d \u202e \U0001f600 \\u0001'::text",
            "odd",
        ),
    ],
    "integer": [
        _v("NULL", "NULL::integer", "null"),
        _v("-1", "(-1)::integer"),
        _v("0", "0::integer"),
        _v("2^31-1", "2147483647::integer"),
        _v("-2^31", "(-2147483648)::integer"),
        _v("'abc'", "'abc'::integer", "wrong_type"),
        _v("'2147483648'", "'2147483648'::integer", "wrong_type"),
    ],
    "bigint": [
        _v("NULL", "NULL::bigint", "null"),
        _v("-1", "(-1)::bigint"),
        _v("0", "0::bigint"),
        _v("2^63-1", "9223372036854775807::bigint"),
        _v("-2^63", "(-9223372036854775808)::bigint"),
        _v("'abc'", "'abc'::bigint", "wrong_type"),
    ],
    "double precision": [
        _v("NULL", "NULL::double precision", "null"),
        _v("-1", "(-1)::double precision"),
        _v("0", "0::double precision"),
        _v("1e308", "1e308::double precision"),
        _v("NaN", "'NaN'::double precision"),
        _v("Infinity", "'Infinity'::double precision"),
        _v("-Infinity", "'-Infinity'::double precision"),
        _v("'abc'", "'abc'::double precision", "wrong_type"),
    ],
    "boolean": [
        _v("NULL", "NULL::boolean", "null"),
        _v("true", "true"),
        _v("false", "false"),
        _v("'maybe'", "'maybe'::boolean", "wrong_type"),
    ],
    "uuid": [
        _v("NULL", "NULL::uuid", "null"),
        _v("nil uuid", UUID_NIL, "nil_uuid"),
        _v("unknown uuid", UUID_RANDOM, "unknown_uuid"),
        _v("'not-a-uuid'", "'not-a-uuid'::uuid", "wrong_type"),
    ],
    "jsonb": [
        _v("NULL", "NULL::jsonb", "null"),
        _v("JSON null", "'null'::jsonb", "json_kind"),
        _v("[]", "'[]'::jsonb", "json_kind"),
        _v("[1]", "'[1]'::jsonb", "json_kind"),
        _v('"s"', "'\"s\"'::jsonb", "json_kind"),
        _v("1", "'1'::jsonb", "json_kind"),
        _v("true", "'true'::jsonb", "json_kind"),
        _v("{}", "'{}'::jsonb", "json_kind"),
        _v("5000-deep array", f"({DEEP_JSON})::jsonb", "deep"),
        _v("5000-deep object", f"('{{\"a\": ' || {DEEP_JSON} || '}}')::jsonb", "deep"),
        _v("2 MiB object", f"jsonb_build_object('k', repeat('x', {2 * MIB}))", "huge"),
        _v("'not json'", "'not json'::jsonb", "wrong_type"),
    ],
    "timestamp with time zone": [
        _v("NULL", "NULL::timestamptz", "null"),
        _v("infinity", "'infinity'::timestamptz"),
        _v("-infinity", "'-infinity'::timestamptz"),
        _v("10000-01-01", "'10000-01-01'::timestamptz"),
        _v("1970-01-01", "'1970-01-01 00:00:00+00'::timestamptz"),
        _v("'soon'", "'soon'::timestamptz", "wrong_type"),
    ],
    "interval": [
        _v("NULL", "NULL::interval", "null"),
        _v("1000000 years", "'1000000 years'::interval"),
        _v("178000000 years", "'178000000 years'::interval"),
        _v("-1000000 years", "'-1000000 years'::interval"),
        _v("-1 second", "'-1 second'::interval"),
        _v("0", "'0'::interval"),
        _v("'abc'", "'abc'::interval", "wrong_type"),
    ],
}

# A plain valid element per array element type, for the long and 2-D arrays when the
# baseline passes no array of its own.
TYPICAL_ELEMENT = {
    "text": "'bad.element'::text",
    "uuid": UUID_RANDOM,
    "jsonb": "'{}'::jsonb",
    "boolean": "true",
    "interval": "'1 second'::interval",
    "timestamp with time zone": "'${db_now}'::timestamptz",
    "integer": "1",
}

LONG_ARRAY = 100_001

# Hostile JSON values for a key of a structured argument (FIELD_MUTATIONS).
JSON_FIELD_VALUES: list[Value] = [
    _v("null", "'null'::jsonb", "null"),
    _v('""', "'\"\"'::jsonb", "empty"),
    _v('"   "', "'\"   \"'::jsonb", "blank"),
    _v("1 MiB string", f"to_jsonb(repeat('x', {MIB}))", "huge"),
    _v("-1", "'-1'::jsonb"),
    _v("2^31", "'2147483648'::jsonb"),
    _v("2^63", "'9223372036854775808'::jsonb"),
    _v("1e400", "'1e400'::jsonb"),
    _v("1.5", "'1.5'::jsonb"),
    _v("true", "'true'::jsonb"),
    _v('"10000-01-01"', "'\"10000-01-01\"'::jsonb"),
    _v('"infinity"', "'\"infinity\"'::jsonb"),
    _v('"1000000 years"', "'\"1000000 years\"'::jsonb"),
    _v('"-1 second"', "'\"-1 second\"'::jsonb"),
    _v('"not-a-uuid"', "'\"not-a-uuid\"'::jsonb"),
    _v('"00000000-…" (nil uuid)', "'\"00000000-0000-0000-0000-000000000000\"'::jsonb", "nil_uuid_text"),
    _v("{}", "'{}'::jsonb", "json_kind"),
    _v("[]", "'[]'::jsonb", "json_kind"),
    _v("5000-deep array", f"({DEEP_JSON})::jsonb", "deep"),
]


@dataclass(frozen=True)
class FieldMutation:
    """Mutate the keys of a JSON object inside an argument.

    ``template`` is the argument's baseline JSON with ``@`` where the object under test
    sits; ``obj`` is that object (JSON text); ``keys`` the keys to set, each to every
    JSON_FIELD_VALUES value in turn (keys the object lacks are added).
    """

    template: str
    obj: str
    keys: tuple[str, ...]


_JOB_KEYS = (
    "job_type",
    "payload",
    "queue",
    "priority",
    "run_at",
    "delay",
    "max_attempts",
    "timeout_seconds",
    "idempotency_key",
    "organization_id",
)
_STEP_KEYS = (
    "key",
    "kind",
    "job_type",
    "payload",
    "queue",
    "priority",
    "max_attempts",
    "timeout_seconds",
    "depends_on",
)
_SPEC_KEYS = ("name", "idempotency_key", "organization_id", "metadata", "steps")

_NEW_STEP = '{"key": "c", "job_type": "bad.step", "depends_on": ["a"]}'
_SPEC_STEPS = '[{"key": "x", "job_type": "bad.step"}, {"key": "y", "kind": "external", "depends_on": ["x"]}]'

FIELD_MUTATIONS: dict[tuple[str, str], list[FieldMutation]] = {
    ("enqueue_jobs", "jobs"): [
        FieldMutation("[@]", '{"job_type": "bad.bulk", "idempotency_key": "k1"}', _JOB_KEYS),
    ],
    ("enqueue_workflow", "spec"): [
        FieldMutation("@", '{"name": "n", "steps": ' + _SPEC_STEPS + "}", _SPEC_KEYS),
        FieldMutation(
            '{"steps": [@, {"key": "y", "kind": "external", "depends_on": ["x"]}]}',
            '{"key": "x", "job_type": "bad.step", "payload": {"p": 1}}',
            _STEP_KEYS,
        ),
    ],
    ("append_workflow_steps", "steps"): [
        FieldMutation("[@]", _NEW_STEP, _STEP_KEYS),
    ],
}

# One valid call per public function, named arguments. A list is an array argument.
BASELINES: dict[str, dict[str, str | list[str]]] = {
    # sql/ migrations
    "now": {},
    "uuidv7": {},
    "schema_version": {},
    # jobs
    "upsert_job_definition": {
        "job_type": "'bad.defined'",
        "queue": "'bad_q'",
        "priority": "10",
        "max_attempts": "5",
        "timeout_seconds": "60",
        "backoff_base_seconds": "1",
        "backoff_max_seconds": "60",
        "backoff_jitter": "0.1",
    },
    "set_job_runtime_config": {
        "job_type": "'bad.defined'",
        "paused": "true",
        "max_concurrency": "3",
        "clear_max_concurrency": "false",
    },
    "enqueue_job": {
        "job_type": "'bad.new'",
        "payload": "'{\"a\": 1}'::jsonb",
        "queue": "'bad_q'",
        "priority": "5",
        "delay": "'1 minute'::interval",
        "max_attempts": "3",
        "timeout_seconds": "30",
        "idempotency_key": "'key-1'",
        "organization_id": "'${org}'::uuid",
    },
    "enqueue_jobs": {"jobs": '\'[{"job_type": "bad.bulk", "idempotency_key": "k1"}]\'::jsonb'},
    "claim_jobs": {
        "worker_id": "'w-claim'",
        "lease_seconds": "30",
        "max_jobs": "5",
        "queues": ["'default'"],
        "job_types": ["'bad.queued'"],
    },
    "next_run_at": {
        "queues": ["'default'"],
        "job_types": ["'bad.queued'"],
    },
    "heartbeat_jobs": {
        "worker_id": "'w-1'",
        "lease_seconds": "60",
        "job_ids": ["'${running}'::uuid"],
        "lease_tokens": ["'${running_token}'::uuid"],
    },
    "report_progress": {
        "job_id": "'${running}'::uuid",
        "lease_token": "'${running_token}'::uuid",
        "progress": "'{\"done\": 1}'::jsonb",
    },
    "append_job_log": {
        "job_id": "'${running}'::uuid",
        "lease_token": "'${running_token}'::uuid",
        "message": "'hello'",
        "level": "'info'",
        "fields": "'{\"f\": 1}'::jsonb",
    },
    "append_job_logs": {
        "job_ids": ["'${running}'::uuid"],
        "lease_tokens": ["'${running_token}'::uuid"],
        "messages": ["'hello'"],
        "levels": ["'info'"],
        "fields": ["'{\"f\": 1}'::jsonb"],
    },
    "complete_job": {
        "job_id": "'${running}'::uuid",
        "lease_token": "'${running_token}'::uuid",
        "result": "'{\"ok\": true}'::jsonb",
    },
    "complete_jobs": {
        "job_ids": ["'${running}'::uuid"],
        "lease_tokens": ["'${running_token}'::uuid"],
        "results": ["'{\"ok\": true}'::jsonb"],
    },
    "release_jobs": {
        "job_ids": ["'${running}'::uuid"],
        "lease_tokens": ["'${running_token}'::uuid"],
    },
    "fail_job": {
        "job_id": "'${running}'::uuid",
        "lease_token": "'${running_token}'::uuid",
        "error_code": "'boom'",
        "message": "'it broke'",
        "retryable": "true",
        "retry_delay": "'1 minute'::interval",
    },
    "fail_jobs": {
        "job_ids": ["'${running}'::uuid"],
        "lease_tokens": ["'${running_token}'::uuid"],
        "error_codes": ["'boom'"],
        "messages": ["'it broke'"],
        "retryable": ["true"],
        "retry_delays": ["'1 minute'::interval"],
    },
    "continue_job": {
        "job_id": "'${running}'::uuid",
        "lease_token": "'${running_token}'::uuid",
        "next_step": "'second'",
        "state": "'{\"n\": 1}'::jsonb",
        "delay": "'1 minute'::interval",
        "max_attempts": "3",
        "retry_delay": "'30 seconds'::interval",
    },
    "continue_jobs": {
        "job_ids": ["'${running}'::uuid"],
        "lease_tokens": ["'${running_token}'::uuid"],
        "next_steps": ["'second'"],
        "states": ["'{\"n\": 1}'::jsonb"],
        "delays": ["'1 minute'::interval"],
        "max_attempts": ["3"],
        "retry_delays": ["'30 seconds'::interval"],
    },
    "cancel_job": {"job_id": "'${queued}'::uuid", "reason": "'no longer needed'"},
    "requeue_job": {"job_id": "'${dead}'::uuid", "run_at": "'${db_now}'::timestamptz"},
    "reap_expired_leases": {"max_jobs": "10", "retry_delay": "'1 minute'::interval"},
    "purge_finished_jobs": {"older_than": "'0 seconds'::interval", "max_jobs": "10"},
    "get_job": {"job_id": "'${org_job}'::uuid", "organization_id": "'${org}'::uuid"},
    "list_jobs": {
        "status": "'queued'",
        "job_type": "'bad.queued'",
        "queue": "'default'",
        "after_id": "'00000000-0000-0000-0000-000000000000'::uuid",
        "max_rows": "10",
    },
    "queue_depth": {"organization_id": "'${org}'::uuid"},
    "count_jobs": {"status": "'queued'", "queue": "'default'", "organization_id": "'${org}'::uuid"},
    "job_metrics": {"organization_id": "'${org}'::uuid"},
    "dashboard_overview": {"organization_id": "'${org}'::uuid"},
    "get_job_history": {"job_id": "'${done}'::uuid", "max_rows": "200"},
    # workflows
    "enqueue_workflow": {
        "spec": '\'{"name": "n", "idempotency_key": "wk", "steps": ' + _SPEC_STEPS + "}'::jsonb"
    },
    "append_workflow_steps": {
        "run_id": "'${run}'::uuid",
        "mutation_key": "'m-1'",
        "steps": "'[" + _NEW_STEP + "]'::jsonb",
    },
    "complete_external_step": {
        "run_id": "'${run}'::uuid",
        "step_key": "'ext'",
        "succeeded": "true",
        "output": "'{\"o\": 1}'::jsonb",
    },
    "cancel_workflow_run": {"run_id": "'${run}'::uuid", "reason": "'stop'"},
    "get_workflow_run": {"run_id": "'${run}'::uuid"},
    "list_workflow_runs": {"status": "'running'", "max_rows": "10"},
    # schedules
    "upsert_schedule": {
        "name": "'bad-new'",
        "cron": "'*/5 * * * *'",
        "job_type": "'bad.scheduled'",
        "payload": "'{\"p\": 1}'::jsonb",
        "timezone": "'Europe/Berlin'",
        "queue": "'bad_q'",
        "priority": "7",
        "catch_up": "'all'",
        "backfill_limit": "10",
        "enabled": "true",
        "max_attempts": "3",
        "timeout_seconds": "60",
        "misfire_grace_seconds": "30",
        "scope_kind": "'key'",
        "scopes": ["'k1'", "'k2'"],
        "forbid_stale_reentry": "false",
    },
    "claim_due_schedules": {"scheduler_id": "'sched-2'", "max_schedules": "5", "lease_seconds": "60"},
    "fire_schedule": {
        "schedule_id": "'${schedule}'::uuid",
        "plan_times": ["'${db_now}'::timestamptz"],
        "next_run_at": "'${db_now}'::timestamptz + interval '1 hour'",
        "claim_token": "'${claim_token}'::uuid",
        "planned_until": "'${db_now}'::timestamptz",
        "scheduler_id": "'sched-1'",
    },
    "pause_unplannable_schedule": {
        "schedule_id": "'${schedule}'::uuid",
        "claim_token": "'${claim_token}'::uuid",
        "reason": "'the scheduler cannot plan it'",
    },
    "run_schedule_now": {"name": "'hourly'"},
    "pause_schedule": {"name": "'hourly'"},
    "resume_schedule": {"name": "'paused'"},
    "delete_schedule": {"name": "'hourly'"},
    "list_schedules": {},
    # admin
    "set_role_access": {
        "role_name": "'${producer_role}'",
        "organization_ids": ["'${org}'::uuid"],
        "any_organization": "false",
        "queues": ["'default'"],
        "job_types": ["'bad.queued'"],
    },
    "remove_role_access": {"role_name": "'${reader_role}'"},
    "list_role_access": {},
    "list_audit_log": {"max_rows": "10"},
}

# Text arguments that name something: an empty or blank value accepted AND written is a
# finding (the caller's typo became state).
NAMING_TEXT_ARGS = frozenset(
    {
        "worker_id",
        "scheduler_id",
        "name",
        "job_type",
        "queue",
        "next_step",
        "step_key",
        "role_name",
        "cron",
        "timezone",
        "catch_up",
        "scope_kind",
        "level",
        "status",
    }
)
