-- One rule for every time argument (pgrun._time_ok / _check_time): a timestamp is finite,
-- no earlier than 0001-01-02 and no later than now + 100 years; an interval is 0 s..100
-- years. Outside it each function raises its documented code (RQ003), never a raw 22008,
-- and changes nothing.
BEGIN;
SELECT plan(26);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job() \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset
SELECT pgrun_test.make_job() AS dead_job \gset
UPDATE pgrun.jobs SET status = 'dead', finished_at = pgrun.now() WHERE id = :'dead_job';

-- TEST: the rule itself
SELECT ok(pgrun._time_ok('2129-12-31 00:00:00+00'::timestamptz), 'a time 100 years ahead (less a day) keeps the rule');
SELECT ok(NOT pgrun._time_ok('2130-01-02 00:00:00+00'::timestamptz), 'a time more than 100 years ahead does not');
SELECT ok(NOT pgrun._time_ok('infinity'::timestamptz), 'infinity does not');
SELECT ok(NOT pgrun._time_ok('-infinity'::timestamptz), '-infinity does not');
SELECT ok(NOT pgrun._time_ok('0001-01-01 00:00:00+00'::timestamptz), 'the first day of year 1 does not (time zones)');
SELECT ok(pgrun._time_ok('1970-01-01 00:00:00+00'::timestamptz), 'a past time does');
SELECT ok(pgrun._time_ok(interval '100 years'), '100 years keeps the rule');
SELECT ok(NOT pgrun._time_ok(interval '100 years 1 day'), 'a day more does not');
SELECT ok(NOT pgrun._time_ok(interval '-1 second'), 'a negative interval does not');
SELECT ok(NOT pgrun._time_ok(interval '1000000 years'), '1000000 years does not, and raises nothing');

-- TEST: continue_job delay
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', delay => ''1000000 years'')', :'job', :'token'),
    'RQ003', 'job.invalid_delay', 'continue_job: 1000000 years'
);
SELECT throws_ok(
    format('SELECT * FROM pgrun.continue_job(%L, %L, ''next'', delay => ''-1 second'')', :'job', :'token'),
    'RQ003', 'job.invalid_delay', 'continue_job: negative'
);

-- TEST: fail_job / fail_jobs retry_delay
SELECT throws_ok(
    format('SELECT * FROM pgrun.fail_job(%L, %L, retry_delay => ''1000000 years'')', :'job', :'token'),
    'RQ003', 'job.invalid_delay', 'fail_job: 1000000 years'
);
SELECT throws_ok(
    format(
        'SELECT * FROM pgrun.fail_jobs(ARRAY[%L]::uuid[], ARRAY[%L]::uuid[], retry_delays => ARRAY[''101 years'']::interval[])',
        :'job', :'token'
    ),
    'RQ003', 'job.invalid_delay', 'fail_jobs: 101 years'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'the refused writes changed nothing');

-- TEST: the reaper
SELECT throws_ok(
    $$SELECT * FROM pgrun.reap_expired_leases(retry_delay => '1000000 years')$$,
    'RQ003', 'job.invalid_delay', 'reap_expired_leases: 1000000 years'
);

-- TEST: purge_finished_jobs older_than
SELECT throws_ok(
    $$SELECT pgrun.purge_finished_jobs('1000000 years')$$,
    'RQ003', 'job.invalid_older_than', 'purge_finished_jobs: 1000000 years'
);
SELECT throws_ok(
    $$SELECT pgrun.purge_finished_jobs('-1 day')$$,
    'RQ003', 'job.invalid_older_than', 'purge_finished_jobs: negative'
);

-- TEST: enqueue run_at and delay
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('test.job', run_at => '10000-01-01')$$,
    'RQ003', 'job.invalid_schedule', 'enqueue_job: year 10000 (Python ends at 9999)'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('test.job', run_at => 'infinity')$$,
    'RQ003', 'job.invalid_schedule', 'enqueue_job: infinity'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_jobs('[{"job_type": "test.job", "run_at": "200000-01-01"}]')$$,
    'RQ003', 'job.invalid_schedule', 'enqueue_jobs: year 200000'
);
SELECT throws_ok(
    $$SELECT * FROM pgrun.enqueue_job('test.job', delay => '1000000 years')$$,
    'RQ003', 'job.invalid_schedule', 'enqueue_job: a delay of 1000000 years'
);
SELECT is(
    (SELECT run_at FROM pgrun.enqueue_job('test.job', run_at => '2129-01-01 00:00:00+00')),
    '2129-01-01 00:00:00+00'::timestamptz,
    'enqueue_job: 99 years ahead is fine'
);

-- TEST: requeue_job run_at, as enqueue_job's
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L, run_at => ''infinity'')', :'dead_job'),
    'RQ003', 'job.invalid_schedule', 'requeue_job: infinity'
);
SELECT throws_ok(
    format('SELECT pgrun.requeue_job(%L, run_at => ''10000-01-01'')', :'dead_job'),
    'RQ003', 'job.invalid_schedule', 'requeue_job: year 10000'
);
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'dead_job'), 'dead', 'the job stays dead');

SELECT * FROM finish();
ROLLBACK;
