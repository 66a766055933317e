-- A worker role limited to queues or job types claims and declares inside its scope only:
-- two scoped worker roles never claim each other's jobs, a filter outside the scope is 42501,
-- and an unscoped worker (and an admin) claims anything.
BEGIN;
SELECT plan(18);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT pgrun_test.make_job('mail.send', p_queue => 'mail') AS mail_job \gset
SELECT pgrun_test.make_job('report.build', p_queue => 'bulk') AS report_job \gset
SELECT pgrun_test.make_job('other.thing', p_queue => 'bulk') AS other_job \gset
SELECT pgrun.set_role_access('pgrun_tap_worker_mail', queues => ARRAY['mail']);
SELECT pgrun.set_role_access('pgrun_tap_worker_report', job_types => ARRAY['report.build']);
SELECT pgrun_test.fingerprint() AS before \gset

-- TEST: a filter outside the scope is refused, and claims nothing
SELECT is(pgrun_test.as_role('pgrun_tap_worker_mail', $$SELECT job_id FROM pgrun.claim_jobs('w', 30, 10, queues => ARRAY['bulk'])$$),
    '42501 access.queue_denied', 'the mail worker may not claim from queue bulk');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_mail', $$SELECT job_id FROM pgrun.claim_jobs('w', 30, 10, queues => ARRAY['mail', 'bulk'])$$),
    '42501 access.queue_denied', 'nor from mail and bulk');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT job_id FROM pgrun.claim_jobs('w', 30, 10, job_types => ARRAY['other.thing'])$$),
    '42501 access.job_type_denied', 'the report worker may not claim other.thing');
SELECT is(pgrun_test.fingerprint(), :'before', 'refused claims change nothing');

-- TEST: without filters, each claims inside its scope only
SELECT is(pgrun_test.as_role('pgrun_tap_worker_mail', $$SELECT string_agg(job_type, ',') FROM pgrun.claim_jobs('w', 30, 10)$$),
    'mail.send', 'the mail worker claims the mail job, and only it');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT string_agg(job_type, ',') FROM pgrun.claim_jobs('w', 30, 10)$$),
    'report.build', 'the report worker claims the report job, and only it');
SELECT is((SELECT status FROM pgrun.jobs WHERE id = :'other_job'), 'queued', 'the job outside both scopes stays queued');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10, job_types => ARRAY['report.build'])$$),
    '0', 'a filter inside the scope is fine (nothing left to claim)');
SELECT is(pgrun_test.as_role('pgrun_tap_worker', $$SELECT string_agg(job_type, ',') FROM pgrun.claim_jobs('w', 30, 10)$$),
    'other.thing', 'an unscoped worker claims what is left');

-- TEST: declaring follows the scope too
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT (pgrun.upsert_job_definition('report.build', queue => 'bulk')).queue$$),
    'bulk', 'the report worker declares its own type');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT pgrun.upsert_job_definition('other.thing')$$),
    '42501 access.job_type_denied', 'but not another type');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_mail', $$SELECT pgrun.upsert_job_definition('mail.send', queue => 'bulk')$$),
    '42501 access.queue_denied', 'the mail worker may not route a type to another queue');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_mail', $$SELECT (pgrun.upsert_job_definition('mail.send', queue => 'mail')).queue$$),
    'mail', 'nor is it stopped from declaring into its own queue');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT pgrun.upsert_schedule('tick', '* * * * *', 'other.thing')$$),
    '42501 access.job_type_denied', 'a worker declares schedules of its own job types only');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT created FROM pgrun.upsert_schedule('tick', '* * * * *', 'report.build')$$),
    'true', 'of which it may declare one');
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT pgrun.set_job_runtime_config('report.build', paused => true)$$),
    '42501 permission denied for function set_job_runtime_config', 'pausing a type stays an operator''s switch');

-- TEST: a scoped worker's claim keeps the paused and capped types of its scope
SELECT pgrun_test.make_job('report.build', p_queue => 'bulk') FROM generate_series(1, 2);
SELECT pgrun.set_job_runtime_config('report.build', paused => true);
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10)$$),
    '0', 'its one type paused: the report worker claims nothing');
SELECT pgrun.set_job_runtime_config('report.build', paused => false, max_concurrency => 2);
SELECT is(pgrun_test.as_role('pgrun_tap_worker_report', $$SELECT count(*) FROM pgrun.claim_jobs('w', 30, 10)$$),
    '1', 'capped at two with one running: the report worker claims one of the two queued');

SELECT * FROM finish();
ROLLBACK;
