-- append_workflow_steps takes a step's organization_id, delay and run_at as enqueue does:
-- the same validation, the same organization rule, part of the mutation_key's request, and
-- the job's run_at counted from the step's release.
BEGIN;
SELECT plan(12);

-- SETUP
SELECT pgrun_test.freeze_time('2030-01-01 00:00:00+00');
SELECT '11111111-1111-1111-1111-111111111111' AS org_a, '22222222-2222-2222-2222-222222222222' AS org_b \gset
SELECT pgrun.set_role_access('pgrun_tap_tenant_a', organization_ids => ARRAY[:'org_a'::uuid]);
SELECT pgrun_test.wf_enqueue(format('{"organization_id": "%s", "steps": [
    {"key": "first", "job_type": "t.first"}, {"key": "open", "job_type": "t.open"}]}', :'org_a')::jsonb) AS run \gset
SELECT pgrun_test.freeze_time('2030-01-01 00:05:00+00');
SELECT pgrun_test.wf_succeed(:'run', 'first');
SELECT pgrun_test.freeze_time('2030-01-01 00:10:00+00');

-- TEST: validation
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, NULL, '[{"key": "x", "job_type": "t", "delay": -5}]')$$, :'run'),
    'RQ003', 'workflow.invalid_step', 'a negative delay');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, NULL, '[{"key": "x", "job_type": "t", "delay": 1, "run_at": "2030-01-01T00:00:00Z"}]')$$, :'run'),
    'RQ003', 'workflow.invalid_step', 'delay and run_at');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, NULL, '[{"key": "x", "kind": "external", "run_at": "2030-01-01T00:00:00Z"}]')$$, :'run'),
    'RQ003', 'workflow.external_step_with_job_template', 'an external step with a run_at');

-- TEST: the organization rule
SELECT pgrun_test.fingerprint() AS before \gset
SELECT is(pgrun_test.as_role('pgrun_tap_tenant_a', format(
    $$SELECT mutation_id FROM pgrun.append_workflow_steps(%L, NULL, '[{"key": "x", "job_type": "t", "organization_id": "%s"}]')$$,
    :'run', :'org_b')),
    '42501 access.organization_denied', 'the run''s tenant cannot append a step in another organization');
SELECT is(pgrun_test.fingerprint(), :'before', 'nothing stored');

-- TEST: appended steps, released at once: behind a finished prerequisite and as a root
SELECT is(
    (SELECT created FROM pgrun.append_workflow_steps(:'run', 'm1', format('[
        {"key": "after_first", "job_type": "t.af", "delay": 60, "depends_on": ["first"]},
        {"key": "root", "job_type": "t.root", "run_at": "2030-01-01T01:00:00Z", "organization_id": "%s"},
        {"key": "after_open", "job_type": "t.ao", "delay": 60, "depends_on": ["open"]}]', :'org_b')::jsonb)),
    true, 'an admin appends placed steps');
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'after_first')),
    '2030-01-01 00:11:00+00'::timestamptz, 'behind a finished prerequisite: released at the append, delay counted from there');
SELECT results_eq(
    format($$SELECT run_at, organization_id FROM pgrun.jobs WHERE id = %L$$, pgrun_test.wf_job(:'run', 'root')),
    $$VALUES ('2030-01-01 01:00:00+00'::timestamptz, '22222222-2222-2222-2222-222222222222'::uuid)$$,
    'a new root: its run_at and its own organization');
SELECT pgrun_test.freeze_time('2030-01-01 00:20:00+00');
SELECT pgrun_test.wf_succeed(:'run', 'open');
SELECT is((SELECT run_at FROM pgrun.jobs WHERE id = pgrun_test.wf_job(:'run', 'after_open')),
    '2030-01-01 00:21:00+00'::timestamptz, 'behind an open prerequisite: delay counted from when it finished');

-- TEST: the mutation_key's request holds the placement
SELECT is(
    (SELECT created FROM pgrun.append_workflow_steps(:'run', 'm1', format('[
        {"key": "root", "job_type": "t.root", "run_at": "2030-01-01 02:00:00+01", "organization_id": "%s"},
        {"key": "after_open", "job_type": "t.ao", "delay": 60.0, "depends_on": ["open"]},
        {"key": "after_first", "job_type": "t.af", "delay": 60, "depends_on": ["first"]}]', upper(:'org_b'))::jsonb)),
    false, 'the same placement, spelt differently, replays');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'm1', '[
        {"key": "after_first", "job_type": "t.af", "delay": 61, "depends_on": ["first"]},
        {"key": "root", "job_type": "t.root", "run_at": "2030-01-01T01:00:00Z", "organization_id": "%s"},
        {"key": "after_open", "job_type": "t.ao", "delay": 60, "depends_on": ["open"]}]')$$, :'run', :'org_b'),
    'RQ001', 'workflow.append_conflicting_retry', 'another delay conflicts');
SELECT throws_ok(
    format($$SELECT * FROM pgrun.append_workflow_steps(%L, 'm1', '[
        {"key": "after_first", "job_type": "t.af", "delay": 60, "depends_on": ["first"]},
        {"key": "root", "job_type": "t.root", "run_at": "2030-01-01T01:00:00Z"},
        {"key": "after_open", "job_type": "t.ao", "delay": 60, "depends_on": ["open"]}]')$$, :'run'),
    'RQ001', 'workflow.append_conflicting_retry', 'the organization left out conflicts');

SELECT * FROM finish();
ROLLBACK;
