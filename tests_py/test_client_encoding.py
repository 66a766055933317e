"""How the client sends batch writes' arguments. Id arrays: a list of UUID objects goes as one
binary uuid[] (pgrun's own dumper), anything else as psycopg dumps a list; either way the server
gets the same ids, in the same order, and a batch write answers the same. Results: a None is no
result (SQL NULL) whichever call completes the job, and a result given as JsonText is sent as
the JSON text it is."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID, uuid4

import psycopg

from pgrun.client import Client, Continuation, LogLine, _UuidArray, _uuids
from pgrun.results import JsonText

EDGE_IDS = [
    UUID(int=0),
    UUID(int=2**128 - 1),
    UUID("0192f5c4-0000-7000-8000-000000000001"),
]


def test_uuid_lists_arrive_as_the_same_array(db: str) -> None:
    """Every length the writes send (none, one, a batch of 1,000), edge values and repeats: the
    server's array is the list, element for element, 1-based, one dimension."""
    cases = [[], [uuid4()], EDGE_IDS, EDGE_IDS + EDGE_IDS[:1], [uuid4() for _ in range(1000)]]
    with psycopg.connect(db) as conn:
        for ids in cases:
            sent = _uuids(list(ids))
            assert type(sent) is _UuidArray
            row = conn.execute(
                "SELECT a, cardinality(a), array_ndims(a), array_lower(a, 1), a::text "
                "FROM (SELECT %s::uuid[] AS a) AS s",
                (sent,),
            ).fetchone()
            assert row is not None
            array, count, ndims, lower, text = row
            assert array == ids
            assert count == len(ids)
            assert (ndims, lower) == ((1, 1) if ids else (None, None))
            assert text == "{" + ",".join(str(i) for i in ids) + "}"


def test_text_ids_stay_a_list_the_server_parses() -> None:
    ids: list[UUID | str] = [str(uuid4()), str(uuid4())]
    assert _uuids(ids) == ids and type(_uuids(ids)) is list


def test_a_batch_write_answers_the_same_for_uuid_and_text_ids(db: str) -> None:
    """complete_jobs with UUID objects (binary) and with their text (a list psycopg dumps): the
    same outcomes; a wrong token is lease_lost either way and changes nothing."""
    with Client.connect(db) as client:
        client.enqueue_jobs([{"job_type": "encode.check", "payload": {"n": n}} for n in range(6)])
        claimed = client.claim_jobs("w-enc", max_jobs=6)
        assert len(claimed) == 6
        as_uuids = [(c.job_id, c.lease_token, None) for c in claimed[:3]]
        as_text = [(str(c.job_id), str(c.lease_token), None) for c in claimed[3:]]
        stranger = uuid4()
        for batch in (as_uuids, as_text):
            wrong = [(batch[0][0], stranger if isinstance(batch[0][0], UUID) else str(stranger), None)]
            lost = client.complete_jobs(wrong)
            assert [(str(o.job_id), o.outcome, o.lost_reason) for o in lost] == [
                (str(batch[0][0]), "lease_lost", "token_mismatch")
            ]
            done = client.complete_jobs(batch)
            assert [(str(o.job_id), o.outcome) for o in done] == [(str(j), "succeeded") for j, _, _ in batch]
        assert [client.get_job(c.job_id)["status"] for c in claimed] == ["succeeded"] * 6


def test_none_is_no_result_whichever_call_completes(db: str) -> None:
    """A result of None is stored as SQL NULL (no result), as complete_job leaves it, in a batch
    of Nones (sent without a results array) and beside other results alike; every other value,
    JSON's falsy ones included, is stored as given."""
    with Client.connect(db) as client, psycopg.connect(db) as conn:
        client.enqueue_jobs([{"job_type": "encode.result", "payload": {"n": n}} for n in range(7)])
        claimed = client.claim_jobs("w-enc", max_jobs=7)
        assert len(claimed) == 7
        client.complete_job(claimed[0].job_id, claimed[0].lease_token, None)
        client.complete_jobs([(c.job_id, c.lease_token, None) for c in claimed[1:3]])
        mixed: list[Any] = [None, {"a": 1}, 0, ""]
        client.complete_jobs([(c.job_id, c.lease_token, r) for c, r in zip(claimed[3:], mixed, strict=True)])
        ids = [c.job_id for c in claimed]
        rows = conn.execute(
            "SELECT result IS NULL, result FROM pgrun.jobs AS j "
            "JOIN unnest(%s::uuid[]) WITH ORDINALITY AS u (id, n) ON u.id = j.id ORDER BY u.n",
            (ids,),
        ).fetchall()
        assert rows == [(True, None)] * 4 + [(False, {"a": 1}), (False, 0), (False, "")]
        assert [client.get_job(c.job_id)["status"] for c in claimed] == ["succeeded"] * 7


