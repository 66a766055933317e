-- Progress and log fields nested more than 100 levels (pgrun._json_depth_ok) are refused:
-- job.invalid_progress, job.invalid_log_entry (RQ003), nothing written; 100 levels are fine.
BEGIN;
SELECT plan(8);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT ('{"p": ' || repeat('[', 100) || repeat(']', 100) || '}')::jsonb AS deep \gset
SELECT ('{"p": ' || repeat('[', 99) || repeat(']', 99) || '}')::jsonb AS edge \gset
SELECT job_id AS job, lease_token AS token FROM pgrun_test.running_job(p_lease_seconds => 30) \gset
SELECT pgrun_test.job_fingerprint(:'job') AS before \gset

-- TEST: report_progress
SELECT throws_ok(
    format('SELECT pgrun.report_progress(%L, %L, %L::jsonb)', :'job', :'token', :'deep'),
    'RQ003', 'job.invalid_progress', 'progress 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT pgrun.report_progress(%L, %L, %L::jsonb)', :'job', :'token', :'deep')),
    'progress is nested more than 100 levels deep (arrays and objects)',
    'DETAIL says why'
);

-- TEST: append_job_log
SELECT throws_ok(
    format('SELECT pgrun.append_job_log(%L, %L, %L, %L, %L::jsonb)', :'job', :'token', 'm', 'info', :'deep'),
    'RQ003', 'job.invalid_log_entry', 'log fields 101 levels deep'
);
SELECT is(
    pgrun_test.error_detail(format('SELECT pgrun.append_job_log(%L, %L, %L, %L, %L::jsonb)', :'job', :'token', 'm', 'info', :'deep')),
    'fields is nested more than 100 levels deep (arrays and objects)',
    'DETAIL says why'
);
SELECT is(pgrun_test.job_fingerprint(:'job'), :'before', 'nothing was written');

-- TEST: 100 levels are stored
SELECT is(pgrun.report_progress(:'job', :'token', :'edge'), false, 'progress 100 levels deep is accepted');
SELECT is((SELECT progress FROM pgrun.jobs WHERE id = :'job'), :'edge'::jsonb, 'and stored');
SELECT pgrun.append_job_log(:'job', :'token', 'm', 'info', :'edge') AS log_id \gset
SELECT is((SELECT fields FROM pgrun.job_logs WHERE id = :log_id), :'edge'::jsonb, 'log fields 100 levels deep are stored');

SELECT * FROM finish();
ROLLBACK;
