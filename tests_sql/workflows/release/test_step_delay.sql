-- A job step's delay / run_at sets its job's run_at at release: release time + delay, or
-- greatest(release time, run_at). A root is released at enqueue, a dependent when its last
-- prerequisite finishes; the job is not claimable before its run_at, and the wake-up names
-- the due time. (test clock)
BEGIN;
SELECT plan(16);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.record_notifications();
SELECT pgrun_test.wf_enqueue('{"steps": [
    {"key": "plain", "job_type": "t.plain", "queue": "qp"},
    {"key": "late", "job_type": "t.late", "queue": "ql", "delay": 90.5},
    {"key": "at", "job_type": "t.at", "queue": "qa", "run_at": "2030-01-01T02:00:00+02:00"},
    {"key": "due", "job_type": "t.due", "queue": "qd", "run_at": "2029-12-31T23:00:00Z"},
    {"key": "next", "job_type": "t.next", "queue": "qn", "delay": 600, "depends_on": ["plain"]},
    {"key": "fixed", "job_type": "t.fixed", "queue": "qf", "run_at": "2030-01-01T00:30:00Z", "depends_on": ["plain"]},
    {"key": "passed", "job_type": "t.passed", "queue": "qx", "run_at": "2030-01-01T00:05:00Z", "depends_on": ["plain"]}
]}') AS run \gset

-- TEST: roots are released at enqueue
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'plain')),
    '2030-01-01 00:00:00+00'::timestamptz, 'a root without delay runs at once');
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'late')),
    '2030-01-01 00:01:30.5+00'::timestamptz, 'a root with delay 90.5 runs 90.5 s after the enqueue');
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'at')),
    '2030-01-01 00:00:00+00'::timestamptz, 'a root whose run_at (another time zone) is now runs now');
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'due')),
    '2030-01-01 00:00:00+00'::timestamptz, 'a root whose run_at has passed runs at its release');
SELECT is(
    (SELECT array_agg(q ORDER BY q) FROM notify_calls, unnest(queues) AS q),
    ARRAY['qa', 'qd', 'ql ' || (extract(EPOCH FROM '2030-01-01 00:01:30.5+00'::timestamptz) * 1000)::bigint, 'qp'],
    'the wake-up names the ready queues, and the delayed one with its due time in Unix ms'
);

-- TEST: a delayed job is not claimable before its run_at
SELECT is(
    (SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10, ARRAY['ql'])),
    0::bigint,
    'the delayed root is not claimable at enqueue'
);
SELECT pgrun_test.advance_time('90 seconds');
SELECT is((SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10, ARRAY['ql'])), 0::bigint, 'nor 0.5 s before its run_at');
SELECT pgrun_test.advance_time('0.5 seconds');
SELECT is((SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10, ARRAY['ql'])), 1::bigint, 'it is claimable at its run_at');

-- TEST: dependents are released when their prerequisite finishes, at 00:10
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');
TRUNCATE notify_calls;
SELECT pgrun_test.wf_succeed(:'run', 'plain');
SELECT is((SELECT released_at FROM pgrun.workflow_steps WHERE run_id = :'run' AND step_key = 'next'),
    '2030-01-01 00:10:00+00'::timestamptz, 'the dependent is released when its prerequisite finished');
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'next')),
    '2030-01-01 00:20:00+00'::timestamptz, 'its job runs delay (600 s) after the release, not after the enqueue');
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'fixed')),
    '2030-01-01 00:30:00+00'::timestamptz, 'a run_at later than the release is kept');
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'passed')),
    '2030-01-01 00:10:00+00'::timestamptz, 'a run_at earlier than the release becomes the release time');
SELECT is(
    (SELECT array_agg(q ORDER BY q) FROM notify_calls, unnest(queues) AS q),
    ARRAY[
        'qf ' || (extract(EPOCH FROM '2030-01-01 00:30:00+00'::timestamptz) * 1000)::bigint,
        'qn ' || (extract(EPOCH FROM '2030-01-01 00:20:00+00'::timestamptz) * 1000)::bigint,
        'qx'
    ],
    'the release wakes each queue once: ready now, or at its due time'
);
SELECT is((SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10, ARRAY['qn', 'qf'])), 0::bigint,
    'neither delayed dependent is claimable at its release');
SELECT pgrun_test.freeze_time('2030-01-01 00:20:00+00');
SELECT is((SELECT array_agg(job_type) FROM pgrun.claim_jobs('w', 30, 10, ARRAY['qn', 'qf'])), ARRAY['t.next'],
    'at 00:20 the delayed one is');
SELECT pgrun_test.freeze_time('2030-01-01 00:30:00+00');
SELECT is((SELECT array_agg(job_type) FROM pgrun.claim_jobs('w', 30, 10, ARRAY['qn', 'qf'])), ARRAY['t.fixed'],
    'at 00:30 the one with a run_at is');

SELECT * FROM finish();
ROLLBACK;