def test_results_given_as_json_text_are_stored_as_the_values_they_write(db: str) -> None:
    """A result given as JsonText (the worker's: the text its check of the result dumped) goes
    into the batch's JSON array as it is, beside values dumped by the client: each is stored as
    the value it writes, not as a JSON string of that text."""
    values: list[Any] = [{"a": [1, 2.5, None]}, "é \u2603", 0, None, [True, {"k": "v"}]]
    given: list[Any] = [
        JsonText(json.dumps(values[0])),
        JsonText(json.dumps(values[1], ensure_ascii=False)),
        values[2],
        None,
        JsonText(json.dumps(values[4])),
    ]
    with Client.connect(db) as client, psycopg.connect(db) as conn:
        client.enqueue_jobs([{"job_type": "encode.text", "payload": {"n": n}} for n in range(5)])
        claimed = client.claim_jobs("w-text", max_jobs=5)
        outcomes = client.complete_jobs(
            [(c.job_id, c.lease_token, r) for c, r in zip(claimed, given, strict=True)]
        )
        assert [o.outcome for o in outcomes] == ["succeeded"] * 5
        rows = conn.execute(
            "SELECT result IS NULL, result FROM pgrun.jobs AS j "
            "JOIN unnest(%s::uuid[]) WITH ORDINALITY AS u (id, n) ON u.id = j.id ORDER BY u.n",
            ([c.job_id for c in claimed],),
        ).fetchall()
    assert rows == [(v is None, v) for v in values]


def test_log_lines_sent_without_waiting_for_the_flush_leave_the_session_as_it_was(db: str) -> None:
    """append_job_logs(durable=False) sets synchronous_commit off for its own transaction only:
    the next call on the same connection commits durably again."""
    with Client.connect(db, max_size=1) as client:
        client.enqueue_jobs([{"job_type": "encode.logs"}])
        (job,) = client.claim_jobs("w-logs")
        with client.pool.connection() as conn:  # the one connection; the test server's default is off
            conn.execute("SET synchronous_commit = on")
            conn.commit()
        outcomes = client.append_job_logs([LogLine(job.job_id, job.lease_token, "no wait")], durable=False)
        assert [o.outcome for o in outcomes] == ["logged"]
        with client.pool.connection() as conn:
            row = conn.execute("SHOW synchronous_commit").fetchone()
    assert row == ("on",)


def test_log_lines_fields_and_levels_arrive_as_given_and_only_lines_not_logged_come_back(db: str) -> None:
    """A batch of log lines sends its fields as one JSON array: objects, JsonText and None
    (no fields) side by side arrive line for line, in order; levels all info go as NULL (the
    function's default), mixed ones as given. With logged_rows=False only the lines not logged
    come back, in input order (here a refused level and a lost lease)."""
    fields: list[Any] = [{"n": 1, "s": 'a "quoted" \\ value'}, JsonText('{"é": [1, 2]}'), None, {}]
    with Client.connect(db) as client, psycopg.connect(db) as conn:
        client.enqueue_jobs([{"job_type": "encode.logs"} for _ in range(2)])
        held, lost = client.claim_jobs("w-logs", max_jobs=2)
        lines = [LogLine(held.job_id, held.lease_token, f"line {n}", fields=f) for n, f in enumerate(fields)]
        assert [o.outcome for o in client.append_job_logs(lines, logged_rows=False)] == []
        mixed = [
            LogLine(held.job_id, held.lease_token, "warned", level="warning", fields={"k": 1}),
            LogLine(held.job_id, held.lease_token, "loud", level="loud"),
            LogLine(lost.job_id, uuid4(), "not held"),
            LogLine(held.job_id, held.lease_token, "debugged", level="debug"),
        ]
        answers = client.append_job_logs(mixed, logged_rows=False)
        assert [(a.job_id, a.outcome) for a in answers] == [
            (held.job_id, "invalid"),
            (lost.job_id, "lease_lost"),
        ]
        rows = conn.execute(
            "SELECT message, level, fields FROM pgrun.job_logs WHERE job_id = %s ORDER BY id", (held.job_id,)
        ).fetchall()
    assert rows == [
        ("line 0", "info", {"n": 1, "s": 'a "quoted" \\ value'}),
        ("line 1", "info", {"é": [1, 2]}),
        ("line 2", "info", None),
        ("line 3", "info", {}),
        ("warned", "warning", {"k": 1}),
        ("debugged", "debug", None),
    ]


def test_continuation_states_given_as_json_text_objects_or_none_arrive_as_given(db: str) -> None:
    """continue_jobs sends the states as one JSON array: a JsonText state (the worker's, the
    text its check dumped) is stored as the value it writes, an object as itself, and None
    keeps the job's state."""
    with Client.connect(db) as client, psycopg.connect(db) as conn:
        client.enqueue_jobs([{"job_type": "encode.steps"} for _ in range(3)])
        jobs = client.claim_jobs("w-steps", max_jobs=3)
        conn.execute("UPDATE pgrun.jobs SET state = '{\"kept\": 1}' WHERE id = %s", (jobs[2].job_id,))
        conn.commit()
        states: list[Any] = [JsonText('{"é": [1, 2.5]}'), {"s": 'a "quoted" \\ value'}, None]
        answers = client.continue_jobs(
            [Continuation(j.job_id, j.lease_token, "next", s) for j, s in zip(jobs, states, strict=True)]
        )
        assert [a.outcome for a in answers] == ["continued"] * 3
        rows = conn.execute(
            "SELECT j.state FROM pgrun.jobs AS j "
            "JOIN unnest(%s::uuid[]) WITH ORDINALITY AS u (id, n) ON u.id = j.id ORDER BY u.n",
            ([j.job_id for j in jobs],),
        ).fetchall()
    assert rows == [({"é": [1, 2.5]},), ({"s": 'a "quoted" \\ value'},), ({"kept": 1},)]
