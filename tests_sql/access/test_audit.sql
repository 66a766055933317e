-- Who did it: every admin and producer action records the login role. Job transitions carry it
-- in job_events.actor; everything else leaves an audit_log row (action, organization, subject,
-- detail). Restating a definition or schedule unchanged records nothing.
BEGIN;
SELECT plan(21);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT * FROM pgrun_test.two_tenants() \gset
SELECT job_id AS running FROM pgrun_test.running_job(p_job_type => 'run.me') \gset
SELECT j.job_id AS retried, j.lease_token AS retried_token FROM pgrun_test.running_job(p_job_type => 'run.me') AS j \gset
SELECT pgrun.fail_job(:'retried', :'retried_token', 'flaky', 'once', retry_delay => interval '1 hour');
DELETE FROM pgrun.audit_log;

-- TEST: job transitions name the role in job_events.actor
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.cancel_job(%L, %L)', :'a_job', 'not needed'));
SELECT is((SELECT actor FROM pgrun.job_events WHERE job_id = :'a_job' AND event = 'cancelled'), 'pgrun_tap_tenant_a',
    'cancel_job of a queued job: the cancelled event names the role');
SELECT pgrun.cancel_job(:'running');
SELECT is((SELECT actor FROM pgrun.job_events WHERE job_id = :'running' AND event = 'cancel_requested'), session_user::text,
    'cancel_job of a running job: the cancel_requested event names the role');
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.requeue_job(%L)', :'a_dead'));
SELECT is((SELECT actor FROM pgrun.job_events WHERE job_id = :'a_dead' AND event = 'requeued'), 'pgrun_tap_tenant_a',
    'requeue_job: the requeued event names the role');
SELECT is(
    (SELECT (count(*) FILTER (WHERE event NOT IN ('cancelled', 'cancel_requested', 'requeued')) > 0,
             count(*) FILTER (WHERE actor IS NOT NULL AND event NOT IN ('cancelled', 'cancel_requested', 'requeued')))::text
     FROM pgrun.job_events),
    ROW(TRUE, 0::bigint)::text,
    'worker transitions carry no actor (worker_id says who ran a job); enqueues write no event at all');

-- TEST: workflow actions
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT pgrun.append_workflow_steps(%L, 'm1', '[{"key": "more", "job_type": "t.x", "depends_on": ["gate"]}]')$$, :'a_run'));
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.complete_external_step(%L, %L)', :'a_run', 'gate'));
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', format('SELECT pgrun.cancel_workflow_run(%L, %L)', :'a_run', 'stop'));
SELECT results_eq(
    $$SELECT actor, action, organization_id, subject FROM pgrun.audit_log WHERE action LIKE 'workflow%' ORDER BY id$$,
    format($$VALUES ('pgrun_tap_tenant_a'::text, 'workflow_run.appended'::text, %1$L::uuid, %2$L::text),
        ('pgrun_tap_tenant_a', 'workflow_step.completed', %1$L::uuid, %2$L),
        ('pgrun_tap_tenant_a', 'workflow_run.cancelled', %1$L::uuid, %2$L)$$, :'org_a', :'a_run'),
    'append, external completion and cancel of a run: one row each, naming the role, the organization and the run'
);
SELECT is((SELECT detail ->> 'step_key' FROM pgrun.audit_log WHERE action = 'workflow_step.completed'), 'gate',
    'the external completion names the step');
SELECT is((SELECT (detail ->> 'cancelled_steps')::int FROM pgrun.audit_log WHERE action = 'workflow_run.cancelled'), 2,
    'the run cancel counts what it cancelled');
SELECT is(
    (SELECT count(*) FROM pgrun.job_events AS e JOIN pgrun.jobs AS j ON j.id = e.job_id
     WHERE j.workflow_run_id = :'a_run' AND e.event = 'cancelled' AND e.actor = 'pgrun_tap_tenant_a'),
    2::bigint, 'and the two jobs it cancelled name the role');

-- TEST: schedules
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT pgrun.pause_schedule('nightly')$$);
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT pgrun.pause_schedule('nightly')$$);
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT pgrun.resume_schedule('nightly')$$);
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT pgrun.upsert_schedule('nightly', '*/5 * * * *', 'test.cron')$$);
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT pgrun.upsert_schedule('nightly', '*/5 * * * *', 'test.cron')$$);
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT pgrun.upsert_schedule('nightly', '*/10 * * * *', 'test.cron')$$);
SELECT pgrun.run_schedule_now('nightly', :'org_b');
SELECT pgrun_test.as_role('pgrun_tap_tenant_a', $$SELECT pgrun.delete_schedule('nightly')$$);
SELECT results_eq(
    $$SELECT actor, action, subject FROM pgrun.audit_log WHERE action LIKE 'schedule%' ORDER BY id$$,
    format($$VALUES ('pgrun_tap_tenant_a'::text, 'schedule.paused'::text, %1$L::text),
        ('pgrun_tap_tenant_a', 'schedule.resumed', %1$L), ('pgrun_tap_tenant_a', 'schedule.upserted', %1$L),
        (%3$L, 'schedule.run_now', %2$L), ('pgrun_tap_tenant_a', 'schedule.deleted', %1$L)$$,
        :'a_schedule', :'b_schedule', session_user),
    'pause, resume, a changed upsert, run now and delete: one row each; a repeated pause and an unchanged upsert none'
);
SELECT is((SELECT detail ->> 'cron' FROM pgrun.audit_log WHERE action = 'schedule.upserted'), '*/10 * * * *',
    'the upsert row holds the new declaration');
