"""A claim's cost does not depend on the ready jobs it may not take (docs/lease-machine.md,
"Ready jobs a claim passes over"): with 20,000 of them ahead of its own (another job type,
another queue, a paused type), a claim reads a bounded part of jobs_claim_idx and finds its
jobs through jobs_claim_type_idx, with fresh statistics, with an empty table's statistics, and
in a session whose plan was made while the table was empty. The counts are the server's own
(pg_stat_get_xact_tuples_returned: index entries read by this transaction). Several claimers
taking jobs through that path at once still take each job exactly once."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import psycopg
import pytest

from test_jobs_concurrency import bulk_enqueue, claim_and_complete_until_empty, run_threads

AHEAD = 20_000
MAX_JOBS = 10
WALK = 4 * MAX_JOBS + 100  # claim_jobs' bound on its walk of jobs_claim_idx

CASES = {
    # ahead: (job_type, queue) of the jobs ahead; filters: what the claimer asks for
    "another job type": (("other.job", "default"), {"job_types": ["own.job"]}),
    "another queue": (("own.job", "bulk"), {"queues": ["default"]}),
    "a paused type": (("paused.job", "default"), {}),
}

CLAIM = "SELECT job_id FROM pgrun.claim_jobs(%(worker)s, 60, %(max_jobs)s, %(queues)s, %(job_types)s)"
READS = (
    "SELECT pg_stat_get_xact_tuples_returned('pgrun.jobs_claim_idx'::regclass),"
    " pg_stat_get_xact_tuples_returned('pgrun.jobs_claim_type_idx'::regclass)"
)


def claim_params(worker: str, filters: dict[str, Any]) -> dict[str, Any]:
    return {"worker": worker, "max_jobs": MAX_JOBS, "queues": None, "job_types": None, **filters}


def claim_counting_reads(claimer: psycopg.Connection[Any], filters: dict[str, Any]) -> tuple[int, int, int]:
    """One claim of MAX_JOBS by "me", committed: (jobs claimed, entries of jobs_claim_idx read,
    entries of jobs_claim_type_idx read)."""
    before = claimer.execute(READS).fetchone()
    assert before is not None
    rows = claimer.execute(CLAIM, claim_params("me", filters)).fetchall()
    after = claimer.execute(READS).fetchone()
    assert after is not None
    claimer.commit()
    return len(rows), after[0] - before[0], after[1] - before[1]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("statistics", ["fresh", "of an empty table", "of an empty table, plan kept"])
def test_a_claim_reads_a_bounded_part_of_the_jobs_it_may_not_take(
    db: str, case: str, statistics: str
) -> None:
    (ahead_type, ahead_queue), filters = CASES[case]
    with psycopg.connect(db, autocommit=True) as setup, psycopg.connect(db) as claimer:
        setup.execute("SELECT pgrun.set_job_runtime_config('paused.job', paused => true)")
        if statistics != "fresh":
            setup.execute("ANALYZE pgrun.jobs")
        if statistics.endswith("plan kept"):
            # The session plans its claim on the empty table; the plan is generic and kept.
            for _ in range(6):
                assert claimer.execute(CLAIM, claim_params("me", filters)).fetchall() == []
            claimer.commit()
        bulk_enqueue(db, MAX_JOBS * 3, "own.job", "default", 10)
        bulk_enqueue(db, AHEAD, ahead_type, ahead_queue, 0)
        if statistics == "fresh":
            setup.execute("ANALYZE pgrun.jobs")

        for done in range(3):
            claimed, walked, by_type = claim_counting_reads(claimer, filters)
            assert claimed == MAX_JOBS
            # The walk and the count that tells it stopped at its bound; never the 20,000.
            assert walked <= 2 * WALK, f"{walked} entries of jobs_claim_idx read"
            # Its own pair's entries and the descents that find the pairs, plus the entries of
            # the jobs earlier rounds claimed (dead, until a vacuum), read by three of the lookups.
            limit = MAX_JOBS + 10 + 3 * MAX_JOBS * done
            assert 0 < by_type <= limit, f"{by_type} entries of jobs_claim_type_idx read"
        left = setup.execute(
            "SELECT count(*) FROM pgrun.jobs WHERE status = 'queued' AND job_type = %s AND queue = %s",
            (ahead_type, ahead_queue),
        ).fetchone()
        assert left == (AHEAD,), "a job the claimer may not take was touched"


@pytest.mark.parametrize("statistics", ["fresh", "of an empty table"])
def test_a_filtered_claim_whose_jobs_are_at_the_head_stops_after_them(db: str, statistics: str) -> None:
    """The bound is a ceiling, not a price: with 20,000 ready jobs of its own type, a claim with
    a type filter reads about max_jobs entries of jobs_claim_idx, not the walk's 140 (a walk read
    whole before the locking, as once in the eighth pass, made a claim of 500 in a deep queue 36 %
    slower)."""
    with psycopg.connect(db, autocommit=True) as setup, psycopg.connect(db) as claimer:
        if statistics != "fresh":
            setup.execute("ANALYZE pgrun.jobs")
        bulk_enqueue(db, AHEAD, "own.job", "default", 10)
        if statistics == "fresh":
            setup.execute("ANALYZE pgrun.jobs")
        for _ in range(3):
            claimed, walked, by_type = claim_counting_reads(claimer, {"job_types": ["own.job"]})
            assert claimed == MAX_JOBS
            assert walked <= 2 * MAX_JOBS, f"{walked} entries of jobs_claim_idx read"
            assert by_type == 0, "the per-pair step ran for a full claim"


def test_claimers_past_the_walk_take_each_job_exactly_once(db: str) -> None:
    """Eight claimers, each for one of two types, all behind 2,000 jobs of a paused type: most
    of their claims go through the per-pair path, which locks rows it does not keep."""
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("SELECT pgrun.set_job_runtime_config('paused.job', paused => true)")
        bulk_enqueue(db, 2_000, "paused.job", "default", 0)
        for job_type in ("a.job", "b.job"):
            for queue in ("q1", "q2", "q3"):
                bulk_enqueue(db, 1_000, job_type, queue, 5)
    claimed: list[list[str]] = [[] for _ in range(8)]
    run_threads(
        8,
        lambda i: claim_and_complete_until_empty(
            db, f"worker-{i}", claimed[i], 20, ["a.job" if i % 2 else "b.job"]
        ),
    )

    everything = [job for part in claimed for job in part]
    assert [job for job, n in Counter(everything).items() if n > 1] == []
    assert len(everything) == 6_000
    assert sum(1 for part in claimed if part) >= 4, "the claimers did not actually run side by side"
    with psycopg.connect(db, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT job_type, status, count(*) FROM pgrun.jobs GROUP BY job_type, status ORDER BY job_type"
        ).fetchall()
    assert rows == [
        ("a.job", "succeeded", 3_000),
        ("b.job", "succeeded", 3_000),
        ("paused.job", "queued", 2_000),
    ]


OWN_CLAIM = "SELECT job_id, lease_token, job_type FROM pgrun.claim_jobs(%s, 60, 2, NULL, '{own.job}')"
COMPLETE = "SELECT count(*) FROM pgrun.complete_jobs(%s, %s)"


def test_claimers_of_their_own_type_while_another_type_arrives_take_only_their_own(db: str) -> None:
    """Claimers name own.job and mostly find no other type queued, so their claims take the plain
    walk; meanwhile one session enqueues other.job jobs one at a time ahead of them (a better
    priority) and another claims those as they come, so the lookups that chose the plain walk and
    the walk itself keep racing with those commits. Whatever each claim found, an own.job claimer
    never takes another type's job, each own.job job is taken exactly once (a sweep after the race
    takes what claims that came back short left), and the other type's jobs go to their own
    claimer."""
    bulk_enqueue(db, 3_000, "own.job", "default", 10)
    # Claims of two: many claims, so many lookups followed by a walk, for arrivals to fall between
    own_claimers = 3
    stop = threading.Event()
    taken: list[list[tuple[str, str]]] = [[] for _ in range(own_claimers)]
    others_taken: list[str] = []

    def own(i: int) -> None:
        with psycopg.connect(db, autocommit=True) as conn:
            while True:
                rows = conn.execute(OWN_CLAIM, (f"own-{i}",)).fetchall()
                if not rows:
                    return
                taken[i].extend((str(r[0]), r[2]) for r in rows)
                conn.execute(COMPLETE, ([r[0] for r in rows], [r[1] for r in rows]))

    def arrivals() -> None:
        with psycopg.connect(db, autocommit=True) as conn:
            while not stop.is_set():
                conn.execute("SELECT count(*) FROM pgrun.enqueue_job('other.job', priority => 0)")

    def work(i: int) -> None:
        if i < own_claimers:
            try:
                own(i)
            finally:
                stop.set()
        elif i == own_claimers:
            arrivals()
        else:
            while not stop.is_set():
                claim_and_complete_until_empty(db, "other-claimer", others_taken, 5, ["other.job"])

    run_threads(own_claimers + 2, work)
    swept: list[str] = []
    claim_and_complete_until_empty(db, "sweeper", swept, 20, ["own.job"])
    claim_and_complete_until_empty(db, "other-claimer", others_taken, 20, ["other.job"])

    assert {job_type for part in taken for _, job_type in part} == {"own.job"}
    everything = [job for part in taken for job, _ in part] + swept
    assert [job for job, n in Counter(everything).items() if n > 1] == []
    assert len(everything) == 3_000
    assert len(others_taken) > 0, "no job of another type arrived while the claimers ran"
    with psycopg.connect(db, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT job_type, status, count(*) FROM pgrun.jobs GROUP BY job_type, status ORDER BY job_type"
        ).fetchall()
    assert rows == [("other.job", "succeeded", len(others_taken)), ("own.job", "succeeded", 3_000)]


def test_rows_the_per_pair_step_locks_and_does_not_keep_are_free_once_the_claim_commits(db: str) -> None:
    """The per-pair step locks up to what is left in every pair and keeps the first of them all:
    the rest stay locked, not claimed, until the claim's transaction ends. Another claimer passes
    over them meanwhile (SKIP LOCKED) and takes them once it has ended."""
    with psycopg.connect(db, autocommit=True) as setup:
        setup.execute("SELECT pgrun.set_job_runtime_config('paused.job', paused => true)")
        bulk_enqueue(db, 200, "paused.job", "default", 0)  # ahead of the walk's bound (4 x 2 + 100)
        bulk_enqueue(db, 3, "own.job", "q1", 5)
        bulk_enqueue(db, 3, "own.job", "q2", 5)
        ids = {
            queue: [
                r[0]
                for r in setup.execute(
                    "SELECT id FROM pgrun.jobs WHERE queue = %s ORDER BY priority, run_at, id", (queue,)
                ).fetchall()
            ]
            for queue in ("q1", "q2")
        }
    claim = "SELECT job_id FROM pgrun.claim_jobs(%s, 60, %s, NULL, '{own.job}')"
    with psycopg.connect(db) as first, psycopg.connect(db, autocommit=True) as second:
        taken = [r[0] for r in first.execute(claim, ("first", 2)).fetchall()]
        assert taken == ids["q1"][:2], "the first two in claim order (q1's were enqueued first)"
        # q2's first two are locked by the open claim without being claimed: passed over.
        meanwhile = {r[0] for r in second.execute(claim, ("second", 10)).fetchall()}
        assert meanwhile == {ids["q1"][2], ids["q2"][2]}
        first.commit()
        after = {r[0] for r in second.execute(claim, ("second", 10)).fetchall()}
        assert after == set(ids["q2"][:2])
        rows = second.execute(
            "SELECT worker_id, count(*) FROM pgrun.jobs WHERE job_type = 'own.job' "
            "AND status = 'running' GROUP BY worker_id ORDER BY worker_id"
        ).fetchall()
    assert rows == [("first", 2), ("second", 4)]
