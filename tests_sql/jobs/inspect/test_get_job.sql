-- get_job returns the job's columns (no lease token) plus its attempts and dead letters.
BEGIN;
SELECT plan(7);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.put_job('mail.send', p_status => 'dead', p_payload => '{"to": "a"}') AS job \gset
SELECT pgrun_test.put_attempt(:'job', 2, 'failed');
SELECT pgrun_test.put_attempt(:'job', 1, 'crashed');
SELECT pgrun_test.put_dead_letter(:'job');
SELECT pgrun.get_job(:'job') AS doc \gset

-- TEST: the job's own columns
SELECT is((:'doc'::jsonb) ->> 'id', :'job', 'id');
SELECT is(
    (:'doc'::jsonb) - 'attempts' - 'dead_letters' - 'error_message',
    (SELECT to_jsonb(j) - 'lease_token' || jsonb_build_object('job_id', j.id) FROM pgrun.jobs AS j WHERE j.id = :'job'),
    'every column of jobs but lease_token, with the same values, and job_id (= id)'
);
SELECT ok(NOT ((:'doc'::jsonb) ? 'lease_token'), 'the lease token is never handed out');

-- TEST: attempts, in order, without tokens
SELECT is(
    jsonb_path_query_array(:'doc'::jsonb, '$.attempts[*].attempt'),
    '[1, 2]'::jsonb,
    'attempts come in attempt order'
);
SELECT is(
    jsonb_path_query_array(:'doc'::jsonb, '$.attempts[*].outcome'),
    '["crashed", "failed"]'::jsonb,
    'with their outcomes'
);
SELECT ok(NOT jsonb_path_exists(:'doc'::jsonb, '$.attempts[*].lease_token'), 'attempts carry no lease token');

-- TEST: dead letters
SELECT is(
    jsonb_path_query_array(:'doc'::jsonb, '$.dead_letters[*].reason'),
    '["attempts_exhausted"]'::jsonb,
    'the dead-letter row is included'
);

SELECT * FROM finish();
ROLLBACK;
