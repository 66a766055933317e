-- next_run_at: the earliest run_at after now among queued jobs inside the filters and the
-- caller's scope; NULL when there is none. Ready, running and finished jobs do not count.
BEGIN;
SELECT plan(18);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.fingerprint() AS empty \gset

-- TEST: nothing queued
SELECT is(pgrun.next_run_at(), NULL, 'no job: NULL');

SELECT pgrun_test.make_job('mail.send', p_queue => 'mail') AS ready_job \gset
SELECT is(pgrun.next_run_at(), NULL, 'a ready job is not a delayed one: still NULL');

-- a delayed job of each of two types in two queues, a later one, and one that runs now
SELECT pgrun_test.make_job('mail.send', p_queue => 'mail', p_run_at => '2030-01-01 00:05:00+00');
SELECT pgrun_test.make_job('report.build', p_queue => 'bulk', p_run_at => '2030-01-01 00:03:00+00');
SELECT pgrun_test.make_job('report.build', p_queue => 'bulk', p_run_at => '2030-01-01 00:09:00+00');
SELECT pgrun_test.make_job('other.thing', p_queue => 'bulk', p_run_at => '2030-01-01 00:01:00+00') AS soon_job \gset
UPDATE pgrun.jobs
SET status = 'running', worker_id = 'w', lease_token = gen_random_uuid(),
    lease_expires_at = '2030-01-01 00:10:00+00', attempt = 1, total_attempts = 1
WHERE id = :'soon_job';
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: the earliest, filters
SELECT is(pgrun.next_run_at(), '2030-01-01 00:03:00+00'::timestamptz,
    'the earliest queued delayed job (a running job due earlier does not count)');
SELECT is(pgrun.next_run_at(job_types => ARRAY['mail.send']), '2030-01-01 00:05:00+00'::timestamptz,
    'of the named type');
SELECT is(pgrun.next_run_at(job_types => ARRAY['mail.send', 'report.build']), '2030-01-01 00:03:00+00'::timestamptz,
    'the earliest of several types');
SELECT is(pgrun.next_run_at(queues => ARRAY['mail']), '2030-01-01 00:05:00+00'::timestamptz,
    'of the named queue');
SELECT is(pgrun.next_run_at(queues => ARRAY['mail'], job_types => ARRAY['report.build']), NULL,
    'a type outside the named queue: NULL');
SELECT is(pgrun.next_run_at(job_types => '{}'), NULL, 'an empty type list names none');
SELECT is(pgrun.next_run_at(queues => '{}'), NULL, 'an empty queue list names none');

-- TEST: a job that came due is no longer next
SELECT pgrun_test.freeze_time('2030-01-01 00:03:00+00');
SELECT is(pgrun.next_run_at(), '2030-01-01 00:05:00+00'::timestamptz,
    'at 00:03 the 00:03 job is ready, the 00:05 one is next');
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');

-- TEST: roles and scope
SELECT pgrun.set_role_access('pgrun_tap_worker_mail', queues => ARRAY['mail']);
SELECT pgrun_test.fingerprint() AS before \gset
SELECT is(pgrun_test.as_role('pgrun_tap_worker_mail', $$SELECT pgrun.next_run_at()$$),
    '2030-01-01 00:05:00+00', 'a worker scoped to mail sees the mail job only');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_mail', $$SELECT pgrun.next_run_at(queues => ARRAY['bulk'])$$),
    '42501 access.queue_denied', 'a filter outside its scope is refused');
SELECT pgrun.set_role_access('pgrun_tap_worker_report', job_types => ARRAY['report.build']);
SELECT pgrun_test.freeze_time('2030-01-01 00:04:00+00');  -- next: mail at 00:05, report at 00:09
SELECT pgrun_test.fingerprint() AS before \gset
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT pgrun.next_run_at()$$),
    '2030-01-01 00:09:00+00', 'a worker scoped to report.build sees that type''s jobs only');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT pgrun.next_run_at(job_types => ARRAY['mail.send'])$$),
    '42501 access.job_type_denied', 'a job type outside its scope is refused');
SELECT is(pgrun_test.as_role('pgrun_tap_worker', $$SELECT pgrun.next_run_at()$$),
    '2030-01-01 00:05:00+00', 'an unscoped worker sees every queue and type');
SELECT is(pgrun_test.as_role('pgrun_tap_producer', $$SELECT pgrun.next_run_at()$$),
    '42501 permission denied for function next_run_at', 'a producer may not call it');

-- TEST: reads only
SELECT is(pgrun_test.fingerprint(), :'before', 'next_run_at changes nothing');
SELECT isnt(:'before'::text, :'empty'::text, '(the fingerprint sees the jobs)');

SELECT * FROM finish();
ROLLBACK;