SELECT is((SELECT organization_id FROM pgrun.audit_log WHERE action = 'schedule.run_now'), :'org_b'::uuid,
    'the run-now row names the schedule''s organization');

-- TEST: definitions and runtime switches
SELECT pgrun_test.as_role('pgrun_tap_worker', $$SELECT pgrun.upsert_job_definition('def.type', max_attempts => 5)$$);
SELECT pgrun_test.as_role('pgrun_tap_worker', $$SELECT pgrun.upsert_job_definition('def.type', max_attempts => 5)$$);
SELECT pgrun_test.as_role('pgrun_tap_worker', $$SELECT pgrun.upsert_job_definition('def.type', max_attempts => 7)$$);
SELECT results_eq(
    $$SELECT actor, subject, (detail ->> 'max_attempts')::int FROM pgrun.audit_log WHERE action = 'job_definition.upserted' ORDER BY id$$,
    $$VALUES ('pgrun_tap_worker'::text, 'def.type'::text, 5), ('pgrun_tap_worker', 'def.type', 7)$$,
    'a definition is recorded when created and when changed, not when restated as it was (workers restate at start)'
);
SELECT pgrun_test.as_role('pgrun_tap_admin', $$SELECT pgrun.set_job_runtime_config('def.type', paused => true)$$);
SELECT is(
    (SELECT actor || ' ' || subject || ' paused=' || (detail -> 'now' ->> 'paused') FROM pgrun.audit_log WHERE action = 'job_runtime_config.set'),
    'pgrun_tap_admin def.type paused=true', 'pausing a type is recorded with who paused it');

-- TEST: purge records what it deleted
SELECT pgrun_test.advance_time('10 days');
SELECT is(pgrun_test.as_role('pgrun_tap_admin', $$SELECT pgrun.purge_finished_jobs('1 day')$$), '4',
    'the purge deletes the four finished jobs (A''s cancelled one, B''s dead one, the run''s two cancelled)');
SELECT is(
    (SELECT (actor, (detail ->> 'jobs')::int, (detail ->> 'events')::int > 0, (detail ->> 'dead_letters')::int,
             (detail ->> 'cutoff')::timestamptz, detail ->> 'older_than')::text
     FROM pgrun.audit_log WHERE action = 'jobs.purged'),
    (SELECT ('pgrun_tap_admin', 4, true, 1, '2030-01-10 00:00:00+00'::timestamptz, '1 day')::text),
    'and one row records who purged how many jobs, events and dead letters, with the cutoff'
);
SELECT pgrun.purge_finished_jobs('1 day');
SELECT is((SELECT count(*) FROM pgrun.audit_log WHERE action = 'jobs.purged'), 1::bigint, 'a purge that deleted nothing leaves no row');

-- TEST: role access changes, and reading the log
SELECT pgrun.set_role_access('pgrun_tap_app', any_organization => true);
SELECT pgrun.remove_role_access('pgrun_tap_app');
SELECT results_eq(
    $$SELECT action, subject FROM pgrun.audit_log WHERE action LIKE 'role_access%' ORDER BY id$$,
    $$VALUES ('role_access.set'::text, 'pgrun_tap_app'::text), ('role_access.removed', 'pgrun_tap_app')$$,
    'granting and removing a role''s access is recorded'
);
SELECT is(
    (SELECT count(*) FROM pgrun.list_audit_log(max_rows => 1000)), (SELECT count(*) FROM pgrun.audit_log),
    'list_audit_log pages through the whole log'
);
SELECT is(
    (SELECT string_agg(action, ',' ORDER BY id) FROM pgrun.list_audit_log(
        after_id => (SELECT min(id) FROM pgrun.audit_log WHERE action = 'schedule.paused'), action => 'schedule.paused')),
    NULL, 'after the first row there is no other schedule.paused row'
);
SELECT throws_ok($$SELECT * FROM pgrun.list_audit_log(max_rows => 0)$$, 'RQ003', 'access.invalid_max_rows',
    'max_rows outside 1..1000 is refused');
SELECT is(pgrun_test.as_role('pgrun_tap_reader', 'SELECT count(*) FROM pgrun.list_audit_log()'),
    '42501 permission denied for function list_audit_log', 'the log is for admins');

SELECT * FROM finish();
ROLLBACK;
